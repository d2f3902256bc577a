"""The workloads of a Jepsen-style run, each a thread driving a real client (librdkafka through
confluent-kafka) and recording in the History what it sent and what it was told:

- ``IdempotentProducer``: acks=all, enable.idempotence; every value is ``idem|<producer>|<seq>``
  and goes to the producer's own partition, so "in order per producer" is the partition's order.
- ``TransactionalProducer``: atomic pairs ``txn|<n>|a`` / ``txn|<n>|b`` to partitions 0 and 1 of
  one topic; a seeded share is aborted on purpose. Each transaction ends as ``committed`` (commit
  answered), ``aborted`` (abort answered) or ``unknown`` (the client could not say).
- ``GroupConsumer``: a read_committed consumer group member reading every workload topic and
  committing its positions synchronously about once a second; each read and each acknowledged
  commit is recorded.

Values are ASCII so the history and the checker can show them as they are.
"""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from .history import History

IDEM_PREFIX = "idem"
TXN_PREFIX = "txn"


def idem_value(producer: str, seq: int) -> bytes:
    return f"{IDEM_PREFIX}|{producer}|{seq:07d}".encode()


def txn_value(n: int, side: str) -> bytes:
    return f"{TXN_PREFIX}|{n:06d}|{side}".encode()


JAVA_RUN_STRIDE = 1_000_000     # the Java producer's run r writes values v-<r * stride + seq>


def parse_value(value: bytes | None) -> tuple[str, str, int] | None:
    """("idem", producer, seq) or ("txn", side, n) for a workload's value, else None. The Java
    client's values are ``v-<i>`` (tests/support/java/SamsaJavaClient.java): producer ``j<run>``."""
    if not value:
        return None
    if value.startswith(b"v-") and value[2:].isdigit():
        i = int(value[2:])
        return IDEM_PREFIX, f"j{i // JAVA_RUN_STRIDE}", i % JAVA_RUN_STRIDE
    parts = value.decode(errors="replace").split("|")
    if len(parts) == 3 and parts[0] == IDEM_PREFIX and parts[2].isdigit():
        return IDEM_PREFIX, parts[1], int(parts[2])
    if len(parts) == 3 and parts[0] == TXN_PREFIX and parts[1].isdigit():
        return TXN_PREFIX, parts[2], int(parts[1])
    return None


class Workload(threading.Thread):
    """A daemon thread that runs ``step()`` until stopped; an exception that escapes is kept and
    recorded (the checker reports it), never swallowed."""

    def __init__(self, name: str, history: History) -> None:
        super().__init__(name=name, daemon=True)
        self.history = history
        self.stopping = threading.Event()
        self.crashed: BaseException | None = None

    def run(self) -> None:
        try:
            self.setup()
            while not self.stopping.is_set():
                self.step()
            self.finish()
        except BaseException as exc:  # noqa: BLE001 (kept for the checker)
            self.crashed = exc
            self.history.add(self.name, "crashed", error=repr(exc))

    def setup(self) -> None:
        pass

    def step(self) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        pass

    def stop(self, timeout: float) -> None:
        self.stopping.set()
        self.join(timeout)
        if self.is_alive():
            self.history.add(self.name, "stop-timeout", timeout=timeout)


class IdempotentProducer(Workload):
    """acks=all idempotent librdkafka producer writing ``burst`` records every ``interval`` s."""

    def __init__(self, name: str, history: History, bootstrap: str, topic: str, partition: int,
                 burst: int = 5, interval: float = 0.1) -> None:
        super().__init__(name, history)
        self.topic, self.partition, self.burst, self.interval = topic, partition, burst, interval
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 180000, "request.timeout.ms": 10000,
                                  "topic.metadata.refresh.interval.ms": 1000, "retry.backoff.ms": 100,
                                  "client.id": name, "log_level": 2})
        self.seq = 0
        self.acked = 0

    def _report(self, err: KafkaError | None, msg: Any) -> None:
        seq = int(msg.value().decode().split("|")[2])
        if err is None:
            self.acked += 1
            self.history.add(self.name, "ack", seq=seq, topic=msg.topic(), partition=msg.partition(),
                             offset=msg.offset(), value=msg.value().decode())
        else:
            self.history.add(self.name, "fail", seq=seq, error=str(err), fatal=err.fatal())

    def step(self) -> None:
        for _ in range(self.burst):
            value = idem_value(self.name, self.seq)
            while True:
                try:
                    self.producer.produce(self.topic, value=value, partition=self.partition, on_delivery=self._report)
                    break
                except BufferError:     # the local queue is full while the cluster heals
                    self.producer.poll(0.1)
            self.history.add(self.name, "send", seq=self.seq)
            self.seq += 1
        self.producer.poll(self.interval)

    def finish(self) -> None:
        left = self.producer.flush(180)
        self.history.add(self.name, "flushed", unacknowledged=left, sent=self.seq, acked=self.acked)


