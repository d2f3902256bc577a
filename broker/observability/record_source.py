"""Records of a partition as the console's record browser reads them: batch by batch from the
partition's leader, with a bound on the bytes scanned per page, never the whole topic.

Where the bytes come from: this broker's own log when it leads the partition (``Partition.read``,
what a Fetch answers), else a consumer Fetch (read_uncommitted, with the aborted transactions) and
ListOffsets to the leader over the broker-to-broker client, the way cluster_view.py asks the other
brokers for their part. Either way the result is the same: stored batches, the partition's high
watermark, last stable offset and log start, and the aborted transactions overlapping the read,
from which each record is classed as a consumer would (read_committed hides aborted records and
those of transactions still open at or above the LSO).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest

from protocol import records as rb
from protocol.errors import ErrorCode
from broker.replica.client import BrokerConnection, BrokerConnectionError

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

CHUNK_BYTES = 256 << 10               # one read (or Fetch) of stored batches: a few thousand records decoded
                                      # between two checkpoints, so Kafka requests are served meanwhile
SCAN_BUDGET_BYTES = 16 << 20          # batches scanned for one page, over all partitions read
PEER_TIMEOUT_S = 5.0
FETCH_VERSION = 12                    # topic names (13+ name topics by id), aborted transactions, LSO
LIST_OFFSETS_VERSION = 7
COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class ReadError(Exception):
    """The partition could not be read (no leader, leader down, unknown partition)."""


@dataclass(slots=True)
class Chunk:
    """Stored batches from ``offset`` on, and the partition's offsets when they were read."""
    data: bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list[tuple[int, int]]    # (producer id, first offset) as a Fetch answer names them


@dataclass(slots=True)
class Record:
    """One record with what its batch says about it."""
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    log_append_time: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    status: str                      # "committed", "aborted", "open" (transaction at or above the LSO) or ""
    batch_base_offset: int
    batch_last_offset: int
    compression: str
    leader_epoch: int

    @property
    def sequence(self) -> int:
        return -1 if self.base_sequence < 0 else self.base_sequence + self.offset - self.batch_base_offset


@dataclass(slots=True)
class Filter:
    """What a record must match: its key exactly, a substring of its value, a header (``name`` or
    ``name=substring of value``); all given ones at once. Text is compared as UTF-8 bytes."""
    key: str | None = None
    value: str | None = None
    header: str | None = None

    @property
    def active(self) -> bool:
        return bool(self.key is not None or self.value or self.header)

    def matches(self, r: Record) -> bool:
        if self.key is not None and (r.key or b"") != self.key.encode() and not (r.key is None and self.key == ""):
            return False
        if self.value and (r.value is None or self.value.encode() not in r.value):
            return False
        if self.header:
            name, _, part = self.header.partition("=")
            return any(k == name and (not part or (v is not None and part.encode() in v)) for k, v in r.headers)
        return True


@dataclass(slots=True)
class Scan:
    """One partition's page: the records that matched, where the next page starts, and why it stopped."""
    partition: int
    records: list[Record] = field(default_factory=list)
    next_offset: int = -1
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    scanned_bytes: int = 0
    stopped: str = ""                # "end", "limit" or "budget"
    error: str = ""


def _leader(broker: Broker, topic: str, partition: int) -> int:
    st = next((p for p in broker.topology.partitions(topic) if p.index == partition), None)
    if st is None:
        raise ReadError(f"{topic}-{partition} does not exist")
    if st.leader < 0:
        raise ReadError(f"{topic}-{partition} has no leader")
    return st.leader


def _connection(broker: Broker, node: int) -> BrokerConnection:
    from .cluster_view import _endpoint

    endpoint = _endpoint(broker, node)
    if endpoint is None:
        raise ReadError(f"the leader, broker {node}, has no endpoint")
    return BrokerConnection(*endpoint, f"samsa-console-{broker.node_id}", timeout_s=PEER_TIMEOUT_S)


