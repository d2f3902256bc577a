"""Kafka error codes by Kafka's names, derived from kafka-python's error classes.

``ErrorCode.UNKNOWN_TOPIC_OR_PARTITION == 3`` reads like Kafka's own Errors enum and
keeps a single source of truth (kafka.errors) for the numbers.
"""
from __future__ import annotations

from enum import IntEnum

import kafka.errors as _errors


def _collect() -> dict[str, int]:
    codes: dict[str, int] = {"NONE": 0, "UNKNOWN_SERVER_ERROR": -1}
    for obj in vars(_errors).values():
        if isinstance(obj, type) and issubclass(obj, _errors.BrokerResponseError):
            errno = getattr(obj, "errno", None)
            name = getattr(obj, "message", None)
            if isinstance(errno, int) and errno > 0 and isinstance(name, str) and name.isupper():
                codes.setdefault(name, errno)
    # Kafka renamed a few codes since kafka-python named them; accept both spellings.
    for old, new in (("NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER"),
                     ("MESSAGE_SIZE_TOO_LARGE", "MESSAGE_TOO_LARGE"),
                     ("INVALID_TOPIC", "INVALID_TOPIC_EXCEPTION")):
        codes[new] = codes[old]
    return dict(sorted(codes.items(), key=lambda kv: kv[1]))


ErrorCode = IntEnum("ErrorCode", _collect())  # type: ignore[misc]
