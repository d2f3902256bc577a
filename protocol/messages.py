"""Request/response classes by API key, straight from kafka-python's JSON-schema messages."""
from __future__ import annotations

import importlib
import io

from kafka.protocol.api_key import ApiKey
from kafka.protocol.api_message import ApiMessage

REQUESTS: dict[int, type[ApiMessage]] = {}
RESPONSES: dict[int, type[ApiMessage]] = {}

for _pkg in ("admin", "consumer", "metadata", "producer"):
    _mod = importlib.import_module(f"kafka.protocol.{_pkg}")
    for _name in getattr(_mod, "__all__", ()):
        _cls = getattr(_mod, _name)
        if isinstance(_cls, type) and issubclass(_cls, ApiMessage) and _cls.API_KEY is not None:
            (REQUESTS if _cls.is_request() else RESPONSES)[_cls.API_KEY] = _cls



_COPY_IS_CHEAP = 1 << 16  # below this, kafka-python's own path (one copy) is the faster one


def decode_request(cls: type[ApiMessage], frame: bytes | bytearray, version: int) -> ApiMessage:
    """``cls.decode(frame, version=version, header=True)`` without its copy of the whole frame:
    the header is read from its own bytes, the body decoded from a view of the frame."""
    from .frame import request_header_length

    if len(frame) < _COPY_IS_CHEAP:
        return cls.decode(frame, version=version, header=True)
    view = memoryview(frame)
    end = request_header_length(view, cls.flexible_version_q(version))
    header = cls.parse_header(io.BytesIO(bytes(view[:end])), version=version)
    request = cls.decode(view[end:], version=version)
    request._header = header
    return request


__all__ = ["ApiKey", "REQUESTS", "RESPONSES", "decode_request"]
