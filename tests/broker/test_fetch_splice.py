"""Fetch answers sent from the segment files: the splice of file regions into kafka-python's
encoding (byte-identical to encoding the records inline, every Fetch version), the batch
boundaries Partition.read picks without reading the records, regions that outlive their
segment file, and multi-partition answers through a real broker at every version."""
from __future__ import annotations

import os
import random
import uuid
from dataclasses import dataclass

import pytest
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.consumer import FetchRequest, FetchResponse

from broker.apis.fetch import MAX_REGIONS, SPLICE_MIN_BYTES
from broker.log.partition import _WALK_READ
from broker.log.region import FileRegion
from protocol import records as rb
from protocol.api_versions import SUPPORTED
from protocol.splice import placeholder, splice
from tests.support.rawclient import RawClient
from tests.support.storage_log import Log
from tests.support.wire import batches_in, create, produce

FT = FetchResponse.FetchableTopicResponse
PD = FT.PartitionData
CT = CreateTopicsRequest.CreatableTopic
FETCH = 1


@dataclass
class Blob:
    data: bytes

    @property
    def length(self) -> int:
        return len(self.data)


def _answer(version: int, records: list[list[bytes | None]]) -> FetchResponse:
    topics = []
    for t, parts in enumerate(records):
        topics.append(FT(topic=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), partitions=[
            PD(partition_index=p, error_code=0, high_watermark=1000 + p, last_stable_offset=1000 + p,
               log_start_offset=0, aborted_transactions=[] if p % 2 else None, preferred_read_replica=-1,
               records=r) for p, r in enumerate(parts)]))
    msg = FetchResponse(version=version, throttle_time_ms=0, error_code=0, session_id=0, responses=topics,
                        node_endpoints=[])
    msg.with_header(correlation_id=4242)
    return msg


@pytest.mark.parametrize("version", range(SUPPORTED[FETCH][0], SUPPORTED[FETCH][1] + 1))
def test_spliced_answer_is_byte_identical_to_inline_encoding(version):
    rnd = random.Random(version)
    # lengths on both sides of every varint width change of the compact length prefix
    sizes = [1, 126, 127, 128, 16382, 16383, 16384, 70000, 2_097_151, 2_097_152]
    layout = [[rnd.randbytes(s) for s in sizes[:4]] + [None, b""], [rnd.randbytes(s) for s in sizes[4:]]]
    inline = _answer(version, layout).encode(header=True, framed=True)

    blobs: list[Blob] = []
    marked = []
    for parts in layout:
        row = []
        for r in parts:
            if r:
                row.append(placeholder(len(blobs)))
                blobs.append(Blob(r))
            else:
                row.append(r)
        marked.append(row)
    msg = _answer(version, marked)
    out = splice(msg.encode(header=True, framed=True), blobs, msg.flexible_version_q(version))
    assert [p for p in out if isinstance(p, Blob)] == blobs
    joined = b"".join(p.data if isinstance(p, Blob) else p for p in out)
    assert joined == inline
    decoded = FetchResponse.decode(joined[4:], version=version, header=True)
    assert decoded.responses[1].partitions[5].records == layout[1][5]


def test_splice_refuses_a_frame_without_its_placeholder():
    msg = _answer(16, [[b"not a placeholder"]])
    with pytest.raises(ValueError):
        splice(msg.encode(header=True, framed=True), [Blob(b"x")], True)


def test_splice_without_regions_returns_the_frame():
    frame = _answer(12, [[None]]).encode(header=True, framed=True)
    assert splice(frame, [], True) == [frame]


# -- batch boundaries without reading the records ----------------------------------------

def _batches(part) -> list[rb.BatchHeader]:
    out = []
    for seg in part.segments:
        out.extend(seg.iter_headers())
    return out


def _expected(batches: list[rb.BatchHeader], offset: int, max_bytes: int, upper: int,
              min_one: bool) -> list[int]:
    """Base offsets Fetch must return, by brute force over every stored batch (one segment)."""
    start = next((i for i, h in enumerate(batches) if h.last_offset >= offset), None)
    if start is None or batches[start].base_offset >= upper or offset >= upper:
        return []
    out, used = [], 0
    for h in batches[start:]:
        if h.base_offset >= upper or used + h.size > max_bytes:
            if not out and min_one and h.base_offset < upper:
                out.append(h.base_offset)
            break
        out.append(h.base_offset)
        used += h.size
    return out


