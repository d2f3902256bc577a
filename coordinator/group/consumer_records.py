"""The ``__consumer_offsets`` records of KIP-848 consumer groups, in Kafka's formats (key record
types 3-8, Kafka's group-coordinator JSON definitions loaded in protocol/schema_messages.py).

Kafka writes, per group: ConsumerGroupMetadata (3: the group epoch), ConsumerGroupPartitionMetadata
(4: the subscribed topics' ids and partition counts), per member ConsumerGroupMemberMetadata (5:
its subscription), ConsumerGroupTargetAssignmentMetadata (6: the assignment epoch), per member
ConsumerGroupTargetAssignmentMember (7: its target partitions) and
ConsumerGroupCurrentMemberAssignment (8: its epochs, state, assigned and pending-revocation
partitions), and per subscribed regular expression ConsumerGroupRegularExpression (16: the topics
it resolved to, Kafka 4.0). A ``None`` value is a tombstone.
"""
from __future__ import annotations

import uuid
from typing import Any

from coordinator.record_codec import Assignment, RecordCodec
from coordinator.record_codec import assignment_of as assignment_of  # re-exported for the family's readers
from coordinator.record_codec import key_type as key_type
from coordinator.record_codec import partitions as _partitions
from protocol import schema_messages as m

Record = tuple[bytes, "bytes | None"]

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = 6, 7, 8
REGULAR_EXPRESSION = 16
RECORD_TYPES = frozenset(range(3, 9)) | {REGULAR_EXPRESSION}

_KEYS: dict[int, Any] = {
    GROUP_METADATA: m.ConsumerGroupMetadataKey,
    PARTITION_METADATA: m.ConsumerGroupPartitionMetadataKey,
    MEMBER_METADATA: m.ConsumerGroupMemberMetadataKey,
    TARGET_ASSIGNMENT_METADATA: m.ConsumerGroupTargetAssignmentMetadataKey,
    TARGET_ASSIGNMENT_MEMBER: m.ConsumerGroupTargetAssignmentMemberKey,
    CURRENT_MEMBER_ASSIGNMENT: m.ConsumerGroupCurrentMemberAssignmentKey,
    REGULAR_EXPRESSION: m.ConsumerGroupRegularExpressionKey,
}
_VALUES: dict[int, Any] = {
    GROUP_METADATA: m.ConsumerGroupMetadataValue,
    PARTITION_METADATA: m.ConsumerGroupPartitionMetadataValue,
    MEMBER_METADATA: m.ConsumerGroupMemberMetadataValue,
    TARGET_ASSIGNMENT_METADATA: m.ConsumerGroupTargetAssignmentMetadataValue,
    TARGET_ASSIGNMENT_MEMBER: m.ConsumerGroupTargetAssignmentMemberValue,
    CURRENT_MEMBER_ASSIGNMENT: m.ConsumerGroupCurrentMemberAssignmentValue,
    REGULAR_EXPRESSION: m.ConsumerGroupRegularExpressionValue,
}




_CODEC = RecordCodec(_KEYS, _VALUES)
_key = _CODEC.key
_value = _CODEC.value
decode_key = _CODEC.decode_key
decode_value = _CODEC.decode_value


def group_metadata(group_id: str, epoch: int | None) -> Record:
    return (_key(GROUP_METADATA, group_id=group_id),
            None if epoch is None else _value(GROUP_METADATA, epoch=epoch))


def partition_metadata(group_id: str, topics: dict[str, tuple[uuid.UUID, int]] | None,
                       racks: dict[uuid.UUID, tuple[frozenset[str], ...]] | None = None) -> Record:
    """Record 4; ``racks`` fills PartitionMetadata (partition -> replica racks), which Kafka 3.x
    wrote and 4.x leaves empty, for the rack-aware assignment."""
    value = None
    if topics is not None:
        cls = m.ConsumerGroupPartitionMetadataValue.TopicMetadata
        pm = cls.PartitionMetadata
        racks = racks or {}
        value = _value(PARTITION_METADATA, topics=[
            cls(topic_id=tid, topic_name=name, num_partitions=n, partition_metadata=[
                pm(partition=p, racks=sorted(rs)) for p, rs in enumerate(racks.get(tid, ())) if rs])
            for name, (tid, n) in sorted(topics.items())])
    return (_key(PARTITION_METADATA, group_id=group_id), value)


