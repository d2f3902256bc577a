"""Byte formats of the records in ``__transaction_state``, exactly as Kafka writes them.

Key: ``TransactionLogKey`` v0 = int16 version 0, then the transactional id (int16-length string).
Value: ``TransactionLogValue`` v0 (what Kafka 3.x and Kafka 4.x with transaction.version 0 write):
producer id, epoch, timeout, status byte, nullable partition list (null in state Empty), last
update and start timestamps. v1 (flexible, Kafka 4.x with transaction.version >= 1) adds tagged
fields (previous/next producer id, client transaction version, next epoch); we read it and write
v0, so a log either broker wrote loads on the other. A tombstone (value ``None``) removes the id.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from coordinator.group.offsets_records import RecordFormatError, _Reader, _Writer

TRANSACTION_LOG_KEY_VERSION = 0
TRANSACTION_LOG_VALUE_VERSION = 0


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    # (topic, partition ids) in Kafka's grouping; None is written for state Empty
    transaction_partitions: tuple[tuple[str, tuple[int, ...]], ...] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    # v1 tagged fields (defaults when absent)
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0
    next_producer_epoch: int = -1
    unknown_tags: dict[int, bytes] = field(default_factory=dict, compare=False)

    @property
    def partitions(self) -> set[tuple[str, int]]:
        return {(t, p) for t, ps in (self.transaction_partitions or ()) for p in ps}


class TxnTransition(NamedTuple):
    """What one state record said, for the runtime's logs (begun/committed/aborted) without
    decoding the bytes: a tuple, much cheaper to make than a :class:`TransactionLogValue`."""
    status: int
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    partition_count: int        # 0 in the records that carry no partitions (Empty, Complete*)
    start_ms: int
    last_update_ms: int


@lru_cache(maxsize=4096)
def encode_key(transactional_id: str) -> bytes:
    """Cached: every state record of a transaction (three per transaction) carries the same key."""
    w = _Writer()
    w.int16(TRANSACTION_LOG_KEY_VERSION)
    w.string(transactional_id)
    return w.getvalue()


def decode_key(data: bytes) -> str:
    """The transactional id of a ``__transaction_state`` key (RecordFormatError otherwise)."""
    r = _Reader(data)
    version = r.int16()
    if version != TRANSACTION_LOG_KEY_VERSION:
        raise RecordFormatError(f"unknown TransactionLogKey version {version}")
    tid = r.string()
    if tid is None:
        raise RecordFormatError("transactionalId must not be null")
    return tid


def group_partitions(partitions: set[tuple[str, int]] | list[tuple[str, int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Partitions grouped by topic, sorted (Kafka groups by topic in hash order; we sort so the
    bytes are deterministic)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(partitions):
        by_topic.setdefault(t, []).append(p)
    return tuple((t, tuple(ps)) for t, ps in by_topic.items())


_V0_HEAD = struct.Struct(">hqhib")   # version, producer id, epoch, timeout, status
_V0_TAIL = struct.Struct(">qq")      # last update, start timestamps
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL_ARRAY = _INT32.pack(-1)


def _encode_value_v0(value: TransactionLogValue) -> bytes:
    """v0 (the version written) in a few struct packs: the field-by-field writer below was
    ~8 % of a transaction's broker CPU (three state records per transaction, issue 23)."""
    parts = [_V0_HEAD.pack(0, value.producer_id, value.producer_epoch, value.transaction_timeout_ms,
                           value.transaction_status)]
    groups = value.transaction_partitions
    parts.append(_NULL_ARRAY if groups is None else _encode_groups(groups))
    parts.append(_V0_TAIL.pack(value.transaction_last_update_timestamp_ms, value.transaction_start_timestamp_ms))
    return b"".join(parts)


_EMPTY_ARRAY = _INT32.pack(0)


@lru_cache(maxsize=4096)
def _one_partition(topic: str, partition: int) -> bytes:
    """The partition list of a transaction of one partition, the common case (cached: its
    Ongoing and Prepare records carry the same list, and so does the producer's next transaction)."""
    name = topic.encode("utf-8")
    return _INT32.pack(1) + _INT16.pack(len(name)) + name + struct.pack(">ii", 1, partition)


def _encode_partitions(partitions: set[tuple[str, int]]) -> bytes:
    if len(partitions) == 1:
        for topic, partition in partitions:
            return _one_partition(topic, partition)
    if not partitions:
        return _EMPTY_ARRAY
    return _encode_groups(group_partitions(partitions))


def _encode_groups(groups: tuple[tuple[str, tuple[int, ...]], ...]) -> bytes:
    """A v0 partition list, from :func:`group_partitions`' (topic, partition ids) pairs."""
    parts = [_INT32.pack(len(groups))]
    for topic, ids in groups:
        name = topic.encode("utf-8")
        parts.append(_INT16.pack(len(name)))
        parts.append(name)
        parts.append(struct.pack(f">{len(ids) + 1}i", len(ids), *ids))
    return b"".join(parts)


