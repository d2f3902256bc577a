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
import operator
import os
import struct
import sys
import zlib
from array import array
from typing import Any
from collections.abc import Iterable

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


def offsets_array(values: Iterable[int] = ()) -> array[int]:
    """In-memory index columns are 8-byte arrays, not lists of ints: ~16 bytes per entry, so a
    1 GB segment's indexes (one entry per 4 KiB) take ~4 MB."""
    return array("q", values)


def _big_endian(arr: array) -> array:
    if sys.byteorder == "little":
        arr.byteswap()
    return arr


def write_indexes(stem: str, base: int, offsets: array, positions: array, times: array,
                  max_timestamp: int, max_timestamp_offset: int, fsync: bool = False) -> None:
    """Write ``<stem>.index`` and ``<stem>.timeindex`` (time index first: a crash between the
    two leaves an offset index that no longer matches it, which the checks reject)."""
    pack = TIME_ENTRY.pack
    tdata = b"".join([pack(t, o - base) for t, o in zip(times, offsets)])
    if len(offsets):
        tdata += pack(max_timestamp, max_timestamp_offset - base)
    _atomic_write(stem + ".timeindex", tdata, fsync)
    flat = array("i", [0]) * (2 * len(offsets))
    flat[0::2] = array("i", (o - base for o in offsets))
    flat[1::2] = array("i", positions)
    _atomic_write(stem + ".index", _big_endian(flat).tobytes(), fsync)


def read_indexes(stem: str, base: int, log_size: int) -> tuple[array, array, array, int, int]:
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
    flat = array("i")
    flat.frombytes(idata)
    _big_endian(flat)
    rel, pos = flat[0::2], flat[1::2]
    if n:
        if rel[0] < 0 or not all(map(operator.lt, rel, rel[1:])) or not all(map(operator.lt, pos, pos[1:])):
            raise IndexInvalid("index entries out of order")
        if pos[-1] >= log_size:
            raise IndexInvalid(f"index entry points at position {pos[-1]}, past the log end {log_size}")
        if pos[0] != 0:
            raise IndexInvalid("first index entry is not the segment's first batch")
    offsets = offsets_array(base + r for r in rel)
    positions = offsets_array(pos)
    tflat = struct.unpack(">" + "qi" * (len(tdata) // TIME_ENTRY.size), tdata)
    times = offsets_array(tflat[0:2 * n:2])
    if n:
        if tflat[1:2 * n:2] != tuple(rel):
            raise IndexInvalid("time index entries name other offsets than the index")
        max_ts, max_rel = tflat[2 * n], tflat[2 * n + 1]
        if not all(map(operator.le, times, times[1:])) or max_ts < times[-1]:
            raise IndexInvalid("time index timestamps decrease")
        if max_rel < 0:
            raise IndexInvalid("time index final entry names an offset below the segment base")
        return offsets, positions, times, max_ts, base + max_rel
    return offsets, positions, times, -1, base


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
