"""Log compaction (``cleanup.policy=compact``), following Kafka's LogCleaner.

Choosing: a partition is cleanable when its dirty part (from the cleaner checkpoint to the
first uncleanable offset: the active segment, the first unstable transaction, or the first
segment younger than ``min.compaction.lag.ms``, always a segment boundary) is more than
``min.cleanable.dirty.ratio`` of the log below it, or its oldest dirty batch is older than
``max.compaction.lag.ms``. The dirtiest goes first.

Cleaning a partition: a map key -> latest offset is built over the dirty part (records of
aborted transactions and control batches left out); then every segment below the first
uncleanable offset is copied, in groups that fit ``segment.bytes``, into ``<base>.log.cleaned``
keeping a record only if no later record has its key (offsets are preserved, gaps allowed).
Kafka's rules, kept exactly:
- tombstones (null values) and markers of transactions with no data left get a delete horizon
  (KIP-534: batch attribute 0x40, base timestamp = now + ``delete.retention.ms``) the first
  time they are cleaned, and are dropped by the first cleaning after it;
- records of aborted transactions are dropped; a COMMIT/ABORT marker stays until no batch of
  its transaction remains;
- the batch holding an active producer's last sequence stays (empty if need be), so
  idempotence survives compaction; records without a key are dropped;
- a batch whose records all stay and that needs no horizon is copied byte for byte; others are
  rebuilt with the same codec (cramjam) and a fresh CRC.

The map and the copying run in a worker thread on plain data (paths, sizes, offsets) with
their own file descriptors, so the event loop keeps serving; the active segment is never
read. Swapping in is Kafka's: ``.cleaned`` (fsynced) -> ``.swap`` (the commit point) -> the
replaced segments removed -> ``.log``. Start-up deletes ``.cleaned`` files and completes
``.swap`` ones (Partition._clean_leftovers), so a crash at any point loses nothing.
``log.cleaner.io.max.bytes.per.second`` throttles the bytes read and written, as Kafka's
Throttler does (checked every 300 ms).
"""
from __future__ import annotations

import json
import os
import struct
import time
from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterator

import crc32c
import structlog
import trio

from protocol import records as rb

from broker.common.config import LONG_MAX, BrokerConfig
from . import index as ix
from .partition import CONTROL_ABORT, CONTROL_COMMIT, Partition
from .segment import Segment, fsync_dir, segment_name

if TYPE_CHECKING:
    from .manager import LogManager

log = structlog.get_logger("samsa.cleaner")

CHECKPOINT_FILE = "cleaner-offset-checkpoint"
REPLACES_SUFFIX = ".replaces"
DEDUPE_ENTRY_BYTES = 24        # Kafka's SkimpyOffsetMap: 16-byte hash + 8-byte offset per slot
DEDUPE_LOAD_FACTOR = 0.9
_READ_CHUNK = 4 << 20
_WRITE_CHUNK = 4 << 20


class CleanerCancelled(Exception):
    pass


class CorruptBatch(OSError):
    """A stored batch whose CRC does not match: the partition is left alone (Kafka marks such a
    partition uncleanable) rather than rewriting it with a fresh, misleading CRC."""


# -- choosing ---------------------------------------------------------------------------

def read_checkpoint(part: Partition) -> int:
    """Where the dirty part of the log starts (Kafka's cleaner-offset-checkpoint, kept per
    partition in its directory and cached on the partition)."""
    cached = getattr(part, "cleaner_checkpoint", None)
    if cached is not None:
        return cached
    try:
        with open(os.path.join(part.directory, CHECKPOINT_FILE)) as f:
            value = int(f.read().strip() or 0)
    except (FileNotFoundError, ValueError):
        value = 0
    part.cleaner_checkpoint = value
    return value


def write_checkpoint(part: Partition, offset: int) -> None:
    path = os.path.join(part.directory, CHECKPOINT_FILE)
    with open(path + ".tmp", "w") as f:
        f.write(str(offset))
    os.replace(path + ".tmp", path)
    part.cleaner_checkpoint = offset