class JavaIdempotentProducer(Workload):
    """The Java client (kafka-clients ``version``), acks=all and idempotent, one JVM after another
    (tests/support/javaclient.py), each writing ``count`` records to partition 0 of ``topic``: run
    ``r`` is producer ``j<r>``. Acknowledgements arrive when the JVM ends (it prints them then),
    so its records count for the checker's rules but not for the recovery times."""

    def __init__(self, name: str, history: History, bootstrap: str, topic: str, version: str = "4.3.0",
                 count: int = 400) -> None:
        super().__init__(name, history)
        self.bootstrap, self.topic, self.version, self.count = bootstrap, topic, version, count
        self.runs = 0

    def step(self) -> None:
        from tests.support.javaclient import of_type, start_java

        r = self.runs
        self.runs += 1
        producer = f"j{r}"
        start = r * JAVA_RUN_STRIDE
        for j in range(self.count):
            self.history.add(producer, "send", seq=j)
        proc = start_java(self.version, self.bootstrap, "produce", "--topic", self.topic, "--count", self.count,
                          "--start", start, "--partitions", 1, "--acks", "all", "--idempotent", "true",
                          "--linger-ms", 5, "--print-records", "--client-id", f"{self.name}-{producer}",
                          "--prop", "delivery.timeout.ms=180000", "--prop", "max.block.ms=60000",
                          "--prop", "metadata.max.age.ms=1000")
        lines = proc.result(timeout=240, allow_errors=True)
        acks = of_type(lines, "ack")
        for ln in acks:
            seq = int(ln["i"]) - start
            if ln["ok"]:
                self.history.add(producer, "ack", seq=seq, topic=self.topic, partition=ln["partition"],
                                 offset=ln["offset"], value=f"v-{ln['i']}", late=True)
            else:
                self.history.add(producer, "fail", seq=seq, error="not acknowledged")
        self.history.add(self.name, "java-run", producer=producer, acked=sum(1 for ln in acks if ln["ok"]),
                         lines=len(lines), errors=[ln for ln in lines if ln.get("type") == "error"][:3],
                         returncode=proc.proc.returncode)


