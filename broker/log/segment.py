"""One log segment: a ``<base offset>.log`` file of stored batches plus sparse offset and
time indexes kept in memory and written beside it as ``.index`` / ``.timeindex``.

Reads use ``os.pread`` on one descriptor, so serving a fetch is a seek-free copy of stored
bytes; appends are one ``os.write`` per produce request and partition.
"""
from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass

import structlog

from protocol import records as rb

log = structlog.get_logger("samsa.log")

_SCAN_CHUNK = 1 << 20
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(slots=True)
class ScanResult:
    valid_bytes: int
    truncated_bytes: int


class Segment:
    def __init__(self, directory: str, base_offset: int, index_interval: int = 4096) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.path = os.path.join(directory, segment_name(base_offset) + ".log")
        self.index_interval = index_interval
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.next_offset = base_offset
        # sparse offset index: batch base offsets and their file positions
        self.idx_offsets: list[int] = []
        self.idx_positions: list[int] = []
        # sparse time index: (max timestamp so far, position of the batch that raised it)
        self.time_ts: list[int] = []
        self.time_pos: list[int] = []
        self.max_timestamp = -1
        self.max_timestamp_pos = -1
        self.first_batch_timestamp = -1
        self.created_ms = int(os.stat(self.path).st_mtime * 1000)
        self._bytes_since_index = index_interval  # index the first batch

    # -- building state ------------------------------------------------------------------
    def _track(self, pos: int, base: int, last: int, max_ts: int, size: int) -> None:
        if self._bytes_since_index >= self.index_interval:
            self.idx_offsets.append(base)
            self.idx_positions.append(pos)
            self._bytes_since_index = 0
        self._bytes_since_index += size
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.max_timestamp_pos = pos
            self.time_ts.append(max_ts)
            self.time_pos.append(pos)
        if self.first_batch_timestamp < 0:
            self.first_batch_timestamp = max_ts
        self.next_offset = last + 1

    def recover(self, validate_crc: bool) -> tuple[ScanResult, list[rb.BatchHeader]]:
        """Walk every batch header (checking CRCs when the shutdown was unclean), rebuild the
        indexes and truncate a torn or corrupt tail. Returns the headers for producer state."""
        headers: list[rb.BatchHeader] = []
        pos = 0
        size = self.size
        while pos < size:
            head = os.pread(self.fd, rb.HEADER_SIZE, pos)
            if len(head) < rb.HEADER_SIZE or head[rb.OFF_MAGIC] != rb.MAGIC_V2:
                break
            h = rb.parse_header(head)
            if h.length < rb.HEADER_SIZE - rb.LOG_OVERHEAD or pos + h.size > size:
                break
            if validate_crc:
                whole = os.pread(self.fd, h.size, pos)
                try:
                    rb.validate_batch(whole, h)
                except rb.InvalidBatch:
                    break
            h.position = pos
            headers.append(h)
            self._track(pos, h.base_offset, h.last_offset, h.max_timestamp, h.size)
            pos += h.size
        truncated = size - pos
        if truncated:
            log.warning("truncating torn segment tail", segment=self.path, valid_bytes=pos,
                        truncated_bytes=truncated)
            os.ftruncate(self.fd, pos)
            self.size = pos
        return ScanResult(pos, truncated), headers

    # -- writes --------------------------------------------------------------------------
    def append(self, data: bytes | bytearray, batches: list[rb.BatchHeader]) -> None:
        start = self.size
        written = os.write(self.fd, data)
        if written != len(data):  # pragma: no cover - disk full
            os.ftruncate(self.fd, start)
            raise OSError("short write to segment")
        for h in batches:
            self._track(start + h.position, h.base_offset, h.last_offset, h.max_timestamp, h.size)
        self.size = start + len(data)

    def flush(self) -> None:
        os.fsync(self.fd)

    def truncate_to_position(self, pos: int) -> None:
        os.ftruncate(self.fd, pos)
        self.size = pos

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass

    def write_indexes(self) -> None:
        """Write Kafka-layout index files (relative offset/position, timestamp/relative offset)."""
        with open(os.path.join(self.directory, segment_name(self.base_offset) + ".index"), "wb") as f:
            f.write(b"".join(_INDEX_ENTRY.pack(o - self.base_offset, p)
                             for o, p in zip(self.idx_offsets, self.idx_positions)))
        with open(os.path.join(self.directory, segment_name(self.base_offset) + ".timeindex"), "wb") as f:
            f.write(b"".join(_TIME_ENTRY.pack(t, self._offset_at(p) - self.base_offset)
                             for t, p in zip(self.time_ts, self.time_pos)))

    def delete_files(self) -> None:
        self.close()
        for ext in (".log", ".index", ".timeindex"):
            try:
                os.unlink(os.path.join(self.directory, segment_name(self.base_offset) + ext))
            except FileNotFoundError:
                pass

    # -- reads ---------------------------------------------------------------------------
    def _offset_at(self, pos: int) -> int:
        return rb.parse_header(os.pread(self.fd, rb.HEADER_SIZE, pos)).base_offset

    def header_at(self, pos: int) -> rb.BatchHeader:
        h = rb.parse_header(os.pread(self.fd, rb.HEADER_SIZE, pos))
        h.position = pos
        return h

    def find_batch(self, offset: int) -> rb.BatchHeader | None:
        """The stored batch that contains ``offset`` (or the first one after it)."""
        i = bisect.bisect_right(self.idx_offsets, offset) - 1
        pos = self.idx_positions[i] if i >= 0 else 0
        while pos < self.size:
            h = self.header_at(pos)
            if h.last_offset >= offset:
                return h
            pos += h.size
        return None

    def read(self, pos: int, length: int) -> bytes:
        return os.pread(self.fd, length, pos)

    def iter_headers(self, pos: int = 0):
        while pos < self.size:
            h = self.header_at(pos)
            yield h
            pos += h.size

    def first_batch_with_timestamp(self, ts: int) -> rb.BatchHeader | None:
        i = bisect.bisect_left(self.time_ts, ts)
        if i >= len(self.time_ts):
            return None
        # time_ts is the running maximum, so every batch before time_pos[i] is older than ts
        for h in self.iter_headers(self.time_pos[i]):
            if h.max_timestamp >= ts:
                return h
        return None
