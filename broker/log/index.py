"""On-disk index files and producer-state snapshots of a partition log.

``<base>.index``: Kafka's layout, 8-byte entries (offset relative to the segment base,
file position), one per ``index.interval.bytes`` of log, the first batch always indexed.

``<base>.timeindex``: 12-byte entries (timestamp, relative offset) in Kafka's layout, one
per offset-index entry holding the largest timestamp of every batch up to and including
that entry's batch, plus a final entry with the segment's largest timestamp and the
offset of the batch that holds it (Kafka also appends that entry when a segment rolls).
Keeping the two files entry-for-entry lets start-up check them against each other.

Both are written whole to a temporary file and renamed, so a crash leaves the old or the
new file, never a torn one. They are trusted only after checks (``IndexInvalid`` says why);
a failed check means the segment's indexes are rebuilt from the log.

``<offset>.snapshot``: the idempotent-producer table and open/aborted transactions as of
``offset`` (JSON with a CRC), written when a segment rolls and at clean shutdown, so
start-up replays batch headers only from the newest usable snapshot on.
"""
from __future__ import annotations

import json
import os
import struct
import zlib
from typing import Any

INDEX_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
SNAPSHOT_SUFFIX = ".snapshot"


class IndexInvalid(Exception):
    """An index file that must not be trusted (missing, torn, inconsistent)."""


def _atomic_write(path: str, data: bytes, fsync: bool) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def write_indexes(stem: str, base: int, offsets: list[int], positions: list[int], times: list[int],
                  max_timestamp: int, max_timestamp_offset: int, fsync: bool = False) -> None:
    """Write ``<stem>.index`` and ``<stem>.timeindex`` (time index first: a crash between the
    two leaves an offset index that no longer matches it, which the checks reject)."""
    tdata = bytearray()
    for t, o in zip(times, offsets):
        tdata += TIME_ENTRY.pack(t, o - base)
    if offsets:
        tdata += TIME_ENTRY.pack(max_timestamp, max_timestamp_offset - base)
    _atomic_write(stem + ".timeindex", bytes(tdata), fsync)
    idata = bytearray()
    for o, p in zip(offsets, positions):
        idata += INDEX_ENTRY.pack(o - base, p)
    _atomic_write(stem + ".index", bytes(idata), fsync)


def read_indexes(stem: str, base: int, log_size: int) -> tuple[list[int], list[int], list[int], int, int]:
    """Read and check both index files: (offsets, positions, times, max timestamp, its offset).
    Raises IndexInvalid with the reason when either is missing or inconsistent."""
    try:
        with open(stem + ".index", "rb") as f:
            idata = f.read()
        with open(stem + ".timeindex", "rb") as f:
            tdata = f.read()
    except FileNotFoundError as exc:
        raise IndexInvalid(f"missing {os.path.basename(exc.filename)}") from None
    if len(idata) % INDEX_ENTRY.size:
        raise IndexInvalid(f"index size {len(idata)} is not a multiple of {INDEX_ENTRY.size}")
    if len(tdata) % TIME_ENTRY.size:
        raise IndexInvalid(f"time index size {len(tdata)} is not a multiple of {TIME_ENTRY.size}")
    n = len(idata) // INDEX_ENTRY.size
    if (n == 0) != (log_size == 0):
        raise IndexInvalid(f"index has {n} entries for a log of {log_size} bytes")
    if n and len(tdata) // TIME_ENTRY.size != n + 1:
        raise IndexInvalid(f"time index has {len(tdata) // TIME_ENTRY.size} entries for {n} index entries")
    offsets: list[int] = []
    positions: list[int] = []
    prev_o, prev_p = -1, -1
    for rel, pos in INDEX_ENTRY.iter_unpack(idata):
        if rel <= prev_o or pos <= prev_p or rel < 0:
            raise IndexInvalid(f"index entries out of order at relative offset {rel}, position {pos}")
        if pos >= log_size:
            raise IndexInvalid(f"index entry points at position {pos}, past the log end {log_size}")
        offsets.append(base + rel)
        positions.append(pos)
        prev_o, prev_p = rel, pos
    if n and positions[0] != 0:
        raise IndexInvalid("first index entry is not the segment's first batch")
    times: list[int] = []
    max_ts, max_off = -1, base
    prev_t = None
    for i, (ts, rel) in enumerate(TIME_ENTRY.iter_unpack(tdata)):
        if prev_t is not None and ts < prev_t:
            raise IndexInvalid(f"time index timestamps decrease at entry {i}")
        prev_t = ts
        if i < n:
            if base + rel != offsets[i]:
                raise IndexInvalid(f"time index entry {i} names offset {base + rel}, index says {offsets[i]}")
            times.append(ts)
        else:
            max_ts, max_off = ts, base + rel
            if rel < 0:
                raise IndexInvalid("time index final entry names an offset below the segment base")
    return offsets, positions, times, max_ts, max_off


def remove_indexes(stem: str) -> None:
    for ext in (".index", ".timeindex"):
        try:
            os.unlink(stem + ext)
        except FileNotFoundError:
            pass


# -- producer-state snapshots -----------------------------------------------------------

def snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")


def list_snapshots(directory: str) -> list[int]:
    out = []
    for name in os.listdir(directory):
        if name.endswith(SNAPSHOT_SUFFIX) and name[:-len(SNAPSHOT_SUFFIX)].isdigit():
            out.append(int(name[:-len(SNAPSHOT_SUFFIX)]))
    return sorted(out)


def write_snapshot(directory: str, offset: int, state: dict[str, Any], fsync: bool = False) -> None:
    body = json.dumps(state, separators=(",", ":")).encode()
    _atomic_write(snapshot_path(directory, offset), struct.pack(">I", zlib.crc32(body)) + body, fsync)


def read_snapshot(directory: str, offset: int) -> dict[str, Any]:
    with open(snapshot_path(directory, offset), "rb") as f:
        raw = f.read()
    if len(raw) < 4 or struct.unpack_from(">I", raw)[0] != zlib.crc32(raw[4:]):
        raise IndexInvalid("producer snapshot checksum mismatch")
    try:
        return json.loads(raw[4:])
    except ValueError as exc:
        raise IndexInvalid(f"producer snapshot unreadable: {exc}") from None
