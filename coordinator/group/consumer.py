"""Kafka 4's consumer group protocol (KIP-848) as part of the pure group coordinator: the
ConsumerGroupHeartbeat and ConsumerGroupDescribe handlers, mixed into
``coordinator.group.GroupCoordinator`` beside the classic protocol.

The broker computes the assignment. Each group has a *group epoch* (bumped whenever membership,
a subscription or the subscribed topics' metadata change), a *target assignment* computed by the
server-side assignor (``uniform`` or ``range``) for the latest group epoch (its *assignment
epoch*), and per member a *member epoch* and a current assignment that is reconciled towards
the target one heartbeat at a time, as Kafka's CurrentAssignmentBuilder does: a member first
gives up (revokes) what it must lose, keeping its epoch (UNREVOKED_PARTITIONS), and moves to the
target epoch once its heartbeat no longer reports them; a partition goes to its new owner only
once no other member holds it (else the new owner waits in UNRELEASED_PARTITIONS). Each heartbeat
answer carries the member's next assignment when it changed (or on a full request).

Rules and error codes follow Kafka's GroupMetadataManager (4.0). The shell passes the broker's
current topics (name -> (id, partition count)) with every heartbeat; a difference from the
group's subscription metadata (created, deleted, grown topics) bumps the group epoch at once
(Kafka refreshes it on ``group.consumer.metadata.refresh.interval.ms``, i.e. on the next heartbeat
after a change too). Regex subscriptions use RE2 (google-re2), the syntax Kafka's RE2/J accepts,
matched against the whole topic name; internal topics never match.

Regular expressions are resolved as Kafka 4.0's GroupMetadataManager resolves them: not within
the heartbeat but as a deferred step (Kafka's executor task ``refreshRegularExpressions``, here a
timer due at once that the runtime fires with ``tick``, on the topics the scheduling heartbeat
saw), whose result (``handleRegularExpressionsResult``) writes a ConsumerGroupRegularExpression
record per regex and bumps the group epoch when the topics changed. So a member subscribing to
a regex and a literal topic first gets the literal topic's partitions, and the matched topics on
a heartbeat after the resolution. ``maybeUpdateRegularExpressions``' conditions decide when a
heartbeat schedules a resolution: the group has regexes, none is being resolved, the last one is
older than REGEX_BATCH_REFRESH_INTERVAL_MS (10 s), and a regex is unresolved or a topic appeared
since. A regex its last member drops is tombstoned.

Offsets expire by commit time except for subscribed topics (see _expire_offsets in coordinator.group).

Classic-protocol members inside consumer groups and the online conversions between the group
types live in coordinator.group.consumer_classic. Not supported (documented in the README):
client-side assignors (KIP-848's ``ConsumerGroupPrepareAssignment``, dropped by Kafka).
"""
from __future__ import annotations

from protocol.errors import ErrorCode
import functools
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any


from coordinator.step import Record, Step
from coordinator.group import consumer_records as rec
from coordinator.group.assignors import ASSIGNORS, PartitionRacks, assign
from coordinator.group.group_config import ConsumerGroupSettings, consumer_settings
from coordinator.group.common import (COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED, ILLEGAL_GENERATION, INVALID_GROUP_ID, NONE, NOT_COORDINATOR, UNKNOWN_MEMBER, GroupCoordinatorBase, GroupCoordinatorConfig, _Request)

if TYPE_CHECKING:
    from coordinator.group.classic import ClassicGroup

Assignment = dict[uuid.UUID, frozenset[int]]
TopicsView = Mapping[str, tuple[uuid.UUID, int]]

INVALID_REQUEST: int = ErrorCode.INVALID_REQUEST
FENCED_MEMBER_EPOCH: int = ErrorCode.FENCED_MEMBER_EPOCH
UNRELEASED_INSTANCE_ID: int = ErrorCode.UNRELEASED_INSTANCE_ID
UNSUPPORTED_ASSIGNOR: int = ErrorCode.UNSUPPORTED_ASSIGNOR
STALE_MEMBER_EPOCH: int = ErrorCode.STALE_MEMBER_EPOCH
FENCED_INSTANCE_ID: int = ErrorCode.FENCED_INSTANCE_ID
INVALID_REGULAR_EXPRESSION = 128

# Kafka 4.0's GroupMetadataManager.REGEX_BATCH_REFRESH_INTERVAL_MS: the least time between two
# resolutions of a group's regular expressions.
REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

# Kafka's MemberState bytes (as stored in ConsumerGroupCurrentMemberAssignmentValue.State).
STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS = 0, 1, 2

GROUP_TYPE = "consumer"


# =========================================================================== requests / results

@dataclass(kw_only=True, slots=True)
class ConsumerGroupHeartbeat(_Request):
    """ConsumerGroupHeartbeat v0-1. ``topics`` is the broker's view of its (non-internal) topics
    when the request arrived; ``topic_partitions`` the partitions the member owns."""
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: list[tuple[uuid.UUID, list[int]]] | None = None
    topics: TopicsView = field(default_factory=dict)
    partition_racks: PartitionRacks = field(default_factory=dict)


@dataclass(slots=True)
class ConsumerGroupHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(kw_only=True, slots=True)
class ConsumerGroupDescribe(_Request):
    groups: list[str]


@dataclass(slots=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment
    member_type: int = 1        # KIP-1099: 0 a classic-protocol member, 1 a consumer-protocol one


@dataclass(slots=True)
class DescribedConsumerGroup:
    group_id: str
    error_code: int = NONE
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedConsumerMember] = field(default_factory=list)


