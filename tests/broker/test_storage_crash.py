"""Crash safety and bad input, against a broker process.

- kill -9 cycles during sustained acks=all produce with ``samsa.fsync.on.acks.all=true``: every
  acknowledged record is present exactly once, in order, at the offset it was acknowledged with
  (the producer retries the batch that was in flight, as an idempotent client does; restored
  producer state answers a retry of a written batch as a duplicate).
- files corrupted by hand (a segment tail, index files), a segment truncated mid-header, an index
  entry past the end: every intact record is served, and the broker says what it repaired.
- a ``meta.properties`` of another cluster: refusal with a clear log line, files untouched.
"""
from __future__ import annotations

import random
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from broker.testing import SamsaBroker
from protocol import records as rb
from tests.support.rawclient import RawClient
from tests.support.wire import INIT_PID, create, fetch, list_offset, produce

KILL_CYCLES = 5


def read_values(bootstrap: str, topic: str, partition: int) -> list[tuple[int, bytes]]:
    out = []
    offset = 0
    with RawClient(bootstrap) as c:
        while True:
            part = fetch(c, topic, offset, partition=partition, max_bytes=1 << 22, partition_max_bytes=1 << 22)
            assert part.error_code == 0, part.error_code
            if not part.records:
                return out
            for h in rb.iter_batches(part.records):
                out.extend((r.offset, r.value) for r in rb.iter_records(part.records, h) if r.offset >= offset)
                offset = h.next_offset


class RetryingProducer(threading.Thread):
    """An idempotent producer on one partition speaking raw requests: a batch is resent, same
    sequence, until acknowledged; the acknowledged (offset, value) pairs are recorded."""

    def __init__(self, bootstrap: str, topic: str, partition: int, pid: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partition, self.pid = bootstrap, topic, partition, pid
        self.acked: list[tuple[int, bytes]] = []
        self.stop = threading.Event()
        self.retries = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        seq = 0
        client: RawClient | None = None
        try:
            while not self.stop.is_set():
                values = [b"p%d-%06d" % (self.partition, seq + i) for i in range(5)]
                data = rb.build_batch([(b"k", v) for v in values], timestamp_ms=int(time.time() * 1000),
                                      producer_id=self.pid, producer_epoch=0, base_sequence=seq)
                while True:
                    try:
                        if client is None:
                            client = RawClient(self.bootstrap, timeout=5)
                        resp = produce(client, self.topic, data, partition=self.partition, acks=-1)
                        break
                    except (OSError, ConnectionError, socket.timeout, struct.error):
                        if client is not None:
                            client.close()
                            client = None
                        self.retries += 1
                        if self.stop.is_set():
                            return
                        time.sleep(0.05)
                assert resp.error_code == 0, (resp.error_code, resp.error_message)
                self.acked.extend((resp.base_offset + i, v) for i, v in enumerate(values))
                seq += 5
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            if client is not None:
                client.close()


def test_kill_9_during_fsync_acks_all_produce_keeps_every_acknowledged_record_once(tmp_path: Path):
    broker = SamsaBroker(tmp_path / "data", overrides={"samsa.fsync.on.acks.all": "true",
                                                      "log.segment.bytes": "32768", "num.partitions": "2"}).start()
    rng = random.Random(5)
    try:
        with RawClient(broker.bootstrap_servers) as c:
            create(c, "crash")
            pid = c.request(INIT_PID, 4, transactional_id=None, transaction_timeout_ms=60000,
                            producer_id=-1, producer_epoch=-1).producer_id
        producers = [RetryingProducer(broker.bootstrap_servers, "crash", p, pid) for p in range(2)]
        for p in producers:
            p.start()
        for _ in range(KILL_CYCLES):
            time.sleep(rng.uniform(0.4, 1.0))
            broker.kill()
            broker.start()
        time.sleep(0.5)
        for p in producers:
            p.stop.set()
        for p in producers:
            p.join(30)
            assert p.error is None, p.error
        assert broker.read_log().count("previous shutdown was not clean") == KILL_CYCLES
        for p in producers:
            assert len(p.acked) > 100 and p.retries >= 1
            stored = read_values(broker.bootstrap_servers, "crash", p.partition)
            assert stored == p.acked            # exactly once, in order, at the acknowledged offsets
            assert [o for o, _ in stored] == list(range(len(stored)))
        # and it all survives one more crash with nothing in flight
        broker.kill()
        broker.start()
        for p in producers:
            assert read_values(broker.bootstrap_servers, "crash", p.partition) == p.acked
    finally:
        broker.stop()


def _kafka_python_produce(bootstrap: str, topic: str, n: int) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, batch_size=400)
    for i in range(n):
        p.send(topic, key=b"k%d" % i, value=b"value-%04d" % i + b"." * 80, partition=0)
    p.flush(30)
    p.close()