@pytest.mark.parametrize("interval,value_sizes", [
    (128, [10, 300, 40, 900, 5]),              # small batches, a sparse index
    (4096, [2000, 30_000, 100, 50_000]),       # spans beyond one index step, walked header by header
    (1 << 30, [20_000, 30_000, 1000]),         # only the first batch indexed: long walks
])
def test_read_returns_exactly_the_whole_batches_below_the_limits(tmp_path, interval, value_sizes):
    log = Log(tmp_path, index_interval_bytes=interval, segment_bytes=1 << 30)
    rnd = random.Random(interval)
    for i in range(60):
        n = rnd.choice([1, 1, 3])
        log.put([(b"k", b"v" * rnd.choice(value_sizes)) for _ in range(n)])
    part = log.part
    assert len(part.segments) == 1
    batches = _batches(part)
    end = part.log_end_offset
    spans = []
    for _ in range(400):
        offset = rnd.randrange(0, end)
        upper = rnd.choice([end, rnd.randrange(offset, end + 1)])
        max_bytes = rnd.choice([1, 500, 5000, 70_000, 200_000, 1 << 22])
        min_one = rnd.random() < 0.8
        got = part.read(offset, max_bytes, upper, min_one=min_one)
        bases = [h.base_offset for h in rb.iter_batches(got, validate=True)] if got else []
        assert bases == _expected(batches, offset, max_bytes, upper, min_one), (offset, max_bytes, upper)
        spans.append(len(got))
    if interval > _WALK_READ:
        assert max(spans) > _WALK_READ  # reads longer than one walk buffer: walked header by header


def test_region_is_the_read_bytes_and_outlives_its_deleted_segment(tmp_path):
    log = Log(tmp_path, segment_bytes=1024)
    log.fill(30)
    part = log.part
    first = part.segments[0]
    seg, pos, length = part.locate(0, 1 << 20, part.log_end_offset)
    assert (seg, pos, length) == (first, 0, first.size)
    region = FileRegion(seg.fd, pos, length)
    expected = part.read(0, 1 << 20, part.log_end_offset)
    assert [h.base_offset for h in rb.iter_batches(expected)][0] == 0
    # what retention does to a segment while its answer may still be going out
    first.close()
    os.unlink(first.path)
    assert region.read() == expected
    fd = region.fd
    region.close()
    with pytest.raises(OSError):
        os.fstat(fd)


# -- through the broker ---------------------------------------------------------------------

def test_multi_partition_fetch_every_version(samsa_broker):
    """Three partitions (small records from an offset inside the log, copied; large ones, sent
    from the file; none) and an unknown one, in one answer at every Fetch version."""
    with RawClient(samsa_broker.bootstrap_servers) as client:
        r = client.request(19, 4, topics=[CT(name="spl", num_partitions=3, replication_factor=1, assignments=[],
                                              configs=[])], timeout_ms=5000, validate_only=False)
        assert r.topics[0].error_code == 0
        for p in (0, 1):
            for i in range(5 + p):
                data = rb.build_batch([(b"k%d" % i, b"x" * (100 + 20_000 * p))], timestamp_ms=1)
                assert produce(client, "spl", data, partition=p, acks=1).error_code == 0
        meta = client.request(3, 12, topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
        tid = next(t.topic_id for t in meta.topics if t.name == "spl")
        F = FetchRequest.FetchTopic
        lo, hi = SUPPORTED[FETCH]
        for v in range(lo, hi + 1):
            parts = [F.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=o, log_start_offset=-1,
                                      partition_max_bytes=1 << 20)
                     for p, o in ((0, 2), (1, 0), (2, 0), (7, 0))]
            fr = client.request(FETCH, v, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                isolation_level=0, session_id=0, session_epoch=-1,
                                topics=[F(topic="spl", topic_id=tid, partitions=parts)],
                                forgotten_topics_data=[], rack_id="")
            got = {p.partition_index: (p.error_code, [h.base_offset for h in batches_in(p.records)])
                   for p in fr.responses[0].partitions}
            assert got == {0: (0, [2, 3, 4]), 1: (0, [0, 1, 2, 3, 4, 5]), 2: (0, []), 7: (3, [])}, v


