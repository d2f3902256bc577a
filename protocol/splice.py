"""Splicing stored record bytes into an encoded response without copying them.

A Fetch answer is mostly record batches that already sit in segment files. Encoding them
through kafka-python would copy every byte twice (read into memory, then into the encode
buffer) before the socket copies them a third time. Instead the message is encoded with a
short placeholder in each ``records`` field; :func:`splice` finds the placeholders, rewrites
their length prefixes and the frame size for the real lengths, and returns the frame as
alternating encoded bytes and :class:`Region` objects, which the server sends straight from
the file (``sendfile``).

The placeholder is 16 bytes, random per process plus an index, so it cannot be confused with
anything else in the small encoded remainder (names, offsets, error codes).
"""
from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import Protocol, TypeVar

from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

_TOKEN = os.urandom(12)
PLACEHOLDER_SIZE = 16
_INT32 = struct.Struct(">i")


class Region(Protocol):
    """Bytes that the sender supplies itself: only their length matters here."""

    length: int


R = TypeVar("R", bound=Region)


def placeholder(i: int) -> bytes:
    """The stand-in for the i-th region of one message (16 bytes)."""
    return _TOKEN + _INT32.pack(i)


# The length prefix kafka-python writes before a 16-byte records field.
_PREFIX_CLASSIC = _INT32.pack(PLACEHOLDER_SIZE)                   # nullable bytes: int32 length
_PREFIX_COMPACT = UnsignedVarInt32.encode(PLACEHOLDER_SIZE + 1)  # compact bytes: uvarint(length + 1)


def splice(frame: bytes | bytearray, regions: Sequence[R], flexible: bool) -> list[bytes | bytearray | R]:
    """Replace the placeholders of a size-prefixed frame by ``regions`` (in order).

    ``frame`` must hold placeholder(0) … placeholder(len(regions) - 1) in that order, each as
    the whole value of a records field. Returns the parts to send, in order."""
    if not regions:
        return [frame]
    parts: list[bytes | bytearray | R] = []
    prefix = _PREFIX_COMPACT if flexible else _PREFIX_CLASSIC
    pos = 4  # after the frame's own size prefix
    body = len(frame) - 4
    for i, region in enumerate(regions):
        at = frame.find(placeholder(i), pos)
        start = at - len(prefix)
        if at < 0 or frame[start:at] != prefix:
            raise ValueError(f"placeholder {i} not found as a records field")
        real = UnsignedVarInt32.encode(region.length + 1) if flexible else _INT32.pack(region.length)
        parts.append(frame[pos:start] + real)
        parts.append(region)
        body += len(real) - len(prefix) + region.length - PLACEHOLDER_SIZE
        pos = at + PLACEHOLDER_SIZE
    parts[0] = _INT32.pack(body) + parts[0]  # type: ignore[operator]
    if pos < len(frame):
        parts.append(frame[pos:])
    return parts
