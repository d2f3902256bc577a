"""Kafka-python's compiled encoders without its generic tagged-fields step where a struct has no
tagged fields at the version being encoded.

kafka-python compiles one flat encode function per (struct, version), but still ends every
flexible struct (the message, each nested topic and partition entry, the response header) with
a call to ``TaggedFields.encode_into``, which builds a list by reflecting over the struct's
tagged fields — even when there are none, and writes a single 0 byte (an empty tag buffer). That
was ~2 µs a struct here, a third of encoding a one-partition OffsetCommit answer. Where a
``TaggedFields`` of the compiled function has no fields, the same function (its code, a copy of
its globals) gets ``NO_TAGGED_FIELDS`` in its place, which writes that 0 byte. kafka-python's
cached function is left as it is; the bytes are the same (tests/unit/test_tagged_encode.py)."""
from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from kafka.protocol.schemas.fields.codecs.tagged_fields import TaggedFields


class _NoTaggedFields:
    """``TaggedFields.encode_into`` for a struct without tagged fields: the empty tag buffer
    (an unsigned varint 0). Unknown tags a decoded struct carried are not written back, as
    kafka-python's own ``encode_into`` does not write them either."""

    __slots__ = ()

    @staticmethod
    def encode_into(item: Any, out: Any, version: int | None = None) -> None:
        pos = out.pos
        if pos >= len(out.buf):
            out.ensure(1)
        out.buf[pos] = 0
        out.pos = pos + 1


NO_TAGGED_FIELDS = _NoTaggedFields()


def without_empty_tagged_fields(encode: Callable[..., Any]) -> Callable[..., Any]:
    """``encode`` (a kafka-python compiled encoder) calling ``NO_TAGGED_FIELDS`` instead of every
    field-less ``TaggedFields`` it refers to; ``encode`` itself if it refers to none."""
    if not isinstance(encode, types.FunctionType):
        return encode
    g = encode.__globals__
    empty = {k: NO_TAGGED_FIELDS for k, v in g.items() if isinstance(v, TaggedFields) and not v._names}
    if not empty:
        return encode
    return types.FunctionType(encode.__code__, {**g, **empty}, encode.__name__, encode.__defaults__,
                              encode.__closure__)
