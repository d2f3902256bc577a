"""aiokafka against a real Samsa broker: exact records, offsets and errors.

Consumers have no group (group_id=None) and use assign(): group membership is issue 3's.
Each test drives its own event loop with asyncio.run.
"""
from __future__ import annotations

import asyncio
import signal
import time
from typing import Any, Awaitable, TypeVar

import confluent_kafka
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import OffsetOutOfRangeError
from confluent_kafka import Consumer as CKConsumer, Producer as CKProducer, TopicPartition as CKTopicPartition

from tests.support.clienthelpers import (CODECS, PARTITIONS, advertised_apis, all_batches, create_topic, expected_records, fetch_batches, librdkafka_codec_gate, new_topic)

T = TypeVar("T")
LIBRDKAFKA = tuple(int(x) for x in confluent_kafka.libversion()[0].split("-")[0].split("."))


def run(coro: Awaitable[T], timeout: float = 60) -> T:
    return asyncio.run(asyncio.wait_for(coro, timeout))


def aproducer(bootstrap: str, **conf: Any) -> AIOKafkaProducer:
    return AIOKafkaProducer(bootstrap_servers=bootstrap, **{"request_timeout_ms": 10_000, **conf})


def aconsumer(bootstrap: str, **conf: Any) -> AIOKafkaConsumer:
    conf = {"auto_offset_reset": "none", **conf}
    return AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                            request_timeout_ms=10_000, **conf)


async def produce_all(p: AIOKafkaProducer, topic: str, records: list,
                      timestamp_base: int | None = None) -> list[tuple[int, int]]:
    """Send every row to its partition, all in flight together; (partition, offset) per record
    (None with acks=0)."""
    futures = []
    for i, (part, _off, key, value, headers) in enumerate(records):
        ts = timestamp_base + i if timestamp_base is not None else None
        futures.append(await p.send(topic, value=value, key=key, partition=part, timestamp_ms=ts, headers=headers))
    metas = await asyncio.gather(*futures)
    return [(m.partition, m.offset) if m is not None else None for m in metas]


async def consume_rows(bootstrap: str, topic: str, count: int, partitions: range = range(PARTITIONS),
                       with_ts: bool = False, timeout: float = 20.0, **conf: Any) -> list:
    """Exactly ``count`` records from offset 0 of each partition (no more arrive after them)."""
    c = aconsumer(bootstrap, **conf)
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        rows: list = []
        deadline = time.monotonic() + timeout
        while len(rows) < count and time.monotonic() < deadline:
            for msgs in (await c.getmany(timeout_ms=500)).values():
                for m in msgs:
                    row = (m.partition, m.offset, m.key, m.value, list(m.headers))
                    rows.append(row + ((m.timestamp_type, m.timestamp),) if with_ts else row)
        extra = await c.getmany(timeout_ms=300)
        assert not any(extra.values()), f"records beyond the expected {count}"
        return sorted(rows)
    finally:
        await c.stop()


def test_5000_keyed_records_with_headers_over_3_partitions(broker3) -> None:
    topic = new_topic("a-keyed")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(5000)
    ts0 = int(time.time() * 1000) - 10_000

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers, acks="all", linger_ms=5)
        await p.start()
        try:
            assert await produce_all(p, topic, records, ts0) == [(part, off) for part, off, *_ in records]
        finally:
            await p.stop()
        rows = await consume_rows(broker3.bootstrap_servers, topic, 5000, with_ts=True)
        assert rows == sorted((part, off, k, v, h, (0, ts0 + i)) for i, (part, off, k, v, h) in enumerate(records))
        c = aconsumer(broker3.bootstrap_servers)
        await c.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(3)]
            assert await c.beginning_offsets(tps) == {tp: 0 for tp in tps}
            assert await c.end_offsets(tps) == dict(zip(tps, [1667, 1667, 1666]))
        finally:
            await c.stop()

    run(main())


@pytest.mark.parametrize("codec", list(CODECS))
def test_codec_round_trip(broker3, codec: str) -> None:
    topic = new_topic(f"a-codec-{codec}")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(600, pad=300)

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers, compression_type=codec, linger_ms=20)
        await p.start()
        try:
            await produce_all(p, topic, records)
        finally:
            await p.stop()
        assert await consume_rows(broker3.bootstrap_servers, topic, 600) == sorted(records)

    run(main())
    for part in range(PARTITIONS):
        batches = all_batches(broker3.bootstrap_servers, topic, part)
        assert {b.compression for b in batches} == {CODECS[codec]}  # stored as sent
        assert all(b.crc_ok for b in batches)
        assert sum(b.record_count for b in batches) == 200


