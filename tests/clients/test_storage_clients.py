"""Retention, DeleteRecords, compaction and timestamp lookups seen through real clients against a
broker process: kafka-python (producer, consumer, admin), confluent-kafka, and the Java client
(kafka-clients 4.3.0 ``consume-assign``) for compacted topics.

The broker runs with short check intervals (``log.retention.check.interval.ms``,
``log.cleaner.backoff.ms``); time-based retention is driven by record timestamps (Kafka compares
a segment's largest record timestamp with the clock), so nothing sleeps for long.
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from broker.testing import SamsaBroker, running_broker
from protocol import records as rb
from protocol.errors import ErrorCode
from tests.support.javaclient import java_available, last, of_type, run_java
from tests.support.rawclient import RawClient
from tests.support.wire import fetch, list_offset

OVERRIDES = {"log.retention.check.interval.ms": "100", "log.cleaner.backoff.ms": "100",
             "offsets.topic.num.partitions": "2", "group.initial.rebalance.delay.ms": "0"}
HOUR = 3_600_000
JAVA_VERSION = "4.3.0"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("storage") / "data", overrides=OVERRIDES) as b:
        yield b


@pytest.fixture
def admin(broker: SamsaBroker) -> Iterator[KafkaAdminClient]:
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        yield a
    finally:
        a.close()


def new_topic(admin: KafkaAdminClient, prefix: str, partitions: int = 1, **configs: Any) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, partitions, 1,
                                  topic_configs={k.replace("_", "."): str(v) for k, v in configs.items()})])
    return name


def produce(broker: SamsaBroker, topic: str, records: list[tuple[bytes | None, bytes | None]],
            timestamp_ms: int | None = None, **cfg: Any) -> list[int]:
    cfg.setdefault("batch_size", 512)   # small batches, so segments roll
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=0, **cfg)
    try:
        futures = [p.send(topic, key=k, value=v, partition=0, timestamp_ms=timestamp_ms) for k, v in records]
        p.flush(30)
        return [f.get(10).offset for f in futures]
    finally:
        p.close()


def read_partition(broker: SamsaBroker, topic: str, start: int | None = None,
                   reset: str = "earliest") -> list[tuple[int, bytes | None, bytes | None]]:
    """Everything a kafka-python consumer gets from ``start`` (or the beginning) to the end."""
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, auto_offset_reset=reset,
                      enable_auto_commit=False, consumer_timeout_ms=3000)
    try:
        c.assign([tp])
        end = c.end_offsets([tp])[tp]
        if start is None:
            c.seek_to_beginning(tp)
        else:
            c.seek(tp, start)
        out = []
        deadline = time.monotonic() + 30
        while c.position(tp) < end and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=500).values():
                out.extend((r.offset, r.key, r.value) for r in records)
        assert c.position(tp) >= end, "consumer did not reach the end of the partition"
        return out
    finally:
        c.close()


def confluent_read(broker: SamsaBroker, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    """The whole partition as librdkafka (confluent-kafka) reads it: every codec supported."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CTP
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "storage-reader",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        _, high = c.get_watermark_offsets(CTP(topic, 0), timeout=10)
        c.assign([CTP(topic, 0, OFFSET_BEGINNING)])
        out = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191 and (not out or out[-1][0] >= high - 1 or m.offset() >= high):
                    break   # _PARTITION_EOF at the high watermark
                continue
            out.append((m.offset(), m.key(), m.value()))
        return out
    finally:
        c.close()


