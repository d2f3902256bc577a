"""Encoded answers kept by what determines them, so a request whose answer is one already sent
(but for its correlation id) is answered by a copy with that id written in, instead of by
building kafka-python objects and encoding them again. Sans-IO.

Used where an answer depends on few inputs and is asked for often: ApiVersions (every client
connection opens with one; protocol/api_versions_response.py, broker/apis/api_versions.py), and
the successes of OffsetCommit, AddPartitionsToTxn v0-v3 and EndTxn v0-v4, whose answers are fixed
by the request's version and the topics and partitions it names once every error is NONE. A
successful Produce's answer also depends on each partition's offsets: broker/apis/produce.py keeps
a template of each shape here and writes the offsets and the correlation id into a copy."""
from __future__ import annotations

import struct
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

_CORRELATION_ID = struct.Struct(">i")
# A framed response is its size (4 bytes), then the response header, which begins with the
# correlation id in every header version (v1 adds tagged fields after it).
_CORRELATION_ID_AT = 4


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """A copy of the framed response ``frame`` (encoded with any correlation id) answering
    ``correlation_id``."""
    at = _CORRELATION_ID_AT
    return frame[:at] + _CORRELATION_ID.pack(correlation_id) + frame[at + 4:]


def write_correlation_id(frame: bytearray, correlation_id: int) -> None:
    """Write ``correlation_id`` into a framed response being filled in place."""
    _CORRELATION_ID.pack_into(frame, _CORRELATION_ID_AT, correlation_id)


class AnswerCache(Generic[V]):
    """Framed answers by key (or what an answer is made from, such as Produce's templates), at
    most ``limit`` of them: past that the cache starts afresh (the keys in use are few; clearing
    keeps a stream of one-off keys from growing it).

    ``owner``: an unhashable input the answer was made from (an API table, a dict), named in the
    key by ``id()``. It is kept with the answer and checked by identity, so a new object that
    happens to reuse a dropped one's id misses rather than gets the old answer. Owners are never
    changed in place."""

    __slots__ = ("_answers", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._answers: dict[Hashable, tuple[object, V]] = {}

    def __len__(self) -> int:
        return len(self._answers)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._answers

    def get(self, key: Hashable, owner: object = None) -> V | None:
        hit = self._answers.get(key)
        return hit[1] if hit is not None and hit[0] is owner else None

    def answer(self: AnswerCache[bytes], key: Hashable, correlation_id: int, encode: Callable[[], bytes],
               owner: object = None) -> bytes:
        """The framed answer for ``key`` answering ``correlation_id``: ``encode()`` (the framed
        answer with any correlation id) the first time, a copy of it with the id written in after."""
        frame = self.get(key, owner)
        if frame is None:
            frame = self.put(key, encode(), owner)
        return with_correlation_id(frame, correlation_id)

    def put(self, key: Hashable, frame: V, owner: object = None) -> V:
        if len(self._answers) >= self.limit:
            self._answers.clear()
        self._answers[key] = (owner, frame)
        return frame

    def clear(self) -> None:
        self._answers.clear()