def test_fetch_of_more_partitions_than_regions_per_answer(samsa_broker):
    """More partitions with large reads than one answer sends from files: the rest are copied,
    and every partition's records come back whole and in place."""
    n = MAX_REGIONS + 6
    value = SPLICE_MIN_BYTES + 1000
    with RawClient(samsa_broker.bootstrap_servers) as client:
        r = client.request(19, 4, topics=[CT(name="wide", num_partitions=n, replication_factor=1, assignments=[],
                                              configs=[])], timeout_ms=5000, validate_only=False)
        assert r.topics[0].error_code == 0
        for p in range(n):
            data = rb.build_batch([(b"p%d" % p, bytes([p]) * value)], timestamp_ms=1)
            assert produce(client, "wide", data, partition=p, acks=1).error_code == 0
        F = FetchRequest.FetchTopic
        parts = [F.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                  partition_max_bytes=1 << 20) for p in range(n)]
        fr = client.request(FETCH, 12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=64 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1,
                            topics=[F(topic="wide", partitions=parts)], forgotten_topics_data=[], rack_id="")
        got = {}
        for part in fr.responses[0].partitions:
            (h,) = batches_in(part.records)
            (rec,) = rb.iter_records(part.records, h)
            got[part.partition_index] = (part.error_code, rec.key, rec.value)
        assert got == {p: (0, b"p%d" % p, bytes([p]) * value) for p in range(n)}


def test_no_descriptor_outlives_its_fetch_answer(samsa_broker):
    """Every region's duplicated descriptor is closed: after answers sent whole, long polls that
    re-collected their regions, and answers to clients that reset the connection mid-send, the
    broker holds exactly the file descriptors it held before."""
    import socket
    import struct
    import time

    bs = samsa_broker.bootstrap_servers
    pid = samsa_broker.proc.pid
    # 9 batches of ~900 KB: more than the 4 MiB send buffer, so a client that leaves early
    # leaves the broker in the middle of sendfile
    batches = [rb.build_batch([(b"k", bytes([i]) * 900_000)], timestamp_ms=1) for i in range(9)]
    F = FetchRequest.FetchTopic

    def fetch_fields(offset: int, wait_ms: int = 0, min_bytes: int = 1) -> dict:
        return dict(replica_id=-1, max_wait_ms=wait_ms, min_bytes=min_bytes, max_bytes=1 << 24, isolation_level=0,
                    session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                    topics=[F(topic="fds", partitions=[F.FetchPartition(
                        partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                        partition_max_bytes=1 << 24)])])

    with RawClient(bs) as client:
        r = client.request(19, 4, topics=[CT(name="fds", num_partitions=1, replication_factor=1, assignments=[],
                                              configs=[])], timeout_ms=5000, validate_only=False)
        assert r.topics[0].error_code == 0
        create(client, "fds-other")
        for data in batches:
            assert produce(client, "fds", data, acks=1).error_code == 0
        total = sum(len(b) for b in batches)
        client.request(FETCH, 12, **fetch_fields(0))          # warm: segment file open, indexes read
        assert produce_other(bs, -1) == 0                       # and the other topic's segment file

        def open_fds() -> list[str]:
            """The broker's descriptors of files (sockets come and go with connections)."""
            paths = []
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
                except FileNotFoundError:
                    continue
            return sorted(p for p in paths if p.startswith("/") and not p.startswith("/dev/"))

        before = open_fds()
        for _ in range(30):
            got = client.request(FETCH, 12, **fetch_fields(0))
            assert len(got.responses[0].partitions[0].records) == total
        # long polls that wake on appends too small to satisfy them, then time out with a region
        for i in range(5):
            client.send(FETCH, 12, **fetch_fields(0, wait_ms=300, min_bytes=10 << 20))
            assert produce_other(bs, i) == 0
            client.receive(FETCH, 12)
        # clients that ask and leave before the answer is read
        for _ in range(20):
            host, port = bs.rsplit(":", 1)
            with socket.create_connection((host, int(port))) as s:
                req = FetchRequest(version=12, **fetch_fields(0))
                req.with_header(correlation_id=1, client_id="leaver")
                s.sendall(req.encode(header=True, framed=True))
                s.recv(10)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        deadline = time.monotonic() + 10
        while open_fds() != before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert open_fds() == before
        assert any(p.endswith("fds-0/00000000000000000000.log") for p in before)


def produce_other(bootstrap: str, i: int) -> int:
    """A small append to another topic: wakes long polls without satisfying them."""
    with RawClient(bootstrap) as c:
        return produce(c, "fds-other", rb.build_batch([(b"o", b"%d" % i)], timestamp_ms=1), acks=1).error_code
