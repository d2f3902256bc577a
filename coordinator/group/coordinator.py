"""The group coordinator of one ``__consumer_offsets`` partition as a pure state machine (no sockets,
no clock, no I/O): the classic protocol (coordinator.classic_group) plus the shared offset, describe,
list and delete APIs (shared types and timers: coordinator.group_common).

One :class:`GroupCoordinator` owns the groups hashed onto one ``__consumer_offsets`` partition.
The broker shell feeds it requests (plain dataclasses below) with the current time and gets back
a :class:`Step`: records to append to that partition and ``(token, result)`` completions to send
*after* the records are durable. Requests that must wait (JoinGroup during a rebalance, follower
SyncGroup) produce no completion until a later step releases them; ``tick`` fires the timers
(session expiry, join/sync deadlines, the initial rebalance delay, offset expiry) and
``next_deadline`` says when to call it. ``replay`` rebuilds state from the partition on start-up.

The rules follow Kafka's own coordinator (GroupMetadataManager/ClassicGroup in Kafka 3.7+, which
ported GroupCoordinator.scala), including its error codes per API version. Where Kafka is not
deterministic we are: members are kept in join order (Kafka: hash order), which decides the
fallback leader and member-list order, and a tied protocol vote goes to the earliest voter. Two
deliberate differences (marked ``Deviation``) make sure no parked request waits forever: a member's
parked JoinGroup/SyncGroup that a retry supersedes is answered REBALANCE_IN_PROGRESS, and a removed
member's parked SyncGroup is answered UNKNOWN_MEMBER_ID. A failed append is modelled for the one
case a client can provoke, a group metadata record over ``max_message_bytes``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator.step import Coordinator, Record, Step, TxnRecords
from coordinator.group.common import *  # noqa: F401,F403
from coordinator.group.classic import *  # noqa: F401,F403
from coordinator.group.classic import ClassicGroupHandlers
from coordinator.group.consumer import *  # noqa: F401,F403
from coordinator.group.consumer import ConsumerGroupHandlers
from coordinator.group.consumer_classic import ClassicMembersHandlers
from coordinator.group import consumer_records as cg_records
from coordinator.group.offsets import (DEFAULT_RETENTION_TIME, OffsetAndMetadata, OffsetCommitPartition, OffsetCommitTopic, OffsetFetchPartition, OffsetFetchTopic, OffsetStore, PartitionError, TopicPartitionErrors, TopicPartitions, errors_for_all)
from coordinator.group.offsets_records import (GroupMetadataKey, OffsetCommitKey, UnknownKey, decode_group_metadata_value, decode_key, decode_offset_commit_value, group_metadata_record)

__all__ = [
    "GroupCoordinator", "GroupCoordinatorConfig", "GroupState", "Step", "ClassicGroup", "Member",
    "JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "LeaveGroupMember", "OffsetCommit",
    "OffsetFetch", "OffsetFetchGroup", "OffsetDelete", "DescribeGroups", "ListGroups", "DeleteGroups",
    "TopicsDeleted", "TopicsDeletedResult",
    "TxnOffsetCommit", "TxnOffsetCommitResult", "TxnRecords",
    "JoinGroupResult", "JoinGroupMember", "SyncGroupResult", "HeartbeatResult", "LeaveGroupResult",
    "LeaveMemberResult", "OffsetCommitResult", "OffsetFetchResult", "OffsetFetchGroupResult",
    "OffsetDeleteResult", "DescribeGroupsResult", "DescribedGroup", "DescribedMember",
    "ListGroupsResult", "ListedGroup", "DeleteGroupsResult", "DeletableGroupResult",
    "OffsetCommitTopic", "OffsetCommitPartition", "TopicPartitions", "TopicPartitionErrors",
    "PartitionError", "OffsetFetchTopic", "OffsetFetchPartition", "CONSUMER_PROTOCOL_TYPE",
    "batch_size_of", "GroupRecords",
]


@dataclass
class GroupRecords:
    """A group's records decided by another machine over the same group ids (KIP-932 share groups:
    coordinator/share/group.py writes its share-group records, types 10-15, and replays them
    itself): appended to this partition and answered NONE once committed, or NOT_COORDINATOR /
    COORDINATOR_LOAD_IN_PROGRESS when this coordinator does not serve the group."""
    group_id: str
    records: tuple[Record, ...]
    token: Any = None


# =========================================================================== coordinator



class GroupCoordinator(ClassicMembersHandlers):
    """The classic group coordinator for the groups of one ``__consumer_offsets`` partition.

    ``partition`` (optional) enables Kafka's NOT_COORDINATOR answer for groups that hash elsewhere.
    Create with ``loading=True`` to answer COORDINATOR_LOAD_IN_PROGRESS while ``replay`` rebuilds
    state, then call ``load_complete(now_ms)``. ``member_id_factory`` returns the random suffix of
    new member ids (Kafka: a UUID); tests inject a deterministic one.
    """

    # ------------------------------------------------------------------ public API

    def handle(self, request: Any, now_ms: int) -> Step:
        """Process one request at ``now_ms`` (timers due by then fire first, and timers the request
        makes due at once, such as a zero initial delay, fire before returning; work it defers, a
        regex resolution, is left for ``tick``)."""
        step = Step()
        handler = self._HANDLERS.get(type(request))
        if handler is None:
            raise TypeError(f"unsupported request {type(request).__name__}")
        if self._unloaded or self.loading:
            step.complete(request.token, self.unavailable(request))
            return step
        self._advance(now_ms, step)
        if not self._consumer_group_answers_classic(request, step):
            handler(self, request, step)
        self._advance(now_ms, step, hold_deferred=True)
        return step

    def tick(self, now_ms: int) -> Step:
        """Fire every timer due at or before ``now_ms``."""
        step = Step()
        if not (self._unloaded or self.loading):
            self._advance(now_ms, step)
        return step

    def replay(self, key: bytes, value: bytes | None, producer_id: int | None = None) -> None:
        """Apply one record of this partition's log (start-up). Groups come back as Kafka loads
        them: Stable with their members if the last metadata had members, else Empty.
        ``producer_id`` is set for records of a transactional batch: their offsets stay pending
        until ``replay_marker`` sees that producer's COMMIT."""
        k = decode_key(key)
        if isinstance(k, UnknownKey) and k.version in cg_records.RECORD_TYPES:
            self._cg_replay(key, value)
        elif isinstance(k, OffsetCommitKey) and producer_id is not None and producer_id >= 0:
            if value is not None:
                if k.group not in self._groups and k.group not in self._consumer_groups:
                    self._groups[k.group] = ClassicGroup(k.group, GroupState.EMPTY, None)
                self.offsets.put_pending(k.group, producer_id, k.topic, k.partition,
                                         OffsetAndMetadata.from_value(decode_offset_commit_value(value)))
        elif isinstance(k, OffsetCommitKey):
            if value is None:
                self.offsets.remove(k.group, k.topic, k.partition)
            else:
                if k.group not in self._groups and k.group not in self._consumer_groups:   # a "simple" group
                    self._groups[k.group] = ClassicGroup(k.group, GroupState.EMPTY, None)
                self.offsets.put(k.group, k.topic, k.partition,
                                 OffsetAndMetadata.from_value(decode_offset_commit_value(value)))
        elif isinstance(k, GroupMetadataKey):
            if value is None:
                self._drop_group(k.group)
            else:
                self._drop_group(k.group)
                self._groups[k.group] = self._group_from_record(k.group, decode_group_metadata_value(value))

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT control batch of this partition's log (start-up)."""
        self.offsets.complete_transaction(producer_id, commit)

    def complete_transaction(self, producer_id: int, commit: bool, now_ms: int) -> Step:
        """The producer's COMMIT/ABORT marker was just written to this partition (Kafka's
        scheduleHandleTxnCompletion): its pending offsets become visible or are discarded."""
        step = Step()
        if not (self._unloaded or self.loading):
            self._advance(now_ms, step)
        self.offsets.complete_transaction(producer_id, commit)
        return step

    @property
    def unloaded(self) -> bool:
        return self._unloaded

    def load_complete(self, now_ms: int) -> Step:
        """End of loading: start member session timers and the offset-expiry timer; rebalance groups
        larger than group.max.size (Kafka's onLoaded). A coordinator that was never put in loading
        mode does this by itself at its first ``handle``/``tick``."""
        self.loading = False
        step = Step()
        self._advance(now_ms, step)
        return step

    def unload(self) -> Step:
        """Resign this partition (Kafka's onGroupUnloaded): parked requests get NOT_COORDINATOR and
        all state is dropped; later requests answer NOT_COORDINATOR."""
        step = Step()
        for group in self._groups.values():
            for member in group.members.values():
                if member.join_waiter is not None:
                    self._complete_join(group, member, JoinGroupResult(NOT_COORDINATOR, member.member_id), step)
                if member.sync_waiter is not None:
                    self._complete_sync(member, SyncGroupResult(NOT_COORDINATOR), step)
            group.state = GroupState.DEAD
        self._groups.clear()
        self._consumer_groups.clear()
        self.offsets = OffsetStore()
        self._timers.clear()
        self._deferred.clear()
        self._heap.clear()
        self._unloaded = True
        return step

    def group(self, group_id: str) -> ClassicGroup | None:
        """The live group (read-only by convention), for the shell's introspection and tests."""
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self._groups)

    def has_group(self, group_id: str) -> bool:
        """A classic or consumer group of that id exists (share groups may not take the id)."""
        return group_id in self._groups or group_id in self._consumer_groups

    # ------------------------------------------------------------------ timers

    def _on_loaded(self, step: Step) -> None:
        """The clock starts: sessions of replayed members run from now; the expiry check begins."""
        self._schedule(("expire-offsets",), self.config.offsets_retention_check_interval_ms,
                       self._expire_offsets)
        self._cg_on_loaded()
        for group in list(self._groups.values()):
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
            if len(group.members) > self.config.group_max_size:
                self._prepare_rebalance(group, step)

    # ------------------------------------------------------------------ helpers

    def unavailable(self, request: Any, error: int | None = None) -> Any:
        """The answer while loading (COORDINATOR_LOAD_IN_PROGRESS, with Kafka's per-API twists)
        or after ``unload`` (NOT_COORDINATOR); ``error`` overrides it (a cluster's shell answers a
        write that did not replicate with COORDINATOR_NOT_AVAILABLE, as Kafka does)."""
        err = error if error is not None else NOT_COORDINATOR if self._unloaded else COORDINATOR_LOAD_IN_PROGRESS
        if isinstance(request, JoinGroup):
            return JoinGroupResult(err, request.member_id)
        if isinstance(request, SyncGroup):
            # Kafka: the rebalance state is lost, so tell the member to rejoin (older clients do
            # not expect COORDINATOR_LOAD_IN_PROGRESS here).
            return SyncGroupResult(REBALANCE_IN_PROGRESS if err == COORDINATOR_LOAD_IN_PROGRESS else err)
        if isinstance(request, Heartbeat):
            return HeartbeatResult(NONE if err == COORDINATOR_LOAD_IN_PROGRESS else err)
        if isinstance(request, LeaveGroup):
            return LeaveGroupResult(err)
        if isinstance(request, OffsetCommit):
            return OffsetCommitResult(errors_for_all(request.topics, err))
        if isinstance(request, TxnOffsetCommit):
            return TxnOffsetCommitResult(errors_for_all(request.topics, err))
        if isinstance(request, OffsetFetch):
            return OffsetFetchResult([OffsetFetchGroupResult(g.group_id, err) for g in request.groups])
        if isinstance(request, OffsetDelete):
            return OffsetDeleteResult(err)
        if isinstance(request, DescribeGroups):
            return DescribeGroupsResult([DescribedGroup(g or "", err) for g in request.groups])
        if isinstance(request, ListGroups):
            return ListGroupsResult(err)
        if isinstance(request, DeleteGroups):
            return DeleteGroupsResult([DeletableGroupResult(g, err) for g in request.groups])
        if isinstance(request, TopicsDeleted):
            return TopicsDeletedResult(err)
        if isinstance(request, ConsumerGroupHeartbeat):
            return ConsumerGroupHeartbeatResult(err)
        if isinstance(request, ConsumerGroupDescribe):
            return ConsumerGroupDescribeResult([DescribedConsumerGroup(g, err) for g in request.groups])
        if isinstance(request, GroupRecords):
            return err
        raise TypeError(type(request).__name__)

    # ================================================================== OffsetCommit

    def _validate_offset_commit(self, group: ClassicGroup, req: OffsetCommit) -> int:
        if group.state == GroupState.DEAD:
            return COORDINATOR_NOT_AVAILABLE
        if req.generation_id < 0 and group.state == GroupState.EMPTY:
            return NONE     # admin client or a consumer that assign()s: allowed while nobody is a member
        if req.generation_id >= 0 or req.member_id != UNKNOWN_MEMBER_ID or req.group_instance_id is not None:
            err = group.validate_member(req.member_id, req.group_instance_id)
            if err != NONE:
                return err
            if req.generation_id != group.generation_id:
                return ILLEGAL_GENERATION
        elif group.state != GroupState.EMPTY:
            return UNKNOWN_MEMBER          # only members commit for a group that has members
        if group.state == GroupState.COMPLETING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        return NONE

    def _handle_offset_commit(self, req: OffsetCommit, step: Step) -> None:
        def answer(topics: list[TopicPartitionErrors]) -> None:
            step.complete(req.token, OffsetCommitResult(topics))

        if req.group_id is None:
            return answer(errors_for_all(req.topics, INVALID_GROUP_ID))
        if not self._owns(req.group_id):
            return answer(errors_for_all(req.topics, NOT_COORDINATOR))
        cgroup = self._consumer_groups.get(req.group_id)
        if cgroup is not None:
            err = self._cg_validate_offset_commit(cgroup, req.member_id, req.generation_id, False,
                                                  req.group_instance_id)
            member = cgroup.members.get(req.member_id)
            if err == NONE and req.generation_id >= 0 and req.api_version < 9 and (
                    member is None or member.classic is None):
                err = UNSUPPORTED_VERSION   # Kafka: members of the consumer protocol commit with v9+
            if err != NONE:
                return answer(errors_for_all(req.topics, err))
            results, records = self.offsets.commit(
                req.group_id, req.topics, self._now_ms(), retention_time_ms=DEFAULT_RETENTION_TIME,
                metadata_max_bytes=self.config.offset_metadata_max_bytes)
            step.records.extend(records)
            return answer(results)
        group = self._groups.get(req.group_id)
        if group is None:
            if req.generation_id < 0:
                group = ClassicGroup(req.group_id, GroupState.EMPTY, self._now)
                self._groups[req.group_id] = group
            else:
                # v9+ say the group is unknown; older versions kept ILLEGAL_GENERATION.
                return answer(errors_for_all(req.topics, GROUP_ID_NOT_FOUND if req.api_version >= 9
                                             else ILLEGAL_GENERATION))
        err = self._validate_offset_commit(group, req)
        if err != NONE:
            return answer(errors_for_all(req.topics, err))
        if group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            self._reschedule_heartbeat(group, group.members[req.member_id])   # a commit proves liveness
        results, records = self.offsets.commit(
            req.group_id, req.topics, self._now_ms(),
            retention_time_ms=req.retention_time_ms if 2 <= req.api_version <= 4 else DEFAULT_RETENTION_TIME,
            metadata_max_bytes=self.config.offset_metadata_max_bytes)
        step.records.extend(records)
        answer(results)

    # ================================================================== TxnOffsetCommit

    def _handle_txn_offset_commit(self, req: TxnOffsetCommit, step: Step) -> None:
        """Kafka's handleTxnCommitOffsets: members are validated when they identify themselves
        (generation, member id or instance id, v3+); anyone may commit for an Empty or unknown
        group (which is created); the offsets stay pending until the transaction ends."""
        def answer(topics: list[TopicPartitionErrors]) -> None:
            step.complete(req.token, TxnOffsetCommitResult(topics))

        if not req.group_id:
            return answer(errors_for_all(req.topics, INVALID_GROUP_ID))
        if not self._owns(req.group_id):
            return answer(errors_for_all(req.topics, NOT_COORDINATOR))
        cgroup = self._consumer_groups.get(req.group_id)
        group = self._groups.get(req.group_id)
        if cgroup is not None:
            err = self._cg_validate_offset_commit(cgroup, req.member_id, req.generation_id, True,
                                                  req.group_instance_id)
            if err == STALE_MEMBER_EPOCH:
                err = ILLEGAL_GENERATION    # Kafka: TxnOffsetCommit reports a stale epoch as ILLEGAL_GENERATION
            if err != NONE:
                return answer(errors_for_all(req.topics, err))
        elif group is None:
            group = ClassicGroup(req.group_id, GroupState.EMPTY, self._now)
            self._groups[req.group_id] = group
        if group is not None and group.state == GroupState.DEAD:
            return answer(errors_for_all(req.topics, COORDINATOR_NOT_AVAILABLE))
        if group is not None and (req.generation_id >= 0 or req.member_id != UNKNOWN_MEMBER_ID
                                  or req.group_instance_id is not None):
            err = group.validate_member(req.member_id, req.group_instance_id)
            if err == NONE and req.generation_id != group.generation_id:
                err = ILLEGAL_GENERATION
            if err != NONE:
                return answer(errors_for_all(req.topics, err))
        results, records = self.offsets.txn_commit(req.group_id, req.producer_id, req.topics, self._now_ms(),
                                                   metadata_max_bytes=self.config.offset_metadata_max_bytes)
        if records:
            step.txn_records.append(TxnRecords(req.producer_id, req.producer_epoch, tuple(records)))
        answer(results)

    # ================================================================== OffsetFetch

    def _handle_offset_fetch(self, req: OffsetFetch, step: Step) -> None:
        out: list[OffsetFetchGroupResult] = []
        for g in req.groups:
            if g.group_id is None:
                out.append(OffsetFetchGroupResult(g.group_id, INVALID_GROUP_ID))
            elif not self._owns(g.group_id):
                out.append(OffsetFetchGroupResult(g.group_id, NOT_COORDINATOR))
            elif g.group_id in self._consumer_groups:
                err = self._cg_validate_offset_fetch(self._consumer_groups[g.group_id], g.member_id, g.member_epoch)
                out.append(OffsetFetchGroupResult(g.group_id, err) if err != NONE else OffsetFetchGroupResult(
                    g.group_id, NONE, self.offsets.fetch(g.group_id, g.topics, True, req.require_stable)))
            else:
                group = self._groups.get(g.group_id)
                exists = group is not None and group.state != GroupState.DEAD
                # Kafka answers offsets regardless of membership (assign() users commit too); an
                # unknown group has no offsets: -1 per requested partition, nothing for "all".
                out.append(OffsetFetchGroupResult(g.group_id, NONE,
                                                  self.offsets.fetch(g.group_id, g.topics, exists,
                                                                     req.require_stable)))
        step.complete(req.token, OffsetFetchResult(out))

    # ================================================================== OffsetDelete

    def _handle_offset_delete(self, req: OffsetDelete, step: Step) -> None:
        def answer(result: OffsetDeleteResult) -> None:
            step.complete(req.token, result)

        if req.group_id is None:
            return answer(OffsetDeleteResult(INVALID_GROUP_ID))
        if not self._owns(req.group_id):
            return answer(OffsetDeleteResult(NOT_COORDINATOR))
        cgroup = self._consumer_groups.get(req.group_id)
        if cgroup is not None:
            subscribed = {n for n in cgroup.subscription_metadata} if cgroup.members else set()
            results, records = self.offsets.delete(req.group_id, req.topics, lambda t: t in subscribed)
            step.records.extend(records)
            return answer(OffsetDeleteResult(NONE, results))
        group = self._groups.get(req.group_id)
        if group is None or group.state == GroupState.DEAD:
            return answer(OffsetDeleteResult(GROUP_ID_NOT_FOUND))
        if group.state != GroupState.EMPTY and not group.uses_consumer_protocol:
            return answer(OffsetDeleteResult(NON_EMPTY_GROUP))
        results, records = self.offsets.delete(req.group_id, req.topics, group.is_subscribed_to_topic)
        step.records.extend(records)
        answer(OffsetDeleteResult(NONE, results))

    # ================================================================== DescribeGroups / ListGroups

    def _handle_describe(self, req: DescribeGroups, step: Step) -> None:
        out: list[DescribedGroup] = []
        for gid in req.groups:
            if gid is None:
                out.append(DescribedGroup("", INVALID_GROUP_ID))
                continue
            if not self._owns(gid):
                out.append(DescribedGroup(gid, NOT_COORDINATOR))
                continue
            cgroup = self._consumer_groups.get(gid)
            if cgroup is not None:
                out.append(self._cg_describe_classic(cgroup))
                continue
            group = self._groups.get(gid)
            if group is None or group.state == GroupState.DEAD:
                if req.api_version >= 6:
                    out.append(DescribedGroup(group_id=gid, error_code=GROUP_ID_NOT_FOUND,
                                              error_message=f"Group {gid} not found.",
                                              group_state=GroupState.DEAD.value))
                else:
                    out.append(DescribedGroup(group_id=gid, error_code=NONE, error_message=None,
                                              group_state=GroupState.DEAD.value))
                continue
            if group.state == GroupState.STABLE:
                members = [DescribedMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                           client_id=m.client_id, client_host=m.client_host,
                                           member_metadata=m.metadata(group.protocol_name),
                                           member_assignment=m.assignment)
                           for m in group.members.values()]
                out.append(DescribedGroup(group_id=gid, error_code=NONE, error_message=None,
                                          group_state=group.state.value,
                                          protocol_type=group.protocol_type or "",
                                          protocol_data=group.protocol_name or "", members=members))
            else:
                # Outside Stable the metadata/assignment are in flux: Kafka describes members only.
                members = [DescribedMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                           client_id=m.client_id, client_host=m.client_host,
                                           member_metadata=b"", member_assignment=b"")
                           for m in group.members.values()]
                out.append(DescribedGroup(group_id=gid, error_code=NONE, error_message=None,
                                          group_state=group.state.value,
                                          protocol_type=group.protocol_type or "", protocol_data="",
                                          members=members))
        step.complete(req.token, DescribeGroupsResult(out))

    def _handle_list(self, req: ListGroups, step: Step) -> None:
        states = {s.strip().lower() for s in req.states_filter}
        types = {t.strip().lower() for t in req.types_filter}
        groups = [ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
                  for g in self._groups.values()
                  if (not states or g.state.value.lower() in states) and (not types or "classic" in types)]
        groups += [ListedGroup(group_id=g.group_id, protocol_type=CONSUMER_PROTOCOL_TYPE, group_state=g.state,
                               group_type=GROUP_TYPE)
                   for g in self._consumer_groups.values()
                   if (not states or g.state.lower() in states) and (not types or GROUP_TYPE in types)]
        step.complete(req.token, ListGroupsResult(NONE, groups))

    # ================================================================== DeleteGroups

    def _handle_delete_groups(self, req: DeleteGroups, step: Step) -> None:
        out: list[DeletableGroupResult] = []
        for gid in req.groups:
            if gid is None:
                out.append(DeletableGroupResult(gid, INVALID_GROUP_ID))
                continue
            if not self._owns(gid):
                out.append(DeletableGroupResult(gid, NOT_COORDINATOR))
                continue
            cgroup = self._consumer_groups.get(gid)
            if cgroup is not None:
                if cgroup.members:
                    out.append(DeletableGroupResult(gid, NON_EMPTY_GROUP))
                else:
                    step.records.extend(self.offsets.delete_all(gid))
                    self._cg_delete(cgroup, step.records)
                    out.append(DeletableGroupResult(gid, NONE))
                continue
            group = self._groups.get(gid)
            if group is None or group.state == GroupState.DEAD:
                out.append(DeletableGroupResult(gid, GROUP_ID_NOT_FOUND))
            elif group.state != GroupState.EMPTY:
                out.append(DeletableGroupResult(gid, NON_EMPTY_GROUP))
            else:
                step.records.extend(self.offsets.delete_all(gid))
                step.records.append(group_metadata_record(gid, None))
                group.transition_to(GroupState.DEAD, self._now_ms())
                self._drop_group(gid)
                out.append(DeletableGroupResult(gid, NONE))
        step.complete(req.token, DeleteGroupsResult(out))

    # ================================================================== share groups

    def _handle_group_records(self, req: GroupRecords, step: Step) -> None:
        """See GroupRecords: appended and answered once committed, as this partition's own writes."""
        if not self._owns(req.group_id):
            return step.complete(req.token, NOT_COORDINATOR)
        step.records.extend(req.records)
        step.complete(req.token, NONE)

    # ================================================================== deleted topics

    def _handle_topics_deleted(self, req: TopicsDeleted, step: Step) -> None:
        records = self.offsets.delete_topics(set(req.topics))
        step.records.extend(records)
        step.complete(req.token, TopicsDeletedResult(NONE, len(records)))

    # ================================================================== offset expiry

    def _expire_offsets(self, step: Step) -> None:
        """Kafka's periodic cleanupGroupMetadata: expire offsets, then delete Empty groups that
        have none left."""
        now = self._now_ms()
        retention = self.config.offsets_retention_ms
        for gid in list(self._groups):
            group = self._groups[gid]
            if self.offsets.has_offsets(gid):
                base = group.offset_expiration_base()
                if base is None:
                    continue
                records, all_expired = self.offsets.expire(gid, base, group.is_subscribed_to_topic, now, retention)
                step.records.extend(records)
            else:
                all_expired = True
            if all_expired and group.state == GroupState.EMPTY and not self.offsets.has_pending(gid):
                step.records.append(group_metadata_record(gid, None))
                group.transition_to(GroupState.DEAD, now)
                self._drop_group(gid)
        for gid in list(self._consumer_groups):
            # Kafka's ConsumerGroup: retention counts from each commit; offsets of subscribed
            # topics stay while the group has members; an empty group without offsets goes.
            cgroup = self._consumer_groups[gid]
            subscribed = set(cgroup.subscription_metadata)
            for m in cgroup.members.values():
                subscribed.update(m.subscribed_topic_names)
            if self.offsets.has_offsets(gid):
                records, all_expired = self.offsets.expire(gid, lambda oam: oam.commit_timestamp_ms,
                                                           subscribed.__contains__, now, retention)
                step.records.extend(records)
            else:
                all_expired = True
            if all_expired and not cgroup.members and not self.offsets.has_pending(gid):
                self._cg_delete(cgroup, step.records)
        self._schedule(("expire-offsets",), self.config.offsets_retention_check_interval_ms, self._expire_offsets)

    # ================================================================== both protocols

    def _consumer_group_answers_classic(self, request: Any, step: Step) -> bool:
        """A classic request (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) naming a consumer group:
        a JoinGroup to an empty one turns it back into a classic group (Kafka's
        maybeDeleteEmptyConsumerGroup) and proceeds as classic; otherwise the member is a classic
        member of the consumer group (coordinator.consumer_group_classic)."""
        if not isinstance(request, (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)):
            return False
        cgroup = self._consumer_groups.get(request.group_id or "")
        if cgroup is None:
            return False
        if isinstance(request, JoinGroup):
            cfg = self.config
            if not cfg.group_min_session_timeout_ms <= request.session_timeout_ms <= cfg.group_max_session_timeout_ms:
                return False        # Kafka checks this first: the classic handler answers INVALID_SESSION_TIMEOUT
            if not cgroup.members:
                self._cg_delete(cgroup, step.records)
                return False
            self._cg_classic_join(cgroup, request, step)
        elif isinstance(request, SyncGroup):
            self._cg_classic_sync(cgroup, request, step)
        elif isinstance(request, Heartbeat):
            self._cg_classic_heartbeat(cgroup, request, step)
        else:
            self._cg_classic_leave(cgroup, request, step)
        return True

    def _cg_describe_classic(self, group: ConsumerGroup) -> DescribedGroup:
        """DescribeGroups of a consumer group (Kafka's ConsumerGroup.asDescribedGroup): protocol type
        "consumer", the assignor as protocol, members' subscriptions and assignments in the
        classic ConsumerProtocol encodings."""
        from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
        by_id = {tid: name for name, (tid, _) in group.subscription_metadata.items()}
        members = []
        for m in group.members.values():
            sub = ConsumerProtocolSubscription(version=0, topics=sorted(m.subscribed_topic_names),
                                               user_data=None).encode(version=0)
            parts = [ConsumerProtocolAssignment.TopicPartition(topic=by_id[tid], partitions=sorted(ps))
                     for tid, ps in sorted(m.assigned.items(), key=lambda x: by_id.get(x[0], ""))
                     if tid in by_id]
            assignment = ConsumerProtocolAssignment(version=0, assigned_partitions=parts,
                                                    user_data=None).encode(version=0)
            members.append(DescribedMember(member_id=m.member_id, group_instance_id=m.instance_id,
                                           client_id=m.client_id, client_host=m.client_host,
                                           member_metadata=bytes(sub), member_assignment=bytes(assignment)))
        return DescribedGroup(group_id=group.group_id, error_code=NONE, error_message=None,
                              group_state=group.state, protocol_type=CONSUMER_PROTOCOL_TYPE,
                              protocol_data=group.preferred_assignor(self.config.consumer_group_assignors[0]),
                              members=members)

    _HANDLERS: dict[type, Callable[[GroupCoordinator, Any, Step], None]] = {
        JoinGroup: ClassicGroupHandlers._handle_join,
        SyncGroup: ClassicGroupHandlers._handle_sync,
        Heartbeat: ClassicGroupHandlers._handle_heartbeat,
        LeaveGroup: ClassicGroupHandlers._handle_leave,
        OffsetCommit: _handle_offset_commit,
        TxnOffsetCommit: _handle_txn_offset_commit,
        OffsetFetch: _handle_offset_fetch,
        OffsetDelete: _handle_offset_delete,
        DescribeGroups: _handle_describe,
        ListGroups: _handle_list,
        DeleteGroups: _handle_delete_groups,
        TopicsDeleted: _handle_topics_deleted,
        ConsumerGroupHeartbeat: ConsumerGroupHandlers._handle_cg_heartbeat,
        ConsumerGroupDescribe: ConsumerGroupHandlers._handle_cg_describe,
        GroupRecords: _handle_group_records,
    }



def _implements_coordinator(coordinator: GroupCoordinator) -> Coordinator:
    """Never called: mypy checks here that GroupCoordinator implements the Coordinator protocol."""
    return coordinator
