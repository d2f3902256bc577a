"""Classic-protocol members inside KIP-848 consumer groups, and online conversion between the two
group types (``group.consumer.migration.policy``), as Kafka 4's GroupMetadataManager does them;
mixed into ``coordinator.group.GroupCoordinator``.

A JoinGroup/SyncGroup/Heartbeat/LeaveGroup member (kafka-python, Java with
``group.protocol=classic``) of a non-empty consumer group is a *classic member* of it: its
subscription is the ConsumerProtocolSubscription of its first JoinGroup protocol, its partitions
come from the server-side assignor like everyone else's, and it reconciles one JoinGroup at a
time: the JoinGroup answer carries its member epoch as the generation (no leader, so it never runs
a client-side assignor), SyncGroup returns its current assignment in the ConsumerProtocol
encoding, and Heartbeat answers REBALANCE_IN_PROGRESS whenever it must rejoin (the group epoch
moved, it still owes a revocation, or a partition it waits for was released). Partitions it owned
are the ``owned_partitions`` of its subscription (none for eager clients, which give up everything
before rejoining). Timers: its session timeout is its JoinGroup's; it must sync within its
rebalance timeout after a JoinGroup and rejoin within it after being told to; a missed deadline
fences it.

Conversions (policy ``upgrade``/``downgrade``/``bidirectional``; ``disabled`` keeps both types
apart): a consumer-protocol member joining a non-empty classic group of the consumer protocol
type converts it into a consumer group (group epoch = the generation; each member keeps its
assignment as its target; parked JoinGroup/SyncGroup requests answer REBALANCE_IN_PROGRESS), and
when the last consumer-protocol member of a group leaves while classic members remain, the group
becomes a classic one again (generation = group epoch, each member's target assignment as its
classic assignment) and rebalances. Empty groups convert as before (coordinator.group).
"""
from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from coordinator.step import Record, Step
from coordinator.group import consumer_records as rec
from coordinator.group.assignors import PartitionRacks
from coordinator.group.classic import (ClassicGroup, ClassicGroupHandlers, GroupState, Heartbeat, HeartbeatResult, JoinGroup, JoinGroupResult, LeaveGroup, LeaveGroupResult, LeaveMemberResult, Member, SyncGroup, SyncGroupResult)
from coordinator.group.consumer import (STABLE, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, Assignment, ClassicMemberMetadata, ConsumerGroup, ConsumerGroupHandlers, ConsumerGroupMember, HeartbeatError, TopicsView)
from coordinator.group.common import (CONSUMER_PROTOCOL_TYPE, FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, MEMBER_ID_REQUIRED, NONE, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER, UNKNOWN_MEMBER_ID)
from coordinator.group.offsets_records import group_metadata_record

# The newest ConsumerProtocolSubscription/Assignment version kafka-python's schemas know.
_MAX_CONSUMER_PROTOCOL_VERSION = 3


def parse_subscription(metadata: bytes) -> Any:
    """A JoinGroup protocol's ConsumerProtocolSubscription; newer versions are read as the newest
    we know (Kafka's schemas only add fields). Raises ValueError when it does not parse."""
    data = bytes(metadata)
    if len(data) < 2:
        raise ValueError("empty consumer protocol subscription")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version < 0:
        raise ValueError(f"bad consumer protocol version {version}")
    try:
        return ConsumerProtocolSubscription.decode(data[2:], version=min(version, _MAX_CONSUMER_PROTOCOL_VERSION),
                                                   header=False)
    except Exception as e:
        raise ValueError(f"malformed consumer protocol subscription: {e}") from None