def encode_state(producer_id: int, producer_epoch: int, timeout_ms: int, status: int,
                 partitions: set[tuple[str, int]] | None, last_update_ms: int, start_ms: int) -> bytes:
    """The v0 value of a state record straight from the coordinator's fields: the same bytes as
    ``encode_value(TransactionLogValue(..., group_partitions(partitions), ...))`` without making
    the (frozen, twelve-field) value and the grouped tuples on every transition, three per
    transaction (issue 23). ``partitions=None`` writes the null list (state Empty)."""
    return (_V0_HEAD.pack(0, producer_id, producer_epoch, timeout_ms, status)
            + (_NULL_ARRAY if partitions is None else _encode_partitions(partitions))
            + _V0_TAIL.pack(last_update_ms, start_ms))


def encode_value(value: TransactionLogValue, version: int = TRANSACTION_LOG_VALUE_VERSION) -> bytes:
    if version == 0:
        return _encode_value_v0(value)
    if version not in (0, 1):
        raise ValueError(f"unsupported TransactionLogValue version {version}")
    w = _Writer(flexible=version >= 1)
    w.int16(version)
    w.int64(value.producer_id)
    w.int16(value.producer_epoch)
    w.int32(value.transaction_timeout_ms)
    w.parts.append(struct.pack(">b", value.transaction_status))
    parts = value.transaction_partitions
    if parts is None:
        if w.flexible:
            w.uvarint(0)
        else:
            w.int32(-1)
    else:
        w.array_len(len(parts))
        for topic, ids in parts:
            w.string(topic)
            w.array_len(len(ids))
            for p in ids:
                w.int32(p)
            w.no_tagged_fields()
    w.int64(value.transaction_last_update_timestamp_ms)
    w.int64(value.transaction_start_timestamp_ms)
    if w.flexible:
        tags: list[tuple[int, bytes]] = []
        if value.previous_producer_id != -1:
            tags.append((0, struct.pack(">q", value.previous_producer_id)))
        if value.next_producer_id != -1:
            tags.append((1, struct.pack(">q", value.next_producer_id)))
        if value.client_transaction_version != 0:
            tags.append((2, struct.pack(">h", value.client_transaction_version)))
        if value.next_producer_epoch != -1:
            tags.append((3, struct.pack(">h", value.next_producer_epoch)))
        w.uvarint(len(tags))
        for tag, data in tags:
            w.uvarint(tag)
            w.uvarint(len(data))
            w.parts.append(data)
    return w.getvalue()


def decode_value(data: bytes) -> TransactionLogValue:
    version = _Reader(data).int16()
    if version not in (0, 1):
        raise RecordFormatError(f"unknown TransactionLogValue version {version}")
    r = _Reader(data, flexible=version >= 1)
    r.pos = 2
    producer_id = r.int64()
    producer_epoch = r.int16()
    timeout = r.int32()
    status = struct.unpack(">b", r._take(1))[0]
    n = r.array_len()
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    if n >= 0:
        groups = []
        for _ in range(n):
            topic = r.string()
            if topic is None:
                raise RecordFormatError("topic must not be null")
            m = r.array_len()
            ids = tuple(r.int32() for _ in range(max(m, 0)))
            r.skip_tagged_fields()
            groups.append((topic, ids))
        partitions = tuple(groups)
    last_update = r.int64()
    start = r.int64()
    tagged: dict[int, bytes] = {}
    if r.flexible:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            tagged[tag] = bytes(r._take(r.uvarint()))
    known = {0, 1, 2, 3}

    def tag_int(tag: int, fmt: str, default: int) -> int:
        raw = tagged.get(tag)
        return struct.unpack(fmt, raw)[0] if raw is not None and len(raw) == struct.calcsize(fmt) else default

    return TransactionLogValue(
        producer_id=producer_id, producer_epoch=producer_epoch, transaction_timeout_ms=timeout,
        transaction_status=status, transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=last_update, transaction_start_timestamp_ms=start,
        previous_producer_id=tag_int(0, ">q", -1), next_producer_id=tag_int(1, ">q", -1),
        client_transaction_version=tag_int(2, ">h", 0), next_producer_epoch=tag_int(3, ">h", -1),
        unknown_tags={k: v for k, v in tagged.items() if k not in known})


def transaction_record(transactional_id: str, value: TransactionLogValue | None) -> tuple[bytes, bytes | None]:
    """(key, value) of a transaction log record; ``value=None`` makes the tombstone."""
    return encode_key(transactional_id), (None if value is None else encode_value(value))
