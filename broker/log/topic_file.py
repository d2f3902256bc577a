"""The log manager's topic file (``samsa-topics.json``): a snapshot line, then the changes.

Why this shape: a topic change (CreateTopics, DeleteTopics, a config or partition change) is
answered only once it is durable, as Kafka answers only once its controller's metadata log holds
the record (the KRaft log is flushed before its high watermark moves). Rewriting the whole file
for each change (a new file, fsync, rename, fsync of the directory) costs a new inode and a
directory update, ~8 ms on a virtual disk; appending one line to a file already open and
``fdatasync``-ing it is the cheapest durable write there is. So the file is Kafka's metadata log
in miniature: line 1 is a snapshot ``{"cluster_id": ..., "topics": [...]}``, each later line one
change, ``{"put": <topic entry>}`` or ``{"remove": <name>}``, replayed in order at start-up. A
line torn by a crash (no newline, or not JSON) was never acknowledged; it is cut off. The file is
rewritten whole (snapshot only, fsynced, renamed, directory fsynced) when start-up finds it torn
or in the older single-object layout, and after ``COMPACT_AFTER`` changes.

A partition's own files are not fsynced when it is created, as Kafka's LogManager.getOrCreateLog
does not: the topic file is the durable record that the partition exists, and start-up creates
the directory of a listed partition again if a crash lost it (it held nothing acknowledged:
records are made durable by the flush policy, broker/log/flush.py).
"""
from __future__ import annotations

import json
import os
import time
from typing import IO, Any

import trio

from .fds import fsync_dir

COMPACT_AFTER = 1000
INLINE_SYNC_BELOW_S = 0.001    # a sync faster than a worker thread's hand-off runs inline (TopicFile)


def read_topic_file(path: str) -> tuple[dict[str, Any], int, bool]:
    """The snapshot with every complete change applied, how many change lines it had, and
    whether the file must be rewritten before anything is appended (a torn tail, or the
    single-object layout without a newline). A missing file reads as no topics."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {"topics": []}, 0, False
    if not data.endswith(b"\n"):
        try:                       # the layout before changes were appended: one object, no newline
            return json.loads(data), 0, True
        except ValueError:
            pass
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    if not complete:               # empty, or a torn first line: nothing to append after
        return {"topics": []}, 0, True
    rewrite = bool(tail)
    meta: dict[str, Any] = {"topics": []}
    changes = 0
    for i, line in enumerate(complete):
        try:
            entry = json.loads(line)
        except ValueError:
            if i == 0:
                raise
            rewrite = True         # a torn change (a crash mid-write): never acknowledged
            break
        if i == 0:
            if not isinstance(entry, dict) or "topics" not in entry:
                raise ValueError(f"{path}: the first line is not a snapshot of the topics")
            meta = entry
        else:
            apply(meta, entry)
            changes += 1
    return meta, changes, rewrite


def apply(meta: dict[str, Any], change: dict[str, Any]) -> None:
    """One change line applied to the snapshot: a topic entry put (by name) or removed."""
    topics: list[dict[str, Any]] = meta["topics"]
    if "put" in change:
        entry = change["put"]
        for i, t in enumerate(topics):
            if t["name"] == entry["name"]:
                topics[i] = entry
                return
        topics.append(entry)
    elif "remove" in change:
        meta["topics"] = [t for t in topics if t["name"] != change["remove"]]


def _timed_fdatasync(fd: int) -> float:
    """fdatasync ``fd``; the seconds it took."""
    t0 = time.perf_counter()
    os.fdatasync(fd)
    return time.perf_counter() - t0


class TopicFile:
    """Appends changes to ``path`` (opened once) and rewrites it when asked.

    A change is durable when its line is fdatasynced. ``append`` syncs at once by default; with
    ``sync=False`` it only writes the line (in the page cache from then on: a process crash
    keeps it, a power cut may not) and the caller awaits ``wait_durable`` before answering,
    which runs the fdatasync in a worker thread so the event loop serves other connections
    meanwhile (it takes milliseconds on a virtual disk), and lets changes written while one
    sync runs share the next one (group commit, as broker/log/flush.py does for segments).
    Handing a call to a worker thread and back costs ~0.15 ms of CPU and two thread wake-ups,
    which on a loaded machine wait milliseconds to be scheduled; where the last sync took less
    than ``INLINE_SYNC_BELOW_S`` (tmpfs, a disk with a write-back cache) the sync runs inline:
    it holds the other connections back for less than the hand-off would hold this one."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.changes = 0           # change lines after the snapshot
        self.written = 0           # changes written since start-up (a sequence: wait_durable's argument)
        self.synced = 0            # of those, how many are known to be durable
        self._f: IO[bytes] | None = None
        self._sync_in_flight: trio.Event | None = None
        self._close_after_sync: list[IO[bytes]] = []   # replaced while its sync ran (rewrite, failure)
        self.last_sync_s = 0.0     # how long the last fdatasync took (0: none yet, so the first runs inline)

    def open(self, changes: int) -> None:
        """Append to the existing file, which holds ``changes`` change lines (start-up)."""
        self._f = open(self.path, "ab")
        self.changes = changes

    def rewrite(self, meta: dict[str, Any]) -> None:
        """Replace the file by a snapshot, durably, and append after it from now on. ``meta``
        holds every change written so far, so they are all durable on return."""
        self.close()
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(json.dumps(meta).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fsync_dir(os.path.dirname(self.path) or ".")
        self.open(0)
        self.synced = self.written

    def append(self, change: dict[str, Any], sync: bool = True) -> int:
        """Write one change (only called with the file open); durable on return unless
        ``sync`` is false (then ``wait_durable`` with the number returned)."""
        assert self._f is not None
        try:
            self._f.write(json.dumps(change).encode() + b"\n")
            self._f.flush()
            self.changes += 1
            self.written += 1
            if sync:
                os.fdatasync(self._f.fileno())
                self.synced = self.written
        except BaseException:
            self.close()           # maybe half a line written: the next change rewrites the file
            raise
        return self.written

    async def wait_durable(self, upto: int) -> None:
        """Return once the first ``upto`` changes written are durable: one fdatasync in a worker
        thread covers every change written before it starts; a caller that finds one running
        waits for it, then starts the next if its change came too late for it. A failed sync
        reaches every caller it leaves waiting (the file is closed: the next change rewrites it
        whole, this one included, as after a failed append)."""
        while self.synced < upto:
            running = self._sync_in_flight
            if running is not None:
                await running.wait()
                continue
            f = self._f
            if f is None:
                raise OSError(f"{self.path}: a write or sync of the topic file failed; the change is not durable")
            target = self.written
            if self.last_sync_s < INLINE_SYNC_BELOW_S:
                try:
                    self.last_sync_s = _timed_fdatasync(f.fileno())
                except BaseException:
                    self.close()
                    raise
                self.synced = max(self.synced, target)
                continue
            done = self._sync_in_flight = trio.Event()
            try:
                self.last_sync_s = await trio.to_thread.run_sync(_timed_fdatasync, f.fileno())
                self.synced = max(self.synced, target)
            except BaseException:
                if self._f is f:
                    self.close()
                raise
            finally:
                self._sync_in_flight = None
                done.set()
                for old in self._close_after_sync:
                    old.close()
                self._close_after_sync.clear()

    @property
    def is_open(self) -> bool:
        return self._f is not None

    def close(self) -> None:
        """Close the file; one a worker thread is syncing is closed when that sync returns (its
        descriptor must not be reused under it)."""
        if self._f is not None:
            if self._sync_in_flight is not None:
                self._close_after_sync.append(self._f)
            else:
                self._f.close()
            self._f = None
