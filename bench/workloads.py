"""The measured workloads, all driven by librdkafka (confluent-kafka) with 1 KB records.

Each function takes a bootstrap address of a freshly started broker and returns plain numbers;
bounded by sizes and deadlines so that a slow or broken broker ends the run instead of hanging it.
MB means 10^6 bytes of record values.
"""

from __future__ import annotations

import logging
import statistics
import struct
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

RECORD_SIZE = 1024


class _TailHandler(logging.Handler):
    """Keeps librdkafka's last log lines so failures can say why, without flooding the console."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: deque[str] = deque(maxlen=20)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


_rdk_tail = _TailHandler()
RDK_LOG = logging.getLogger("bench.librdkafka")
RDK_LOG.addHandler(_rdk_tail)
RDK_LOG.propagate = False
RDK_LOG.setLevel(logging.WARNING)


def set_verbose(verbose: bool) -> None:
    if verbose:
        RDK_LOG.addHandler(logging.StreamHandler())
        RDK_LOG.setLevel(logging.INFO)


def librdkafka_tail() -> str:
    return " | ".join(list(_rdk_tail.lines)[-3:])


class WorkloadError(RuntimeError):
    pass


def _base(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "broker.address.family": "v4", "log_level": 4}


def _producer(bootstrap: str, **conf: object) -> Producer:
    return Producer({**_base(bootstrap), "enable.idempotence": False, "compression.type": "none",
                     **conf}, logger=RDK_LOG)


def _consumer(bootstrap: str, group_id: str, **conf: object) -> Consumer:
    return Consumer({**_base(bootstrap), "group.id": group_id, "enable.auto.commit": False,
                     "enable.auto.offset.store": False, **conf}, logger=RDK_LOG)


def create_topic(bootstrap: str, name: str, partitions: int, timeout: float = 30.0,
                 replication_factor: int = 1) -> None:
    """CreateTopics, then wait until Metadata shows every partition with a leader."""
    admin = AdminClient({**_base(bootstrap)}, logger=RDK_LOG)
    fut = admin.create_topics([NewTopic(name, partitions, replication_factor)],
                              operation_timeout=timeout)[name]
    try:
        fut.result(timeout=timeout)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise WorkloadError(f"CreateTopics {name}: {e}") from e
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=name, timeout=5.0)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions and all(
                p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.05)
    raise WorkloadError(f"topic {name} not ready with {partitions} partitions after {timeout:.0f} s")


def _payload(size: int = RECORD_SIZE) -> bytes:
    # Mildly varied bytes; compression is off anyway.
    return bytes((i * 31 + 7) % 251 for i in range(size))


# --------------------------------------------------------------------------------------------
# Produce
# --------------------------------------------------------------------------------------------

@dataclass
class Throughput:
    mb_per_s: float
    records: int
    seconds: float
    errors: int
    note: str = ""


def produce_records(bootstrap: str, topic: str, partitions: int, count: int, acks: str,
                    max_seconds: float, linger_ms: int = 5, warmup: int = 200) -> Throughput:
    """Produce `count` 1 KB records round-robin over partitions; time until all are acknowledged."""
    p = _producer(bootstrap, acks=acks, **{"linger.ms": linger_ms})
    value = _payload()
    state = {"ok": 0, "err": 0, "last_err": None}

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        # Counts only the timed records; the warm-up ones are checked by flush().
        if err is None:
            state["ok"] += 1
        else:
            state["err"] += 1
            state["last_err"] = err

    # Warm-up: connection, metadata and the partition leaders; not timed.
    for i in range(min(warmup, count)):
        p.produce(topic, value, partition=i % partitions)
    if warmup and p.flush(30.0) != 0:
        raise WorkloadError(f"warm-up produce did not complete: {librdkafka_tail()}")

    t0 = time.perf_counter()
    deadline = t0 + max_seconds
    sent = 0
    for i in range(count):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.005)
        sent += 1
        if (i & 1023) == 0:
            p.poll(0)
            if time.perf_counter() > deadline:
                break
    remaining = p.flush(max(30.0, max_seconds))
    elapsed = time.perf_counter() - t0
    note = ""
    if sent < count:
        note = f"time cap: {sent}/{count} records sent"
    if remaining:
        note += f" {remaining} unacknowledged"
    if state["err"]:
        note += f" {state['err']} delivery errors (last: {state['last_err']})"
    return Throughput(state["ok"] * RECORD_SIZE / elapsed / 1e6, state["ok"], elapsed, state["err"],
                      note.strip())


# --------------------------------------------------------------------------------------------
# Consume
# --------------------------------------------------------------------------------------------

def consume_throughput(bootstrap: str, topic: str, partitions: int, count: int,
                       max_seconds: float) -> Throughput:
    """Fetch throughput of one fresh librdkafka consumer reading `count` stored records.

    The consumer is connected and has the topic's metadata before the clock starts; it is then
    assigned every partition at the explicit offset 0 (a logical offset such as
    OFFSET_BEGINNING makes librdkafka idle ~0.5 s before its ListOffsets, which is not the
    broker's time). Timed from assign() to the last record."""
    c = _consumer(bootstrap, f"bench-consume-{uuid.uuid4().hex[:8]}")
    try:
        c.list_topics(topic=topic, timeout=10.0)
        got = errors = 0
        first_err = None
        t0 = time.perf_counter()
        c.assign([TopicPartition(topic, i, 0) for i in range(partitions)])
        deadline = t0 + max_seconds
        while got < count and time.perf_counter() < deadline:
            # consume() waits for a full batch until its timeout: keep both small.
            for m in c.consume(num_messages=1000, timeout=0.005):
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        errors += 1
                        first_err = first_err or m.error()
                else:
                    got += 1
        elapsed = time.perf_counter() - t0
    finally:
        c.close()
    note = ""
    if got < count:
        note = f"only {got}/{count} records within {max_seconds:.0f} s"
    if errors:
        note += f" {errors} errors (first: {first_err})"
    return Throughput(got * RECORD_SIZE / elapsed / 1e6, got, elapsed, errors, note.strip())


# --------------------------------------------------------------------------------------------
# End-to-end latency at a fixed rate
# --------------------------------------------------------------------------------------------

@dataclass
class Latency:
    p50_ms: float
    p99_ms: float
    received: int
    expected: int
    note: str = ""


_HDR = struct.Struct(">qq")  # sequence (-1 = warm-up), send time (perf_counter_ns)


def e2e_latency(bootstrap: str, topic: str, rate: int, seconds: float,
                warmup_seconds: float = 1.0, fetch_wait_ms: int = 500) -> Latency:
    """Produce at `rate` msg/s (acks=1, linger 0) while a consumer tails the partition; latency
    is the consumer's receive time minus the producer's send time, both in this process."""
    pad = _payload(RECORD_SIZE - _HDR.size)
    expected = int(rate * seconds)
    lat_ns: list[int] = []
    received: set[int] = set()
    stop = threading.Event()
    ready = threading.Event()
    errors: list[str] = []

    def consume() -> None:
        c = _consumer(bootstrap, f"bench-latency-{uuid.uuid4().hex[:8]}",
                      **{"fetch.wait.max.ms": fetch_wait_ms})
        try:
            c.assign([TopicPartition(topic, 0, 0)])
            while not stop.is_set():
                # poll(), not consume(): a batch consume holds records until it is full or
                # its timeout expires, which would add up to that timeout to every latency.
                m = c.poll(0.05)
                if m is not None:
                    now = time.perf_counter_ns()
                    if m.error():
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            errors.append(str(m.error()))
                        continue
                    seq, sent_ns = _HDR.unpack_from(m.value())
                    ready.set()
                    if seq >= 0 and seq not in received:
                        received.add(seq)
                        lat_ns.append(now - sent_ns)
                if len(received) >= expected:
                    break
        finally:
            c.close()

    th = threading.Thread(target=consume, name="latency-consumer", daemon=True)
    th.start()
    p = _producer(bootstrap, acks="1", **{"linger.ms": 0})
    try:
        # Warm-up until the consumer sees records, then a further warm-up period.
        t_end = time.perf_counter() + 15.0
        while not ready.is_set() and time.perf_counter() < t_end:
            p.produce(topic, _HDR.pack(-1, time.perf_counter_ns()) + pad, partition=0)
            _wait_until(p, time.perf_counter() + 0.05)
        if not ready.is_set():
            raise WorkloadError(f"consumer saw nothing within 15 s: {errors[:1] or librdkafka_tail()}")
        _paced(p, topic, pad, rate, warmup_seconds, warm=True)
        _paced(p, topic, pad, rate, seconds, warm=False)
        p.flush(10.0)
        th.join(timeout=5.0)
    finally:
        stop.set()
        th.join(timeout=10.0)
    if not lat_ns:
        raise WorkloadError(f"no measured record arrived: {errors[:1] or librdkafka_tail()}")
    ms = sorted(x / 1e6 for x in lat_ns)
    note = f"{len(received)}/{expected} received" if len(received) < expected else ""
    return Latency(statistics.median(ms), _percentile(ms, 99), len(received), expected, note)


def _paced(p: Producer, topic: str, pad: bytes, rate: int, seconds: float, warm: bool) -> None:
    n = int(rate * seconds)
    t0 = time.perf_counter()
    for i in range(n):
        _wait_until(p, t0 + i / rate)
        p.produce(topic, _HDR.pack(-1 if warm else i, time.perf_counter_ns()) + pad, partition=0)
        p.poll(0)


def _wait_until(p: Producer, due: float) -> None:
    """Serve delivery reports until `due` (poll() returns early whenever it served one)."""
    while True:
        delay = due - time.perf_counter()
        if delay <= 0:
            return
        p.poll(delay)


def _percentile(sorted_vals: list[float], pct: float) -> float:
    k = max(0, min(len(sorted_vals) - 1, round(pct / 100 * len(sorted_vals) + 0.5) - 1))
    return sorted_vals[k]


# --------------------------------------------------------------------------------------------
# Consumer groups: rebalance latency and offset commit rate
# --------------------------------------------------------------------------------------------

@dataclass
class Rebalance:
    seconds: float
    members: int
    note: str = ""            # set when the run failed (no figure)
    describe_note: str = ""   # set when the admin API disagrees with what the clients saw


def rebalance_latency(bootstrap: str, topic: str, partitions: int, members: int,
                      session_timeout_ms: int, heartbeat_ms: int, timeout: float,
                      protocol: str = "classic") -> Rebalance:
    """N consumers subscribe to one group at once (eager range assignor); time from the first
    subscribe() — which sends FindCoordinator then the first JoinGroup — until every member holds
    an assignment and the assignments partition the topic exactly (all in one generation).
    ``protocol="consumer"``: KIP-848 (``group.protocol=consumer``; the broker assigns, members
    reconcile incrementally, so assignments are added and revoked piece by piece; session and
    heartbeat settings are the broker's)."""
    incremental = protocol == "consumer"
    group = f"bench-rebalance-{protocol}-{members}-{uuid.uuid4().hex[:8]}"
    assigned: dict[int, frozenset[int]] = {}
    lock = threading.Lock()
    consumers: list[Consumer] = []

    def make_callbacks(i: int):
        def on_assign(c: Consumer, parts: list[TopicPartition]) -> None:
            with lock:
                got = frozenset(tp.partition for tp in parts)
                assigned[i] = assigned.get(i, frozenset()) | got if incremental else got

        def on_revoke(c: Consumer, parts: list[TopicPartition]) -> None:
            with lock:
                if incremental:
                    assigned[i] = assigned.get(i, frozenset()) - frozenset(tp.partition for tp in parts)
                else:
                    assigned.pop(i, None)
        return on_assign, on_revoke

    try:
        for _ in range(members):
            conf: dict[str, object] = {"group.protocol": "consumer"} if incremental else {
                "session.timeout.ms": session_timeout_ms,
                "heartbeat.interval.ms": heartbeat_ms,
                "partition.assignment.strategy": "range"}
            consumers.append(_consumer(bootstrap, group, **conf))
        for c in consumers:       # connected and bootstrapped before the clock starts
            c.list_topics(topic=topic, timeout=10.0)
        everything = frozenset(range(partitions))
        t0 = time.perf_counter()
        for i, c in enumerate(consumers):
            on_assign, on_revoke = make_callbacks(i)
            c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        deadline = t0 + timeout
        done_at = None
        while time.perf_counter() < deadline:
            for c in consumers:
                c.poll(0)
            with lock:
                if len(assigned) == members and (incremental or all(assigned.values())):
                    union = frozenset().union(*assigned.values())
                    if union == everything and sum(len(a) for a in assigned.values()) == partitions:
                        done_at = time.perf_counter()
                        break
            time.sleep(0.001)
        if done_at is None:
            with lock:
                held = len([a for a in assigned.values() if a])
            return Rebalance(float("nan"), members,
                             f"not stable after {timeout:.0f} s ({held}/{members} members assigned)")
        return Rebalance(done_at - t0, members,
                         describe_note="" if incremental else _describe_check(bootstrap, group, members))
    finally:
        _close_all(consumers)


def _describe_check(bootstrap: str, group: str, members: int) -> str:
    """Untimed cross-check through the admin API: '' if the group is Stable with every member."""
    try:
        admin = AdminClient({**_base(bootstrap)}, logger=RDK_LOG)
        d = admin.describe_consumer_groups([group], request_timeout=10.0)[group].result(timeout=15.0)
        state = getattr(d.state, "name", str(d.state))
        if state == "STABLE" and len(d.members) == members:
            return ""
        return f"DescribeGroups then said state {state} with {len(d.members)}/{members} members"
    except Exception as e:  # the figure stands; the check is informative only
        return f"DescribeGroups failed: {e}"


def warm_coordinator(bootstrap: str, topic: str) -> None:
    """One offset commit in a throwaway group: brings up the group coordinator (and creates
    __consumer_offsets where that happens on first use) before anything is timed."""
    c = _consumer(bootstrap, f"bench-warmup-{uuid.uuid4().hex[:8]}")
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    except KafkaException:
        pass   # the timed runs will report what is wrong
    finally:
        c.close()


def _close_all(consumers: list[Consumer], timeout: float = 20.0) -> None:
    """Close consumers in parallel (each sends LeaveGroup); bounded."""
    threads = [threading.Thread(target=c.close, daemon=True) for c in consumers]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout
    for t in threads:
        t.join(timeout=max(0.0, end - time.monotonic()))


@dataclass
class CommitRate:
    per_second: float
    commits: int
    errors: int
    note: str = ""
    p50_ms: float = float("nan")   # latency of one synchronous commit() call, all groups pooled
    p99_ms: float = float("nan")
    broker_cpu_us: float = float("nan")   # broker CPU per commit over the timed window


def offset_commit_rate(bootstrap: str, topic: str, groups: int, seconds: float,
                       broker_pid: int | None = None) -> CommitRate:
    """`groups` consumers, each alone in its own group and never subscribed (like assign()-only
    clients: generation -1), each committing synchronously in a loop from its own thread. Each
    timed commit() call's latency is kept too: with groups=1 that is the latency of an
    OffsetCommit on an otherwise idle broker (bench/cluster_coordinators.py). With
    ``broker_pid`` the broker process' CPU time over the timed window is reported per commit."""
    consumers = [_consumer(bootstrap, f"bench-commit-{i}-{uuid.uuid4().hex[:6]}")
                 for i in range(groups)]
    counts = [0] * groups
    errs = [0] * groups
    last = [0] * groups
    first_err: list[str] = []
    start = threading.Barrier(groups + 1)
    stop = threading.Event()
    warm_ok = [False] * groups
    lat_ms: list[list[float]] = [[] for _ in range(groups)]

    def work(i: int) -> None:
        c = consumers[i]
        k = 1
        try:   # warm-up: FindCoordinator and the coordinator connection
            c.commit(offsets=[TopicPartition(topic, 0, k)], asynchronous=False)
            warm_ok[i] = True
        except KafkaException as e:
            first_err.append(str(e))
        try:
            start.wait(timeout=60.0)
        except threading.BrokenBarrierError:
            return
        while not stop.is_set():
            k += 1
            try:
                c0 = time.perf_counter()
                c.commit(offsets=[TopicPartition(topic, 0, k)], asynchronous=False)
                if not stop.is_set():
                    counts[i] += 1
                    lat_ms[i].append((time.perf_counter() - c0) * 1000)
                last[i] = k
            except KafkaException as e:
                errs[i] += 1
                if not first_err:
                    first_err.append(str(e))

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(groups)]
    try:
        for t in threads:
            t.start()
        try:
            start.wait(timeout=60.0)
        except threading.BrokenBarrierError:
            raise WorkloadError("warm-up commits did not finish within 60 s") from None
        if not any(warm_ok):
            raise WorkloadError(f"OffsetCommit failed: {first_err[:1]}")
        cpu0 = _cpu_seconds(broker_pid) if broker_pid else 0.0
        t0 = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        elapsed = time.perf_counter() - t0
        cpu = _cpu_seconds(broker_pid) - cpu0 if broker_pid else float("nan")
        end = time.monotonic() + 20.0
        for t in threads:
            t.join(timeout=max(0.0, end - time.monotonic()))
        # Check (untimed) that a sample of groups reads back its last commit.
        bad = 0
        for i in range(0, groups, max(1, groups // 5)):
            if last[i]:
                got = consumers[i].committed([TopicPartition(topic, 0)], timeout=10.0)[0].offset
                bad += got != last[i]
        total = sum(counts)
        note = ""
        if sum(errs):
            note = f"{sum(errs)} commit errors (first: {first_err[:1]})"
        if bad:
            note += f" {bad} sampled groups read back a different offset"
        pooled = sorted(x for xs in lat_ms for x in xs)
        p50, p99 = (_percentile(pooled, 50), _percentile(pooled, 99)) if pooled else (float("nan"),) * 2
        return CommitRate(total / elapsed, total, sum(errs), note.strip(), p50, p99,
                          cpu / total * 1e6 if total else float("nan"))
    finally:
        stop.set()
        _close_all(consumers)


@dataclass
class TxnRate:
    per_second: float
    count: int
    p50_ms: float
    p99_ms: float
    note: str = ""
    broker_cpu_us: float = float("nan")   # broker CPU per transaction over the timed window


def transaction_rate(bootstrap: str, topic: str, seconds: float, records: int = 10,
                     min_count: int = 0, max_seconds: float = 120.0, clients: int = 1,
                     broker_pid: int | None = None) -> TxnRate:
    """``clients`` transactional producers (one thread and transactional.id each) committing
    transactions of `records` 1 KB records in a loop for `seconds`, or longer until
    `min_count` transactions are done (never past `max_seconds`). Producers are initialised
    (InitProducerId) and have done one transaction before the clock starts. EndTxn latency is
    the commit call alone, timed after the records were flushed; all producers pooled. With
    ``broker_pid`` the broker process' CPU time over the timed window is reported per transaction."""
    pad = _payload()
    producers = [Producer({**_base(bootstrap), "transactional.id": f"bench-txn-{i}-{uuid.uuid4().hex[:8]}",
                           "linger.ms": 0, "transaction.timeout.ms": 60000}, logger=RDK_LOG)
                 for i in range(clients)]
    start = threading.Barrier(clients + 1)
    stop = threading.Event()
    commits: list[list[float]] = [[] for _ in range(clients)]
    failures: list[str] = []

    def one(p: Producer) -> float:
        p.begin_transaction()
        for _ in range(records):
            p.produce(topic, pad)
        p.flush(30)
        c0 = time.perf_counter()
        p.commit_transaction(30)
        return (time.perf_counter() - c0) * 1000

    def work(i: int) -> None:
        p = producers[i]
        try:
            p.init_transactions(30)
            one(p)                                     # warm-up: coordinator and partition leader
        except KafkaException as e:
            failures.append(str(e))
            start.abort()
            return
        try:
            start.wait(timeout=120.0)
        except threading.BrokenBarrierError:
            return
        try:
            while not stop.is_set():
                ms = one(p)
                if not stop.is_set():
                    commits[i].append(ms)
        except KafkaException as e:
            failures.append(str(e))

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    try:
        start.wait(timeout=120.0)
    except threading.BrokenBarrierError:
        stop.set()
        return TxnRate(0.0, 0, 0.0, 0.0, f"transactions failed: {failures[:1] or 'warm-up timed out'}")
    cpu0 = _cpu_seconds(broker_pid) if broker_pid else 0.0
    t0 = time.perf_counter()
    deadline, cap = t0 + seconds, t0 + max(seconds, max_seconds)
    while time.perf_counter() < deadline or (
            sum(map(len, commits)) < min_count and time.perf_counter() < cap and not failures):
        time.sleep(0.01)
    stop.set()
    elapsed = time.perf_counter() - t0
    cpu = _cpu_seconds(broker_pid) - cpu0 if broker_pid else float("nan")
    end = time.monotonic() + 60.0
    for t in threads:
        t.join(timeout=max(0.0, end - time.monotonic()))
    pooled = sorted(x for xs in commits for x in xs)
    if failures and not pooled:
        return TxnRate(0.0, 0, 0.0, 0.0, f"transactions failed: {failures[0]}")
    note = f"{len(failures)} producers failed (first: {failures[0]})" if failures else ""
    if not pooled:
        return TxnRate(0.0, 0, 0.0, 0.0, note or "no transaction completed")
    return TxnRate(len(pooled) / elapsed, len(pooled), _percentile(pooled, 50), _percentile(pooled, 99),
                   note, cpu / len(pooled) * 1e6)


# --------------------------------------------------------------------------------------------
# KIP-848: ConsumerGroupHeartbeat rate per broker CPU second
# --------------------------------------------------------------------------------------------

@dataclass
class HeartbeatRate:
    per_second: float
    per_cpu_second: float
    heartbeats: int
    note: str = ""


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    import os
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def heartbeat_rate(bootstrap: str, broker_pid: int, topic: str, members: int, seconds: float) -> HeartbeatRate:
    """``members`` KIP-848 members (one connection each, raw ConsumerGroupHeartbeat v1 built with
    the project's message classes) join one group, then heartbeat back to back at their current
    epoch for ``seconds``; the figure is heartbeats answered per second and per second of the
    broker's CPU time (its process' user+system time over the same window)."""
    import socket
    from protocol.messages import REQUESTS, RESPONSES
    host, _, port = bootstrap.rpartition(":")
    Req, Resp = REQUESTS[68], RESPONSES[68]
    group = f"bench-hb-{uuid.uuid4().hex[:8]}"
    socks = [socket.create_connection((host, int(port)), timeout=10) for _ in range(members)]
    corr = 0

    def call(sock: socket.socket, **fields: object) -> object:
        nonlocal corr
        corr += 1
        req = Req(**fields)
        req.with_header(correlation_id=corr, client_id="bench-hb")
        sock.sendall(bytes(req.encode(version=1, header=True, framed=True)))
        size = struct.unpack(">i", _recv(sock, 4))[0]
        return Resp.decode(_recv(sock, size), version=1, header=True)

    try:
        state = []
        for i, s in enumerate(socks):
            r = call(s, group_id=group, member_id=f"m{i}", member_epoch=0, rebalance_timeout_ms=30000,
                     subscribed_topic_names=[topic], topic_partitions=[])
            if r.error_code:
                return HeartbeatRate(float("nan"), float("nan"), 0, f"join failed with error {r.error_code}")
            state.append([r.member_epoch, []])
        n = 0
        cpu0, t0 = _cpu_seconds(broker_pid), time.perf_counter()
        end = t0 + seconds
        while time.perf_counter() < end:
            for i, s in enumerate(socks):
                epoch, owned = state[i]
                r = call(s, group_id=group, member_id=f"m{i}", member_epoch=epoch, topic_partitions=owned)
                if r.error_code:
                    return HeartbeatRate(float("nan"), float("nan"), n, f"heartbeat error {r.error_code}")
                state[i][0] = r.member_epoch
                if r.assignment is not None:
                    state[i][1] = [Req.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
                                   for tp in r.assignment.topic_partitions]
                n += 1
        elapsed, cpu = time.perf_counter() - t0, _cpu_seconds(broker_pid) - cpu0
        return HeartbeatRate(n / elapsed, n / cpu if cpu > 0 else float("nan"), n)
    finally:
        for s in socks:
            s.close()


def _recv(sock: object, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))  # type: ignore[attr-defined]
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)
