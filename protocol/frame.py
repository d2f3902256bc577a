"""Sans-IO framing: size-prefixed frames in, request headers out."""
from __future__ import annotations

import struct
from typing import NamedTuple

_SIZE = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhi")   # api_key, api_version, correlation_id: every request header's start


class FrameError(Exception):
    """The peer sent something that cannot be a Kafka request: close the connection."""


class FrameDecoder:
    """Size-prefixed frames out of a byte stream, with as few copies as the stream allows.

    The caller reads into :meth:`buffer` and reports the count to :meth:`consumed` (or hands
    bytes to :meth:`feed`). Small frames are cut from a shared scratch read. A frame of
    ``own_buffer_from`` bytes or more gets a buffer of its own size as soon as its prefix is seen, and
    the rest of it is read straight into that buffer: a 1 MB produce request is then copied
    once, by the kernel, instead of being accumulated, sliced and copied again.
    """

    def __init__(self, max_frame_size: int, scratch: int = 1 << 18, own_buffer_from: int = 1 << 16,
                 own_buffer_to: int = 1 << 24) -> None:
        self.max_frame_size = max_frame_size
        self.own_buffer_from = own_buffer_from
        # A frame's own buffer is allocated (and zero-filled, so resident) when its size prefix
        # arrives; above this size the bytes must arrive before memory is spent on them, so a
        # client cannot pin socket.request.max.bytes of memory with four bytes.
        self.own_buffer_to = own_buffer_to
        self._scratch = bytearray(scratch)
        self._buf = bytearray()                 # bytes of frames not yet complete (small ones)
        self._frame: bytearray | None = None    # a large frame being filled in place
        self._filled = 0

    def buffer(self) -> memoryview:
        """Where the next read should go (release it before the next call)."""
        if self._frame is not None:
            return memoryview(self._frame)[self._filled:]
        return memoryview(self._scratch)

    def consumed(self, n: int) -> list[bytes | bytearray]:
        """``n`` bytes were read into the last :meth:`buffer`; returns the frames completed."""
        if self._frame is not None:
            self._filled += n
            if self._filled < len(self._frame):
                return []
            frame, self._frame = self._frame, None
            return [frame]
        if self._buf:   # the start of a frame from an earlier read: join it
            with memoryview(self._scratch) as view:
                return self.feed(view[:n])
        # frames cut straight from the scratch read (not appended to ``_buf`` first); only a
        # partial frame at its end is kept
        frames: list[bytes | bytearray] = []
        pos = self._cut(self._scratch, n, frames)
        if pos < n:
            with memoryview(self._scratch) as view:
                self._buf += view[pos:n]
        return frames

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | bytearray]:
        """Bytes from the stream, in order; returns the frame payloads completed (no size prefix)."""
        frames: list[bytes | bytearray] = []
        if self._frame is not None:
            take = min(len(self._frame) - self._filled, len(data))
            self._frame[self._filled:self._filled + take] = data[:take]
            self._filled += take
            if self._filled < len(self._frame):
                return frames
            frames.append(self._frame)
            self._frame = None
            data = data[take:]
        self._buf += data
        pos = self._cut(self._buf, len(self._buf), frames)
        if pos:
            del self._buf[:pos]
        return frames

    def _cut(self, buf: bytearray, n: int, frames: list[bytes | bytearray]) -> int:
        """Append the frames complete in ``buf[:n]`` to ``frames``; returns how many bytes they
        took (all ``n`` when a large frame's start went into a buffer of its own)."""
        pos = 0
        with memoryview(buf) as view:
            while n - pos >= 4:
                (size,) = _SIZE.unpack_from(buf, pos)
                if size < 8 or size > self.max_frame_size:
                    raise FrameError(f"frame size {size} outside 8..{self.max_frame_size}")
                have = n - pos - 4
                if have < size:
                    if self.own_buffer_from <= size <= self.own_buffer_to:
                        frame = bytearray(size)
                        frame[:have] = view[pos + 4:n]
                        self._frame, self._filled = frame, have
                        pos = n
                    break
                frames.append(bytes(view[pos + 4:pos + 4 + size]))
                pos += 4 + size
        return pos

    @property
    def pending(self) -> int:
        return len(self._buf) + (self._filled if self._frame is not None else 0)


class RequestPrefix(NamedTuple):
    """The fixed part of every request header, readable before the version is known (a tuple:
    dispatch unpacks it on every request)."""

    api_key: int
    api_version: int
    correlation_id: int


def peek_header(frame: bytes | bytearray) -> RequestPrefix:
    if len(frame) < 8:
        raise FrameError("request shorter than its header")
    return _prefix(_HEADER_PREFIX.unpack_from(frame, 0))


_prefix = RequestPrefix._make