def _segment_containing(segments: list[Segment], offset: int) -> int:
    i = 0
    for j, seg in enumerate(segments):
        if seg.base_offset <= offset:
            i = j
        else:
            break
    return i


@dataclass(slots=True)
class Candidate:
    part: Partition
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    ratio: float
    forced: bool  # max.compaction.lag.ms exceeded


def candidate(part: Partition, now_ms: int) -> Candidate | None:
    """Kafka's LogToClean for one partition, or None when there is nothing to clean."""
    if part.deleted or part.cleaning or getattr(part, "uncleanable", False) or "compact" not in part.policies():
        return None
    segs = part.segments
    if len(segs) < 2:
        return None
    first_dirty = max(read_checkpoint(part), part.log_start_offset, segs[0].base_offset)
    upper = segs[-1].base_offset
    if part.ongoing_txns:
        upper = min(upper, part.last_stable_offset)
    lag = int(part.config("min.compaction.lag.ms") or 0)
    if lag > 0:  # the first dirty segment with a record younger than the lag stays dirty
        for seg in segs[_segment_containing(segs, first_dirty):-1]:
            if seg.largest_timestamp > now_ms - lag:
                upper = min(upper, seg.base_offset)
                break
    upper = segs[_segment_containing(segs, upper)].base_offset
    if upper <= first_dirty:
        return None
    clean_bytes = cleanable = 0
    for i, seg in enumerate(segs[:-1]):
        end = segs[i + 1].base_offset
        if end <= first_dirty:
            clean_bytes += seg.size
        elif seg.base_offset < upper:
            cleanable += seg.size
    total = clean_bytes + cleanable
    if total == 0 or cleanable == 0:
        return None
    ratio = cleanable / total
    forced = False
    max_lag = part.config("max.compaction.lag.ms")
    if max_lag is not None and int(max_lag) < LONG_MAX:
        first = segs[_segment_containing(segs, first_dirty)]
        ts = first.rolling_timestamp()
        forced = (ts if ts is not None else first.created_ms) < now_ms - int(max_lag)
    if not forced and ratio <= float(part.config("min.cleanable.dirty.ratio")):
        return None
    return Candidate(part, first_dirty, upper, clean_bytes, cleanable, ratio, forced)


# -- the plan a worker thread carries out -----------------------------------------------

@dataclass(slots=True)
class SegmentInput:
    base_offset: int
    path: str
    size: int


@dataclass
class Plan:
    name: str
    directory: str
    segments: list[SegmentInput]       # every segment below first_uncleanable, in order
    first_dirty: int
    first_uncleanable: int
    aborted: list[tuple[int, int, int]]           # (producer id, first offset, last offset)
    last_of_producer: dict[int, tuple[int | None, int]]  # pid -> (last data offset, epoch)
    now_ms: int
    delete_retention_ms: int
    segment_bytes: int
    index_interval: int
    map_capacity: int
    cancelled: bool = False
    throttle: Throttler | None = None     # log.cleaner.io.max.bytes.per.second, reads and writes


@dataclass
class CleanedSegment:
    base_offset: int
    replaces: list[int]                # base offsets of the segments it replaces
    path: str                          # the .cleaned file
    size: int = 0
    next_offset: int = 0
    idx_offsets: array[int] = field(default_factory=ix.offsets_array)
    idx_positions: array[int] = field(default_factory=ix.offsets_array)
    time_ts: array[int] = field(default_factory=ix.offsets_array)
    max_timestamp: int = -1
    max_timestamp_offset: int = -1


@dataclass
class Result:
    segments: list[CleanedSegment]
    end_offset: int
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0
    map_keys: int = 0
    seconds: float = 0.0