def _kafka_python_read(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        c.assign([tp])
        end = c.end_offsets([tp])[tp]
        out = []
        deadline = time.monotonic() + 30
        while c.position(tp) < end and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend((r.offset, r.value) for r in recs)
        return out
    finally:
        c.close()


def _segments(part_dir: Path) -> list[Path]:
    return sorted(part_dir.glob("*.log"))


def test_hand_corrupted_segment_tail_and_index_files_recover_every_intact_record(tmp_path: Path):
    broker = SamsaBroker(tmp_path / "data", overrides={"log.segment.bytes": "2048"}).start()
    try:
        with RawClient(broker.bootstrap_servers) as c:
            create(c, "hurt")
        _kafka_python_produce(broker.bootstrap_servers, "hurt", 120)
        want = _kafka_python_read(broker.bootstrap_servers, "hurt")
        assert [o for o, _ in want] == list(range(120))
        broker.stop()
        part = broker.data_dir / "hurt-0"
        segs = _segments(part)
        assert len(segs) >= 4
        # 1. garbage in the first segment's offset index, 2. a time index that lost its tail
        segs[0].with_suffix(".index").write_bytes(b"\x13\x37" * 13)
        t = segs[1].with_suffix(".timeindex")
        t.write_bytes(t.read_bytes()[:-12])
        # 3. flip bytes inside the last batch of the last segment and pretend the broker crashed
        last = bytearray(segs[-1].read_bytes())
        batches = list(rb.iter_batches(bytes(last)))
        cut = batches[-1]
        last[cut.position + rb.HEADER_SIZE + 3] ^= 0xFF
        segs[-1].write_bytes(bytes(last))
        (broker.data_dir / ".kafka_cleanshutdown").unlink()
        broker.start()
        log = broker.read_log()
        assert log.count("rebuilding segment index") == 2
        assert "truncating torn segment tail" in log and "CRC mismatch" in log
        got = _kafka_python_read(broker.bootstrap_servers, "hurt")
        assert got == want[:cut.base_offset]              # every intact record, nothing else
        assert list((part).glob("*.corrupt-*"))           # the cut bytes were kept
        _kafka_python_produce(broker.bootstrap_servers, "hurt", 1)
        with RawClient(broker.bootstrap_servers) as c:
            assert list_offset(c, "hurt", -1).offset == cut.base_offset + 1
    finally:
        broker.stop()


def test_segment_truncated_mid_header_and_index_past_the_end(tmp_path: Path):
    broker = SamsaBroker(tmp_path / "data", overrides={"log.segment.bytes": "2048"}).start()
    try:
        with RawClient(broker.bootstrap_servers) as c:
            create(c, "bad")
            for i in range(40):
                produce(c, "bad", rb.build_batch([(b"k", b"v%03d" % i + b"-" * 60)] * 3, timestamp_ms=1_700_000_000_000 + i))
        want = read_values(broker.bootstrap_servers, "bad", 0)
        broker.stop()
        part = broker.data_dir / "bad-0"
        segs = _segments(part)
        # an index entry pointing past the end of its segment (first segment)
        idx = bytearray(segs[0].with_suffix(".index").read_bytes())
        struct.pack_into(">ii", idx, len(idx) - 8, 99, 1 << 30)
        segs[0].with_suffix(".index").write_bytes(bytes(idx))
        # the last segment cut in the middle of its last batch's header (a crash mid-write)
        data = segs[-1].read_bytes()
        last = list(rb.iter_batches(data))[-1]
        segs[-1].write_bytes(data[:last.position + 20])
        (broker.data_dir / ".kafka_cleanshutdown").unlink()
        broker.start()
        log = broker.read_log()
        assert "rebuilding segment index" in log and "past the log end" in log
        assert "truncating torn segment tail" in log and "truncated batch header (20 bytes)" in log
        assert read_values(broker.bootstrap_servers, "bad", 0) == want[:last.base_offset]
        kept = list(part.glob("*.corrupt-*"))
        assert len(kept) == 1 and kept[0].stat().st_size == 20
        with RawClient(broker.bootstrap_servers) as c:   # timestamp lookups use the rebuilt indexes
            found = list_offset(c, "bad", 1_700_000_000_000 + 5)
            assert (found.offset, found.timestamp) == (15, 1_700_000_000_000 + 5)
    finally:
        broker.stop()


def test_meta_properties_of_another_cluster_is_refused(tmp_path: Path):
    broker = SamsaBroker(tmp_path / "data").start()
    with RawClient(broker.bootstrap_servers) as c:
        create(c, "mine")
        produce(c, "mine", rb.build_batch([(b"k", b"v")], timestamp_ms=1_700_000_000_000))
    broker.stop()
    meta = broker.data_dir / "meta.properties"
    original = meta.read_text()
    cluster = dict(line.split("=", 1) for line in original.splitlines() if "=" in line)["cluster.id"]
    before = {p: p.stat().st_size for p in broker.data_dir.rglob("*") if p.is_file() and p != meta}
    # configured for another cluster than the directory's
    broker.overrides["cluster.id"] = "SomeOtherClusterIdAAAA"
    with pytest.raises(RuntimeError, match="exited"):
        broker.start(timeout=20)
    assert "refusing to start" in broker.read_log() and "SomeOtherClusterIdAAAA" in broker.read_log()
    # a meta.properties copied from another cluster's broker, no cluster.id configured
    del broker.overrides["cluster.id"]
    meta.write_text(original.replace(f"cluster.id={cluster}", "cluster.id=CopiedFromElsewhereAAAAA"))
    with pytest.raises(RuntimeError, match="exited"):
        broker.start(timeout=20)
    assert "its topics were written by cluster " + cluster in broker.read_log()
    after = {p: p.stat().st_size for p in broker.data_dir.rglob("*") if p.is_file() and p != meta}
    assert after == before                                 # nothing was touched
    meta.write_text(original)
    broker.start()
    try:
        assert read_values(broker.bootstrap_servers, "mine", 0) == [(0, b"v")]
    finally:
        broker.stop()