async def _remote(broker: Broker, node: int, request: object, version: int) -> Any:
    conn = _connection(broker, node)
    try:
        with trio.fail_after(PEER_TIMEOUT_S):
            return await conn.call(request, version)
    except (BrokerConnectionError, trio.TooSlowError) as exc:
        raise ReadError(f"the leader, broker {node}, did not answer: {exc!r}") from None
    finally:
        with trio.CancelScope(shield=True):
            await conn.close()


async def read_chunk(broker: Broker, topic: str, partition: int, offset: int,
                     max_bytes: int = CHUNK_BYTES) -> Chunk:
    """Stored batches from the one holding ``offset`` up to the high watermark (the first batch
    whole even when larger than ``max_bytes``), read from the partition's leader."""
    leader = _leader(broker, topic, partition)
    if leader == broker.node_id:
        part = broker.logs.partition(topic, partition)
        if part is None:
            raise ReadError(f"{topic}-{partition} has no log here")
        hw = part.high_watermark
        start = max(offset, part.log_start_offset)
        data = part.read(start, max_bytes, hw, min_one=True)
        return Chunk(data, hw, part.last_stable_offset, part.log_start_offset,
                     [(a.producer_id, a.first_offset) for a in part.aborted_in_range(start, hw)])
    FT, FP = FetchRequest.FetchTopic, FetchRequest.FetchTopic.FetchPartition

    async def fetch(isolation: int) -> Any:
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=isolation,
                           session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                           topics=[FT(topic=topic, partitions=[FP(partition=partition, current_leader_epoch=-1,
                                                                  fetch_offset=offset, last_fetched_epoch=-1,
                                                                  log_start_offset=-1, partition_max_bytes=max_bytes)])])
        resp = await _remote(broker, leader, req, FETCH_VERSION)
        for rt in resp.responses:         # type: ignore[attr-defined]
            for rp in rt.partitions:
                return rp
        raise ReadError(f"the leader, broker {leader}, did not answer for {topic}-{partition}")

    # read_uncommitted for the records up to the high watermark; a Fetch names the aborted
    # transactions only when read_committed, which reads up to the LSO: records above it are
    # classed "open" (undecided) even when their transaction has since been aborted
    rp = await fetch(0)
    if rp.error_code == ErrorCode.OFFSET_OUT_OF_RANGE and offset < rp.log_start_offset:
        return await read_chunk(broker, topic, partition, rp.log_start_offset, max_bytes)
    if rp.error_code:
        raise ReadError(f"the leader, broker {leader}, answered {ErrorCode(rp.error_code).name}")
    committed = await fetch(1) if rp.last_stable_offset > offset else None
    aborted = [(a.producer_id, a.first_offset) for a in (committed.aborted_transactions or [])] \
        if committed is not None and not committed.error_code else []
    return Chunk(bytes(rp.records or b""), rp.high_watermark, rp.last_stable_offset, rp.log_start_offset, aborted)


async def offset_for(broker: Broker, topic: str, partition: int, timestamp: int) -> int:
    """ListOffsets' answer for ``timestamp`` (-1 latest, -2 earliest, else the first offset whose
    timestamp is at or after it; the high watermark when there is none), asked of the leader."""
    leader = _leader(broker, topic, partition)
    if leader == broker.node_id:
        part = broker.logs.partition(topic, partition)
        if part is None:
            raise ReadError(f"{topic}-{partition} has no log here")
        if timestamp == -1:
            return part.high_watermark
        if timestamp == -2:
            return part.log_start_offset
        found = part.offset_for_timestamp(timestamp)
        return part.high_watermark if found is None or found[0] >= part.high_watermark else found[0]
    T = ListOffsetsRequest.ListOffsetsTopic
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[T(name=topic, partitions=[
        T.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1, timestamp=timestamp)])])
    resp = await _remote(broker, leader, req, LIST_OFFSETS_VERSION)
    for rt in resp.topics:            # type: ignore[attr-defined]
        for rp in rt.partitions:
            if rp.error_code:
                raise ReadError(f"the leader, broker {leader}, answered {ErrorCode(rp.error_code).name}")
            if rp.offset >= 0:
                return rp.offset
            return await offset_for(broker, topic, partition, -1)
    raise ReadError(f"the leader, broker {leader}, did not answer for {topic}-{partition}")