@dataclass(slots=True)
class ConsumerGroupDescribeResult:
    groups: list[DescribedConsumerGroup]


class HeartbeatError(Exception):
    """An error answer (Kafka's ApiException thrown by the heartbeat path): nothing is written."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# =========================================================================== model

@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member of the classic protocol inside a consumer group joined with (Kafka's
    ConsumerGroupMemberMetadataValue.ClassicMemberMetadata): its session timeout and its
    JoinGroup protocols (name, ConsumerProtocolSubscription bytes) in the client's order."""
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(eq=False, slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None     # set for a member of the classic protocol

    def subscription(self) -> tuple[Any, ...]:
        return (self.subscribed_topic_names, self.subscribed_topic_regex, self.server_assignor)

    def metadata(self) -> tuple[Any, ...]:
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscription(),
                self.rebalance_timeout_ms, self.classic)

    def current(self) -> tuple[Any, ...]:
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned,
                self.pending_revocation)


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """Kafka's ResolvedRegularExpression: the topics a regex matched, when (``timestamp_ms``) and
    on which topics (``version``: Samsa writes how many topics the resolution scanned; which
    topics are new since is kept in memory, ConsumerGroup.regex_topics_seen)."""
    topics: frozenset[str]
    version: int
    timestamp_ms: int


class ConsumerGroup:
    """One consumer group's state (Kafka's ConsumerGroup); mutated only by the coordinator."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, tuple[uuid.UUID, int]] = {}
        # replica racks of the subscribed topics' partitions (rack-aware assignment), when known
        self.partition_racks: dict[uuid.UUID, tuple[frozenset[str], ...]] = {}
        self.owners: dict[tuple[uuid.UUID, int], str] = {}
        self.resolved_regexes: dict[str, ResolvedRegularExpression] = {}
        # the topic names the last resolution scanned (None: unknown, e.g. after loading), to
        # tell whether a topic appeared since (Kafka's lastMetadataImageWithNewTopics)
        self.regex_topics_seen: frozenset[str] | None = None

    def subscribed_regexes(self) -> dict[str, int]:
        """Regex -> how many members subscribe to it."""
        out: dict[str, int] = {}
        for m in self.members.values():
            if m.subscribed_topic_regex:
                out[m.subscribed_topic_regex] = out.get(m.subscribed_topic_regex, 0) + 1
        return out

    def last_regex_refresh_ms(self) -> int | None:
        """When the regexes were last resolved (they are resolved together), None if never."""
        return max((r.timestamp_ms for r in self.resolved_regexes.values()), default=None)

    def member_subscribes(self, member: ConsumerGroupMember, topic: str) -> bool:
        """The member's subscription covers ``topic``: by name, or by its regex as last resolved."""
        if topic in member.subscribed_topic_names:
            return True
        regex = member.subscribed_topic_regex
        resolved = self.resolved_regexes.get(regex) if regex else None
        return resolved is not None and topic in resolved.topics

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState names."""
        if not self.members:
            return "Empty"
        if self.group_epoch != self.assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if m.state != STABLE or m.member_epoch != self.assignment_epoch:
                return "Reconciling"
        return "Stable"

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def set_current(self, member: ConsumerGroupMember) -> None:
        """Re-index which member holds which partition (assigned or pending revocation)."""
        for tp in [tp for tp, mid in self.owners.items() if mid == member.member_id]:
            del self.owners[tp]
        if member.member_id in self.members:
            for a in (member.assigned, member.pending_revocation):
                for tid, ps in a.items():
                    for p in ps:
                        self.owners[(tid, p)] = member.member_id

    def remove(self, member_id: str) -> None:
        self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        for tp in [tp for tp, mid in self.owners.items() if mid == member_id]:
            del self.owners[tp]

    def preferred_assignor(self, default: str) -> str:
        """Kafka: the assignor most members asked for, else the broker's first."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        return max(votes, key=lambda a: (votes[a], a == default))


@functools.lru_cache(maxsize=8)
def _broker_props(config: GroupCoordinatorConfig) -> dict[str, object]:
    """The coordinator's settings under their Kafka names, as group_config.py reads defaults and bounds."""
    return {name: getattr(config, attr) for name, attr in GroupCoordinatorConfig._KAFKA_NAMES.items()}