def encode_assignment(assignment: Assignment, names: dict[uuid.UUID, str], metadata: bytes) -> bytes:
    """A ConsumerProtocolAssignment of ``assignment`` in the version of the member's subscription
    (Kafka's prepareAssignment), topics sorted by name."""
    version = 0
    if len(metadata) >= 2:
        version = max(0, min(int.from_bytes(metadata[:2], "big", signed=True), _MAX_CONSUMER_PROTOCOL_VERSION))
    parts = [ConsumerProtocolAssignment.TopicPartition(topic=names[tid], partitions=sorted(ps))
             for tid, ps in sorted(assignment.items(), key=lambda kv: names.get(kv[0], "")) if tid in names and ps]
    return bytes(ConsumerProtocolAssignment(version=version, assigned_partitions=parts, user_data=None)
                 .encode(version=version))


def decode_assignment(data: bytes, topics: TopicsView) -> Assignment:
    """A classic member's ConsumerProtocolAssignment as topic ids (unknown topics dropped)."""
    if len(data) < 2:
        return {}
    try:
        a = ConsumerProtocolAssignment.decode(bytes(data))
    except Exception:
        return {}
    out: dict[uuid.UUID, frozenset[int]] = {}
    for tp in a.assigned_partitions:
        if tp.topic in topics and tp.partitions:
            tid = topics[tp.topic][0]
            out[tid] = out.get(tid, frozenset()) | frozenset(tp.partitions)
    return out


def _owned_of(subscription: Any, topics: TopicsView) -> list[tuple[uuid.UUID, list[int]]]:
    owned = getattr(subscription, "owned_partitions", None) or []
    return [(topics[tp.topic][0], list(tp.partitions)) for tp in owned if tp.topic in topics]