def wait_for(check, timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def earliest(broker: SamsaBroker, topic: str) -> int:
    with RawClient(broker.bootstrap_servers) as c:
        return list_offset(c, topic, -2).offset


# -- retention ------------------------------------------------------------------------------

def test_retention_ms_deletes_old_segments_and_consumers_reset(broker: SamsaBroker, admin: KafkaAdminClient):
    topic = new_topic(admin, "ret-ms", retention_ms=HOUR, segment_bytes=2048)
    now = int(time.time() * 1000)
    old = produce(broker, topic, [(b"k", b"old-%d" % i + b"." * 100) for i in range(60)], timestamp_ms=now - 2 * HOUR)
    new = produce(broker, topic, [(b"k", b"new-%d" % i) for i in range(10)], timestamp_ms=now)
    assert old == list(range(60)) and new == list(range(60, 70))
    start = wait_for(lambda: earliest(broker, topic), what="retention to delete segments")
    assert 0 < start <= 60
    wait_for(lambda: earliest(broker, topic) == start and time.sleep(0.3) is None and earliest(broker, topic) == start)
    with RawClient(broker.bootstrap_servers) as c:
        assert fetch(c, topic, 0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert fetch(c, topic, start).error_code == 0
    got = read_partition(broker, topic, start=0, reset="earliest")   # below the start: auto.offset.reset
    assert [o for o, _, _ in got] == list(range(start, 70))
    assert [v for _, _, v in got][-10:] == [b"new-%d" % i for i in range(10)]


def test_retention_bytes_keeps_the_partition_near_its_limit(broker: SamsaBroker, admin: KafkaAdminClient):
    topic = new_topic(admin, "ret-bytes", retention_bytes=6000, segment_bytes=2048)
    produce(broker, topic, [(b"k", b"x" * 150) for _ in range(100)])
    part_dir = broker.data_dir / f"{topic}-0"

    def size() -> int:
        return sum(f.stat().st_size for f in part_dir.glob("*.log"))
    wait_for(lambda: size() <= 6000 + 2048, what="size retention")
    time.sleep(0.3)                     # a few more checks change nothing: Kafka keeps >= retention.bytes
    assert 6000 <= size() <= 6000 + 2048
    start = earliest(broker, topic)
    assert start > 0
    got = read_partition(broker, topic, start=0, reset="earliest")
    assert got[0][0] == start and got[-1][0] == 99


def test_deleted_segments_wait_file_delete_delay_ms_renamed_then_go(broker: SamsaBroker, admin: KafkaAdminClient):
    """Kafka's asynchronous segment deletion: retention renames a segment's files *.deleted at
    once (it is gone from the log) and removes them file.delete.delay.ms later; with 0 they
    go at once."""
    delayed = new_topic(admin, "del-delay", retention_bytes=3000, segment_bytes=2048, file_delete_delay_ms=1500)
    at_once = new_topic(admin, "del-now", retention_bytes=3000, segment_bytes=2048, file_delete_delay_ms=0)
    for topic in (delayed, at_once):
        produce(broker, topic, [(b"k", b"x" * 150) for _ in range(60)])
    slow_dir, fast_dir = broker.data_dir / f"{delayed}-0", broker.data_dir / f"{at_once}-0"
    renamed = wait_for(lambda: sorted(p.name for p in slow_dir.glob("*.deleted")), what="renamed segment files")
    t_seen = time.monotonic()
    assert any(n.endswith(".log.deleted") for n in renamed)
    assert earliest(broker, delayed) > 0
    with RawClient(broker.bootstrap_servers) as c:
        assert fetch(c, delayed, 0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    wait_for(lambda: earliest(broker, at_once) > 0, what="retention on the other topic")
    assert list(fast_dir.glob("*.deleted")) == []
    wait_for(lambda: not any(slow_dir.glob("*.deleted")), timeout=10, what="delayed removal")
    assert time.monotonic() - t_seen > 0.5          # not removed with the rename
    assert len(list(slow_dir.glob("*.log"))) >= 1


def test_delete_records_then_consumer_below_the_start_resets(broker: SamsaBroker, admin: KafkaAdminClient):
    topic = new_topic(admin, "delrec", segment_bytes=1024)
    produce(broker, topic, [(b"k", b"v%d" % i + b"." * 60) for i in range(50)])
    segments_before = len(list((broker.data_dir / f"{topic}-0").glob("*.log")))
    result = admin.delete_records({TopicPartition(topic, 0): 37})
    assert result[TopicPartition(topic, 0)]["low_watermark"] == 37
    assert earliest(broker, topic) == 37
    assert len(list((broker.data_dir / f"{topic}-0").glob("*.log"))) < segments_before
    got = read_partition(broker, topic, start=5, reset="earliest")
    assert [o for o, _, _ in got] == list(range(37, 50))
    latest = read_partition(broker, topic, start=5, reset="latest")
    assert latest == []


# -- compaction -------------------------------------------------------------------------------

COMPACTED = dict(cleanup_policy="compact", segment_bytes=2048, min_cleanable_dirty_ratio=0.01,
                 delete_retention_ms=1500)


def expected_state(records: list[tuple[int, bytes | None, bytes | None]]) -> dict[bytes, bytes | None]:
    state: dict[bytes, bytes | None] = {}
    for _, k, v in records:
        state[k] = v
    return state


def cleaned_once(broker: SamsaBroker, topic: str, n: int = 1) -> bool:
    """The broker logged at least ``n`` cleaning passes over the topic's partition 0."""
    return sum(1 for line in broker.read_log().splitlines()
               if "log cleaned" in line and f"partition={topic}-0 " in line + " ") >= n


def passes(broker: SamsaBroker, topic: str) -> int:
    return sum(1 for line in broker.read_log().splitlines()
               if "log cleaned" in line and f"partition={topic}-0 " in line + " ")


def wait_cleaned_and_settled(broker: SamsaBroker, topic: str, quiet_s: float = 1.0) -> None:
    """At least one cleaning pass, then none for ``quiet_s`` (the cleaner backs off 100 ms), so
    every client below reads the same log."""
    wait_for(lambda: cleaned_once(broker, topic), what="the cleaner")
    seen, since = passes(broker, topic), time.monotonic()
    deadline = since + 30
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.1)
        now = passes(broker, topic)
        if now != seen:
            seen, since = now, time.monotonic()


def java_read(broker: SamsaBroker, topic: str) -> list[tuple[int, str | None, str | None]]:
    lines = run_java(JAVA_VERSION, broker.bootstrap_servers, "consume-assign", "--topic", topic,
                     "--from", "earliest", "--to", "latest", "--timeout-ms", "20000")
    return [(r["offset"], r["key"], r["value"]) for r in of_type(lines, "record")]


def test_compaction_keeps_the_last_value_per_key_and_drops_tombstones(broker: SamsaBroker, admin: KafkaAdminClient):
    topic = new_topic(admin, "compact", **COMPACTED)
    writes = [(b"key-%02d" % (i % 20), b"value-%d" % i + b"." * 40) for i in range(400)]
    writes += [(b"key-%02d" % k, None) for k in (3, 7, 11)]          # tombstones
    writes += [(b"pad", b"p" * 60) for _ in range(40)]               # roll past them
    offsets = produce(broker, topic, writes)
    assert offsets == list(range(len(writes)))
    produced = [(o, k, v) for o, (k, v) in zip(offsets, writes)]
    wait_cleaned_and_settled(broker, topic)
    got = read_partition(broker, topic)
    active_base = max(int(p.stem) for p in (broker.data_dir / f"{topic}-0").glob("*.log"))
    cleaned = [r for r in got if r[0] < active_base]
    keys = [k for _, k, _ in cleaned]
    assert len(keys) == len(set(keys))                               # one record per key below the active segment
    assert expected_state(got) == expected_state(produced)           # same state as the full history
    assert [(k, v) for _, k, v in got if k in (b"key-03", b"key-07", b"key-11")] == \
        [(b"key-03", None), (b"key-07", None), (b"key-11", None)]    # tombstones kept for delete.retention.ms
    for o, k, v in got:                                              # offsets preserved
        assert produced[o] == (o, k, v)
    if java_available():
        assert java_read(broker, topic) == [(o, k.decode(), v.decode() if v is not None else None) for o, k, v in got]
    # after delete.retention.ms a later cleaning removes the tombstones
    time.sleep(1.6)
    produce(broker, topic, [(b"pad", b"q" * 60) for _ in range(40)])
    wait_for(lambda: not [r for r in read_partition(broker, topic) if r[2] is None], timeout=20,
             what="tombstones to go")
    got = read_partition(broker, topic)
    assert not {b"key-03", b"key-07", b"key-11"} & {k for _, k, _ in got}
    state = expected_state(produced)
    assert {k: v for _, k, v in got if k != b"pad"} == {k: v for k, v in state.items() if v is not None and k != b"pad"}


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compacted_compressed_topic_read_by_java_and_kafka_python(broker: SamsaBroker, admin: KafkaAdminClient,
                                                                   codec: str):
    from confluent_kafka import Producer
    topic = new_topic(admin, f"cc-{codec}", **COMPACTED)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "compression.type": codec, "linger.ms": 5,
                  "batch.num.messages": 10, "enable.idempotence": True})
    for i in range(300):
        p.produce(topic, key=b"k%02d" % (i % 15), value=b"%s-%d" % (codec.encode(), i) + b"!" * 30, partition=0)
        if i % 10 == 9:
            p.flush(10)
    p.flush(10)
    wait_cleaned_and_settled(broker, topic)
    got = confluent_read(broker, topic)
    assert {k: v for _, k, v in got} == {b"k%02d" % k: b"%s-%d" % (codec.encode(), 285 + k) + b"!" * 30
                                         for k in range(15)}
    assert len(got) < 300
    if codec == "gzip":   # the only codec kafka-python has here without extra libraries
        assert read_partition(broker, topic) == got
    if java_available():
        assert java_read(broker, topic) == [(o, k.decode(), v.decode()) for o, k, v in got]


