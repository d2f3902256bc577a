"""Request/response classes by API key, straight from kafka-python's JSON-schema messages."""
from __future__ import annotations

import importlib
import inspect
import struct
from typing import TypeGuard

from kafka.protocol.api_header import ResponseHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.codecs.encode_buffer import EncodeBufferPool

from protocol.decode_checks import NullCheck, null_check

_SIZE = struct.Struct(">i")

REQUESTS: dict[int, type[ApiMessage]] = {}
RESPONSES: dict[int, type[ApiMessage]] = {}


def _is_message_class(obj: object) -> TypeGuard[type[ApiMessage]]:
    """A kafka-python message class (built at run time from Kafka's JSON, hence no static type)."""
    return inspect.isclass(obj) and issubclass(obj, ApiMessage)


for _pkg in ("admin", "consumer", "metadata", "producer", "sasl"):
    _mod = importlib.import_module(f"kafka.protocol.{_pkg}")
    for _name in getattr(_mod, "__all__", ()):
        _cls = getattr(_mod, _name)
        if _is_message_class(_cls) and _cls.API_KEY is not None:
            (REQUESTS if _cls.is_request() else RESPONSES)[_cls.API_KEY] = _cls

# APIs kafka-python lacks, from Kafka's JSON definitions in protocol/schemas/ (same machinery).
from protocol.schema_messages import API_MESSAGES as _SCHEMA_MESSAGES  # noqa: E402

for _cls in _SCHEMA_MESSAGES:
    (REQUESTS if _cls.is_request() else RESPONSES)[_cls.API_KEY] = _cls



class _Codecs:
    """One message class and version's compiled codecs, looked up once: kafka-python compiles
    a flat encoder/decoder per (struct, version) and caches it, but its ``encode``/``decode``
    wrap them in per-call work (version checks, an ``io.BytesIO`` copy of the whole frame and
    the generic, uncompiled codec for the request/response header) that costs as much as the
    body itself for a small request. Here header and body both go through kafka-python's own
    compiled codecs (``compiled_decode_from``/``compiled_encode_into``), with the header
    flags kafka-python uses (``ApiHeader``: non-compact strings, tagged fields when flexible)."""

    __slots__ = ("flexible", "header_decode", "body_decode", "null_check", "header_encode", "body_encode")

    def __init__(self, cls: type[ApiMessage], version: int) -> None:
        self.flexible = flexible = cls.flexible_version_q(version)
        hdr = cls.header_class
        hv = hdr._flexible_versions[0] if flexible else hdr._valid_versions[0]
        if cls.is_request():
            self.header_decode = hdr._struct.compiled_decode_from(hv, compact=False, tagged=flexible,
                                                                  data_class=hdr)
            self.body_decode = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible,
                                                                data_class=cls[None])
            self.null_check: NullCheck | None = null_check(cls, version)
        else:
            self.header_encode = hdr._struct.compiled_encode_into(hv, compact=False, tagged=flexible)
            self.body_encode = cls._struct.compiled_encode_into(version, compact=flexible, tagged=flexible)


_CODECS: dict[tuple[type, int], _Codecs] = {}
_PLAIN: dict[type, bool] = {}


def _codecs(cls: type[ApiMessage], version: int) -> _Codecs:
    c = _CODECS.get((cls, version))
    if c is None:
        c = _CODECS[(cls, version)] = _Codecs(cls, version)
    return c


def _plain(cls: type[ApiMessage], *methods: str) -> bool:
    """The class keeps kafka-python's generic methods (a few override them for quirks, e.g.
    ApiVersionsResponse's never-flexible header): only those take the compiled shortcut."""
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = all(next(k for k in cls.__mro__ if m in k.__dict__) is ApiMessage for m in methods)
    return plain


def decode_request(cls: type[ApiMessage], frame: bytes | bytearray, version: int) -> ApiMessage:
    """``cls.decode(frame, version=version, header=True)`` through the compiled codecs, from a
    view of the frame (no copy: a produce request's records stay where they were received).

    A request with a null where its version's schema allows none is refused here
    (``MalformedRequest``, a ValueError like any other decode failure), never handed on."""
    if not _plain(cls, "decode", "parse_header") or not 0 <= version <= cls.max_version:
        request = cls.decode(frame, version=version, header=True)
        check = null_check(cls, request.API_VERSION)
        if check is not None:
            check(request)
        return request
    c = _codecs(cls, version)
    view = memoryview(frame)
    header, pos = c.header_decode(view, 0)
    if pos > len(view):
        raise ValueError("request header longer than the request")
    request, _ = c.body_decode(view, pos)
    if c.null_check is not None:
        c.null_check(request)
    request._header = header
    return request


def encode_response(message: ApiMessage, correlation_id: int) -> bytes | bytearray:
    """``message.with_header(correlation_id=...)`` then ``message.encode(header=True,
    framed=True)``, through the compiled codecs of its class and version."""
    cls = type(message)
    version = message.API_VERSION
    if version is None or not _plain(cls, "encode", "encode_header", "encode_header_into", "with_header"):
        message.with_header(correlation_id=correlation_id)
        encoded: bytes | bytearray = message.encode(header=True, framed=True)
        return encoded
    c = _codecs(cls, version)
    header = message._header = ResponseHeader(correlation_id=correlation_id)
    with EncodeBufferPool.acquire() as out:
        out.pos = 4   # the frame size, written last
        c.header_encode(header, out)
        c.body_encode(message, out)
        _SIZE.pack_into(out.buf, 0, out.pos - 4)
        frame: bytes | bytearray = out.result()
        return frame


__all__ = ["REQUESTS", "RESPONSES", "decode_request", "encode_response"]