class ClassicMembersHandlers(ClassicGroupHandlers, ConsumerGroupHandlers):
    """Classic requests to consumer groups, and the conversions (its state: ``GroupCoordinatorBase``)."""

    def _migration_allows(self, direction: str) -> bool:
        return self.config.consumer_group_migration_policy in (direction, "bidirectional")

    # ------------------------------------------------------------------ JoinGroup

    def _cg_classic_join(self, group: ConsumerGroup, req: JoinGroup, step: Step) -> None:
        """Kafka's classicGroupJoinToConsumerGroup."""
        try:
            result = self._cg_classic_join_member(group, req, step)
        except HeartbeatError as e:
            result = JoinGroupResult(e.code, req.member_id)
        step.complete(req.token, result)

    def _cg_classic_join_member(self, group: ConsumerGroup, req: JoinGroup, step: Step) -> JoinGroupResult:
        cfg = self.config
        gid = group.group_id
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        member_id = self._member_id_factory() if is_unknown else req.member_id
        if member_id not in group.members and len(group.members) >= cfg.consumer_group_max_size:
            raise HeartbeatError(GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum capacity "
                                 f"of {cfg.consumer_group_max_size} members.")
        if not self._cg_supports_classic(group, req.protocol_type, [n for n, _ in req.protocols]):
            raise HeartbeatError(INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if is_unknown and req.group_instance_id is None and req.api_version >= 4:
            return JoinGroupResult(MEMBER_ID_REQUIRED, member_id)
        try:
            subscription = parse_subscription(req.protocols[0][1])
        except ValueError as e:
            raise HeartbeatError(INCONSISTENT_GROUP_PROTOCOL, str(e)) from None
        records: list[Record] = []
        member = group.members.get(member_id)
        fresh = member is None
        if req.group_instance_id is not None:
            static = group.static_member(req.group_instance_id)
            if is_unknown:
                if static is not None:
                    # A restarted static classic member takes over its old incarnation.
                    self._cancel_classic_timers(gid, static.member_id)
                    member = self._cg_replace_static(group, static, member_id, records)
                    fresh = True
            else:
                self._cg_known_static(group, req.group_instance_id, member_id)
        if member is None:
            member = ConsumerGroupMember(member_id)
        rebalance_timeout = req.session_timeout_ms if req.api_version == 0 else req.rebalance_timeout_ms
        updated = ConsumerGroupMember(
            member_id, instance_id=req.group_instance_id if req.group_instance_id is not None else member.instance_id,
            rack_id=getattr(subscription, "rack_id", None) or member.rack_id,
            client_id=req.client_id, client_host=req.client_host,
            subscribed_topic_names=tuple(t for t in subscription.topics if t is not None),
            subscribed_topic_regex=None, server_assignor=member.server_assignor,
            rebalance_timeout_ms=rebalance_timeout if rebalance_timeout != -1 else member.rebalance_timeout_ms,
            member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
            state=member.state, assigned=member.assigned, pending_revocation=member.pending_revocation,
            classic=ClassicMemberMetadata(req.session_timeout_ms,
                                          tuple((n, bytes(m)) for n, m in req.protocols)))
        self._cg_apply_member(group, member, updated, fresh, _owned_of(subscription, req.topics), req.topics,
                              records, req.partition_racks)
        step.records.extend(records)
        self._cancel(("cg-join", gid, member_id))
        self._cg_schedule_session(group, updated)
        self._schedule(("cg-sync", gid, member_id), updated.rebalance_timeout_ms,
                       lambda s: self._cg_expire(gid, member_id, s))
        return JoinGroupResult(error_code=NONE, member_id=member_id, generation_id=updated.member_epoch,
                               protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=req.protocols[0][0],
                               leader="", skip_assignment=False, members=[])

    @staticmethod
    def _cg_supports_classic(group: ConsumerGroup, protocol_type: str, names: list[str]) -> bool:
        """Kafka's ConsumerGroup.supportsClassicProtocols: the consumer protocol type and a
        protocol every classic member supports."""
        if protocol_type != CONSUMER_PROTOCOL_TYPE or not names:
            return False
        classic = [m.classic for m in group.members.values() if m.classic is not None]
        return any(all(any(n == p for p, _ in c.protocols) for c in classic) for n in names)

    # ------------------------------------------------------------------ SyncGroup / Heartbeat

    def _cg_classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                           generation_id: int) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol +
        throwIfGenerationIdUnmatched."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise HeartbeatError(UNKNOWN_MEMBER, f"Member {member_id} is not a member of group {group.group_id}.")
        else:
            member = self._cg_known_static(group, instance_id, member_id)
        if member.classic is None:
            raise HeartbeatError(UNKNOWN_MEMBER, f"Member {member.member_id} does not use the classic protocol.")
        if generation_id != member.member_epoch:
            raise HeartbeatError(ILLEGAL_GENERATION)
        return member

    def _cg_classic_sync(self, group: ConsumerGroup, req: SyncGroup, step: Step) -> None:
        """Kafka's classicGroupSyncToConsumerGroup: the member's current assignment."""
        try:
            member = self._cg_classic_member(group, req.member_id, req.group_instance_id, req.generation_id)
            assert member.classic is not None
            protocol = member.classic.protocols[0]
            if (req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE) or \
                    (req.protocol_name is not None and req.protocol_name != protocol[0]):
                raise HeartbeatError(INCONSISTENT_GROUP_PROTOCOL)
            self._cg_throw_if_rebalancing(group, member)
        except HeartbeatError as e:
            step.complete(req.token, SyncGroupResult(e.code))
            return
        self._cancel(("cg-sync", group.group_id, member.member_id))
        self._cg_schedule_session(group, member)
        names = {tid: name for name, (tid, _) in group.subscription_metadata.items()}
        step.complete(req.token, SyncGroupResult(
            error_code=NONE, protocol_type=req.protocol_type, protocol_name=req.protocol_name,
            assignment=encode_assignment(member.assigned, names, protocol[1])))

    def _cg_throw_if_rebalancing(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if group.group_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
            self._cg_schedule_join_timeout(group, member)
            raise HeartbeatError(REBALANCE_IN_PROGRESS)

    def _cg_schedule_join_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        key = ("cg-join", group.group_id, member.member_id)
        if key not in self._timers:
            gid, mid = group.group_id, member.member_id
            self._schedule(key, member.rebalance_timeout_ms, lambda s: self._cg_expire(gid, mid, s))

    def _cg_classic_heartbeat(self, group: ConsumerGroup, req: Heartbeat, step: Step) -> None:
        """Kafka's classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS tells the member to
        rejoin when the group moved on, it owes a revocation, or what it waits for is free."""
        try:
            member = self._cg_classic_member(group, req.member_id, req.group_instance_id, req.generation_id)
        except HeartbeatError as e:
            step.complete(req.token, HeartbeatResult(e.code))
            return
        self._cg_schedule_session(group, member)
        error = NONE
        if member.member_epoch < group.group_epoch or member.state == UNREVOKED_PARTITIONS or (
                member.state == UNRELEASED_PARTITIONS and not self._cg_waiting_on_unreleased(group, member)):
            error = REBALANCE_IN_PROGRESS
            self._cg_schedule_join_timeout(group, member)
        step.complete(req.token, HeartbeatResult(error))

    @staticmethod
    def _cg_waiting_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
        for tid, ps in group.target.get(member.member_id, {}).items():
            have = member.assigned.get(tid, frozenset())
            for p in ps:
                holder = group.owners.get((tid, p))
                if p not in have and holder is not None and holder != member.member_id:
                    return True
        return False

    # ------------------------------------------------------------------ LeaveGroup

    def _cg_classic_leave(self, group: ConsumerGroup, req: LeaveGroup, step: Step) -> None:
        """Kafka's classicGroupLeaveToConsumerGroup: each named classic member is removed."""
        results: list[LeaveMemberResult] = []
        for identity in req.members:
            try:
                if identity.group_instance_id is None:
                    member = group.members.get(identity.member_id)
                    if member is None:
                        raise HeartbeatError(UNKNOWN_MEMBER)
                else:
                    member = group.static_member(identity.group_instance_id)
                    if member is None:
                        raise HeartbeatError(UNKNOWN_MEMBER)
                    if identity.member_id != UNKNOWN_MEMBER_ID and identity.member_id != member.member_id:
                        raise HeartbeatError(FENCED_INSTANCE_ID)
                if member.classic is None:
                    raise HeartbeatError(UNKNOWN_MEMBER)
            except HeartbeatError as e:
                results.append(LeaveMemberResult(identity.member_id, identity.group_instance_id, e.code))
                continue
            self._cg_remove_member(group, member.member_id, step.records)
            results.append(LeaveMemberResult(member.member_id, identity.group_instance_id, NONE))
        step.complete(req.token, LeaveGroupResult(NONE, results))

    def _cancel_classic_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("cg-session", "cg-revocation", "cg-join", "cg-sync"):
            self._cancel((kind, group_id, member_id))

    # ------------------------------------------------------------------ upgrade

    def _cg_upgrade(self, classic: ClassicGroup, topics: TopicsView, step: Step) -> ConsumerGroup:
        """Kafka's validateOnlineUpgrade + convertToConsumerGroup (ConsumerGroup.fromClassicGroup):
        raises GROUP_ID_NOT_FOUND when the policy, the protocol type or the size forbids it."""
        gid = classic.group_id
        if not self._migration_allows("upgrade") or not classic.uses_consumer_protocol or \
                len(classic.members) > self.config.consumer_group_max_size:
            raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
        epoch = classic.generation_id
        group = ConsumerGroup(gid)
        group.group_epoch = group.assignment_epoch = epoch
        for m in classic.members.values():
            metadata = m.metadata(classic.protocol_name) or (m.protocols[0][1] if m.protocols else b"")
            try:
                subscription = parse_subscription(metadata)
            except ValueError:
                raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {gid} to a consumer "
                                     "group because the embedded consumer protocol is malformed.") from None
            assigned = decode_assignment(m.assignment, topics)
            group.members[m.member_id] = ConsumerGroupMember(
                m.member_id, instance_id=m.group_instance_id, rack_id=getattr(subscription, "rack_id", None),
                client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=tuple(t for t in subscription.topics if t is not None),
                rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=epoch, previous_member_epoch=epoch,
                state=STABLE, assigned=assigned,
                classic=ClassicMemberMetadata(m.session_timeout_ms, tuple((n, bytes(b)) for n, b in m.protocols)))
            group.target[m.member_id] = assigned
        # The classic members waiting in a rebalance start over against the consumer group.
        for m in classic.members.values():
            self._complete_join(classic, m, JoinGroupResult(REBALANCE_IN_PROGRESS, m.member_id), step)
            self._complete_sync(m, SyncGroupResult(REBALANCE_IN_PROGRESS), step)
        step.records.append(group_metadata_record(gid, None))
        self._drop_group(gid)
        self._consumer_groups[gid] = group
        for cm in group.members.values():
            step.records.append(rec.member_metadata(gid, cm))
        step.records.append(rec.group_metadata(gid, epoch))
        for mid, a in group.target.items():
            step.records.append(rec.target_assignment_member(gid, mid, a))
        step.records.append(rec.target_assignment_metadata(gid, epoch))
        for cm in group.members.values():
            step.records.append(rec.current_member_assignment(gid, cm))
            group.set_current(cm)
            self._cg_schedule_session(group, cm)
        return group

    # ------------------------------------------------------------------ downgrade

    def _cg_fence(self, group: ConsumerGroup, member_id: str, records: list[Record], topics: TopicsView | None = None,
                  step: Step | None = None, partition_racks: PartitionRacks | None = None) -> None:
        """Kafka's consumerGroupFenceMember: remove the member, or, when it is the last member of
        the consumer protocol and classic members remain, turn the group back into a classic one."""
        member = group.members.get(member_id)
        others = [m for mid, m in group.members.items() if mid != member_id]
        if (member is not None and member.classic is None and others and all(m.classic is not None for m in others)
                and self._migration_allows("downgrade") and len(others) <= self.config.group_max_size
                and step is not None):
            self._cg_downgrade(group, member_id, step)
        else:
            self._cg_remove_member(group, member_id, records, topics, partition_racks)

    def _cg_downgrade(self, group: ConsumerGroup, leaving_id: str, step: Step) -> None:
        """Kafka's convertToClassicGroup (ClassicGroup.fromConsumerGroup) then a rebalance."""
        gid = group.group_id
        self._cg_tombstones(group, step.records)
        del self._consumer_groups[gid]
        self._cancel_group_timers(gid)
        now = self._now_ms()
        classic = ClassicGroup(gid, GroupState.STABLE, now)
        classic.generation_id = group.group_epoch
        names = {tid: name for name, (tid, _) in group.subscription_metadata.items()}
        for mid, m in group.members.items():
            if mid == leaving_id or m.classic is None:
                continue
            classic.add(Member(member_id=mid, group_instance_id=m.instance_id, client_id=m.client_id,
                               client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                               session_timeout_ms=m.classic.session_timeout_ms,
                               protocol_type=CONSUMER_PROTOCOL_TYPE, protocols=list(m.classic.protocols)))
        classic.protocol_type = CONSUMER_PROTOCOL_TYPE
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        for mid, cm in classic.members.items():
            cm.assignment = encode_assignment(group.target.get(mid, {}), names, cm.metadata(classic.protocol_name))
        step.records.append(group_metadata_record(gid, classic.metadata_value(
            {mid: cm.assignment for mid, cm in classic.members.items()})))
        self._groups[gid] = classic
        for cm in classic.members.values():
            self._reschedule_heartbeat(classic, cm)
        self._prepare_rebalance(classic, step)

    def _cg_tombstones(self, group: ConsumerGroup, records: list[Record]) -> None:
        """Kafka's ConsumerGroup.createGroupTombstoneRecords: every record of the group goes."""
        gid = group.group_id
        for mid in group.members:
            records.append(rec.current_member_assignment(gid, None, mid))
        for mid in group.target:
            records.append(rec.target_assignment_member(gid, mid, None))
        records.append(rec.target_assignment_metadata(gid, None))
        for mid in group.members:
            records.append(rec.member_metadata(gid, None, mid))
        records.append(rec.partition_metadata(gid, None))
        records.append(rec.group_metadata(gid, None))
