"""Encoding of the ``__consumer_offsets`` record families that KIP-848 consumer groups and KIP-932
share groups write: each record's key starts with its record type (the key's version), its value
with the value's version, and both are Kafka's group-coordinator JSON definitions loaded as
kafka-python message classes. One codec per family, so the two families' modules hold only their
own type tables.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

Assignment = dict[uuid.UUID, frozenset[int]]


def key_type(key: bytes) -> int:
    """The record type of a ``__consumer_offsets`` key (its first two bytes)."""
    return int.from_bytes(key[:2], "big", signed=True)


class RecordCodec:
    """Builds and reads one family's records from its key and value classes by record type."""

    def __init__(self, keys: Mapping[int, Any], values: Mapping[int, Any]) -> None:
        self._keys = keys
        self._values = values

    def key(self, kind: int, **fields: Any) -> bytes:
        return bytes(self._keys[kind](version=kind, **fields).encode(version=kind))

    def value(self, kind: int, **fields: Any) -> bytes:
        return bytes(self._values[kind](version=0, **fields).encode(version=0))

    def decode_key(self, key: bytes) -> Any:
        kind = key_type(key)
        return self._keys[kind].decode(key, version=kind)

    def decode_value(self, kind: int, value: bytes) -> Any:
        version = int.from_bytes(value[:2], "big", signed=True)
        return self._values[kind].decode(value, version=version)


def partitions(cls: Any, assignment: Assignment) -> list[Any]:
    """An assignment as the records' per-topic entries (``cls``), sorted, empty topics left out."""
    return [cls(topic_id=tid, partitions=sorted(ps)) for tid, ps in sorted(assignment.items()) if ps]


def assignment_of(topics: list[Any]) -> Assignment:
    """The assignment the records' per-topic entries hold."""
    return {t.topic_id: frozenset(t.partitions) for t in topics if t.partitions}