@pytest.mark.parametrize("codec", list(CODECS))
def test_codec_across_clients(broker3, codec: str, request: pytest.FixtureRequest) -> None:
    """librdkafka's compressed batches read by aiokafka, and aiokafka's read by librdkafka."""
    topic = new_topic(f"x-codec-{codec}")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(300, pad=100)
    ck = CKProducer({"bootstrap.servers": broker3.bootstrap_servers, "compression.type": codec, "linger.ms": 20})
    for part, _off, key, value, headers in records:
        if part == 0:
            ck.produce(topic, value=value, key=key, partition=0, headers=headers)
    assert ck.flush(10) == 0
    from_ck = [r for r in records if r[0] == 0]
    from_aio = [(1, off, k, v, h) for part, off, k, v, h in records if part == 0]

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers, compression_type=codec, linger_ms=20)
        await p.start()
        try:
            await produce_all(p, topic, from_aio)
        finally:
            await p.stop()
        assert await consume_rows(broker3.bootstrap_servers, topic, 100, partitions=range(1)) == from_ck

    run(main())
    c = CKConsumer({"bootstrap.servers": broker3.bootstrap_servers, "group.id": "x", "enable.auto.commit": False})
    try:
        c.assign([CKTopicPartition(topic, 1, 0)])
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 100 and time.monotonic() < deadline:
            for m in c.consume(100, 0.5):
                assert m.error() is None
                got.append((m.partition(), m.offset(), m.key(), m.value(), m.headers()))
        assert got == from_aio
    finally:
        c.close()
    assert {b.compression for b in all_batches(broker3.bootstrap_servers, topic, 1)} == {CODECS[codec]}
    gate = librdkafka_codec_gate(LIBRDKAFKA, codec, advertised_apis(broker3.bootstrap_servers))
    if gate:
        request.applymarker(pytest.mark.xfail(reason=gate, strict=True))
    assert {b.compression for b in all_batches(broker3.bootstrap_servers, topic, 0)} == {CODECS[codec]}


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_acks(broker3, acks: int | str) -> None:
    topic = new_topic(f"a-acks{acks}")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(900)

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers, acks=acks, linger_ms=5)
        await p.start()
        try:
            reports = await produce_all(p, topic, records)
        finally:
            await p.stop()
        if acks == 0:
            assert reports == [None] * 900  # no response, so no record metadata
        else:
            assert reports == [(part, off) for part, off, *_ in records]
        assert await consume_rows(broker3.bootstrap_servers, topic, 900) == sorted(records)

    run(main())


def test_idempotent_producer_exactly_once_counts(broker3) -> None:
    topic = new_topic("a-idem")
    create_topic(broker3.bootstrap_servers, topic)
    records = expected_records(6000)

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers, enable_idempotence=True, linger_ms=2)
        await p.start()
        try:
            assert await produce_all(p, topic, records) == [(part, off) for part, off, *_ in records]
        finally:
            await p.stop()
        assert await consume_rows(broker3.bootstrap_servers, topic, 6000) == sorted(records)

    run(main())
    pids = set()
    for part in range(PARTITIONS):
        seq = 0
        for b in all_batches(broker3.bootstrap_servers, topic, part):
            assert (b.base_sequence, b.producer_epoch, b.base_offset) == (seq, 0, seq)
            seq += b.record_count
            pids.add(b.producer_id)
        assert seq == 2000
    assert len(pids) == 1 and pids.pop() >= 0