def decode(chunk: Chunk, partition: int, active: set[int] | None = None) -> tuple[list[Record], int]:
    """The records of a chunk's batches (control batches left out) and the offset after the last
    batch. A transactional batch is aborted as a read_committed consumer decides it: its producer
    has an aborted transaction that began at or before it, until that producer's abort marker;
    ``active`` carries the producers inside an aborted transaction from one chunk to the next."""
    aborted = sorted(chunk.aborted, key=lambda a: a[1])
    active = set() if active is None else active
    out: list[Record] = []
    next_offset = -1
    try:
        for h in rb.iter_batches(chunk.data, validate=False):
            if h.base_offset >= chunk.high_watermark:
                break
            while aborted and aborted[0][1] <= h.last_offset:
                active.add(aborted.pop(0)[0])
            next_offset = h.next_offset
            if h.is_control:
                if h.producer_id in active and _control_type(chunk.data, h) == 0:
                    active.discard(h.producer_id)
                continue
            status = ""
            if h.is_transactional:
                status = "aborted" if h.producer_id in active else \
                    "open" if h.last_offset >= chunk.last_stable_offset else "committed"
            for r in rb.iter_records(chunk.data, h):
                if r.offset >= chunk.high_watermark:
                    break
                out.append(Record(partition, r.offset, r.timestamp, r.key, r.value, r.headers,
                                  h.is_log_append_time, h.producer_id, h.producer_epoch, h.base_sequence,
                                  h.is_transactional, status, h.base_offset, h.last_offset,
                                  COMPRESSION.get(h.compression, str(h.compression)), h.leader_epoch))
    except rb.InvalidBatch:
        pass    # a batch cut at the read's end (a follower's Fetch may end mid-batch): read it next time
    return out, next_offset


def _control_type(data: bytes, h: rb.BatchHeader) -> int | None:
    for r in rb.iter_records(data, h):
        if r.key is not None and len(r.key) >= 4:
            return int(struct.unpack_from(">h", r.key, 2)[0])
    return None


def visible(r: Record, read_committed: bool) -> bool:
    return not read_committed or r.status in ("", "committed")


async def scan(broker: Broker, topic: str, partition: int, start: int, limit: int, flt: Filter,
               read_committed: bool, budget: int = SCAN_BUDGET_BYTES) -> Scan:
    """Records of one partition from offset ``start`` on that pass the filter, at most ``limit``,
    reading at most about ``budget`` bytes of batches; ``next_offset`` is where to continue."""
    out = Scan(partition, next_offset=start)
    active: set[int] = set()
    offset = start
    try:
        while True:
            chunk = await read_chunk(broker, topic, partition, offset, min(CHUNK_BYTES, max(budget - out.scanned_bytes, 1)))
            out.high_watermark, out.last_stable_offset = chunk.high_watermark, chunk.last_stable_offset
            out.log_start_offset = chunk.log_start_offset
            offset = max(offset, chunk.log_start_offset)
            records, after = decode(chunk, partition, active)
            await trio.lowlevel.checkpoint()     # decoding is CPU: let the broker's other tasks run
            out.scanned_bytes += len(chunk.data)
            for r in records:
                if r.offset < offset:
                    continue
                if visible(r, read_committed) and flt.matches(r):
                    out.records.append(r)
                    if len(out.records) >= limit:
                        out.next_offset = r.offset + 1
                        out.stopped = "end" if out.next_offset >= chunk.high_watermark else "limit"
                        return out
            if after < 0 or after <= offset:
                out.next_offset = offset
                out.stopped = "end"
                return out
            offset = out.next_offset = after
            if offset >= chunk.high_watermark:
                out.stopped = "end"
                return out
            if out.scanned_bytes >= budget:
                out.stopped = "budget"
                return out
    except ReadError as exc:
        out.error = str(exc)
        return out


async def record_at(broker: Broker, topic: str, partition: int, offset: int) -> Record | None:
    """The record at ``offset`` with its batch's attributes (an aborted one too), None if absent."""
    chunk = await read_chunk(broker, topic, partition, offset, 1)
    records, _ = decode(chunk, partition)
    return next((r for r in records if r.offset == offset), None)
