"""The partition log (broker.log.partition.Partition) in a temp dir with a dict config and a fake
clock, reopened as a broker restart would: the storage tests drive it directly (tests/unit) or
read what a broker wrote (tests/broker/test_fetch_splice.py)."""
from __future__ import annotations

from pathlib import Path

from broker.log.fds import FdCache
from broker.log.partition import Partition
from protocol import records as rb

T0 = 1_700_000_000_000
LONG_MAX = 9223372036854775807

BASE_CONFIG = {
    "index.interval.bytes": 128, "segment.bytes": 1024, "segment.ms": None, "max.message.bytes": 1 << 20,
    "message.timestamp.type": "CreateTime", "message.timestamp.after.max.ms": LONG_MAX,
    "message.timestamp.before.max.ms": LONG_MAX, "flush.messages": None, "cleanup.policy": "delete",
    "retention.ms": -1, "retention.bytes": -1, "delete.retention.ms": 86400000, "min.compaction.lag.ms": 0,
    "max.compaction.lag.ms": LONG_MAX, "min.cleanable.dirty.ratio": 0.5,
}


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Log:
    """A Partition in a temp dir with a dict config, reopened like a broker restart would."""

    def __init__(self, path: Path, fds: FdCache | None = None, **config) -> None:
        self.path = path
        self.config = dict(BASE_CONFIG, **{k.replace("_", "."): v for k, v in config.items()})
        self.clock = Clock()
        self.fds = fds if fds is not None else FdCache(64)
        self.part = self.open(True)

    def open(self, clean: bool) -> Partition:
        part = Partition("t", 0, str(self.path), self.config.get, fds=self.fds, clock=self.clock)
        part.open(clean)
        return part

    def reopen(self, clean: bool = True) -> Partition:
        if clean:
            self.part.close()
        else:
            for seg in self.part.segments:
                seg.close()
        self.part = self.open(clean)
        return self.part

    def put(self, records: list[tuple[bytes | None, bytes | None]], ts: int | None = None, **kw) -> int:
        data = rb.build_batch(records, timestamp_ms=self.clock.now if ts is None else ts, **kw)
        result = self.part.append(data, [rb.parse_header(data)], self.clock.now)
        assert result.error == 0, result
        return result.base_offset

    def fill(self, n: int, size: int = 100, ts: int | None = None) -> None:
        for i in range(n):
            self.put([(b"k%d" % i, b"v" * size)], ts=ts)


def read_all(part: Partition) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """Every record from the log start, through Partition.read as Fetch serves it."""
    out = []
    offset = part.log_start_offset
    while offset < part.log_end_offset:
        chunk = part.read(offset, 1 << 20, part.log_end_offset)
        if not chunk:
            break
        for h in rb.iter_batches(chunk, validate=False):
            rb.validate_batch(chunk, h) if h.record_count == h.last_offset_delta + 1 else None
            out.extend((r.offset, r.key, r.value, r.timestamp) for r in rb.iter_records(chunk, h)
                       if r.offset >= offset)
            offset = h.next_offset
    return out
