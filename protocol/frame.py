"""Sans-IO framing: size-prefixed frames in, request headers out."""
from __future__ import annotations

import struct
from dataclasses import dataclass

_SIZE = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhi")


class FrameError(Exception):
    """The peer sent something that cannot be a Kafka request: close the connection."""


class FrameDecoder:
    """Accumulates bytes and yields complete frame payloads (without the size prefix)."""

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames: list[bytes] = []
        buf = self._buf
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 8 or size > self.max_frame_size:
                raise FrameError(f"frame size {size} outside 8..{self.max_frame_size}")
            if n - pos - 4 < size:
                break
            frames.append(bytes(buf[pos + 4:pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf)


@dataclass(slots=True)
class RequestPrefix:
    """The fixed part of every request header, readable before the version is known."""

    api_key: int
    api_version: int
    correlation_id: int


def peek_header(frame: bytes) -> RequestPrefix:
    if len(frame) < 8:
        raise FrameError("request shorter than its header")
    return RequestPrefix(*_HEADER_PREFIX.unpack_from(frame, 0))
