"""confluent-kafka (librdkafka) against a real Samsa broker: exact records, offsets and errors.

Consumers use assign() only: group membership is issue 3's business.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import (OFFSET_END, TIMESTAMP_CREATE_TIME, Consumer, KafkaError, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.support.clienthelpers import (CODECS, OFFSET_OUT_OF_RANGE, PARTITIONS, advertised_apis, all_batches, create_topic, expected_records, fetch_batches, librdkafka_codec_gate, new_topic)

LIBRDKAFKA = tuple(int(x) for x in confluent_kafka.libversion()[0].split("-")[0].split("."))


def producer(bootstrap: str, **conf: Any) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})


def consumer(bootstrap: str, **conf: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": "samsa-confluent-tests",
                     "enable.auto.commit": False, "auto.offset.reset": "error", **conf})


def produce_all(p: Producer, topic: str, records: list, timestamp_base: int | None = None) -> list[tuple[int, int]]:
    """Produce ``expected_records`` rows to their partitions; returns the delivery reports
    (partition, offset) in record order and fails on any delivery error."""
    reports: list[Any] = [None] * len(records)

    def on_delivery(i: int) -> Any:
        def cb(err: KafkaError | None, msg: Any) -> None:
            reports[i] = err if err else (msg.partition(), msg.offset())
        return cb

    for i, (part, _off, key, value, headers) in enumerate(records):
        kw = {"timestamp": timestamp_base + i} if timestamp_base is not None else {}
        while True:
            try:
                p.produce(topic, value=value, key=key, partition=part, headers=headers,
                          on_delivery=on_delivery(i), **kw)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(30) == 0
    errors = [r for r in reports if isinstance(r, KafkaError) or r is None]
    assert not errors, errors[:5]
    return reports


def consume_rows(bootstrap: str, topic: str, count: int, partitions: range = range(PARTITIONS),
                 timeout: float = 20.0, with_ts: bool = False, **conf: Any) -> list:
    """Read exactly ``count`` records from offset 0 of each partition (and make sure no more
    arrive shortly after); rows sorted by (partition, offset)."""
    c = consumer(bootstrap, **conf)
    try:
        c.assign([TopicPartition(topic, p, 0) for p in partitions])
        rows: list = []
        deadline = time.monotonic() + timeout
        while len(rows) < count and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, m.error()
                row = (m.partition(), m.offset(), m.key(), m.value(), m.headers() or [])
                rows.append(row + (m.timestamp(),) if with_ts else row)
        extra = [m for m in c.consume(100, 0.3) if m.error() is None]
        assert not extra, f"{len(extra)} records beyond the expected {count}"
    finally:
        c.close()
    return sorted(rows)


def test_5000_keyed_records_with_headers_over_3_partitions(broker3) -> None:
    topic = new_topic("keyed")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(5000)
    ts0 = int(time.time() * 1000) - 10_000
    p = producer(broker3.bootstrap_servers, acks="all")
    reports = produce_all(p, topic, records, timestamp_base=ts0)
    assert reports == [(part, off) for part, off, *_ in records]

    rows = consume_rows(broker3.bootstrap_servers, topic, 5000, with_ts=True)
    want = sorted((part, off, k, v, h, (TIMESTAMP_CREATE_TIME, ts0 + i))
                  for i, (part, off, k, v, h) in enumerate(records))
    assert rows == want

    c = consumer(broker3.bootstrap_servers)
    try:
        assert [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in range(3)] == \
            [(0, 1667), (0, 1667), (0, 1666)]
    finally:
        c.close()


@pytest.mark.parametrize("codec", list(CODECS))
def test_codec_round_trip(broker3, codec: str, request: pytest.FixtureRequest) -> None:
    topic = new_topic(f"codec-{codec}")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(600, pad=300)
    p = producer(broker3.bootstrap_servers, **{"compression.type": codec, "linger.ms": 50})
    produce_all(p, topic, records)
    assert consume_rows(broker3.bootstrap_servers, topic, 600) == sorted(records)

    batches = [all_batches(broker3.bootstrap_servers, topic, part) for part in range(PARTITIONS)]
    assert all(b.crc_ok for bs in batches for b in bs)
    assert [sum(b.record_count for b in bs) for bs in batches] == [200, 200, 200]
    gate = librdkafka_codec_gate(LIBRDKAFKA, codec, advertised_apis(broker3.bootstrap_servers))
    if gate:
        request.applymarker(pytest.mark.xfail(reason=gate, strict=True))
    # stored as sent: the producer's codec
    assert {b.compression for bs in batches for b in bs} == {CODECS[codec]}


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker3, acks: str) -> None:
    topic = new_topic(f"acks{acks}")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(900)
    p = producer(broker3.bootstrap_servers, acks=acks)
    reports = produce_all(p, topic, records)
    if acks != "0":
        assert reports == [(part, off) for part, off, *_ in records]
    else:
        # no response, so no offsets (librdkafka's OFFSET_INVALID, which the binding gives as None)
        assert {off for _, off in reports} == {None}
    assert consume_rows(broker3.bootstrap_servers, topic, 900) == sorted(records)


def test_idempotent_producer_exactly_once_counts(broker3) -> None:
    topic = new_topic("idem")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(6000)
    p = producer(broker3.bootstrap_servers, **{"enable.idempotence": True, "linger.ms": 2,
                                               "batch.num.messages": 250})
    reports = produce_all(p, topic, records)
    assert reports == [(part, off) for part, off, *_ in records]

    pids = set()
    for part in range(PARTITIONS):
        batches = all_batches(broker3.bootstrap_servers, topic, part)
        assert sum(b.record_count for b in batches) == 2000
        # sequences run on from 0 without a gap, one producer id and epoch 0
        seq = 0
        for b in batches:
            assert (b.base_sequence, b.producer_epoch, b.base_offset) == (seq, 0, seq)
            seq += b.record_count
            pids.add(b.producer_id)
    assert len(pids) == 1 and pids.pop() >= 0
    assert consume_rows(broker3.bootstrap_servers, topic, 6000) == sorted(records)


def test_offsets_for_times_exact_inside_a_batch(broker3) -> None:
    topic = new_topic("times")
    create_topic(broker3.bootstrap_servers, topic)
    t0 = int(time.time() * 1000) - 60_000
    p = producer(broker3.bootstrap_servers, **{"linger.ms": 500})
    for i in range(3):  # an earlier batch, so the batch under test does not start at 0
        p.produce(topic, value=b"early-%d" % i, partition=0, timestamp=t0 - 1000 + i)
    assert p.flush(10) == 0
    for i in range(10):  # one batch: timestamps t0, t0+10, ..., t0+90 at offsets 3..12
        p.produce(topic, value=b"timed-%d" % i, partition=0, timestamp=t0 + 10 * i)
    assert p.flush(10) == 0

    err, hw, batches = fetch_batches(broker3.bootstrap_servers, topic, 0)
    assert (err, hw) == (0, 13)
    assert [(b.base_offset, b.record_count, b.base_timestamp, b.max_timestamp) for b in batches] == \
        [(0, 3, t0 - 1000, t0 - 998), (3, 10, t0, t0 + 90)]

    c = consumer(broker3.bootstrap_servers)
    try:
        def lookup(ts: int) -> int:
            (tp,) = c.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=10)
            assert tp.error is None
            return tp.offset

        assert lookup(t0 + 45) == 8
        assert lookup(t0 + 50) == 8
        assert lookup(t0 + 1) == 4
        assert lookup(t0) == 3
        assert lookup(t0 - 999) == 1
        assert lookup(t0 + 90) == 12
        assert lookup(t0 + 91) == OFFSET_END  # none: Kafka answers offset -1
        assert lookup(0) == 0
        # the consumer starts at the looked-up record, inside the batch
        c.assign([TopicPartition(topic, 0, lookup(t0 + 45))])
        m = c.poll(10)
        assert m is not None and m.error() is None
        assert (m.offset(), m.value(), m.timestamp()) == (8, b"timed-5", (TIMESTAMP_CREATE_TIME, t0 + 50))
    finally:
        c.close()


def test_latest_offset_is_last_offset_plus_one_after_multi_record_batch(broker3) -> None:
    topic = new_topic("latest")
    create_topic(broker3.bootstrap_servers, topic)
    t0 = int(time.time() * 1000) - 5000
    # One batch of 100 whatever the machine's load: the batch is sent when it is full (or at the
    # flush), never by linger.ms, and the partition is known before the first record, so no record
    # waits in librdkafka's unassigned queue (a stalled test thread, or metadata arriving during the
    # flush, made librdkafka send parts of the 100 with linger.ms 500: seen in CI and under load)
    p = producer(broker3.bootstrap_servers, **{"linger.ms": 60000, "batch.num.messages": 100})
    assert 1 in p.list_topics(topic, timeout=10).topics[topic].partitions
    for i in range(100):
        p.produce(topic, value=b"v%d" % i, partition=1, timestamp=t0 + (i * 37) % 100)
    assert p.flush(10) == 0
    err, hw, batches = fetch_batches(broker3.bootstrap_servers, topic, 1)
    assert (err, hw, [(b.base_offset, b.record_count) for b in batches]) == (0, 100, [(0, 100)])

    c = consumer(broker3.bootstrap_servers)
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 1), timeout=10) == (0, 100)
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 0)
    finally:
        c.close()

    admin = AdminClient({"bootstrap.servers": broker3.bootstrap_servers})
    tp = TopicPartition(topic, 1)
    for spec, offset in ((OffsetSpec.latest(), 100), (OffsetSpec.earliest(), 0),
                         # timestamps t0 + (i*37)%100: 99 first at i=27 (27*37 = 999)
                         (OffsetSpec.max_timestamp(), 27)):
        result = admin.list_offsets({tp: spec}, request_timeout=10)[tp].result(timeout=10)
        assert result.offset == offset, spec


def test_position_past_the_end_resets_to_earliest(broker3) -> None:
    topic = new_topic("reset")
    create_topic(broker3.bootstrap_servers, topic)
    p = producer(broker3.bootstrap_servers)
    for i in range(5):
        p.produce(topic, value=b"r%d" % i, partition=2)
    assert p.flush(10) == 0
    # what librdkafka needs to see to apply auto.offset.reset: Kafka's error, not an empty answer
    assert fetch_batches(broker3.bootstrap_servers, topic, 2, offset=50)[:2] == (OFFSET_OUT_OF_RANGE, 5)

    c = consumer(broker3.bootstrap_servers, **{"auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 2, 50)])
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append((m.offset(), m.value()))
        assert got == [(i, b"r%d" % i) for i in range(5)]
    finally:
        c.close()

    # with auto.offset.reset=error librdkafka surfaces the broker's OFFSET_OUT_OF_RANGE
    c = consumer(broker3.bootstrap_servers, **{"auto.offset.reset": "error"})
    try:
        c.assign([TopicPartition(topic, 2, 50)])
        m = None
        deadline = time.monotonic() + 10
        while m is None and time.monotonic() < deadline:
            m = c.poll(0.5)
        assert m is not None and m.error() is not None
        assert m.error().code() == KafkaError._AUTO_OFFSET_RESET
        assert "Offset out of range" in m.error().str()
    finally:
        c.close()


def test_long_poll_delivers_record_produced_a_second_later(broker3) -> None:
    topic = new_topic("longpoll")
    create_topic(broker3.bootstrap_servers, topic)
    stats: list[dict] = []
    c = consumer(broker3.bootstrap_servers, **{"fetch.wait.max.ms": 5000, "fetch.min.bytes": 1,
                                               "statistics.interval.ms": 200,
                                               "stats_cb": lambda s: stats.append(json.loads(s))})
    p = producer(broker3.bootstrap_servers, **{"linger.ms": 0})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        assert c.poll(0.5) is None  # the consumer is now parked in a waiting fetch
        produced_at: list[float] = []

        def later() -> None:
            time.sleep(1.0)
            p.produce(topic, value=b"late", partition=0)
            produced_at.append(time.monotonic())
            p.flush(10)

        start = time.monotonic()
        threading.Thread(target=later, daemon=True).start()
        m = None
        while m is None and time.monotonic() - start < 8:
            m = c.poll(0.1)
        got_at = time.monotonic()
        assert m is not None and m.error() is None and m.value() == b"late"
        assert 0.9 < got_at - start < 1.8, got_at - start
        assert got_at - produced_at[0] < 0.5, got_at - produced_at[0]
        c.poll(0.3)  # one more stats tick
        fetches = max(sum(b.get("req", {}).get("Fetch", 0) for b in s["brokers"].values()) for s in stats)
        # waiting fetches are held by the broker, not answered empty at once: a busy loop
        # over ~1.8 s would be hundreds of requests
        assert 1 <= fetches <= 6, fetches
    finally:
        c.close()


def test_restart_keeps_everything(own_broker3) -> None:
    broker = own_broker3
    topic = new_topic("restart")
    create_topic(broker.bootstrap_servers, topic)
    records = expected_records(3000)
    ts0 = int(time.time() * 1000) - 10_000
    p = producer(broker.bootstrap_servers, **{"enable.idempotence": True, "compression.type": "lz4"})
    produce_all(p, topic, records, timestamp_base=ts0)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    desc = admin.describe_topics(_topics(topic))[topic].result(timeout=10)
    topic_id = str(desc.topic_id)
    before = [all_batches(broker.bootstrap_servers, topic, part) for part in range(PARTITIONS)]

    assert broker.stop(signal.SIGTERM) == 0
    broker.start()

    assert [all_batches(broker.bootstrap_servers, topic, part) for part in range(PARTITIONS)] == before
    desc = admin.describe_topics(_topics(topic))[topic].result(timeout=10)
    assert str(desc.topic_id) == topic_id
    want = sorted((part, off, k, v, h, (TIMESTAMP_CREATE_TIME, ts0 + i))
                  for i, (part, off, k, v, h) in enumerate(records))
    assert consume_rows(broker.bootstrap_servers, topic, 3000, with_ts=True) == want

    # producer state survived: the same idempotent producer carries on with its sequences
    more = [(i % 3, 1000 + i // 3, b"after-%d" % i, b"v", []) for i in range(30)]
    assert produce_all(p, topic, more) == [(part, off) for part, off, *_ in more]
    for part in range(PARTITIONS):
        last = all_batches(broker.bootstrap_servers, topic, part)[-1]
        assert last.base_sequence + last.record_count == 1010


def _topics(*names: str) -> Any:
    from confluent_kafka import TopicCollection
    return TopicCollection(list(names))


def test_kill_9_keeps_every_acknowledged_record(own_broker3) -> None:
    broker = own_broker3
    topic = new_topic("kill9")
    create_topic(broker.bootstrap_servers, topic)
    acked: dict[bytes, tuple[int, int]] = {}
    sent: set[bytes] = set()
    stop = threading.Event()
    p = producer(broker.bootstrap_servers, **{"acks": "all", "enable.idempotence": True, "linger.ms": 1,
                                              "message.timeout.ms": 4000, "reconnect.backoff.ms": 50,
                                              "reconnect.backoff.max.ms": 200})

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            acked[msg.value()] = (msg.partition(), msg.offset())

    def run() -> None:
        i = 0
        while not stop.is_set():
            value = b"rec-%07d" % i
            try:
                p.produce(topic, value=value, partition=i % 3, on_delivery=on_delivery)
                sent.add(value)
                i += 1
            except BufferError:
                pass
            p.poll(0.0005 if i % 50 else 0.002)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while len(acked) < 3000 and time.monotonic() < deadline:
        time.sleep(0.01)
    broker.kill()
    stop.set()
    t.join(10)
    broker.start()
    p.flush(15)
    assert len(acked) >= 3000

    stored: dict[tuple[int, int], bytes] = {}
    c = consumer(broker.bootstrap_servers)
    try:
        ends = [c.get_watermark_offsets(TopicPartition(topic, part), timeout=10)[1] for part in range(3)]
    finally:
        c.close()
    rows = consume_rows(broker.bootstrap_servers, topic, sum(ends))
    for part, off, _k, value, _h in rows:
        stored[(part, off)] = value
    # every offset below the end is a record we sent, each at most once (idempotence)
    assert sorted(stored) == [(part, off) for part in range(3) for off in range(ends[part])]
    assert set(stored.values()) <= sent
    assert len(set(stored.values())) == len(stored)
    # every acknowledged record is where the broker said it was
    missing = {v: pos for v, pos in acked.items() if stored.get(pos) != v}
    assert not missing, list(missing.items())[:5]
