"""A bounded LRU of open segment file descriptors.

Segments open their ``.log`` file on first use and the least recently used one is closed
when the bound is reached, so 10,000 partitions (each with at least one segment) run
inside the default ``ulimit -n`` of 1024. Sockets and index writes need descriptors too,
hence the default bound of a quarter of the soft limit.
"""
from __future__ import annotations

import os
import resource
from collections import OrderedDict
from typing import Protocol

MIN_OPEN = 16


def fsync_dir(path: str) -> None:
    """Make a directory's entries (new, renamed or removed files) durable. Here rather than in
    segment.py: the log manager, its topic file and flush need it before any segment exists, and
    a fresh node serves without importing the segment and record-batch code (issue 23)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _HasFd(Protocol):
    path: str
    _fd: int


def default_capacity() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        soft = 65536
    return max(MIN_OPEN, min(soft // 4, 8192))


class FdCache:
    """Opens files on demand, keeps at most ``capacity`` open, closes the least recently used."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = max(MIN_OPEN, capacity or default_capacity())
        self._open: OrderedDict[_HasFd, None] = OrderedDict()
        self.opened = 0  # opens since start (for tests and stats)

    def __len__(self) -> int:
        return len(self._open)

    def get(self, owner: _HasFd) -> int:
        fd = owner._fd
        if fd >= 0:
            self._open.move_to_end(owner)
            return fd
        self._make_room()
        # no O_CREAT: a segment whose file vanished must fail loudly, never come back empty
        fd = os.open(owner.path, os.O_RDWR | os.O_APPEND)
        self.adopt(owner, fd)
        return fd

    def adopt(self, owner: _HasFd, fd: int) -> None:
        """Keep ``fd``, which the owner opened on its file itself (as ``get`` opens it: read,
        write, append), as the owner's descriptor: a segment that creates its file uses the
        descriptor it created it with rather than closing it and opening it again."""
        self._make_room()
        owner._fd = fd
        self._open[owner] = None
        self.opened += 1

    def _make_room(self) -> None:
        while len(self._open) >= self.capacity:
            old, _ = self._open.popitem(last=False)
            os.close(old._fd)
            old._fd = -1

    def release(self, owner: _HasFd) -> None:
        if owner._fd >= 0:
            self._open.pop(owner, None)
            try:
                os.close(owner._fd)
            finally:
                owner._fd = -1

    def close_all(self) -> None:
        for owner in list(self._open):
            self.release(owner)
