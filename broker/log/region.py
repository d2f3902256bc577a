"""A byte range of a segment file, held open for sending after the request's handler returns.

The descriptor is a duplicate: the segment's own may be closed by the descriptor LRU, or the
file deleted by retention or replaced by the cleaner, while the answer is still being sent;
the duplicate keeps the bytes that were read readable until the region is closed.
"""
from __future__ import annotations

import os


class FileRegion:
    __slots__ = ("fd", "position", "length")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self.fd = os.dup(fd)
        self.position = position
        self.length = length

    def read(self) -> bytes:
        """The bytes themselves (for senders that cannot use sendfile)."""
        return os.pread(self.fd, self.length, self.position)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        # an answer that is never sent (connection gone, long poll re-collected) still
        # releases its descriptor
        self.close()

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, length={self.length})"