def make_plan(cand: Candidate, now_ms: int, map_capacity: int, throttle: Throttler | None = None) -> Plan:
    part = cand.part
    inputs = [SegmentInput(s.base_offset, s.path, s.size) for s in part.segments
              if s.base_offset < cand.first_uncleanable]
    last: dict[int, tuple[int | None, int]] = {}
    for pid, entry in part.producers.producers.items():
        last[pid] = (entry.batches[-1].last_offset if entry.batches else None, entry.epoch)
    return Plan(part.name, part.directory, inputs, cand.first_dirty, cand.first_uncleanable,
                [(a.producer_id, a.first_offset, a.last_offset) for a in part.aborted_txns
                 if a.first_offset < cand.first_uncleanable],
                last, now_ms, int(part.config("delete.retention.ms")), int(part.config("segment.bytes")),
                int(part.config("index.interval.bytes")), map_capacity, throttle=throttle)


class Throttler:
    """Kafka's kafka.utils.Throttler as the cleaner uses it: every ``check_interval_s`` the
    rate of bytes observed since the last check is compared with the desired rate, and the
    thread sleeps long enough to bring it down. Shared by every pass of the cleaner, as
    Kafka's one throttler is shared by its cleaner threads."""

    def __init__(self, bytes_per_second: float, check_interval_s: float = 0.3,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.bytes_per_second = bytes_per_second
        self.check_interval_s = check_interval_s
        self.clock = clock
        self.sleep = sleep
        self.period_start = clock()
        self.observed = 0.0
        self.slept_s = 0.0

    def __call__(self, n: int) -> None:
        self.observed += n
        now = self.clock()
        elapsed = now - self.period_start
        if elapsed > self.check_interval_s and self.observed > 0:
            if self.observed / elapsed > self.bytes_per_second:
                wait = self.observed / self.bytes_per_second - elapsed
                if wait > 0:
                    self.sleep(wait)
                    self.slept_s += wait
            self.period_start = self.clock()
            self.observed = 0.0


def throttler_for(broker_config: BrokerConfig) -> Throttler | None:
    """The cleaner's throttler, or None when ``log.cleaner.io.max.bytes.per.second`` is
    unlimited (Kafka's default, Double.MAX_VALUE)."""
    raw = broker_config.get("log.cleaner.io.max.bytes.per.second")
    rate = float(raw) if raw is not None else UNTHROTTLED
    return Throttler(rate) if 0 < rate < UNTHROTTLED else None


UNTHROTTLED = 1.7976931348623157e308


def _throttle(plan: Plan, n: int) -> None:
    if plan.throttle is not None:
        plan.throttle(n)
        if plan.cancelled:
            raise CleanerCancelled()


# -- worker-thread side -----------------------------------------------------------------

def _iter_file_batches(path: str, size: int, plan: Plan,
                       check_crc: bool = False) -> Iterator[tuple[rb.BatchHeader, memoryview]]:
    """(header, whole batch bytes) for each batch of a segment file, read in large chunks."""
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        buf = b""
        buf_start = 0
        while pos < size:
            if plan.cancelled:
                raise CleanerCancelled()
            off = pos - buf_start
            if off + rb.HEADER_SIZE > len(buf):
                buf = os.pread(fd, min(_READ_CHUNK, size - pos), pos)
                _throttle(plan, len(buf))
                buf_start, off = pos, 0
                if len(buf) < rb.HEADER_SIZE:
                    raise OSError(f"{path}: truncated batch at {pos}")
            h = rb.parse_header(buf, off)
            if off + h.size > len(buf):
                if h.size > len(buf):
                    buf = os.pread(fd, h.size, pos)
                else:
                    buf = os.pread(fd, min(max(_READ_CHUNK, h.size), size - pos), pos)
                _throttle(plan, len(buf))
                buf_start, off = pos, 0
                if len(buf) < h.size:
                    raise OSError(f"{path}: batch at {pos} runs past the end")
            view = memoryview(buf)[off:off + h.size]
            if check_crc and crc32c.crc32c(view[rb.CRC_START:]) != h.crc:
                raise CorruptBatch(f"{path}: CRC mismatch in the batch at position {pos} (offset {h.base_offset})")
            h.position = 0
            yield h, view
            pos += h.size
    finally:
        os.close(fd)


def _control_type(batch: memoryview, h: rb.BatchHeader) -> int | None:
    if h.record_count <= 0:
        return None
    data = rb.records_section(batch, h)
    for span in rb.iter_record_spans(data, 1):
        if span.key is not None and len(span.key) >= 4:
            return struct.unpack_from(">h", span.key, 2)[0]
    return None


class _Txns:
    """Kafka's CleanedTransactionMetadata: which transactional batches and markers may go."""

    def __init__(self, aborted: list[tuple[int, int, int]]) -> None:
        self.pending = deque(sorted(aborted, key=lambda a: a[1]))
        self.aborted: dict[int, list[Any]] = {}   # pid -> [txn, last observed batch offset]
        self.committed: set[int] = set()

    def _consume(self, offset: int) -> None:
        while self.pending and self.pending[0][1] <= offset:
            txn = self.pending.popleft()
            self.aborted[txn[0]] = [txn, None]

    def on_control(self, h: rb.BatchHeader, ctype: int | None) -> bool:
        """True when the marker may be discarded."""
        self._consume(h.last_offset)
        if ctype is None:
            return True  # an empty control batch was already cleaned
        if ctype == CONTROL_ABORT:
            meta = self.aborted.pop(h.producer_id, None)
            return not (meta is not None and meta[1] is not None)
        if ctype == CONTROL_COMMIT:
            if h.producer_id in self.committed:
                self.committed.discard(h.producer_id)
                return False
            return True
        return False

    def on_batch(self, h: rb.BatchHeader) -> bool:
        """True when the batch belongs to an aborted transaction (it may be discarded)."""
        self._consume(h.last_offset)
        if h.is_transactional:
            meta = self.aborted.get(h.producer_id)
            if meta is not None:
                meta[1] = h.last_offset
                return True
            self.committed.add(h.producer_id)
        return False


def build_offset_map(plan: Plan, result: Result) -> tuple[dict[bytes, int], int, bool]:
    """key -> latest offset over [first_dirty, first_uncleanable); returns (map, latest offset,
    full). Stops early, at a batch boundary, when the map holds ``map_capacity`` keys."""
    offsets: dict[bytes, int] = {}
    latest = -1
    txns = _Txns(plan.aborted)
    start, end = plan.first_dirty, plan.first_uncleanable
    for i, seg in enumerate(plan.segments):
        nxt = plan.segments[i + 1].base_offset if i + 1 < len(plan.segments) else end
        if nxt <= start:
            continue
        for h, batch in _iter_file_batches(seg.path, seg.size, plan, check_crc=True):
            if h.last_offset < start:
                continue
            if h.base_offset >= end:
                break
            if h.is_control:
                txns.on_control(h, _control_type(batch, h))
            elif not txns.on_batch(h) and h.record_count:
                if len(offsets) >= plan.map_capacity:
                    result.map_keys = len(offsets)
                    return offsets, latest, True
                data = rb.records_section(batch, h)
                base = h.base_offset
                for span in rb.iter_record_spans(data, h.record_count):
                    off = base + span.offset_delta
                    if span.key is not None and off >= start:
                        offsets[span.key] = off
            latest = max(latest, h.last_offset)
    result.map_keys = len(offsets)
    return offsets, latest, False


class _Writer:
    """Appends batches to a .cleaned file, tracking what the new segment's indexes need."""

    def __init__(self, out: CleanedSegment, index_interval: int, plan: Plan | None = None) -> None:
        self.plan = plan
        self.out = out
        self.f = open(out.path, "wb")
        self.buf = bytearray()
        self.interval = index_interval
        self.since_index = index_interval

    def add(self, batch: bytes | bytearray | memoryview, h: rb.BatchHeader) -> None:
        out = self.out
        pos = out.size
        if h.max_timestamp > out.max_timestamp:
            out.max_timestamp = h.max_timestamp
            out.max_timestamp_offset = h.base_offset
        if self.since_index >= self.interval:
            out.idx_offsets.append(h.base_offset)
            out.idx_positions.append(pos)
            out.time_ts.append(out.max_timestamp)
            self.since_index = 0
        self.since_index += len(batch)
        out.size += len(batch)
        out.next_offset = h.base_offset + h.last_offset_delta + 1
        self.buf += batch
        if len(self.buf) >= _WRITE_CHUNK:
            self.f.write(self.buf)
            if self.plan is not None:
                _throttle(self.plan, len(self.buf))
            self.buf = bytearray()

    def finish(self) -> None:
        self.f.write(self.buf)
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        if self.out.max_timestamp_offset < 0:
            self.out.max_timestamp_offset = self.out.base_offset


def _groups(plan: Plan) -> list[list[SegmentInput]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose sizes add up to segment.bytes."""
    groups: list[list[SegmentInput]] = []
    segs = list(plan.segments)
    while segs:
        group = [segs.pop(0)]
        size = group[0].size
        while segs and size + segs[0].size <= plan.segment_bytes:
            nxt_bound = segs[1].base_offset - 1 if len(segs) > 1 else plan.first_uncleanable - 1
            if nxt_bound - group[0].base_offset > 0x7FFFFFFF:
                break
            size += segs[0].size
            group.append(segs.pop(0))
        groups.append(group)
    return groups


def clean(plan: Plan) -> Result:
    """Carry out a plan (in a worker thread): build the map, write the .cleaned files."""
    try:
        return _clean(plan)
    except (rb.InvalidBatch, IndexError, struct.error) as exc:
        raise CorruptBatch(f"{plan.name}: undecodable records ({exc})") from None


def _clean(plan: Plan) -> Result:
    started = time.monotonic()
    result = Result([], plan.first_uncleanable)
    offsets, latest, full = build_offset_map(plan, result)
    # a full map cleans only up to what it covered; the rest stays dirty for the next pass
    result.end_offset = max(latest + 1, plan.first_dirty) if full else plan.first_uncleanable
    if full and latest < plan.first_dirty:
        raise OSError("log.cleaner.dedupe.buffer.size is too small for a single batch")
    plan.segments = [s for s in plan.segments if s.base_offset < result.end_offset]
    txns = _Txns(plan.aborted)
    now = plan.now_ms
    written: list[CleanedSegment] = []
    try:
        for group in _groups(plan):
            out = CleanedSegment(group[0].base_offset, [s.base_offset for s in group],
                                 os.path.join(plan.directory, segment_name(group[0].base_offset) + ".log.cleaned"))
            out.next_offset = group[0].base_offset
            written.append(out)
            writer = _Writer(out, plan.index_interval, plan)
            try:
                for seg in group:
                    for h, batch in _iter_file_batches(seg.path, seg.size, plan, check_crc=True):
                        result.bytes_read += h.size
                        result.records_read += h.record_count
                        kept = _clean_batch(h, batch, offsets, latest, txns, plan, now)
                        if kept is not None:
                            nh = rb.parse_header(kept)
                            writer.add(kept, nh)
                            result.bytes_written += len(kept)
                            result.records_written += nh.record_count
            finally:
                writer.finish()
    except BaseException:
        for out in written:
            try:
                os.unlink(out.path)
            except FileNotFoundError:
                pass
        raise
    result.segments = written
    result.seconds = time.monotonic() - started
    return result


def _clean_batch(h: rb.BatchHeader, batch: memoryview, offsets: dict[bytes, int], latest: int,
                 txns: _Txns, plan: Plan, now: int) -> bytes | bytearray | memoryview | None:
    """Kafka's checkBatchRetention + shouldRetainRecord + MemoryRecords.filterTo for one batch:
    the batch to write (original bytes, rebuilt, or an empty header), or None to drop it."""
    has_horizon = bool(h.attributes & rb.DELETE_HORIZON_MASK)
    horizon = h.base_timestamp if has_horizon else None
    if h.is_control:
        can_discard = txns.on_control(h, _control_type(batch, h))
        discard_records = can_discard and horizon is not None and horizon <= now
    else:
        can_discard = txns.on_batch(h)
        discard_records = can_discard
    keep_empty = False
    if h.has_producer_id:
        last = plan.last_of_producer.get(h.producer_id)
        if last is not None:
            last_data, epoch = last
            keep_empty = (h.last_offset == last_data) if last_data is not None else \
                (h.is_control and h.producer_epoch == epoch)
    if discard_records and not keep_empty:
        return None
    marker_for_empty_txn = can_discard and h.is_control
    if h.record_count == 0:
        return batch if keep_empty or (h.is_control and not discard_records) else None
    data = rb.records_section(batch, h)
    spans = list(rb.iter_record_spans(data, h.record_count))
    if discard_records:
        kept: list[rb.RecordSpan] = []
    elif h.is_control:
        kept = spans
    else:
        retain_deletes = horizon is None or now < horizon
        kept = []
        base = h.base_offset
        for s in spans:
            off = base + s.offset_delta
            if off > latest:
                kept.append(s)
            elif s.key is not None and off >= offsets.get(s.key, -1) and (s.has_value or retain_deletes):
                kept.append(s)
    tombstones = any(not s.has_value for s in kept) and not h.is_control
    needs_horizon = (tombstones or marker_for_empty_txn) and horizon is None
    if kept and len(kept) == len(spans) and not needs_horizon:
        return batch
    if not kept:
        if not keep_empty:
            return None
        attrs = h.attributes & ~rb.COMPRESSION_MASK
        return rb.assemble_batch(h.base_offset, h.leader_epoch, attrs, h.last_offset_delta, h.base_timestamp,
                                 h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence, 0, b"")
    new_horizon = now + plan.delete_retention_ms if needs_horizon else horizon
    attrs = h.attributes
    base_ts = h.base_timestamp
    if new_horizon is not None:
        attrs |= rb.DELETE_HORIZON_MASK
        base_ts = new_horizon
    body = bytearray()
    max_ts = -1
    for s in kept:
        ts = h.base_timestamp + s.timestamp_delta
        max_ts = max(max_ts, ts)
        if base_ts == h.base_timestamp:
            body += data[s.start:s.end]
        else:
            body += rb.encode_record(data[s.start + _varint_len(data, s.start)], ts - base_ts, s.offset_delta,
                                     data[s.rest:s.end])
    if h.is_log_append_time or h.is_control:
        max_ts = h.max_timestamp
    return rb.assemble_batch(h.base_offset, h.leader_epoch, attrs, kept[-1].offset_delta, base_ts, max_ts,
                             h.producer_id, h.producer_epoch, h.base_sequence, len(kept), body)


def _varint_len(data: bytes, pos: int) -> int:
    n = 1
    while data[pos] & 0x80:
        pos += 1
        n += 1
    return n


# -- swapping in (event loop) -----------------------------------------------------------

def swap_in(part: Partition, plan: Plan, result: Result) -> bool:
    """Replace each group of segments by its cleaned file; False (and nothing changed) if the
    partition's segments moved on meanwhile."""
    by_base = {s.base_offset: s for s in part.segments}
    for out in result.segments:
        if any(b not in by_base for b in out.replaces):
            return False
        olds = [by_base[b] for b in out.replaces]
        i = part.segments.index(olds[0])
        if part.segments[i:i + len(olds)] != olds or i + len(olds) >= len(part.segments):
            return False  # must be consecutive and never include the active segment
    for out in result.segments:
        olds = [by_base[b] for b in out.replaces]
        first = olds[0]
        swap = first.stem + ".log.swap"
        # which segments the swap replaces, for a start-up that finds the .swap (written first)
        with open(swap + REPLACES_SUFFIX, "w") as f:
            json.dump(out.replaces, f)
        os.replace(out.path, swap)                      # the commit point
        for old in olds:
            part.fds.release(old)
            ix.remove_indexes(old.stem)
        for old in olds[1:]:
            os.unlink(old.path)
        os.replace(swap, first.path)
        os.unlink(swap + REPLACES_SUFFIX)
        seg = Segment(part.directory, out.base_offset, plan.index_interval, part.fds, created_ms=first.created_ms)
        seg.next_offset = out.next_offset
        seg.idx_offsets, seg.idx_positions, seg.time_ts = out.idx_offsets, out.idx_positions, out.time_ts
        seg.max_timestamp = out.max_timestamp
        seg._max_ts_offset = out.max_timestamp_offset if out.max_timestamp >= 0 else -1
        if seg.size:
            seg._first_ts = None
        seg._bytes_since_index = plan.index_interval
        seg.write_indexes()
        seg.index_dirty = False
        i = part.segments.index(first)
        part.segments[i:i + len(olds)] = [seg]
    fsync_dir(part.directory)
    write_checkpoint(part, result.end_offset)
    return True


def map_capacity(broker_config: BrokerConfig) -> int:
    raw = broker_config.get("log.cleaner.dedupe.buffer.size")
    size = int(raw) if raw is not None else 134217728
    return max(1, int(size // DEDUPE_ENTRY_BYTES * DEDUPE_LOAD_FACTOR))


async def clean_partition(part: Partition, cand: Candidate, now_ms: int, capacity: int,
                          throttle: Throttler | None = None) -> Result | None:
    """One cleaning pass over one partition: plan here, work in a thread, swap here."""
    part.cleaning = True
    try:
        plan = make_plan(cand, now_ms, capacity, throttle)
        try:
            result = await trio.to_thread.run_sync(clean, plan, abandon_on_cancel=True)
        except BaseException:
            plan.cancelled = True
            raise
        if part.deleted or not swap_in(part, plan, result):
            for out in result.segments:
                try:
                    os.unlink(out.path)
                except FileNotFoundError:
                    pass
            return None
    except (CleanerCancelled, FileNotFoundError) as exc:
        if not part.deleted:
            log.warning("cleaning abandoned", partition=part.name, error=str(exc))
        return None
    except CorruptBatch as exc:
        part.uncleanable = True
        log.error("partition marked uncleanable: a stored batch is corrupt", partition=part.name, error=str(exc))
        return None
    finally:
        part.cleaning = False
    log.info("log cleaned", partition=part.name, first_dirty=plan.first_dirty, end_offset=result.end_offset,
             segments_in=len(plan.segments), segments_out=len(result.segments),
             mb_read=round(result.bytes_read / 1e6, 3), mb_written=round(result.bytes_written / 1e6, 3),
             records_read=result.records_read, records_written=result.records_written, keys=result.map_keys,
             seconds=round(result.seconds, 3), dirty_ratio=round(cand.ratio, 3))
    return result


def pick(partitions: list[Partition], now_ms: int) -> Candidate | None:
    best: Candidate | None = None
    for part in partitions:
        cand = candidate(part, now_ms)
        if cand is not None and (best is None or cand.forced > best.forced or
                                 (cand.forced == best.forced and cand.ratio > best.ratio)):
            best = cand
    return best


async def run_cleaner(logs: LogManager, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
    """The cleaner thread of Kafka as a trio task: clean the dirtiest partition, or back off
    ``log.cleaner.backoff.ms`` when none qualifies."""
    cfg = logs.config
    task_status.started()
    enabled = str(cfg.get("log.cleaner.enable", "true")).lower() != "false"
    if not enabled:
        return
    seen: tuple[Any, ...] | None = None
    while True:
        # read again when dynamic broker configs changed them (broker/common/dynamic_config_defs.py)
        now = tuple(cfg.get(k) for k in ("log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
                                         "log.cleaner.io.max.bytes.per.second"))
        if now != seen:
            seen = now
            backoff = int(cfg.get("log.cleaner.backoff.ms", 15000))  # 0 is a legal value
            capacity = map_capacity(cfg)
            throttle = throttler_for(cfg)
        compacted = [p for p in logs.all_partitions() if "compact" in p.policies()]
        cand = pick(compacted, logs.now_ms())
        if cand is None:
            await logs.clock.sleep(backoff)
            continue
        try:
            await clean_partition(cand.part, cand, logs.now_ms(), capacity, throttle)
        except OSError as exc:
            log.error("cleaning failed", partition=cand.part.name, error=str(exc))
            await logs.clock.sleep(backoff)
        await trio.sleep(0)