class TransactionalProducer(Workload):
    """Atomic pairs to partitions 0 and 1 of ``topic``; ``abort_share`` of them aborted on purpose
    (decided by ``rng``, which the seed makes)."""

    def __init__(self, name: str, history: History, bootstrap: str, topic: str, transactional_id: str,
                 rng: random.Random, abort_share: float = 0.2, interval: float = 0.2) -> None:
        super().__init__(name, history)
        self.bootstrap, self.topic, self.transactional_id = bootstrap, topic, transactional_id
        self.rng, self.abort_share, self.interval = rng, abort_share, interval
        self.producer: Producer | None = None
        self.n = 0
        self.outcomes: dict[str, int] = {"committed": 0, "aborted": 0, "unknown": 0}

    def _new_producer(self) -> None:
        """A (new) producer with the same transactional id: init_transactions fences the old one
        and finishes whatever it left open."""
        while not self.stopping.is_set():
            p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.transactional_id,
                          "acks": "all", "enable.idempotence": True, "linger.ms": 1,
                          "transaction.timeout.ms": 20000, "message.timeout.ms": 15000,
                          "request.timeout.ms": 10000, "topic.metadata.refresh.interval.ms": 1000,
                          "client.id": self.name, "log_level": 2})
            try:
                p.init_transactions(30)
            except KafkaException as exc:
                self.history.add(self.name, "init-failed", error=str(exc.args[0]))
                continue
            self.producer = p
            self.history.add(self.name, "init")
            return

    def setup(self) -> None:
        self._new_producer()

    def _end(self, n: int, outcome: str, **fields: Any) -> None:
        self.outcomes[outcome] += 1
        self.history.add(self.name, "txn-" + outcome, n=n, **fields)

    def _abort(self, n: int, why: str) -> None:
        assert self.producer is not None
        try:
            self.producer.abort_transaction(30)
            self._end(n, "aborted", why=why)
        except KafkaException as exc:
            self._end(n, "unknown", why=why, error=f"abort: {exc.args[0]}")
            self._new_producer()

    def step(self) -> None:
        if self.producer is None:
            return
        p = self.producer
        self.n += 1
        n = self.n
        abort_on_purpose = self.rng.random() < self.abort_share
        try:
            p.begin_transaction()
        except KafkaException as exc:
            self.history.add(self.name, "begin-failed", n=n, error=str(exc.args[0]))
            self._new_producer()
            return
        self.history.add(self.name, "txn-begin", n=n, abort=abort_on_purpose)
        errors: list[str] = []

        def report(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            self.history.add(self.name, "txn-write", n=n, value=msg.value().decode(), partition=msg.partition(),
                             offset=msg.offset() if err is None else None, error=None if err is None else str(err))

        try:
            for partition, side in ((0, "a"), (1, "b")):
                p.produce(self.topic, value=txn_value(n, side), partition=partition, on_delivery=report)
            left = p.flush(20)
        except KafkaException as exc:
            errors.append(str(exc.args[0]))
            left = -1
        if abort_on_purpose or errors or left:
            self._abort(n, "on purpose" if abort_on_purpose else f"write failed: {errors or left}")
        else:
            for attempt in range(3):
                try:
                    p.commit_transaction(30)
                    self._end(n, "committed", attempts=attempt + 1)
                    break
                except KafkaException as exc:
                    err = exc.args[0]
                    if err.retriable() and attempt < 2:
                        continue
                    if err.txn_requires_abort():
                        self._abort(n, f"commit: {err}")
                    else:
                        self._end(n, "unknown", error=f"commit: {err}")
                        self._new_producer()
                    break
        self.stopping.wait(self.interval)


class GroupConsumer(Workload):
    """A read_committed member of ``group`` reading ``topics`` and committing synchronously."""

    def __init__(self, name: str, history: History, bootstrap: str, group: str, topics: Iterable[str],
                 commit_interval: float = 1.0) -> None:
        super().__init__(name, history)
        self.topics = list(topics)
        self.commit_interval = commit_interval
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                                  "heartbeat.interval.ms": 1000, "topic.metadata.refresh.interval.ms": 1000,
                                  "client.id": name, "log_level": 2})
        self.read_values: set[bytes] = set()
        self.positions: dict[tuple[str, int], int] = {}
        self._last_commit = time.monotonic()

    def setup(self) -> None:
        self.consumer.subscribe(self.topics, on_assign=lambda c, ps: self.history.add(
            self.name, "assigned", partitions=[(p.topic, p.partition) for p in ps]))

    def step(self) -> None:
        for m in self.consumer.consume(200, 0.2):
            if m.error() is not None:
                self.history.add(self.name, "poll-error", error=str(m.error()))
                continue
            self.read_values.add(m.value())
            self.positions[(m.topic(), m.partition())] = m.offset() + 1
            self.history.add(self.name, "read", topic=m.topic(), partition=m.partition(), offset=m.offset(),
                             value=m.value().decode(errors="replace"))
        if time.monotonic() - self._last_commit >= self.commit_interval:
            self.commit()

    def commit(self) -> None:
        self._last_commit = time.monotonic()
        if not self.positions:
            return
        attempted = {f"{t}-{p}": off for (t, p), off in self.positions.items()}
        try:
            result = self.consumer.commit(asynchronous=False)
        except KafkaException as exc:   # its outcome is unknown: the coordinator may have written it
            self.history.add(self.name, "commit-failed", error=str(exc.args[0]), attempted=attempted)
            return
        ok = {f"{tp.topic}-{tp.partition}": tp.offset for tp in result or [] if tp.error is None and tp.offset >= 0}
        bad = {f"{tp.topic}-{tp.partition}": str(tp.error) for tp in result or [] if tp.error is not None}
        self.history.add(self.name, "commit", offsets=ok, errors=bad)

    def finish(self) -> None:
        self.commit()
        self.consumer.close()
        self.history.add(self.name, "closed")