def test_consumer_offsets_are_compacted_and_survive_restart(tmp_path: Path):
    b = SamsaBroker(tmp_path / "data", overrides=dict(OVERRIDES, **{"offsets.topic.segment.bytes": "4096"})).start()
    try:
        topic = f"co-{uuid.uuid4().hex[:6]}"
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        a.create_topics([NewTopic(topic, 1, 1)])
        a.close()
        produce(b, topic, [(b"k", b"v")] * 5)
        from kafka.structs import OffsetAndMetadata
        c = KafkaConsumer(bootstrap_servers=b.bootstrap_servers, group_id="storage-group", enable_auto_commit=False)
        tp = TopicPartition(topic, 0)
        for i in range(400):
            c.commit({tp: OffsetAndMetadata(i % 5 + 1, "m%d" % i, -1)})
        c.close()
        wait_for(lambda: "__consumer_offsets" in b.read_log() and "log cleaned" in b.read_log(), timeout=20,
                 what="__consumer_offsets cleaned")
        offsets_dirs = list(b.data_dir.glob("__consumer_offsets-*"))
        size = sum(f.stat().st_size for d in offsets_dirs for f in d.glob("*.log"))
        assert size < 400 * 60                                 # far less than 400 commit records
        b.kill()
        b.start()
        c = KafkaConsumer(bootstrap_servers=b.bootstrap_servers, group_id="storage-group", enable_auto_commit=False)
        committed = c.committed(tp, metadata=True)
        c.close()
        assert (committed.offset, committed.metadata) == (400 % 5 or 5, "m399")
    finally:
        b.stop()