def compile_regex(pattern: str) -> Any:
    """An RE2 pattern (Kafka validates with RE2/J); raises HeartbeatError on a bad one."""
    import re2
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except Exception as e:      # re2.error
        raise HeartbeatError(INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{pattern}` is not a valid "
                             f"regular expression: {e}.") from None


def _full_match(pattern: str, name: str, cache: dict[str, Any]) -> bool:
    compiled = cache.get(pattern)
    if compiled is None:
        compiled = compile_regex(pattern)
        if len(cache) >= 1024:
            cache.clear()
        cache[pattern] = compiled
    return compiled.fullmatch(name) is not None


def _racks_of(subscription: Mapping[str, tuple[uuid.UUID, int]], partition_racks: PartitionRacks | None
              ) -> dict[uuid.UUID, tuple[frozenset[str], ...]]:
    """The replica racks of the subscribed topics' partitions (topics without racks left out)."""
    if not partition_racks:
        return {}
    out = {}
    for tid, n in subscription.values():
        pr = partition_racks.get(tid)
        if pr and any(pr):
            out[tid] = tuple(frozenset(pr[p]) if p < len(pr) else frozenset() for p in range(n))
    return out


def _same(a: Assignment, b: Assignment) -> bool:
    return {k: v for k, v in a.items() if v} == {k: v for k, v in b.items() if v}


# =========================================================================== handlers

class ConsumerGroupHandlers(GroupCoordinatorBase):
    """The consumer protocol's part of the coordinator (its state: ``GroupCoordinatorBase``)."""

    # ------------------------------------------------------------------ hooks (coordinator.group.consumer_classic)

    def _cg_upgrade(self, classic: ClassicGroup, topics: TopicsView, step: Step) -> ConsumerGroup:
        """Convert a classic group into a consumer group (a consumer-protocol member joined it)."""
        raise NotImplementedError

    def _cg_fence(self, group: ConsumerGroup, member_id: str, records: list[Record],
                  topics: TopicsView | None = None, step: Step | None = None,
                  partition_racks: PartitionRacks | None = None) -> None:
        """Remove a member (left, fenced or expired), converting the group back when only classic
        members remain."""
        raise NotImplementedError

    # ------------------------------------------------------------------ heartbeat

    def _handle_cg_heartbeat(self, req: ConsumerGroupHeartbeat, step: Step) -> None:
        try:
            result = self._cg_heartbeat(req, step)
        except HeartbeatError as e:
            result = ConsumerGroupHeartbeatResult(e.code, e.message)
        step.complete(req.token, result)

    def _validate_cg_heartbeat(self, req: ConsumerGroupHeartbeat) -> None:
        def bad(msg: str) -> HeartbeatError:
            return HeartbeatError(INVALID_REQUEST, msg)
        if not req.group_id:
            raise bad("GroupId can't be empty.")
        if req.instance_id == "":
            raise bad("InstanceId can't be empty.")
        if req.rack_id == "":
            raise bad("RackId can't be empty.")
        epoch = req.member_epoch
        if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if not req.member_id:
                raise bad("MemberId can't be empty.")
        elif epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise bad("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise bad("TopicPartitions must be empty when (re-)joining.")
            if not req.subscribed_topic_names and not req.subscribed_topic_regex:
                raise bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if not req.member_id:
                raise bad("MemberId can't be empty.")
            if req.instance_id is None:
                raise bad("InstanceId can't be null.")
        else:
            raise bad("MemberEpoch is invalid.")
        assignors = self.config.consumer_group_assignors
        if req.server_assignor is not None and req.server_assignor not in assignors:
            raise HeartbeatError(UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is not supported. "
                                 f"Supported assignors: {', '.join(assignors)}.")
        if req.subscribed_topic_regex:      # "" means no regex (librdkafka sends it with topic names)
            _full_match(req.subscribed_topic_regex, "", self._regex_cache)

    def _consumer_group_for(self, group_id: str, create: bool, step: Step, topics: TopicsView) -> ConsumerGroup:
        group = self._consumer_groups.get(group_id)
        if group is not None:
            return group
        classic = self._groups.get(group_id)
        if classic is not None:
            if not create:
                raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            if classic.members:
                # Online upgrade of a group with members (policy upgrade/bidirectional).
                return self._cg_upgrade(classic, topics, step)
            # An empty classic group becomes a consumer group whatever the policy, as in Kafka
            # (maybeDeleteEmptyClassicGroup); its offsets stay.
            if classic.generation_id > 0 or classic.protocol_type:
                from coordinator.group.offsets_records import group_metadata_record
                step.records.append(group_metadata_record(group_id, None))
            self._drop_group(group_id)
        if not create:
            # Kafka 4 answers UNKNOWN_MEMBER_ID (the member rejoins with epoch 0).
            raise HeartbeatError(UNKNOWN_MEMBER, f"Consumer group {group_id} not found.")
        group = self._consumer_groups[group_id] = ConsumerGroup(group_id)
        return group

    @staticmethod
    def _cg_known_static(group: ConsumerGroup, instance_id: str, member_id: str) -> ConsumerGroupMember:
        """The static member of ``instance_id``, which must be ``member_id`` (Kafka's
        throwIfStaticMemberIsUnknown / throwIfInstanceIdIsFenced)."""
        static = group.static_member(instance_id)
        if static is None:
            raise HeartbeatError(UNKNOWN_MEMBER, f"Instance id {instance_id} is unknown.")
        if static.member_id != member_id:
            raise HeartbeatError(FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} was fenced by member {static.member_id}.")
        return static

    def _check_epoch(self, member: ConsumerGroupMember, req: ConsumerGroupHeartbeat) -> None:
        received = req.member_epoch
        if received > member.member_epoch:
            raise HeartbeatError(FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                                 f"({received}) than the one known by the group coordinator "
                                 f"({member.member_epoch}). The member must abandon all its partitions and rejoin.")
        if received < member.member_epoch:
            owned_subset = req.topic_partitions is not None and all(
                set(ps) <= member.assigned.get(tid, frozenset()) for tid, ps in req.topic_partitions)
            if received != member.previous_member_epoch or not owned_subset:
                raise HeartbeatError(FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member "
                                     f"epoch ({received}) than the one known by the group coordinator "
                                     f"({member.member_epoch}). The member must abandon all its partitions "
                                     "and rejoin.")

    def _cg_heartbeat(self, req: ConsumerGroupHeartbeat, step: Step) -> ConsumerGroupHeartbeatResult:
        self._validate_cg_heartbeat(req)
        gid = req.group_id
        if not self._owns(gid):
            raise HeartbeatError(NOT_COORDINATOR)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._cg_leave(req, step)
        joining = req.member_epoch == 0
        group = self._consumer_group_for(gid, joining, step, req.topics)
        member_id = req.member_id or self._member_id_factory()
        records: list[Record] = []
        member = group.members.get(member_id)
        replaced = False
        if req.instance_id is not None:
            static = group.static_member(req.instance_id)
            if joining:
                if static is not None and static.member_id != member_id:
                    if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise HeartbeatError(UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                             f"{req.instance_id} cannot join the group because the instance id is "
                                             f"owned by {static.member_id} member.")
                    member = self._cg_replace_static(group, static, member_id, records)
                    replaced = True
            else:
                self._cg_known_static(group, req.instance_id, member_id)
        new_member = member is None
        if member is None:
            if not joining:
                raise HeartbeatError(UNKNOWN_MEMBER, f"Member {member_id} is not a member of group {gid}.")
            if len(group.members) >= self.config.consumer_group_max_size:
                raise HeartbeatError(GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum "
                                     f"capacity of {self.config.consumer_group_max_size} members.")
            member = ConsumerGroupMember(member_id)
        elif not joining:
            self._check_epoch(member, req)
        before_assigned = member.assigned
        updated = ConsumerGroupMember(
            member_id, instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            client_id=req.client_id, client_host=req.client_host,
            subscribed_topic_names=(tuple(req.subscribed_topic_names) if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=(req.subscribed_topic_regex if req.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
            rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms,
            member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
            state=member.state, assigned=member.assigned, pending_revocation=member.pending_revocation)
        if joining and not new_member and member.member_epoch > 0 and req.member_id == member.member_id:
            # A known member rejoining with epoch 0 lost its partitions: it starts over.
            updated.member_epoch, updated.previous_member_epoch = 0, 0
            updated.state, updated.assigned, updated.pending_revocation = STABLE, {}, {}
        bump = self._cg_maybe_update_regexes(group, member, updated, req.topics, records)
        self._cg_apply_member(group, member, updated, new_member or replaced, req.topic_partitions, req.topics,
                              records, req.partition_racks, bump)
        step.records.extend(records)
        self._cg_schedule_session(group, updated)
        full = joining or (req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None
                           and req.topic_partitions is not None)
        changed = new_member or not _same(before_assigned, updated.assigned)
        return ConsumerGroupHeartbeatResult(
            error_code=NONE, error_message=None, member_id=member_id, member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self._cg_settings(gid).heartbeat_interval_ms,
            assignment=dict(updated.assigned) if (full or changed) else None)

    def _cg_apply_member(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                         fresh: bool, owned: list[tuple[uuid.UUID, list[int]]] | None, topics: TopicsView,
                         records: list[Record], partition_racks: PartitionRacks | None = None,
                         bump: bool = False) -> None:
        """Kafka's heartbeat steps 1-3, shared by both protocols' members: store the member's new
        metadata (bumping the group epoch when its subscription or the subscribed topics changed),
        recompute the target assignment for a new group epoch, then reconcile ``updated`` (which
        replaces ``member``; ``fresh`` when it is new or replaced a static member). A change of
        regex alone bumps nothing here: ``_cg_maybe_update_regexes`` decided that (``bump``)."""
        gid = group.group_id
        regex_only = bool(updated.subscribed_topic_regex) and not updated.subscribed_topic_names
        bump = bump or group.group_epoch == 0 or \
            (updated.member_id not in group.members and not regex_only) or \
            (updated.subscribed_topic_names, updated.server_assignor) != (member.subscribed_topic_names,
                                                                          member.server_assignor)
        if fresh or updated.metadata() != member.metadata():
            records.append(rec.member_metadata(gid, updated))
        group.members[updated.member_id] = updated
        subscription = self._cg_subscription_metadata(group, topics)
        # rack-blind (Kafka 4.x, the default): racks are neither kept nor a reason to rebalance
        racks = _racks_of(subscription, partition_racks) if self.config.consumer_group_rack_aware_assignment else {}
        if subscription != group.subscription_metadata or racks != group.partition_racks:
            group.subscription_metadata, group.partition_racks = subscription, racks
            records.append(rec.partition_metadata(gid, subscription, racks))
            bump = True
        if bump:
            group.group_epoch += 1
            records.append(rec.group_metadata(gid, group.group_epoch))
        if group.group_epoch > group.assignment_epoch:
            self._cg_update_target(group, records)
        before_current = member.current()
        self._cg_reconcile(group, updated, owned)
        if updated.current() != before_current or fresh:
            records.append(rec.current_member_assignment(gid, updated))
        group.set_current(updated)

    def _cg_subscription_metadata(self, group: ConsumerGroup, topics: TopicsView) -> dict[str, tuple[uuid.UUID, int]]:
        """The subscribed topics that exist: members' topic names and what their regexes resolved
        to (Kafka's computeSubscribedTopicNames: an unresolved regex adds nothing yet)."""
        names: set[str] = set()
        for m in group.members.values():
            names.update(m.subscribed_topic_names)
            if m.subscribed_topic_regex:
                resolved = group.resolved_regexes.get(m.subscribed_topic_regex)
                if resolved is not None:
                    names.update(resolved.topics)
        return {n: topics[n] for n in names if n in topics}

    def _cg_member_topics(self, group: ConsumerGroup, member: ConsumerGroupMember) -> frozenset[uuid.UUID]:
        return frozenset(tid for name, (tid, _) in group.subscription_metadata.items()
                         if group.member_subscribes(member, name))

    # ------------------------------------------------------------------ regular expressions

    def _cg_maybe_update_regexes(self, group: ConsumerGroup, member: ConsumerGroupMember,
                                 updated: ConsumerGroupMember, topics: TopicsView, records: list[Record]) -> bool:
        """Kafka's maybeUpdateRegularExpressions: tombstone a regex the member was the last to use,
        schedule a resolution when one is due; True when the group epoch must be bumped (the
        member took up a regex another member's resolution already covers)."""
        gid = group.group_id
        old = member.subscribed_topic_regex or None if member.member_id in group.members else None
        new = updated.subscribed_topic_regex or None
        counts = group.subscribed_regexes()
        bump = require = False
        if old != new:
            if old and counts.get(old, 0) == 1:
                records.append(rec.regular_expression(gid, old, None))
                group.resolved_regexes.pop(old, None)
            if new:
                if counts.get(new, 0) == 0:
                    require = True      # validated in _validate_cg_heartbeat
                else:
                    bump = new in group.resolved_regexes
        if not require and not counts:
            return bump
        key = ("cg-regex", gid)
        if key in self._timers:                     # a resolution is already on its way
            return bump
        last = group.last_regex_refresh_ms()
        if last is not None and self._now_ms() <= last + REGEX_BATCH_REFRESH_INTERVAL_MS:
            return bump
        after = dict(counts)
        if old:
            after[old] -= 1
        if new:
            after[new] = after.get(new, 0) + 1
        after = {r: n for r, n in after.items() if n > 0}
        require = require or len(after) != len(group.resolved_regexes)
        seen = group.regex_topics_seen
        require = require or seen is None or any(name not in seen for name in topics)
        if require and after:
            regexes, snapshot = frozenset(after), dict(topics)
            self._defer(key, lambda step: self._cg_resolve_regexes(gid, regexes, snapshot, step))
        return bump

    def _cg_resolve_regexes(self, group_id: str, regexes: frozenset[str], topics: TopicsView, step: Step) -> None:
        """Kafka's refreshRegularExpressions then handleRegularExpressionsResult, as one deferred
        step: each regex still subscribed gets a ConsumerGroupRegularExpression record; the group
        epoch is bumped when what a regex matches (or the subscription metadata) changed, so the
        members' next heartbeats get the new target assignment."""
        group = self._consumer_groups.get(group_id)
        if group is None:
            return
        now = self._now_ms()
        counts = group.subscribed_regexes()
        bump = False
        for regex in sorted(regexes):
            if counts.get(regex, 0) == 0:
                continue
            matched = frozenset(n for n in topics if _full_match(regex, n, self._regex_cache))
            before = group.resolved_regexes.get(regex)
            if before is None or before.topics != matched:
                bump = True
            group.resolved_regexes[regex] = ResolvedRegularExpression(matched, len(topics), now)
            step.records.append(rec.regular_expression(group_id, regex, matched, len(topics), now))
        group.regex_topics_seen = frozenset(topics)
        subscription = self._cg_subscription_metadata(group, topics)
        if subscription != group.subscription_metadata:
            racks = _racks_of(subscription, group.partition_racks) if \
                self.config.consumer_group_rack_aware_assignment else {}
            group.subscription_metadata, group.partition_racks = subscription, racks
            step.records.append(rec.partition_metadata(group_id, subscription, racks))
            bump = True
        if bump:
            group.group_epoch += 1
            step.records.append(rec.group_metadata(group_id, group.group_epoch))

    def _cg_drop_unused_regexes(self, group: ConsumerGroup, records: list[Record]) -> None:
        """Tombstone the regexes no member subscribes to any more (a member left or was fenced)."""
        used = group.subscribed_regexes()
        for regex in [r for r in group.resolved_regexes if r not in used]:
            del group.resolved_regexes[regex]
            records.append(rec.regular_expression(group.group_id, regex, None))

    def _cg_update_target(self, group: ConsumerGroup, records: list[Record]) -> None:
        """Run the assignor for the new group epoch and record what changed (Kafka's
        TargetAssignmentBuilder: changed members, then the assignment epoch)."""
        topics = {tid: n for tid, n in group.subscription_metadata.values()}
        members = [(mid, self._cg_member_topics(group, m)) for mid, m in group.members.items()]
        name = group.preferred_assignor(self.config.consumer_group_assignors[0])
        racks = self.config.consumer_group_rack_aware_assignment
        target = assign(name, members, topics, group.target,
                        {mid: m.rack_id for mid, m in group.members.items()} if racks else None,
                        group.partition_racks if racks else None)
        for mid, assignment in target.items():
            old = group.target.get(mid)
            if old is None or not _same(old, assignment):
                records.append(rec.target_assignment_member(group.group_id, mid, assignment))
        group.target = {mid: {t: ps for t, ps in a.items() if ps} for mid, a in target.items()}
        group.assignment_epoch = group.group_epoch
        records.append(rec.target_assignment_metadata(group.group_id, group.assignment_epoch))

    def _cg_reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                      owned: list[tuple[uuid.UUID, list[int]]] | None) -> None:
        """Kafka's CurrentAssignmentBuilder, in place on ``member``."""
        target_epoch = group.assignment_epoch
        target = group.target.get(member.member_id, {})

        def owns_any(assignment: Assignment) -> bool:
            if owned is None:
                return True
            return any(p in assignment.get(tid, ()) for tid, ps in owned for p in ps)

        def next_assignment(epoch: int) -> None:
            assigned: dict[uuid.UUID, set[int]] = {}
            revoking: dict[uuid.UUID, frozenset[int]] = {}
            pending: dict[uuid.UUID, set[int]] = {}
            unreleased = False
            for tid in set(target) | set(member.assigned):
                want = target.get(tid, frozenset())
                have = member.assigned.get(tid, frozenset())
                keep = have & want
                if keep:
                    assigned[tid] = set(keep)
                if have - keep:
                    revoking[tid] = frozenset(have - keep)
                free = set()
                for p in want - keep:
                    holder = group.owners.get((tid, p))
                    if holder is not None and holder != member.member_id and holder in group.members:
                        unreleased = True
                    else:
                        free.add(p)
                if free:
                    pending[tid] = free
            if revoking and owns_any(revoking):
                member.state = UNREVOKED_PARTITIONS
                member.previous_member_epoch, member.member_epoch = member.member_epoch, epoch
                member.assigned = {t: frozenset(ps) for t, ps in assigned.items()}
                member.pending_revocation = revoking
                return
            for tid, ps in pending.items():
                assigned.setdefault(tid, set()).update(ps)
            member.state = UNRELEASED_PARTITIONS if unreleased else STABLE
            if member.member_epoch != target_epoch:
                member.previous_member_epoch, member.member_epoch = member.member_epoch, target_epoch
            member.assigned = {t: frozenset(ps) for t, ps in assigned.items()}
            member.pending_revocation = {}

        if member.state == STABLE:
            if member.member_epoch != target_epoch:
                next_assignment(member.member_epoch)
        elif member.state == UNREVOKED_PARTITIONS:
            if not owns_any(member.pending_revocation):
                next_assignment(member.member_epoch + 1)
        else:
            next_assignment(member.member_epoch)
        if member.state == UNREVOKED_PARTITIONS:
            self._cg_schedule_revocation(group, member)
        else:
            self._cancel(("cg-revocation", group.group_id, member.member_id))

    # ------------------------------------------------------------------ leaving / removal

    def _cg_leave(self, req: ConsumerGroupHeartbeat, step: Step) -> ConsumerGroupHeartbeatResult:
        group = self._consumer_groups.get(req.group_id)
        if group is None:
            if req.group_id in self._groups:
                raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group.")
            raise HeartbeatError(UNKNOWN_MEMBER, f"Consumer group {req.group_id} not found.")
        if req.instance_id is not None:
            member = group.static_member(req.instance_id)
            if member is None:
                raise HeartbeatError(UNKNOWN_MEMBER, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise HeartbeatError(FENCED_INSTANCE_ID, f"Static member {req.member_id} with instance id "
                                     f"{req.instance_id} was fenced by member {member.member_id}.")
        else:
            member = group.members.get(req.member_id)
            if member is None:
                raise HeartbeatError(UNKNOWN_MEMBER, f"Member {req.member_id} is not a member of group "
                                     f"{req.group_id}.")
        hb = self._cg_settings(req.group_id).heartbeat_interval_ms
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # A static member leaving for a restart keeps its partitions (nobody else gets them)
            # until its session expires or it rejoins under the same instance id.
            member.previous_member_epoch, member.member_epoch = member.member_epoch, LEAVE_GROUP_STATIC_MEMBER_EPOCH
            member.pending_revocation = {}
            group.set_current(member)
            step.records.append(rec.current_member_assignment(group.group_id, member))
            self._cancel(("cg-revocation", group.group_id, member.member_id))
            return ConsumerGroupHeartbeatResult(error_code=NONE, error_message=None, member_id=member.member_id,
                                                member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                                heartbeat_interval_ms=hb)
        self._cg_fence(group, member.member_id, step.records, req.topics, step, req.partition_racks)
        return ConsumerGroupHeartbeatResult(error_code=NONE, error_message=None, member_id=member.member_id,
                                            member_epoch=LEAVE_GROUP_MEMBER_EPOCH, heartbeat_interval_ms=hb)

    def _cg_remove_member(self, group: ConsumerGroup, member_id: str, records: list[Record],
                          topics: TopicsView | None = None, partition_racks: PartitionRacks | None = None) -> None:
        """Fence a member (leave, session or revocation timeout): its records go, the group epoch is
        bumped so the others' targets are recomputed on their next heartbeat."""
        gid = group.group_id
        records.append(rec.current_member_assignment(gid, None, member_id))
        records.append(rec.target_assignment_member(gid, member_id, None))
        records.append(rec.member_metadata(gid, None, member_id))
        group.remove(member_id)
        for kind in ("cg-session", "cg-revocation", "cg-join", "cg-sync"):
            self._cancel((kind, gid, member_id))
        self._cg_drop_unused_regexes(group, records)
        if topics is not None:
            subscription = self._cg_subscription_metadata(group, topics)
        else:   # no broker view at hand (a timer): drop topics nobody subscribes to any more
            subscription = {n: meta for n, meta in group.subscription_metadata.items()
                            if any(group.member_subscribes(m, n) for m in group.members.values())}
        racks = (_racks_of(subscription, partition_racks if topics is not None else group.partition_racks)
                 if self.config.consumer_group_rack_aware_assignment else {})
        if subscription != group.subscription_metadata or racks != group.partition_racks:
            group.subscription_metadata, group.partition_racks = subscription, racks
            records.append(rec.partition_metadata(gid, subscription, racks))
        group.group_epoch += 1
        records.append(rec.group_metadata(gid, group.group_epoch))

    def _cg_replace_static(self, group: ConsumerGroup, old: ConsumerGroupMember, new_id: str,
                           records: list[Record]) -> ConsumerGroupMember:
        """Kafka's replaceMember: the rejoining static member takes over the old one's assignment
        (member epoch 0 so that its first heartbeat answer carries the full assignment)."""
        gid = group.group_id
        records.append(rec.current_member_assignment(gid, None, old.member_id))
        records.append(rec.target_assignment_member(gid, old.member_id, None))
        records.append(rec.member_metadata(gid, None, old.member_id))
        target = group.target.pop(old.member_id, None)
        group.remove(old.member_id)
        self._cancel(("cg-session", gid, old.member_id))
        new = ConsumerGroupMember(new_id, instance_id=old.instance_id, rack_id=old.rack_id,
                                  subscribed_topic_names=old.subscribed_topic_names,
                                  subscribed_topic_regex=old.subscribed_topic_regex,
                                  server_assignor=old.server_assignor,
                                  rebalance_timeout_ms=old.rebalance_timeout_ms, member_epoch=0,
                                  previous_member_epoch=0, state=STABLE, assigned=old.assigned)
        group.members[new_id] = new
        if target is not None:
            group.target[new_id] = target
            records.append(rec.target_assignment_member(gid, new_id, target))
        group.set_current(new)
        return new

    # ------------------------------------------------------------------ timers

    def _cg_settings(self, group_id: str) -> ConsumerGroupSettings:
        """The group's session timeout and heartbeat interval now: its ``consumer.session.timeout.ms``
        / ``consumer.heartbeat.interval.ms`` over the broker's (Kafka's consumerGroupSessionTimeoutMs
        and consumerGroupHeartbeatIntervalMs). Read at each use, so a change applies from the next
        heartbeat's answer and the next session timer, as in Kafka."""
        overrides = self.group_configs(group_id)
        if not overrides:
            return ConsumerGroupSettings(self.config.consumer_group_session_timeout_ms,
                                         self.config.consumer_group_heartbeat_interval_ms)
        return consumer_settings(overrides, _broker_props(self.config))

    def _cg_schedule_session(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        gid, mid = group.group_id, member.member_id
        timeout = member.classic.session_timeout_ms if member.classic is not None else \
            self._cg_settings(gid).session_timeout_ms
        self._schedule(("cg-session", gid, mid), timeout,
                       lambda step: self._cg_expire(gid, mid, step))

    def _cg_schedule_revocation(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        key = ("cg-revocation", group.group_id, member.member_id)
        if key in self._timers:
            return
        gid, mid = group.group_id, member.member_id
        self._schedule(key, member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else
                       self._cg_settings(gid).session_timeout_ms, lambda step: self._cg_expire(gid, mid, step))

    def _cg_expire(self, group_id: str, member_id: str, step: Step) -> None:
        group = self._consumer_groups.get(group_id)
        if group is not None and member_id in group.members:
            self._cg_fence(group, member_id, step.records, step=step)

    # ------------------------------------------------------------------ describe

    def _handle_cg_describe(self, req: ConsumerGroupDescribe, step: Step) -> None:
        out: list[DescribedConsumerGroup] = []
        for gid in req.groups:
            if not gid:
                out.append(DescribedConsumerGroup(gid or "", INVALID_GROUP_ID, "GroupId can't be empty."))
            elif not self._owns(gid):
                out.append(DescribedConsumerGroup(gid, NOT_COORDINATOR))
            elif gid in self._consumer_groups:
                g = self._consumer_groups[gid]
                members = [DescribedConsumerMember(
                    member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                    member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    subscribed_topic_regex=m.subscribed_topic_regex, assignment=dict(m.assigned),
                    target_assignment=dict(g.target.get(m.member_id, {})),
                    member_type=0 if m.classic is not None else 1)
                    for m in g.members.values()]
                out.append(DescribedConsumerGroup(
                    group_id=gid, error_code=NONE, error_message=None, group_state=g.state,
                    group_epoch=g.group_epoch, assignment_epoch=g.assignment_epoch,
                    assignor_name=g.preferred_assignor(self.config.consumer_group_assignors[0]), members=members))
            elif gid in self._groups:
                out.append(DescribedConsumerGroup(gid, GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group."))
            else:
                out.append(DescribedConsumerGroup(gid, GROUP_ID_NOT_FOUND, f"Group {gid} not found."))
        step.complete(req.token, ConsumerGroupDescribeResult(out))

    # ------------------------------------------------------------------ offsets

    def _cg_validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int,
                                   transactional: bool, instance_id: str | None = None) -> int:
        """Kafka's ConsumerGroup.validateOffsetCommit (for members of the consumer protocol)."""
        if member_epoch < 0 and not group.members:
            return NONE
        if transactional and member_epoch == -1 and not member_id and instance_id is None:
            return NONE
        member = group.members.get(member_id)
        if member is None:
            return UNKNOWN_MEMBER
        if member_epoch != member.member_epoch:
            # Kafka's validateMemberEpoch: a classic member's generation is its member epoch.
            return ILLEGAL_GENERATION if member.classic is not None else STALE_MEMBER_EPOCH
        return NONE

    def _cg_validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> int:
        """Kafka's ConsumerGroup.validateOffsetFetch: anonymous fetches (admin, assign()) pass."""
        if member_epoch < 0 and member_id is None:
            return NONE
        member = group.members.get(member_id or "")
        if member is None:
            return UNKNOWN_MEMBER
        if member_epoch != member.member_epoch:
            return STALE_MEMBER_EPOCH
        return NONE

    # ------------------------------------------------------------------ replay

    def _cg_replay(self, key: bytes, value: bytes | None) -> None:
        kind = rec.key_type(key)
        try:
            k = rec.decode_key(key)
            v = None if value is None else rec.decode_value(kind, value)
        except Exception:       # a record this version cannot parse is skipped, as Kafka skips unknown ones
            return
        gid = k.group_id
        group = self._consumer_groups.get(gid)
        if group is None:
            if value is None:
                return
            group = self._consumer_groups[gid] = ConsumerGroup(gid)
            self._drop_group(gid)       # offsets replayed earlier made it a "simple" classic group
        if kind == rec.GROUP_METADATA:
            if v is None:
                self._consumer_groups.pop(gid, None)
            else:
                group.group_epoch = v.epoch
        elif kind == rec.PARTITION_METADATA:
            group.subscription_metadata = {} if v is None else {
                t.topic_name: (t.topic_id, t.num_partitions) for t in v.topics}
            group.partition_racks = {} if v is None else rec.racks_of(v.topics)
        elif kind == rec.MEMBER_METADATA:
            if v is None:
                group.members.pop(k.member_id, None)
                group.set_current(ConsumerGroupMember(k.member_id))
            else:
                m = group.members.get(k.member_id) or ConsumerGroupMember(k.member_id)
                m.instance_id, m.rack_id, m.client_id, m.client_host = (v.instance_id, v.rack_id, v.client_id,
                                                                        v.client_host)
                m.subscribed_topic_names = tuple(v.subscribed_topic_names)
                m.subscribed_topic_regex, m.server_assignor = v.subscribed_topic_regex, v.server_assignor
                m.rebalance_timeout_ms = v.rebalance_timeout_ms
                c = v.classic_member_metadata
                m.classic = None if c is None else ClassicMemberMetadata(
                    c.session_timeout_ms, tuple((p.name, bytes(p.metadata)) for p in c.supported_protocols))
                group.members[k.member_id] = m
        elif kind == rec.TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = 0 if v is None else v.assignment_epoch
        elif kind == rec.TARGET_ASSIGNMENT_MEMBER:
            if v is None:
                group.target.pop(k.member_id, None)
            else:
                group.target[k.member_id] = rec.assignment_of(v.topic_partitions)
        elif kind == rec.REGULAR_EXPRESSION:
            if v is None:
                group.resolved_regexes.pop(k.regular_expression, None)
            else:
                group.resolved_regexes[k.regular_expression] = ResolvedRegularExpression(
                    frozenset(v.topics), v.resolved_version, v.timestamp)
        elif kind == rec.CURRENT_MEMBER_ASSIGNMENT:
            current = group.members.get(k.member_id)
            if v is not None:
                if current is None:
                    current = group.members[k.member_id] = ConsumerGroupMember(k.member_id)
                m = current
                m.member_epoch, m.previous_member_epoch, m.state = v.member_epoch, v.previous_member_epoch, v.state
                m.assigned = rec.assignment_of(v.assigned_partitions)
                m.pending_revocation = rec.assignment_of(v.partitions_pending_revocation)
                group.set_current(m)

    def _cg_on_loaded(self) -> None:
        """Replayed members' sessions run from now (Kafka does the same on load)."""
        for group in self._consumer_groups.values():
            for member in group.members.values():
                self._cg_schedule_session(group, member)

    def _cg_delete(self, group: ConsumerGroup, records: list[Record]) -> None:
        """DeleteGroups of an empty consumer group: its records are tombstoned (Kafka's
        createGroupTombstoneRecords)."""
        gid = group.group_id
        for regex in sorted(group.resolved_regexes):
            records.append(rec.regular_expression(gid, regex, None))
        for mid in list(group.target):
            records.append(rec.target_assignment_member(gid, mid, None))
        records.append(rec.target_assignment_metadata(gid, None))
        records.append(rec.partition_metadata(gid, None))
        records.append(rec.group_metadata(gid, None))
        del self._consumer_groups[gid]
        for key in [k for k in self._timers if len(k) > 1 and k[1] == gid and str(k[0]).startswith("cg-")]:
            del self._timers[key]


__all__ = [
    "ConsumerGroupHeartbeat", "ConsumerGroupHeartbeatResult", "ConsumerGroupDescribe",
    "ConsumerGroupDescribeResult", "DescribedConsumerGroup", "DescribedConsumerMember", "ConsumerGroup",
    "ConsumerGroupMember", "ConsumerGroupHandlers", "ASSIGNORS", "GROUP_TYPE", "STALE_MEMBER_EPOCH",
    "FENCED_MEMBER_EPOCH", "UNRELEASED_INSTANCE_ID", "UNSUPPORTED_ASSIGNOR", "INVALID_REQUEST",
    "INVALID_REGULAR_EXPRESSION", "COORDINATOR_NOT_AVAILABLE", "REGEX_BATCH_REFRESH_INTERVAL_MS",
    "ResolvedRegularExpression",
]