def racks_of(topics: list[Any]) -> dict[uuid.UUID, tuple[frozenset[str], ...]]:
    """The partition racks a record 4 holds (the inverse of ``partition_metadata``)."""
    out = {}
    for t in topics:
        if t.partition_metadata:
            by_p = {pm.partition: frozenset(pm.racks) for pm in t.partition_metadata}
            out[t.topic_id] = tuple(by_p.get(p, frozenset()) for p in range(t.num_partitions))
    return out


def member_metadata(group_id: str, member: Any | None, member_id: str | None = None) -> Record:
    key = _key(MEMBER_METADATA, group_id=group_id, member_id=member_id if member is None else member.member_id)
    if member is None:
        return (key, None)
    return (key, _value(MEMBER_METADATA, instance_id=member.instance_id, rack_id=member.rack_id,
                        client_id=member.client_id, client_host=member.client_host,
                        subscribed_topic_names=list(member.subscribed_topic_names),
                        subscribed_topic_regex=member.subscribed_topic_regex,
                        rebalance_timeout_ms=member.rebalance_timeout_ms,
                        server_assignor=member.server_assignor,
                        classic_member_metadata=_classic_metadata(member.classic)))


def _classic_metadata(classic: Any | None) -> Any:
    """ClassicMemberMetadata (tagged field 0) of a classic-protocol member, None otherwise."""
    if classic is None:
        return None
    cls = m.ConsumerGroupMemberMetadataValue.ClassicMemberMetadata
    return cls(session_timeout_ms=classic.session_timeout_ms, supported_protocols=[
        cls.ClassicProtocol(name=name, metadata=meta) for name, meta in classic.protocols])


def target_assignment_metadata(group_id: str, epoch: int | None) -> Record:
    return (_key(TARGET_ASSIGNMENT_METADATA, group_id=group_id),
            None if epoch is None else _value(TARGET_ASSIGNMENT_METADATA, assignment_epoch=epoch))


def target_assignment_member(group_id: str, member_id: str, assignment: Assignment | None) -> Record:
    value = None
    if assignment is not None:
        value = _value(TARGET_ASSIGNMENT_MEMBER, topic_partitions=_partitions(
            m.ConsumerGroupTargetAssignmentMemberValue.TopicPartition, assignment))
    return (_key(TARGET_ASSIGNMENT_MEMBER, group_id=group_id, member_id=member_id), value)


def current_member_assignment(group_id: str, member: Any | None, member_id: str | None = None) -> Record:
    key = _key(CURRENT_MEMBER_ASSIGNMENT, group_id=group_id,
               member_id=member_id if member is None else member.member_id)
    if member is None:
        return (key, None)
    tp = m.ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    return (key, _value(CURRENT_MEMBER_ASSIGNMENT, member_epoch=member.member_epoch,
                        previous_member_epoch=member.previous_member_epoch, state=member.state,
                        assigned_partitions=_partitions(tp, member.assigned),
                        partitions_pending_revocation=_partitions(tp, member.pending_revocation)))


def regular_expression(group_id: str, regex: str, topics: frozenset[str] | None, version: int = 0,
                       timestamp_ms: int = 0) -> Record:
    """Record 16: what ``regex`` resolved to (Kafka's newConsumerGroupRegularExpressionRecord);
    ``topics`` None is the tombstone."""
    key = _key(REGULAR_EXPRESSION, group_id=group_id, regular_expression=regex)
    if topics is None:
        return (key, None)
    return (key, _value(REGULAR_EXPRESSION, topics=sorted(topics), resolved_version=version, timestamp=timestamp_ms))
