"""Request/response classes by API key, straight from kafka-python's JSON-schema messages."""
from __future__ import annotations

import importlib

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

__all__ = ["ApiKey", "REQUESTS", "RESPONSES"]