class KafkaPythonGroupConsumer(Workload):
    """The same reader as ``GroupConsumer`` on kafka-python (its own group): issue 20 saw a
    kafka-python group read nothing for a minute after leader kills."""

    def __init__(self, name: str, history: History, bootstrap: str, group: str, topics: Iterable[str],
                 commit_interval: float = 1.0) -> None:
        super().__init__(name, history)
        self.bootstrap, self.group, self.topics = bootstrap, group, list(topics)
        self.commit_interval = commit_interval
        self.consumer: Any = None
        self.read_values: set[bytes] = set()
        self.positions: dict[tuple[str, int], int] = {}
        self._last_commit = time.monotonic()

    def setup(self) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(group_id=self.group, bootstrap_servers=self.bootstrap,
                                      isolation_level="read_committed", enable_auto_commit=False,
                                      auto_offset_reset="earliest", session_timeout_ms=6000,
                                      heartbeat_interval_ms=1000, metadata_max_age_ms=1000,
                                      request_timeout_ms=10000, client_id=self.name)
        # kafka-python 3.0.12 wedges a member whose rejoin was started by a change of its metadata
        # snapshot (not by a rejoin request) when a poll() times out while that JoinGroup/SyncGroup
        # is in flight: the assignment it computed makes the snapshots equal again, so the next
        # poll() sees no rejoin needed, never completes the join and stays REBALANCING with
        # heartbeats off, reading nothing for good (the broker answered both; docs/testing.md).
        # Its first join meets this when it comes before the subscription's first metadata update
        # (snapshot {} at assignment), so wait for that update before the first poll().
        self.consumer.subscribe(self.topics)
        coordinator = self.consumer._coordinator    # the client's own view of the subscription
        deadline = time.monotonic() + 30
        while not all(coordinator._metadata_snapshot.get(t) for t in self.topics):
            if time.monotonic() > deadline:
                raise TimeoutError(f"kafka-python has no metadata of {self.topics}: {coordinator._metadata_snapshot}")
            time.sleep(0.05)

    def step(self) -> None:
        for tp, records in self.consumer.poll(timeout_ms=200, max_records=500).items():
            for m in records:
                self.read_values.add(m.value)
                self.positions[(tp.topic, tp.partition)] = m.offset + 1
                self.history.add(self.name, "read", topic=tp.topic, partition=tp.partition, offset=m.offset,
                                 value=m.value.decode(errors="replace"))
        if time.monotonic() - self._last_commit >= self.commit_interval:
            self.commit()

    def commit(self) -> None:
        from kafka import OffsetAndMetadata, TopicPartition as KTopicPartition
        from kafka.errors import KafkaError as KPError

        self._last_commit = time.monotonic()
        if not self.positions:
            return
        offsets = {KTopicPartition(t, p): OffsetAndMetadata(off, "", -1) for (t, p), off in self.positions.items()
                   if KTopicPartition(t, p) in self.consumer.assignment()}
        if not offsets:
            return
        attempted = {f"{tp.topic}-{tp.partition}": om.offset for tp, om in offsets.items()}
        try:
            self.consumer.commit(offsets)
        except KPError as exc:     # its outcome is unknown
            self.history.add(self.name, "commit-failed", error=repr(exc), attempted=attempted)
            return
        self.history.add(self.name, "commit", offsets={f"{tp.topic}-{tp.partition}": om.offset
                                                       for tp, om in offsets.items()}, errors={})

    def finish(self) -> None:
        self.commit()
        self.consumer.close(autocommit=False)
        self.history.add(self.name, "closed")


def committed_offsets(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> dict[str, int]:
    """What OffsetFetch answers for ``group`` now ("topic-partition" -> offset, -1001 when none)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(t, p) for t, p in partitions], timeout=30)
    finally:
        c.close()
    return {f"{tp.topic}-{tp.partition}": tp.offset for tp in got}


def read_committed_all(bootstrap: str, partitions: list[tuple[str, int]], timeout: float = 90.0
                       ) -> tuple[dict[str, list[tuple[int, bytes]]], list[str]]:
    """A fresh read_committed reader (no group commits) over ``partitions`` from offset 0 until its
    position reaches each partition's high watermark: ("topic-partition" -> [(offset, value)],
    partitions it could not finish within ``timeout``, e.g. a last stable offset that stays behind)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"jepsen-final-{time.monotonic_ns()}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    tps = [TopicPartition(t, p, 0) for t, p in partitions]
    out: dict[str, list[tuple[int, bytes]]] = {f"{t}-{p}": [] for t, p in partitions}
    try:
        high = {f"{t}-{p}": c.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1] for t, p in partitions}
        c.assign(tps)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error() is None:
                    out[f"{m.topic()}-{m.partition()}"].append((m.offset(), m.value()))
            pos = {f"{tp.topic}-{tp.partition}": tp.offset
                   for tp in c.position([TopicPartition(t, p) for t, p in partitions])}
            unfinished = [k for k in high if pos.get(k, -1) < high[k]]
            if not unfinished:
                return out, []
        return out, unfinished
    finally:
        c.close()
