"""Shared pieces of the real-client tests (confluent-kafka, aiokafka, kcat).

Topics are made by auto-creation through Metadata (a raw request, so no client library
decides for us), on brokers started with ``num.partitions=3`` (the ``broker3`` fixtures in
tests/clients/conftest.py). ``fetch_batches`` reads the
batch headers exactly as the broker serves them, parsed here with ``struct`` rather than
with the broker's own parser, so a test can check that batches are stored as sent
(codec, record count, producer id and sequences) without trusting the code under test.
"""
from __future__ import annotations

import struct
import time
import uuid
from dataclasses import dataclass

import crc32c
import kafka.errors
from confluent_kafka import Consumer, Producer
from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from tests.support.rawclient import RawClient

PARTITIONS = 3
# Kafka's codec ids in the batch attributes
CODECS: dict[str, int] = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
OFFSET_OUT_OF_RANGE = kafka.errors.OffsetOutOfRangeError.errno


def new_topic(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    """Create ``topic`` by auto-creation (Metadata v4 with allow_auto_topic_creation)."""
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                          allow_auto_topic_creation=True)
    with RawClient(bootstrap) as conn:
        resp = conn.call(req, MetadataResponse, 4)
    (t,) = resp.topics
    assert (t.name, t.error_code) == (topic, 0)
    assert sorted(p.partition_index for p in t.partitions) == list(range(partitions))


@dataclass(frozen=True)
class Batch:
    """A record batch header as served by Fetch."""
    base_offset: int
    last_offset_delta: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    crc_ok: bool

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & 0x07


_HEADER = struct.Struct(">qiibIhiqqqhii")  # record batch v2 header, 61 bytes


def parse_batches(data: bytes) -> list[Batch]:
    out = []
    pos = 0
    while pos + _HEADER.size <= len(data):
        (base, length, _epoch, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq,
         count) = _HEADER.unpack_from(data, pos)
        end = pos + 12 + length
        if end > len(data):
            break  # a partial trailing batch (Kafka may send one); clients skip it
        assert magic == 2, f"magic {magic} at position {pos}"
        out.append(Batch(base, lod, attrs, base_ts, max_ts, pid, pepoch, seq, count,
                         crc32c.crc32c(data[pos + 21:end]) == crc))
        pos = end
    return out


def fetch_batches(bootstrap: str, topic: str, partition: int, offset: int = 0,
                  max_bytes: int = 64 << 20) -> tuple[int, int, list[Batch]]:
    """One sessionless Fetch v4: (error code, high watermark, batches)."""
    fp = FetchRequest.FetchTopic.FetchPartition(partition=partition, fetch_offset=offset,
                                                partition_max_bytes=max_bytes)
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0,
                       topics=[FetchRequest.FetchTopic(topic=topic, partitions=[fp])])
    with RawClient(bootstrap) as conn:
        resp = conn.call(req, FetchResponse, 4)
    (t,) = resp.responses
    (p,) = t.partitions
    return p.error_code, p.high_watermark, parse_batches(bytes(p.records or b""))


def all_batches(bootstrap: str, topic: str, partition: int) -> list[Batch]:
    """Every batch of a partition, fetching on until the high watermark."""
    out: list[Batch] = []
    offset = 0
    while True:
        err, hw, batches = fetch_batches(bootstrap, topic, partition, offset)
        assert err == 0
        if offset >= hw:
            return out
        assert batches, f"empty fetch at {offset} below high watermark {hw}"
        out += batches
        offset = batches[-1].last_offset + 1


def expected_records(n: int, partitions: int = PARTITIONS,
                     pad: int = 0) -> list[tuple[int, int, bytes, bytes, list[tuple[str, bytes]]]]:
    """Record i: (partition, offset, key, value, headers), spread round-robin so record i
    lands at offset i // partitions of partition i % partitions. ``pad`` adds compressible
    bytes: clients send a batch uncompressed when compression would not shrink it."""
    return [(i % partitions, i // partitions, f"key-{i}".encode(),
             f"value-{i}-".encode() * (1 + i % 7) + b"p" * pad,
             [("idx", str(i).encode()), ("parity", b"even" if i % 2 == 0 else b"odd")])
            for i in range(n)]


def advertised_apis(bootstrap: str) -> dict[int, tuple[int, int]]:
    """The broker's ApiVersions table (v0 request): api key -> (min, max)."""
    from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

    with RawClient(bootstrap) as conn:
        resp = conn.call(ApiVersionsRequest(), ApiVersionsResponse, 0)
    assert resp.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


PRODUCE, FIND_COORDINATOR = 0, 10


def librdkafka_codec_gate(version: tuple[int, ...], codec: str, apis: dict[int, tuple[int, int]]) -> str | None:
    """Why librdkafka ``version`` sends ``codec`` uncompressed to a broker advertising
    ``apis`` (a client-side decision made from ApiVersions), or None when it compresses."""
    if codec == "lz4" and FIND_COORDINATOR not in apis:
        return ("needs consumer groups (issue 3): librdkafka enables LZ4 only when the broker "
                "advertises FindCoordinator")
    produce = apis[PRODUCE]
    if codec in ("gzip", "snappy", "lz4") and tuple(version) < (2, 11, 1) and produce[0] > 0:
        return (f"librdkafka {'.'.join(map(str, version))} (before 2.11.1) asks whether Produce v0 is "
                f"supported before using {codec}; this broker advertises Produce {produce[0]}..{produce[1]} "
                f"(as Kafka 4.x does; Kafka 3.9 advertises 0..11), so the client sends it uncompressed")
    return None


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    """Records ``start``..``start + n - 1`` (key ``i``, value ``value-i``) spread round-robin over
    ``PARTITIONS`` partitions by an idempotent confluent-kafka producer."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for i in range(start, start + n):
        p.produce(topic, key=str(i).encode(), value=f"value-{i}".encode(), partition=i % PARTITIONS)
    assert p.flush(30) == 0


def consume_and_commit(bootstrap: str, topic: str, group: str, n: int) -> Consumer:
    """A subscribed group member that has consumed and committed exactly ``n`` records; returned
    open, so the group keeps a member."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "client.id": "obs-consumer"})
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    assert got == n
    c.commit(asynchronous=False)
    return c
