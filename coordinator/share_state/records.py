"""The ``__share_group_state`` records, in Kafka's formats (Kafka's share-coordinator JSON
definitions loaded in protocol/schema_messages.py): the key is an int16 record type followed by
the non-flexible key struct, the value an int16 version followed by the flexible value struct, as
Kafka's ``ShareCoordinatorRecordSerde`` writes them.

- ShareSnapshot (record type 0): the whole state of one share partition (state epoch, leader epoch,
  start offset, delivery-complete count, creation and write times, all state batches), a new
  snapshot epoch each time. A ``None`` value is the tombstone DeleteShareGroupState writes.
- ShareUpdate (record type 1): the batches one write changed, its leader epoch and start offset
  (-1: unchanged), merged onto the snapshot by whoever replays it.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from coordinator.share.persister import PersisterStateBatch, SharePartitionKey
from protocol import schema_messages as m

Record = tuple[bytes, "bytes | None"]

SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1
RECORD_TYPES = frozenset((SHARE_SNAPSHOT, SHARE_UPDATE))


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """Kafka's ``ShareGroupOffset``: what the coordinator holds per share partition (the contents
    of its latest ShareSnapshot with every later ShareUpdate merged in)."""
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[PersisterStateBatch, ...] = ()
    delivery_complete_count: int = -1
    create_timestamp: int = -1
    write_timestamp: int = -1


def share_coordinator_key(key: SharePartitionKey) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey``: ``"<group>:<topic id>:<partition>"`` with
    the topic id as Kafka prints it (base64), the FindCoordinator key of type SHARE (2) whose Java
    String.hashCode places the share partition's state on a ``__share_group_state`` partition."""
    return key.coordinator_key


def key_type(key: bytes) -> int:
    return int.from_bytes(key[:2], "big", signed=True)


def _key(kind: int, key: SharePartitionKey) -> bytes:
    cls = m.ShareSnapshotKey if kind == SHARE_SNAPSHOT else m.ShareUpdateKey
    return bytes(cls(version=kind, group_id=key.group_id, topic_id=key.topic_id,
                     partition=key.partition).encode(version=kind))


def decode_key(key: bytes) -> SharePartitionKey:
    kind = key_type(key)
    cls = m.ShareSnapshotKey if kind == SHARE_SNAPSHOT else m.ShareUpdateKey
    k = cls.decode(key, version=kind)
    return SharePartitionKey(k.group_id, uuid.UUID(str(k.topic_id)), k.partition)


def _batches(cls: Any, batches: tuple[PersisterStateBatch, ...]) -> list[Any]:
    return [cls(first_offset=b.first_offset, last_offset=b.last_offset, delivery_state=b.delivery_state,
                delivery_count=b.delivery_count) for b in batches]


def _from_batches(batches: list[Any]) -> tuple[PersisterStateBatch, ...]:
    return tuple(PersisterStateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                 for b in batches)


def share_snapshot(key: SharePartitionKey, state: ShareGroupOffset) -> Record:
    V = m.ShareSnapshotValue
    value = V(version=0, snapshot_epoch=state.snapshot_epoch, state_epoch=state.state_epoch,
              leader_epoch=state.leader_epoch, start_offset=state.start_offset,
              delivery_complete_count=state.delivery_complete_count, create_timestamp=state.create_timestamp,
              write_timestamp=state.write_timestamp, state_batches=_batches(V.StateBatch, state.batches))
    return _key(SHARE_SNAPSHOT, key), bytes(value.encode(version=0))


def share_update(key: SharePartitionKey, snapshot_epoch: int, leader_epoch: int, start_offset: int,
                 delivery_complete_count: int, batches: tuple[PersisterStateBatch, ...]) -> Record:
    V = m.ShareUpdateValue
    value = V(version=0, snapshot_epoch=snapshot_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
              delivery_complete_count=delivery_complete_count, state_batches=_batches(V.StateBatch, batches))
    return _key(SHARE_UPDATE, key), bytes(value.encode(version=0))


def share_state_tombstone(key: SharePartitionKey) -> Record:
    """Kafka's ``newShareStateTombstoneRecord``: the snapshot key with no value."""
    return _key(SHARE_SNAPSHOT, key), None


def decode_snapshot(value: bytes) -> ShareGroupOffset:
    v = m.ShareSnapshotValue.decode(value, version=int.from_bytes(value[:2], "big", signed=True))
    return ShareGroupOffset(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset,
                            _from_batches(v.state_batches), v.delivery_complete_count, v.create_timestamp,
                            v.write_timestamp)


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: tuple[PersisterStateBatch, ...]


def decode_update(value: bytes) -> ShareUpdate:
    v = m.ShareUpdateValue.decode(value, version=int.from_bytes(value[:2], "big", signed=True))
    return ShareUpdate(v.snapshot_epoch, v.leader_epoch, v.start_offset, v.delivery_complete_count,
                       _from_batches(v.state_batches))