def test_offsets_for_times_exact_inside_a_batch(broker3) -> None:
    topic = new_topic("a-times")
    create_topic(broker3.bootstrap_servers, topic)
    t0 = int(time.time() * 1000) - 60_000
    tp = TopicPartition(topic, 0)

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers)
        await p.start()
        try:
            early = p.create_batch()
            for i in range(3):
                early.append(key=None, value=b"early-%d" % i, timestamp=t0 - 1000 + i)
            await (await p.send_batch(early, topic, partition=0))
            timed = p.create_batch()  # one batch: timestamps t0, t0+10, ..., t0+90 at offsets 3..12
            for i in range(10):
                timed.append(key=None, value=b"timed-%d" % i, timestamp=t0 + 10 * i)
            meta = await (await p.send_batch(timed, topic, partition=0))
            assert meta.offset == 3
        finally:
            await p.stop()

        err, hw, batches = fetch_batches(broker3.bootstrap_servers, topic, 0)
        assert (err, hw) == (0, 13)
        assert [(b.base_offset, b.record_count, b.base_timestamp, b.max_timestamp) for b in batches] == \
            [(0, 3, t0 - 1000, t0 - 998), (3, 10, t0, t0 + 90)]

        c = aconsumer(broker3.bootstrap_servers)
        await c.start()
        try:
            async def lookup(ts: int) -> tuple[int, int] | None:
                found = (await c.offsets_for_times({tp: ts}))[tp]
                return None if found is None else (found.offset, found.timestamp)

            assert await lookup(t0 + 45) == (8, t0 + 50)
            assert await lookup(t0 + 50) == (8, t0 + 50)
            assert await lookup(t0 + 1) == (4, t0 + 10)
            assert await lookup(t0) == (3, t0)
            assert await lookup(t0 - 999) == (1, t0 - 999)
            assert await lookup(t0 + 90) == (12, t0 + 90)
            assert await lookup(t0 + 91) is None  # Kafka answers offset -1
            assert await lookup(0) == (0, t0 - 1000)
            c.assign([tp])
            c.seek(tp, 8)
            m = await c.getone()
            assert (m.offset, m.value, m.timestamp) == (8, b"timed-5", t0 + 50)
        finally:
            await c.stop()

    run(main())


def test_latest_offset_is_last_offset_plus_one_after_multi_record_batch(broker3) -> None:
    topic = new_topic("a-latest")
    create_topic(broker3.bootstrap_servers, topic)
    tps = [TopicPartition(topic, p) for p in range(3)]

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers)
        await p.start()
        try:
            batch = p.create_batch()
            for i in range(100):
                batch.append(key=b"k%d" % i, value=b"v%d" % i, timestamp=None)
            meta = await (await p.send_batch(batch, topic, partition=2))
            assert meta.offset == 0
        finally:
            await p.stop()
        err, hw, batches = fetch_batches(broker3.bootstrap_servers, topic, 2)
        assert (err, hw, [(b.base_offset, b.record_count) for b in batches]) == (0, 100, [(0, 100)])
        c = aconsumer(broker3.bootstrap_servers)
        await c.start()
        try:
            assert await c.end_offsets(tps) == dict(zip(tps, [0, 0, 100]))
            assert await c.beginning_offsets(tps) == dict(zip(tps, [0, 0, 0]))
            # a fetch from an offset inside the batch delivers from that record on
            c.assign([tps[2]])
            c.seek(tps[2], 57)
            m = await c.getone()
            assert (m.offset, m.key, m.value) == (57, b"k57", b"v57")
        finally:
            await c.stop()

    run(main())


def test_position_past_the_end_resets_to_earliest(broker3) -> None:
    topic = new_topic("a-reset")
    create_topic(broker3.bootstrap_servers, topic)
    tp = TopicPartition(topic, 1)

    async def main() -> None:
        p = aproducer(broker3.bootstrap_servers)
        await p.start()
        try:
            for i in range(5):
                await p.send_and_wait(topic, value=b"r%d" % i, partition=1)
        finally:
            await p.stop()

        c = aconsumer(broker3.bootstrap_servers, auto_offset_reset="earliest")
        await c.start()
        try:
            c.assign([tp])
            c.seek(tp, 50)
            got = []
            while len(got) < 5:
                m = await c.getone()
                got.append((m.offset, m.value))
            assert got == [(i, b"r%d" % i) for i in range(5)]
        finally:
            await c.stop()

        # with no reset policy, the broker's OFFSET_OUT_OF_RANGE reaches the application
        c = aconsumer(broker3.bootstrap_servers, auto_offset_reset="none")
        await c.start()
        try:
            c.assign([tp])
            c.seek(tp, 50)
            with pytest.raises(OffsetOutOfRangeError) as info:
                await c.getmany(timeout_ms=5000)
            assert info.value.args[0] == {tp: 50}
        finally:
            await c.stop()

    run(main())


