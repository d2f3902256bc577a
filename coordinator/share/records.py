"""The ``__consumer_offsets`` records of KIP-932 share groups, in Kafka's formats (key record types
10-15, Kafka's group-coordinator JSON definitions loaded in protocol/schema_messages.py), as Kafka's
GroupCoordinatorRecordHelpers ``newShareGroup*`` build them.

Kafka writes, per share group: ShareGroupMetadata (11: the group epoch, and in 4.1+ the hash of the
subscribed topics' metadata, KIP-1101), per member ShareGroupMemberMetadata (10: its rack, client
and subscription), ShareGroupTargetAssignmentMetadata (12: the assignment epoch), per member
ShareGroupTargetAssignmentMember (13: its target partitions) and ShareGroupCurrentMemberAssignment
(14: its epochs, state and assigned partitions), and ShareGroupStatePartitionMetadata (15: which
share partitions have initialized state on the share coordinator). A ``None`` value is a tombstone.

Record 15 is only ever tombstoned here (when a group is deleted, as Kafka's group tombstones do):
this broker's share partitions are initialized by their leaders, not by the group coordinator, so
it has nothing to write in it; a value found on replay is ignored.

The shell hands a share group's records to the group coordinator of its ``__consumer_offsets``
partition (coordinator.group.coordinator.GroupRecords), whose runtime appends them and answers once
they are committed (see broker/coordinator_runtime/share_runtime.py).
"""
from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from typing import Any

from coordinator.record_codec import Assignment, RecordCodec
from coordinator.record_codec import assignment_of as assignment_of  # re-exported for the family's readers
from coordinator.record_codec import key_type as key_type
from coordinator.record_codec import partitions as _partitions
from protocol import schema_messages as m

Record = tuple[bytes, "bytes | None"]

MEMBER_METADATA, GROUP_METADATA, TARGET_ASSIGNMENT_METADATA = 10, 11, 12
TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, STATE_PARTITION_METADATA = 13, 14, 15
RECORD_TYPES = frozenset(range(10, 16))
MEMBER_STATE_STABLE = 0      # Kafka's MemberState.STABLE: a share member never has anything to revoke

_KEYS: dict[int, Any] = {
    MEMBER_METADATA: m.ShareGroupMemberMetadataKey,
    GROUP_METADATA: m.ShareGroupMetadataKey,
    TARGET_ASSIGNMENT_METADATA: m.ShareGroupTargetAssignmentMetadataKey,
    TARGET_ASSIGNMENT_MEMBER: m.ShareGroupTargetAssignmentMemberKey,
    CURRENT_MEMBER_ASSIGNMENT: m.ShareGroupCurrentMemberAssignmentKey,
    STATE_PARTITION_METADATA: m.ShareGroupStatePartitionMetadataKey,
}
_VALUES: dict[int, Any] = {
    MEMBER_METADATA: m.ShareGroupMemberMetadataValue,
    GROUP_METADATA: m.ShareGroupMetadataValue,
    TARGET_ASSIGNMENT_METADATA: m.ShareGroupTargetAssignmentMetadataValue,
    TARGET_ASSIGNMENT_MEMBER: m.ShareGroupTargetAssignmentMemberValue,
    CURRENT_MEMBER_ASSIGNMENT: m.ShareGroupCurrentMemberAssignmentValue,
    STATE_PARTITION_METADATA: m.ShareGroupStatePartitionMetadataValue,
}




def is_share_group_record(key: bytes | None) -> bool:
    return key is not None and len(key) >= 2 and key_type(key) in RECORD_TYPES


_CODEC = RecordCodec(_KEYS, _VALUES)
_key = _CODEC.key
_value = _CODEC.value
decode_key = _CODEC.decode_key
decode_value = _CODEC.decode_value


def metadata_hash(metadata: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    """The hash of the subscribed topics' metadata (name, id, partition count) a group's target
    assignment was computed from, stored in ShareGroupMetadataValue.MetadataHash so that a group
    replayed after a restart does not see its topics as changed (Kafka 4.1, KIP-1101). Kafka's hash
    (murmur3 over the topic image, racks included) is not reproduced: only this broker compares it."""
    text = "\n".join(f"{name}\t{tid}\t{count}" for name, (tid, count) in sorted(metadata.items()))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True) if metadata else 0


def member_metadata(group_id: str, member_id: str, rack_id: str | None = None, client_id: str = "",
                    client_host: str = "", subscribed: tuple[str, ...] | None = None) -> Record:
    """Record 10 (``subscribed`` None: the tombstone)."""
    key = _key(MEMBER_METADATA, group_id=group_id, member_id=member_id)
    if subscribed is None:
        return (key, None)
    return (key, _value(MEMBER_METADATA, rack_id=rack_id, client_id=client_id, client_host=client_host,
                        subscribed_topic_names=list(subscribed)))


def group_metadata(group_id: str, epoch: int | None, hash_: int = 0) -> Record:
    """Record 11 (``epoch`` None: the tombstone)."""
    return (_key(GROUP_METADATA, group_id=group_id),
            None if epoch is None else _value(GROUP_METADATA, epoch=epoch, metadata_hash=hash_))


def target_assignment_metadata(group_id: str, epoch: int | None) -> Record:
    """Record 12 (``epoch`` None: the tombstone)."""
    return (_key(TARGET_ASSIGNMENT_METADATA, group_id=group_id),
            None if epoch is None else _value(TARGET_ASSIGNMENT_METADATA, assignment_epoch=epoch))


def target_assignment_member(group_id: str, member_id: str, assignment: Assignment | None) -> Record:
    """Record 13 (``assignment`` None: the tombstone)."""
    value = None
    if assignment is not None:
        value = _value(TARGET_ASSIGNMENT_MEMBER, topic_partitions=_partitions(
            m.ShareGroupTargetAssignmentMemberValue.TopicPartition, assignment))
    return (_key(TARGET_ASSIGNMENT_MEMBER, group_id=group_id, member_id=member_id), value)


def current_member_assignment(group_id: str, member_id: str, member_epoch: int | None = None,
                              previous_member_epoch: int = 0, assignment: Assignment | None = None) -> Record:
    """Record 14 (``member_epoch`` None: the tombstone); the state is always STABLE."""
    key = _key(CURRENT_MEMBER_ASSIGNMENT, group_id=group_id, member_id=member_id)
    if member_epoch is None:
        return (key, None)
    tp = m.ShareGroupCurrentMemberAssignmentValue.TopicPartitions
    return (key, _value(CURRENT_MEMBER_ASSIGNMENT, member_epoch=member_epoch,
                        previous_member_epoch=previous_member_epoch, state=MEMBER_STATE_STABLE,
                        assigned_partitions=_partitions(tp, assignment or {})))


def state_partition_metadata_tombstone(group_id: str) -> Record:
    """Record 15's tombstone (see the module docstring)."""
    return (_key(STATE_PARTITION_METADATA, group_id=group_id), None)
