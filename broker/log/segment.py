"""One log segment: a ``<base offset>.log`` file of stored batches plus sparse offset and
time indexes kept in memory and persisted beside it as ``.index`` / ``.timeindex``.

Reads use ``os.pread``, so serving a fetch is a seek-free copy of stored bytes; appends are
one ``os.write`` per produce request and partition. The file descriptor comes from a shared
LRU (``FdCache``): a segment costs no descriptor until it is read or written.

In memory the offset index holds (base offset, position) of one batch per
``index.interval.bytes`` (the first batch always), and ``time_ts[i]`` the largest timestamp
of every batch up to and including index entry ``i``. A timestamp lookup therefore starts at
the last entry whose running maximum is below the target: every batch before it is older.
"""
from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from collections.abc import Iterator

import crc32c
import structlog

from protocol import records as rb

from . import index as ix
from .fds import FdCache, fsync_dir  # noqa: F401  (fsync_dir: the cleaner's import)

log = structlog.get_logger("samsa.log")

_SCAN_CHUNK = 1 << 20


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(slots=True)
class ScanResult:
    valid_bytes: int
    truncated_bytes: int
    reason: str = ""


_IOV_MAX = min(os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024, 1024)


class Segment:
    def __init__(self, directory: str, base_offset: int, index_interval: int, fds: FdCache,
                 created_ms: int | None = None, path: str | None = None, new_file: bool = False) -> None:
        """``new_file``: the file is known not to exist (its directory was made a moment ago):
        it is created with the descriptor the segment keeps, without looking for it first or
        reading its size and times back (``created_ms`` is then required)."""
        self.directory = directory
        self.base_offset = base_offset
        self.stem = os.path.join(directory, segment_name(base_offset))
        self.path = path or self.stem + ".log"  # another path: a .cleaned or .swap file
        self.index_interval = index_interval
        self.fds = fds
        self._fd = -1
        self.dir_synced = True  # the directory entry of the file is known to be on disk
        if new_file:
            assert created_ms is not None
            fds.adopt(self, os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644))
            self.dir_synced = False
            self.size = 0
            mtime_ms = created_ms
        else:
            if not os.path.exists(self.path):
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644))
                self.dir_synced = False
            st = os.stat(self.path)
            self.size = st.st_size
            mtime_ms = int(st.st_mtime * 1000)
        self.flushed_size = self.size  # bytes known to be on disk (fsync), for acks=all syncing
        self.next_offset = base_offset
        self.idx_offsets = ix.offsets_array()
        self.idx_positions = ix.offsets_array()
        self.time_ts = ix.offsets_array()
        self.max_timestamp = -1
        self._max_ts_pos = -1       # position of the batch holding max_timestamp; -1 = not known yet
        self._max_ts_offset = -1    # or its offset, as read from the time index
        self._first_ts: int | None = None
        self.created_ms = created_ms if created_ms is not None else mtime_ms
        self.mtime_ms = mtime_ms
        self._bytes_since_index = index_interval  # index the first batch
        self.index_dirty = True  # in-memory indexes differ from the files
        self.roll_jitter_ms: int | None = None  # drawn by the partition on its first roll check
        self.loaded_from = "new"  # "index" (persisted indexes trusted) or "scan" (rebuilt from the log)

    def __repr__(self) -> str:
        return f"Segment({self.path}, size={self.size}, next_offset={self.next_offset})"

    @property
    def fd(self) -> int:
        return self.fds.get(self)

    # -- building state ------------------------------------------------------------------
    def _reset(self) -> None:
        self.idx_offsets = ix.offsets_array()
        self.idx_positions = ix.offsets_array()
        self.time_ts = ix.offsets_array()
        self.max_timestamp = -1
        self._max_ts_pos = -1
        self._max_ts_offset = -1
        self._first_ts = None
        self.next_offset = self.base_offset
        self._bytes_since_index = self.index_interval

    def _track(self, pos: int, base: int, last: int, max_ts: int, size: int) -> None:
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self._max_ts_pos = pos
            self._max_ts_offset = -1
        if self._bytes_since_index >= self.index_interval:
            self.idx_offsets.append(base)
            self.idx_positions.append(pos)
            self.time_ts.append(self.max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += size
        if pos == 0:
            self._first_ts = max_ts
        self.next_offset = last + 1

    def scan(self, start: int = 0, validate_crc: bool = False, expect_offset: int | None = None,
             chunk: int = _SCAN_CHUNK) -> Iterator[rb.BatchHeader]:
        """Walk batch headers from ``start`` in 1 MiB reads, stopping at the first thing that is
        not a whole, well-formed batch (``self.scan_stop`` = (position, reason) afterwards).
        Offsets must increase; with ``validate_crc`` every batch's CRC-32C is checked."""
        size = self.size
        pos = start
        buf = b""
        buf_start = start
        expected = self.base_offset if expect_offset is None else expect_offset
        reason = ""
        while pos < size:
            off = pos - buf_start
            if off + rb.HEADER_SIZE > len(buf):
                # self.fd each time: while this generator is suspended the LRU may close it
                buf = os.pread(self.fd, max(chunk, rb.HEADER_SIZE), pos)
                buf_start, off = pos, 0
                if len(buf) < rb.HEADER_SIZE:
                    reason = f"truncated batch header ({len(buf)} bytes) at position {pos}"
                    break
            if buf[off + rb.OFF_MAGIC] != rb.MAGIC_V2:
                reason = f"bad magic byte {buf[off + rb.OFF_MAGIC]} at position {pos}"
                break
            h = rb.parse_header(buf, off)
            if h.length < rb.HEADER_SIZE - rb.LOG_OVERHEAD or h.last_offset_delta < 0 or h.record_count < 0:
                reason = f"malformed batch header at position {pos}"
                break
            if pos + h.size > size:
                reason = f"batch at position {pos} ends past the file end ({pos + h.size} > {size})"
                break
            if h.base_offset < expected:
                reason = f"batch at position {pos} has offset {h.base_offset}, expected at least {expected}"
                break
            if validate_crc:
                if off + h.size <= len(buf):
                    crc = crc32c.crc32c(memoryview(buf)[off + rb.CRC_START:off + h.size])
                else:
                    whole = os.pread(self.fd, h.size, pos)
                    crc = crc32c.crc32c(memoryview(whole)[rb.CRC_START:]) if len(whole) == h.size else -1
                if crc != h.crc:
                    reason = f"CRC mismatch in batch at position {pos} (offset {h.base_offset})"
                    break
            h.position = pos
            expected = h.last_offset + 1
            yield h
            pos += h.size
        self.scan_stop = (pos, reason)

    def rebuild(self, validate_crc: bool) -> ScanResult:
        """Rebuild the in-memory indexes from the log (checking CRCs when asked) and cut a torn
        or corrupt tail. The cut bytes are kept in ``<base>.log.corrupt-<position>``."""
        self._reset()
        self.loaded_from = "scan"
        for h in self.scan(0, validate_crc):
            self._track(h.position, h.base_offset, h.last_offset, h.max_timestamp, h.size)
        pos, reason = self.scan_stop
        truncated = self.size - pos
        if truncated:
            self._cut_tail(pos, reason)
        return ScanResult(pos, truncated, reason)

    def _cut_tail(self, pos: int, reason: str) -> None:
        truncated = self.size - pos
        keep = f"{self.path}.corrupt-{pos}"
        with open(keep, "wb") as f:
            at = pos
            while at < self.size:
                piece = os.pread(self.fd, min(_SCAN_CHUNK, self.size - at), at)
                if not piece:
                    break
                f.write(piece)
                at += len(piece)
        log.warning("truncating torn segment tail", segment=self.path, valid_bytes=pos,
                    truncated_bytes=truncated, reason=reason, saved_to=keep)
        os.ftruncate(self.fd, pos)
        self.size = pos
        self.flushed_size = min(self.flushed_size, pos)

    def load(self, validate_tail_crc: bool) -> str | None:
        """Load the persisted indexes, then walk only the batches after the last index entry.
        Returns None on success, else why the indexes cannot be trusted (nothing changed)."""
        try:
            offsets, positions, times, max_ts, max_off = ix.read_indexes(self.stem, self.base_offset, self.size)
        except ix.IndexInvalid as exc:
            return str(exc)
        self._reset()
        if not len(offsets):
            self.loaded_from = "index"
            return None
        head = os.pread(self.fd, rb.HEADER_SIZE, positions[-1])
        if len(head) < rb.HEADER_SIZE or head[rb.OFF_MAGIC] != rb.MAGIC_V2 or \
                rb.parse_header(head).base_offset != offsets[-1]:
            return f"last index entry (offset {offsets[-1]}, position {positions[-1]}) is not a batch start"
        # keep all but the last entry, then re-walk from it: that re-adds it and covers the tail
        self.idx_offsets, self.idx_positions, self.time_ts = offsets[:-1], positions[:-1], times[:-1]
        self.max_timestamp = times[-1]
        if rb.parse_header(os.pread(self.fd, rb.HEADER_SIZE, 0)).base_offset != offsets[0]:
            self._reset()
            return "first index entry does not name the first batch"
        for h in self.scan(positions[-1], validate_tail_crc, expect_offset=offsets[-1]):
            self._track(h.position, h.base_offset, h.last_offset, h.max_timestamp, h.size)
        pos, reason = self.scan_stop
        if pos != self.size:
            self._reset()
            return f"log after the last index entry is not whole batches: {reason}"
        if self.max_timestamp != max_ts:
            self._reset()
            return f"time index says largest timestamp {max_ts}, the log says {self.max_timestamp}"
        if not (self.base_offset <= max_off < self.next_offset):
            self._reset()
            return f"time index names offset {max_off} outside the segment"
        if self._max_ts_pos < 0:
            self._max_ts_offset = max_off
        self.loaded_from = "index"
        return None

    # -- writes --------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | list, batches: list[rb.BatchHeader]) -> None:
        """Write the batches: one buffer, or a list of pieces (rb.stamped_parts) for writev."""
        start = self.size
        fd = self.fd
        if isinstance(data, list):
            length = sum(len(p) for p in data)
            written = 0
            for i in range(0, len(data), _IOV_MAX):
                written += os.writev(fd, data[i:i + _IOV_MAX])
        else:
            length = len(data)
            written = os.write(fd, data)
        if written != length:  # pragma: no cover - disk full
            os.ftruncate(fd, start)
            raise OSError("short write to segment")
        for h in batches:
            self._track(start + h.position, h.base_offset, h.last_offset, h.max_timestamp, h.size)
        self.size = start + length

    def append_batch(self, data: bytes, base_offset: int, last_offset: int, max_timestamp: int) -> None:
        """:meth:`append` for one batch in one buffer (the broker's own appends, one per offset
        commit), without the list and per-batch walk."""
        start = self.size
        length = len(data)
        if os.write(self.fd, data) != length:  # pragma: no cover - disk full
            os.ftruncate(self.fd, start)
            raise OSError("short write to segment")
        self._track(start, base_offset, last_offset, max_timestamp, length)
        self.size = start + length

    def flush(self) -> None:
        if self.flushed_size < self.size:
            size = self.size
            os.fdatasync(self.fd)
            self.flushed_size = max(self.flushed_size, size)

    def close(self) -> None:
        self.fds.release(self)

    def write_indexes(self, fsync: bool = False) -> None:
        ix.write_indexes(self.stem, self.base_offset, self.idx_offsets, self.idx_positions, self.time_ts,
                         self.max_timestamp, self.max_timestamp_offset(), fsync)

    def delete_files(self, later: bool = False) -> list[str]:
        """Remove the segment's files, or (``later``) rename them ``*.deleted`` for removal
        after file.delete.delay.ms, as Kafka does; returns the renamed paths. Start-up removes
        any ``*.deleted`` file a stop left behind."""
        self.close()
        if later:
            moved = []
            for ext in (".log", ".index", ".timeindex"):  # the log first, as Kafka renames it
                try:
                    os.rename(self.stem + ext, self.stem + ext + ".deleted")
                    moved.append(self.stem + ext + ".deleted")
                except FileNotFoundError:
                    pass
            return moved
        for ext in (".index", ".timeindex", ".log"):  # the log last: a crash leaves no orphan index
            try:
                os.unlink(self.stem + ext)
            except FileNotFoundError:
                pass
        return []

    # -- reads ---------------------------------------------------------------------------
    @property
    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp: the largest record timestamp, or the file's
        modification time when no record carries one (what time retention compares)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return self.mtime_ms

    def rolling_timestamp(self) -> int | None:
        """The first batch's largest timestamp (Kafka's rollingBasedTimestamp), or None."""
        if self._first_ts is None and self.size:
            self._first_ts = self.header_at(0).max_timestamp
        return self._first_ts if self._first_ts is not None and self._first_ts >= 0 else None

    def header_at(self, pos: int) -> rb.BatchHeader:
        h = rb.parse_header(os.pread(self.fd, rb.HEADER_SIZE, pos))
        h.position = pos
        return h

    def _index_ok(self, i: int, h: rb.BatchHeader) -> bool:
        if h.magic == rb.MAGIC_V2 and h.base_offset == self.idx_offsets[i]:
            return True
        log.error("offset index entry does not match the log; rebuilding the segment's index",
                  segment=self.path, offset=self.idx_offsets[i], position=self.idx_positions[i])
        self.rebuild(validate_crc=True)
        return False

    def find_batch(self, offset: int) -> rb.BatchHeader | None:
        """The stored batch that contains ``offset`` (or the first one after it)."""
        i = bisect.bisect_right(self.idx_offsets, offset) - 1
        pos = self.idx_positions[i] if i >= 0 else 0
        first = True
        while pos < self.size:
            h = self.header_at(pos)
            if first and i >= 0 and not self._index_ok(i, h):
                return self.find_batch(offset)
            first = False
            if h.last_offset >= offset:
                return h
            pos += h.size
        return None

    def read(self, pos: int, length: int) -> bytes:
        return os.pread(self.fd, length, pos)

    def iter_headers(self, pos: int = 0, chunk: int = _SCAN_CHUNK) -> Iterator[rb.BatchHeader]:
        return self.scan(pos, expect_offset=-1, chunk=chunk)

    def first_batch_with_timestamp(self, ts: int) -> rb.BatchHeader | None:
        """The first batch whose largest timestamp is >= ts (None if none)."""
        if self.max_timestamp < ts:
            return None
        k = bisect.bisect_left(self.time_ts, ts) - 1
        start = self.idx_positions[k] if k >= 0 else 0
        for h in self.iter_headers(start, chunk=1 << 14):
            if h.max_timestamp >= ts:
                return h
        return None

    def max_timestamp_position(self) -> int:
        if self._max_ts_pos < 0 and self.max_timestamp >= 0:
            h = self.first_batch_with_timestamp(self.max_timestamp)
            self._max_ts_pos = h.position if h is not None else -1
        return self._max_ts_pos

    def max_timestamp_offset(self) -> int:
        if self._max_ts_offset >= 0:
            return self._max_ts_offset
        pos = self.max_timestamp_position() if self.size else -1
        if pos < 0:
            return self.base_offset
        self._max_ts_offset = self.header_at(pos).base_offset
        return self._max_ts_offset