def test_long_poll_delivers_record_produced_a_second_later(broker3) -> None:
    topic = new_topic("a-longpoll")
    create_topic(broker3.bootstrap_servers, topic)
    tp = TopicPartition(topic, 0)

    async def main() -> None:
        c = aconsumer(broker3.bootstrap_servers, fetch_max_wait_ms=5000, fetch_min_bytes=1)
        p = aproducer(broker3.bootstrap_servers)
        await c.start()
        await p.start()
        fetches = 0
        send = c._client.send

        async def counting_send(node_id: Any, request: Any, *args: Any, **kw: Any) -> Any:
            nonlocal fetches
            if type(request).__name__.startswith("FetchRequest"):
                fetches += 1
            return await send(node_id, request, *args, **kw)

        c._client.send = counting_send
        try:
            c.assign([tp])
            c.seek(tp, 0)
            assert await c.getmany(timeout_ms=300) == {}  # parked in a waiting fetch
            produced_at = []

            async def later() -> None:
                await asyncio.sleep(1.0)
                await p.send_and_wait(topic, value=b"late", partition=0)
                produced_at.append(time.monotonic())

            start = time.monotonic()
            task = asyncio.create_task(later())
            m = await asyncio.wait_for(c.getone(), 8)
            got_at = time.monotonic()
            await task
            assert m.value == b"late"
            assert 0.9 < got_at - start < 1.8, got_at - start
            assert got_at - produced_at[0] < 0.5
            # held by the broker, not answered empty at once (a busy loop would be hundreds)
            assert 1 <= fetches <= 4, fetches
        finally:
            await p.stop()
            await c.stop()

    run(main())


def test_restart_keeps_everything(own_broker3) -> None:
    broker = own_broker3
    topic = new_topic("a-restart")
    create_topic(broker.bootstrap_servers, topic)
    records = expected_records(3000)
    ts0 = int(time.time() * 1000) - 10_000

    async def main() -> None:
        p = aproducer(broker.bootstrap_servers, enable_idempotence=True, compression_type="zstd", linger_ms=5)
        await p.start()
        try:
            await produce_all(p, topic, records, ts0)
            before = [all_batches(broker.bootstrap_servers, topic, part) for part in range(PARTITIONS)]
            assert broker.stop(signal.SIGTERM) == 0
            broker.start()
            assert [all_batches(broker.bootstrap_servers, topic, part) for part in range(PARTITIONS)] == before
            want = sorted((part, off, k, v, h, (0, ts0 + i)) for i, (part, off, k, v, h) in enumerate(records))
            assert await consume_rows(broker.bootstrap_servers, topic, 3000, with_ts=True) == want
            # the idempotent producer carries on after the restart: its state survived
            more = [(i % 3, 1000 + i // 3, b"after-%d" % i, b"v", []) for i in range(30)]
            assert await produce_all(p, topic, more) == [(part, off) for part, off, *_ in more]
        finally:
            await p.stop()

    run(main())
    for part in range(PARTITIONS):
        last = all_batches(broker.bootstrap_servers, topic, part)[-1]
        assert last.base_sequence + last.record_count == 1010


def test_kill_9_keeps_every_acknowledged_record(own_broker3) -> None:
    broker = own_broker3
    topic = new_topic("a-kill9")
    create_topic(broker.bootstrap_servers, topic)
    acked: dict[bytes, tuple[int, int]] = {}
    sent: set[bytes] = set()

    async def main() -> None:
        p = aproducer(broker.bootstrap_servers, acks="all", linger_ms=1, request_timeout_ms=2000)
        await p.start()
        stop = asyncio.Event()

        async def record(value: bytes, fut: Awaitable) -> None:
            try:
                meta = await fut
                acked[value] = (meta.partition, meta.offset)
            except Exception:
                pass

        async def pump() -> None:
            i = 0
            pending = set()
            while not stop.is_set():
                value = b"rec-%07d" % i
                fut = await p.send(topic, value=value, partition=i % 3)
                sent.add(value)
                t = asyncio.create_task(record(value, fut))
                pending.add(t)
                t.add_done_callback(pending.discard)
                i += 1
                if i % 20 == 0:
                    await asyncio.sleep(0.001)
            await asyncio.wait(pending, timeout=10) if pending else None

        task = asyncio.create_task(pump())
        deadline = time.monotonic() + 20
        while len(acked) < 3000 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        broker.kill()
        stop.set()
        broker.start()
        await asyncio.wait_for(task, 20)
        try:
            await asyncio.wait_for(p.stop(), 10)
        except asyncio.TimeoutError:
            pass

    run(main())
    assert len(acked) >= 3000

    async def read() -> dict[tuple[int, int], bytes]:
        c = aconsumer(broker.bootstrap_servers)
        await c.start()
        try:
            ends = await c.end_offsets([TopicPartition(topic, p) for p in range(3)])
        finally:
            await c.stop()
        rows = await consume_rows(broker.bootstrap_servers, topic, sum(ends.values()))
        stored = {(part, off): v for part, off, _k, v, _h in rows}
        assert sorted(stored) == [(tp.partition, o) for tp, end in sorted(ends.items()) for o in range(end)]
        return stored

    stored = run(read())
    assert set(stored.values()) <= sent
    missing = {v: pos for v, pos in acked.items() if stored.get(pos) != v}
    assert not missing, list(missing.items())[:5]
