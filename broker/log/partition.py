"""The log of one partition: ordered segments, offsets, and idempotent-producer state.

Single node: the leader is the only replica, so the high watermark is the log end offset
once an append returns. Appends validate every batch before writing any of them.
"""
from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass
from typing import Any, Callable

import structlog

from coordinator.producer_state import ProducerStateTable
from protocol import records as rb
from protocol.errors import ErrorCode

from .segment import Segment

log = structlog.get_logger("samsa.log")


CONTROL_ABORT, CONTROL_COMMIT = 0, 1


@dataclass(slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # offset of the ABORT marker


def control_marker(data: bytes | bytearray, h: rb.BatchHeader) -> int | None:
    """The control type (0 abort, 1 commit) of a control batch's first record."""
    for r in rb.iter_records(data, h):
        if r.key is not None and len(r.key) >= 4:
            return struct.unpack_from(">h", r.key, 2)[0]
    return None


@dataclass(slots=True)
class AppendResult:
    error: int = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = 0
    message: str | None = None


class Partition:
    def __init__(self, topic: str, index: int, directory: str,
                 config: Callable[[str], Any], leader_epoch: int = 0) -> None:
        self.topic = topic
        self.index = index
        self.directory = directory
        self.config = config  # effective topic config lookup
        self.leader_epoch = leader_epoch
        self.segments: list[Segment] = []
        self.log_start_offset = 0
        self.producers = ProducerStateTable()
        self.unflushed_messages = 0
        # transactions: open ones (producer id -> first offset) and aborted ranges for read_committed
        self.ongoing_txns: dict[int, int] = {}
        self.aborted_txns: list[AbortedTxn] = []

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, clean_shutdown: bool) -> None:
        os.makedirs(self.directory, exist_ok=True)
        bases = sorted(int(f[:-4]) for f in os.listdir(self.directory)
                       if f.endswith(".log") and f[:-4].isdigit())
        interval = int(self.config("index.interval.bytes"))
        for i, base in enumerate(bases):
            seg = Segment(self.directory, base, interval)
            last = i == len(bases) - 1
            _, headers = seg.recover(validate_crc=last and not clean_shutdown)
            for h in headers:
                control = None
                if h.is_control:
                    control = seg.read(h.position, h.size)
                    h = rb.parse_header(control)
                self._track_batch(h, control)
            self.segments.append(seg)
        if not self.segments:
            self.segments.append(Segment(self.directory, 0, interval))
        self.log_start_offset = max(self.segments[0].base_offset, self._read_log_start_offset())

    def _read_log_start_offset(self) -> int:
        try:
            with open(os.path.join(self.directory, "log-start-offset")) as f:
                return int(f.read().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def _write_log_start_offset(self) -> None:
        tmp = os.path.join(self.directory, "log-start-offset.tmp")
        with open(tmp, "w") as f:
            f.write(str(self.log_start_offset))
        os.replace(tmp, os.path.join(self.directory, "log-start-offset"))

    def close(self) -> None:
        for seg in self.segments:
            try:
                seg.write_indexes()
            except OSError:
                pass
            seg.close()

    def flush(self) -> None:
        self.segments[-1].flush()
        self.unflushed_messages = 0

    # -- offsets -------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        if self.ongoing_txns:
            return min(min(self.ongoing_txns.values()), self.high_watermark)
        return self.high_watermark

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- append --------------------------------------------------------------------------
    def append(self, data: bytearray, batches: list[rb.BatchHeader], now_ms: int) -> AppendResult:
        """Append validated batches from one produce request (``data`` is mutated in place)."""
        max_bytes = int(self.config("max.message.bytes"))
        for h in batches:
            if h.size > max_bytes:
                return AppendResult(ErrorCode.MESSAGE_TOO_LARGE,
                                    message=f"batch of {h.size} bytes exceeds max.message.bytes {max_bytes}")
        log_append = self.config("message.timestamp.type") == "LogAppendTime"
        if not log_append:
            after = int(self.config("message.timestamp.after.max.ms"))
            before = int(self.config("message.timestamp.before.max.ms"))
            for h in batches:
                if h.max_timestamp >= 0 and h.max_timestamp - now_ms > after:
                    return AppendResult(ErrorCode.INVALID_TIMESTAMP,
                                        message="timestamp is too far in the future")
                if 0 <= h.base_timestamp < now_ms - before:
                    return AppendResult(ErrorCode.INVALID_TIMESTAMP, message="timestamp is too far in the past")
        for h in batches:
            if h.has_producer_id:
                v = self.producers.check(h.producer_id, h.producer_epoch, h.base_sequence,
                                         h.last_sequence, h.is_transactional)
                if v.error == ErrorCode.DUPLICATE_SEQUENCE_NUMBER and len(batches) == 1:
                    # a retry of a batch already written: answer as Kafka does, with its offset
                    return AppendResult(ErrorCode.NONE, v.duplicate_of.first_offset, -1, self.log_start_offset)
                if v.error:
                    return AppendResult(v.error, message=v.message or None)
        next_offset = self.log_end_offset
        base = next_offset
        for h in batches:
            rb.stamp(data, h.position, next_offset, self.leader_epoch, now_ms if log_append else None)
            h.base_offset = next_offset
            if log_append:
                h.max_timestamp = now_ms
            next_offset += h.last_offset_delta + 1
        self._maybe_roll(len(data), now_ms)
        self.segments[-1].append(data, batches)
        for h in batches:
            self._track_batch(h, data if h.is_control else None)
            self.unflushed_messages += h.record_count
        flush_messages = int(self.config("flush.messages"))
        if self.unflushed_messages >= flush_messages:
            self.flush()
        return AppendResult(ErrorCode.NONE, base, now_ms if log_append else -1, self.log_start_offset)

    def _track_batch(self, h: rb.BatchHeader, control_data: bytes | bytearray | None) -> None:
        """Producer state and transaction bookkeeping for one appended (or recovered) batch."""
        if not h.has_producer_id:
            return
        if h.is_control:
            marker = control_marker(control_data, h) if control_data is not None else None
            first = self.ongoing_txns.pop(h.producer_id, None)
            if marker == CONTROL_ABORT and first is not None:
                self.aborted_txns.append(AbortedTxn(h.producer_id, first, h.last_offset))
            self.producers.end_transaction(h.producer_id, h.producer_epoch)
            return
        self.producers.update(h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence,
                              h.base_offset, h.last_offset, h.max_timestamp, h.is_transactional)
        if h.is_transactional:
            self.ongoing_txns.setdefault(h.producer_id, h.base_offset)

    def append_control(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                       now_ms: int) -> int:
        """Write a transaction marker (COMMIT or ABORT control batch); returns its offset."""
        key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
        value = struct.pack(">hi", 0, coordinator_epoch)
        return self.append_internal([(key, value)], now_ms, producer_id=producer_id,
                                    producer_epoch=producer_epoch, transactional=True, control=True)

    def aborted_in_range(self, start: int, end: int) -> list["AbortedTxn"]:
        """Aborted transactions overlapping [start, end): what a read_committed fetch needs."""
        return [a for a in self.aborted_txns if a.last_offset >= start and a.first_offset < end]

    def append_internal(self, records: list[tuple[bytes | None, bytes | None]], now_ms: int, **kw: Any) -> int:
        """Append broker-written records (internal topics, markers); returns the base offset."""
        data = rb.build_batch(records, timestamp_ms=now_ms, **kw)
        h = rb.parse_header(data)
        result = self.append(data, [h], now_ms)
        if result.error:
            raise RuntimeError(f"internal append failed: {result.error} {result.message}")
        return result.base_offset

    def _maybe_roll(self, incoming: int, now_ms: int) -> None:
        active = self.segments[-1]
        if active.size == 0:
            return
        if active.size + incoming > int(self.config("segment.bytes")) or \
                now_ms - active.created_ms > int(self.config("segment.ms")):
            self.roll()

    def roll(self) -> None:
        active = self.segments[-1]
        active.write_indexes()
        self.segments.append(Segment(self.directory, active.next_offset, int(self.config("index.interval.bytes"))))

    # -- reads ---------------------------------------------------------------------------
    def _segment_index_for(self, offset: int) -> int:
        i = bisect.bisect_right([s.base_offset for s in self.segments], offset) - 1
        return max(i, 0)

    def read(self, offset: int, max_bytes: int, upper_offset: int, min_one: bool = True) -> bytes:
        """Whole stored batches starting with the one that contains ``offset``, below
        ``upper_offset``, at most ``max_bytes`` unless the first batch alone is larger and
        ``min_one`` is set (Kafka's first-batch rule)."""
        if offset >= upper_offset:
            return b""
        i = self._segment_index_for(offset)
        while i < len(self.segments):
            seg = self.segments[i]
            h = seg.find_batch(offset)
            if h is not None:
                break
            i += 1
        else:
            return b""
        if h.base_offset >= upper_offset:
            return b""
        available = seg.size - h.position
        want = min(max_bytes, available)
        if want < h.size:
            if not min_one:
                return b""
            want = h.size
        chunk = seg.read(h.position, want)
        # keep whole batches below the upper offset
        pos = 0
        n = len(chunk)
        while pos + rb.LOG_OVERHEAD <= n:
            b = rb.parse_header(chunk, pos) if pos + rb.HEADER_SIZE <= n else None
            if b is None or pos + b.size > n or b.base_offset >= upper_offset:
                break
            pos += b.size
        return chunk[:pos] if pos < n else chunk

    def batch_containing(self, offset: int) -> tuple[Segment, rb.BatchHeader] | None:
        i = self._segment_index_for(offset)
        for seg in self.segments[i:]:
            h = seg.find_batch(offset)
            if h is not None:
                return seg, h
        return None

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """First record at or after the log start with timestamp >= ts: (offset, timestamp)."""
        for seg in self.segments:
            if seg.max_timestamp >= ts:
                found = self._scan_segment_for_timestamp(seg, ts)
                if found:
                    return found
        return None

    def _scan_segment_for_timestamp(self, seg: Segment, ts: int) -> tuple[int, int] | None:
        start_h = seg.first_batch_with_timestamp(ts)
        if start_h is None:
            return None
        for h in seg.iter_headers(start_h.position):
            if h.max_timestamp < ts or h.last_offset < self.log_start_offset or h.is_control:
                continue
            data = seg.read(h.position, h.size)
            pos = h.position
            h.position = 0
            for r in rb.iter_records(data, h):
                if r.offset >= self.log_start_offset and r.timestamp >= ts:
                    return r.offset, r.timestamp
            h.position = pos
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        best: Segment | None = None
        for seg in self.segments:
            if seg.max_timestamp_pos >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        h = best.header_at(best.max_timestamp_pos)
        data = best.read(h.position, h.size)
        h.position = 0
        for r in rb.iter_records(data, h):
            if r.timestamp == best.max_timestamp:
                return r.offset, r.timestamp
        return h.base_offset, best.max_timestamp

    # -- deletion ------------------------------------------------------------------------
    def delete_records_before(self, offset: int) -> None:
        """Advance the log start offset and drop segments wholly below it."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            self.segments.pop(0).delete_files()
        if self.segments[0].next_offset <= offset and len(self.segments) == 1 and self.segments[0].size:
            # everything is below the new start: start an empty segment at it
            old = self.segments.pop(0)
            old.delete_files()
            self.segments.append(Segment(self.directory, offset, int(self.config("index.interval.bytes"))))
        self._write_log_start_offset()

    def delete(self) -> None:
        for seg in self.segments:
            seg.delete_files()
        for f in os.listdir(self.directory):
            os.unlink(os.path.join(self.directory, f))
        os.rmdir(self.directory)
