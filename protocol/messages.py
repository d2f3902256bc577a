"""Request/response classes by API key, straight from kafka-python's JSON-schema messages."""
from __future__ import annotations

import importlib

from kafka.protocol.api_key import ApiKey
from kafka.protocol.api_message import ApiMessage

REQUESTS: dict[int, type[ApiMessage]] = {}
RESPONSES: dict[int, type[ApiMessage]] = {}

for _pkg in ("admin", "consumer", "metadata", "producer", "sasl"):
    _mod = importlib.import_module(f"kafka.protocol.{_pkg}")
    for _name in getattr(_mod, "__all__", ()):
        _cls = getattr(_mod, _name)
        if isinstance(_cls, type) and issubclass(_cls, ApiMessage) and _cls.API_KEY is not None:
            (REQUESTS if _cls.is_request() else RESPONSES)[_cls.API_KEY] = _cls

# APIs kafka-python lacks, from Kafka's JSON definitions in protocol/schemas/ (same machinery).
from protocol.schema_messages import API_MESSAGES as _SCHEMA_MESSAGES  # noqa: E402

for _cls in _SCHEMA_MESSAGES:
    (REQUESTS if _cls.is_request() else RESPONSES)[_cls.API_KEY] = _cls



_COPY_IS_CHEAP = 1 << 16  # below this, kafka-python's own path (one copy) is the faster one


class _ViewReader:
    """What kafka-python's header decoder reads from, over a view of the frame: io.BytesIO
    would copy the whole frame (a produce request's records included) to read a few bytes."""

    def __init__(self, view: memoryview) -> None:
        self.view = view
        self.pos = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.view) if n < 0 else self.pos + n
        out = bytes(self.view[self.pos:end])
        self.pos = end
        return out

    def tell(self) -> int:
        return self.pos


def decode_request(cls: type[ApiMessage], frame: bytes | bytearray, version: int) -> ApiMessage:
    """``cls.decode(frame, version=version, header=True)`` without its copy of the whole frame:
    the header is read through a view, the body decoded from a view of the frame."""
    if len(frame) < _COPY_IS_CHEAP:
        return cls.decode(frame, version=version, header=True)
    view = memoryview(frame)
    reader = _ViewReader(view)
    header = cls.parse_header(reader, version=version)
    if reader.pos > len(view):
        raise ValueError("request header longer than the request")
    request = cls.decode(view[reader.pos:], version=version)
    request._header = header
    return request


__all__ = ["ApiKey", "REQUESTS", "RESPONSES", "decode_request"]