# -- timestamps -------------------------------------------------------------------------------

def test_list_offsets_by_timestamp_exact_across_segments_and_restarts(tmp_path: Path):
    b = SamsaBroker(tmp_path / "data").start()
    try:
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)
        topic = f"ts-{uuid.uuid4().hex[:6]}"
        a.create_topics([NewTopic(topic, 1, 1, topic_configs={"segment.bytes": "1024"})])
        a.close()
        base = 1_700_000_000_000
        for i in range(60):
            produce(b, topic, [(b"k", b"v%d" % i + b"-" * 40)], timestamp_ms=base + i * 10)
        assert len(list((b.data_dir / f"{topic}-0").glob("*.log"))) > 3

        def lookups() -> list[tuple[int, int]]:
            c = KafkaConsumer(bootstrap_servers=b.bootstrap_servers)
            tp = TopicPartition(topic, 0)
            out = []
            for target in (base - 5, base, base + 1, base + 255, base + 590, base + 591):
                r = c.offsets_for_times({tp: target})[tp]
                out.append((r.offset, r.timestamp) if r else (-1, -1))
            c.close()
            return out
        want = [(0, base), (0, base), (1, base + 10), (26, base + 260), (59, base + 590), (-1, -1)]
        assert lookups() == want
        b.restart()                                    # clean: indexes loaded from the files
        assert "rebuilding segment index" not in b.read_log()
        assert lookups() == want
        b.kill()
        b.start()                                      # unclean: the last segment is walked again
        assert lookups() == want
    finally:
        b.stop()


def test_empty_batch_kept_for_an_idempotent_producer_is_skipped_by_every_client(broker: SamsaBroker,
                                                                                admin: KafkaAdminClient):
    """All records of an idempotent producer's last batch are superseded: the cleaner keeps the
    batch, empty, for its sequence numbers (Kafka's rule); consumers must step over it."""
    from confluent_kafka import Producer
    topic = new_topic(admin, "empty-batch", **COMPACTED)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True, "linger.ms": 50})
    for k in range(10):
        p.produce(topic, key=b"k%d" % k, value=b"idempotent", partition=0)
    p.flush(10)
    del p
    produce(broker, topic, [(b"k%d" % k, b"plain-%d" % k + b"." * 40) for k in range(10)] +
            [(b"pad", b"x" * 60) for _ in range(60)])
    wait_cleaned_and_settled(broker, topic)
    with RawClient(broker.bootstrap_servers) as c:
        first = rb.parse_header(fetch(c, topic, 0).records)
        assert first.record_count == 0 and first.producer_id >= 0   # the kept, empty batch
    want = [(k, v) for _, k, v in read_partition(broker, topic)]
    assert [k for k, _ in want[:10]] == [b"k%d" % k for k in range(10)]
    assert all(v.startswith(b"plain") for _, v in want[:10])
    assert [(k, v) for _, k, v in confluent_read(broker, topic)] == want
    if java_available():
        assert [(k, v) for _, k, v in java_read(broker, topic)] == [(k.decode(), v.decode()) for k, v in want]
