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
from typing import IO, Any

from .fds import fsync_dir

COMPACT_AFTER = 1000


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


class TopicFile:
    """Appends changes to ``path`` (opened once) and rewrites it when asked."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.changes = 0           # change lines after the snapshot
        self._f: IO[bytes] | None = None

    def open(self, changes: int) -> None:
        """Append to the existing file, which holds ``changes`` change lines (start-up)."""
        self._f = open(self.path, "ab")
        self.changes = changes

    def rewrite(self, meta: dict[str, Any]) -> None:
        """Replace the file by a snapshot, durably, and append after it from now on."""
        self.close()
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(json.dumps(meta).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fsync_dir(os.path.dirname(self.path) or ".")
        self.open(0)

    def append(self, change: dict[str, Any]) -> None:
        """One change, durable on return (only called with the file open)."""
        assert self._f is not None
        try:
            self._f.write(json.dumps(change).encode() + b"\n")
            self._f.flush()
            os.fdatasync(self._f.fileno())
        except BaseException:
            self.close()           # maybe half a line written: the next change rewrites the file
            raise
        self.changes += 1

    @property
    def is_open(self) -> bool:
        return self._f is not None

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
