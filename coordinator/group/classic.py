"""Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): the group and
member model and the coordinator's handlers for it, mixed into ``coordinator.group.GroupCoordinator``.

The rules follow Kafka's own coordinator (GroupMetadataManager/ClassicGroup in Kafka 3.7+, which
ported GroupCoordinator.scala), including its error codes per API version; see
``coordinator.group`` for the deliberate deviations."""
from __future__ import annotations

from collections import Counter
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from coordinator.step import Step
from coordinator.group.common import *  # noqa: F401,F403  (error codes, Step, shared requests)
from coordinator.group.common import GroupCoordinatorBase, _Request
from coordinator.group.offsets import OffsetAndMetadata
from coordinator.group.offsets_records import GroupMetadataValue, MemberMetadataValue, group_metadata_record

class GroupState(str, Enum):
    """Classic group states; the value is the name Kafka shows in DescribeGroups/ListGroups."""
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}



@dataclass(kw_only=True, slots=True)
class JoinGroup(_Request):
    """JoinGroup. ``rebalance_timeout_ms`` is ignored for v0 (Kafka uses the session timeout)."""
    group_id: str | None
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    reason: str | None = None
    # The cluster's topics (name -> (id, partition count)): a classic member of a consumer group
    # is assigned by the server, like a ConsumerGroupHeartbeat (coordinator.consumer_group_classic).
    topics: Mapping[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    partition_racks: Mapping[uuid.UUID, tuple[frozenset[str], ...]] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class SyncGroup(_Request):
    """SyncGroup. ``protocol_type``/``protocol_name`` exist from v5; pass None below it."""
    group_id: str | None
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[tuple[str, bytes]] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class Heartbeat(_Request):
    group_id: str | None
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(slots=True)
class LeaveGroupMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(kw_only=True, slots=True)
class LeaveGroup(_Request):
    """LeaveGroup; v0-v2 carry one member id, pass it as a one-element ``members`` list."""
    group_id: str | None
    members: list[LeaveGroupMember]



@dataclass(slots=True)
class JoinGroupMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinGroupResult:
    """JoinGroup response fields; ``members`` is filled for the leader only. ``protocol_name`` is
    None on errors (Kafka sends "" to clients older than v7)."""
    error_code: int
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: list[JoinGroupMember] = field(default_factory=list)


@dataclass(slots=True)
class SyncGroupResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class HeartbeatResult:
    error_code: int


@dataclass(slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error_code: int


@dataclass(slots=True)
class LeaveGroupResult:
    error_code: int
    members: list[LeaveMemberResult] = field(default_factory=list)

    @property
    def legacy_error_code(self) -> int:
        """The single error of a v0-v2 response: the top-level one, else the member's."""
        if self.error_code != NONE or not self.members:
            return self.error_code
        return self.members[0].error_code


# =========================================================================== group model

class _Waiter:
    """A parked request (its shell token); a class so that a ``None`` token still counts."""
    __slots__ = ("token",)

    def __init__(self, token: Any) -> None:
        self.token = token


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: _Waiter | None = None
    sync_waiter: _Waiter | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    @property
    def protocol_names(self) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self.protocols))

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka: a new member can expire even while its join is parked; any other member that is
        waiting in a rebalance counts as alive."""
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync


def _subscribed_topics_of(metadata: bytes) -> set[str]:
    """Topics of a ConsumerProtocolSubscription, parsed as v0 after the version (as Kafka does, so
    any future version parses)."""
    if len(metadata) < 2 or int.from_bytes(metadata[:2], "big", signed=True) < 0:
        raise ValueError("bad consumer protocol version")
    sub = ConsumerProtocolSubscription.decode(bytes(metadata[2:]), version=0, header=False)
    return {t for t in sub.topics if t is not None}


class ClassicGroup:
    """One classic group's membership state (Kafka's ClassicGroup); mutated only by the coordinator."""

    def __init__(self, group_id: str, state: GroupState, state_timestamp: int | None) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = GroupState.DEAD
        self.state_timestamp: int | None = state_timestamp
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, None] = {}     # ordered set of member ids given out, not yet joined
        self.pending_sync_members: set[str] = set()
        self.num_awaiting_join = 0
        self.supported_protocols: Counter[str] = Counter()
        self.subscribed_topics: frozenset[str] | None = None
        self.new_member_added = False

    # ------------------------------------------------------------------ membership

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def add(self, member: Member, waiter: _Waiter | None = None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names)
        member.join_waiter = waiter
        if waiter is not None:
            self.num_awaiting_join += 1
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(member.protocol_names)
            if member.awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: Member, protocols: list[tuple[str, bytes]], rebalance_timeout_ms: int,
                      session_timeout_ms: int, waiter: _Waiter | None) -> None:
        self.supported_protocols.subtract(member.protocol_names)
        member.protocols = list(protocols)
        self.supported_protocols.update(member.protocol_names)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if waiter is not None and not member.awaiting_join:
            self.num_awaiting_join += 1
        elif waiter is None and member.awaiting_join:
            self.num_awaiting_join -= 1
        member.join_waiter = waiter

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """Give a static member a new member id, keeping its place, protocols and assignment."""
        old = self.members[old_id]
        member = Member(member_id=new_id, group_instance_id=old.group_instance_id, client_id=old.client_id,
                        client_host=old.client_host, rebalance_timeout_ms=old.rebalance_timeout_ms,
                        session_timeout_ms=old.session_timeout_ms, protocol_type=old.protocol_type,
                        protocols=list(old.protocols), assignment=old.assignment)
        if old.awaiting_join:
            self.num_awaiting_join -= 1
        self.members = {(new_id if k == old_id else k): (member if k == old_id else v)
                        for k, v in self.members.items()}
        if self.is_leader(old_id):
            self.leader_id = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        self.static_members[instance_id] = new_id
        return member

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else take the first member that did; False if none did
        (or the group has no leader)."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def validate_member(self, member_id: str, group_instance_id: str | None) -> int:
        """Kafka's validateMember: a given instance id must map to this member id (else
        FENCED_INSTANCE_ID, or UNKNOWN_MEMBER_ID if unknown) and the member must exist."""
        if group_instance_id is not None:
            existing = self.static_members.get(group_instance_id)
            if existing is None:
                return UNKNOWN_MEMBER
            if existing != member_id:
                return FENCED_INSTANCE_ID
        if member_id not in self.members:
            return UNKNOWN_MEMBER
        return NONE

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ------------------------------------------------------------------ state

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: invalid transition {self.state.value} -> {state.value}")
        self.previous_state = self.state
        self.state = state
        self.state_timestamp = now_ms

    # ------------------------------------------------------------------ protocols

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """Each member votes for its first-listed protocol that every member supports; most votes
        wins (ties go to the protocol whose first vote came earliest, in member order)."""
        if not self.members:
            raise ValueError("cannot select a protocol for an empty group")
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        for m in self.members.values():
            choice = m.vote(candidates)
            if votes[choice] == best:
                return choice
        raise AssertionError("unreachable")

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        names = list(names)
        if self.state == GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(self.supported_protocols[p] == n for p in names)

    @property
    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members subscribe to (consumer protocol only); None when unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics |= _subscribed_topics_of(m.metadata(self.protocol_name))
        except Exception:   # Kafka: unparsable subscription -> "not aware of the subscribed topics"
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.uses_consumer_protocol

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[JoinGroupMember]:
        return [JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]

    def offset_expiration_base(self) -> Callable[[OffsetAndMetadata], int] | None:
        """Kafka's offsetExpirationCondition: from what time an offset's retention counts, or None
        when this group's offsets must not expire now."""
        if self.protocol_type is not None:
            if self.state == GroupState.EMPTY:
                ts = self.state_timestamp
                return lambda oam: ts if ts is not None else oam.commit_timestamp_ms
            if self.uses_consumer_protocol and self.subscribed_topics is not None and self.state == GroupState.STABLE:
                return lambda oam: oam.commit_timestamp_ms
            return None
        return lambda oam: oam.commit_timestamp_ms

    def metadata_value(self, assignment: dict[str, bytes] | None = None) -> GroupMetadataValue:
        """The GroupMetadataValue Kafka writes for this group with the given assignment."""
        assignment = assignment or {}
        members = tuple(
            MemberMetadataValue(
                member_id=m.member_id, client_id=m.client_id, client_host=m.client_host,
                session_timeout=m.session_timeout_ms, subscription=m.metadata(self.protocol_name),
                assignment=assignment.get(m.member_id, b""), rebalance_timeout=m.rebalance_timeout_ms,
                group_instance_id=m.group_instance_id)
            for m in self.members.values())
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "", generation=self.generation_id,
            protocol=self.protocol_name, leader=self.leader_id, members=members,
            current_state_timestamp=-1 if self.state_timestamp is None else self.state_timestamp)



class ClassicGroupHandlers(GroupCoordinatorBase):
    """The classic protocol's part of the coordinator (its state: ``GroupCoordinatorBase``)."""

    def _reschedule_heartbeat(self, group: ClassicGroup, member: Member, timeout_ms: int | None = None) -> None:
        gid, mid = group.group_id, member.member_id
        self._schedule(("heartbeat", gid, mid),
                       member.session_timeout_ms if timeout_ms is None else timeout_ms,
                       lambda step: self._expire_heartbeat(gid, mid, step))

    @staticmethod
    def _group_from_record(group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = ClassicGroup(group_id, GroupState.STABLE if value.members else GroupState.EMPTY,
                             None if value.current_state_timestamp == -1 else value.current_state_timestamp)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.leader_id = value.leader
        for m in value.members:
            group.add(Member(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout,
                session_timeout_ms=m.session_timeout, protocol_type=value.protocol_type,
                protocols=[(value.protocol or "", m.subscription)], assignment=m.assignment))
        group.protocol_type = value.protocol_type or None
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    @staticmethod
    def _complete(step: Step, waiter: _Waiter, result: Any) -> None:
        step.complete(waiter.token, result)

    def _complete_join(self, group: ClassicGroup, member: Member, result: JoinGroupResult, step: Step) -> bool:
        if member.join_waiter is None:
            return False
        waiter = member.join_waiter
        member.join_waiter = None
        group.num_awaiting_join -= 1
        self._complete(step, waiter, result)
        return True

    def _complete_sync(self, member: Member, result: SyncGroupResult, step: Step) -> bool:
        if member.sync_waiter is None:
            return False
        waiter = member.sync_waiter
        member.sync_waiter = None
        self._complete(step, waiter, result)
        return True

    def _remove_member(self, group: ClassicGroup, member_id: str, step: Step) -> None:
        """Remove a member, answering any request it still has parked.

        Deviation: Kafka answers a parked JoinGroup of a removed member with UNKNOWN_MEMBER_ID but
        leaves a parked SyncGroup unanswered; we answer it with UNKNOWN_MEMBER_ID too so the shell
        never holds a request forever."""
        member = group.members.get(member_id)
        if member is not None:
            self._complete_join(group, member, JoinGroupResult(UNKNOWN_MEMBER, UNKNOWN_MEMBER_ID), step)
            self._complete_sync(member, SyncGroupResult(UNKNOWN_MEMBER), step)
        group.remove(member_id)
        self._cancel(("heartbeat", group.group_id, member_id))

    def _park_join(self, group: ClassicGroup, member: Member, token: Any, step: Step) -> _Waiter:
        """A waiter for a member's new JoinGroup. Deviation: Kafka silently drops a JoinGroup the
        same member had parked before; we answer it with REBALANCE_IN_PROGRESS (the member simply
        rejoins) so that no request is left waiting forever."""
        if member.join_waiter is not None:
            old = member.join_waiter
            member.join_waiter = None
            group.num_awaiting_join -= 1
            self._complete(step, old, JoinGroupResult(REBALANCE_IN_PROGRESS, member.member_id))
        return _Waiter(token)

    # ================================================================== JoinGroup

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.state == GroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or group.num_awaiting_join < max_size
        return member_id in group.members or len(group.members) < max_size

    def _handle_join(self, req: JoinGroup, step: Step) -> None:
        def answer(result: JoinGroupResult) -> None:
            step.complete(req.token, result)

        if not req.group_id:
            return answer(JoinGroupResult(INVALID_GROUP_ID, req.member_id))
        if not self._owns(req.group_id):
            return answer(JoinGroupResult(NOT_COORDINATOR, req.member_id))
        cfg = self.config
        if not cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
            return answer(JoinGroupResult(INVALID_SESSION_TIMEOUT, req.member_id))
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self._groups.get(req.group_id)
        is_new_group = group is None
        if group is None:
            if not is_unknown:
                return answer(JoinGroupResult(UNKNOWN_MEMBER, req.member_id))
            group = ClassicGroup(req.group_id, GroupState.EMPTY, self._now)
            self._groups[req.group_id] = group
        records_before = len(step.records)
        if not self._accept_joining_member(group, req.member_id):
            group.remove(req.member_id)
            answer(JoinGroupResult(GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        elif is_unknown:
            self._join_new_member(group, req, step)
        else:
            self._join_existing_member(group, req, step)
        if is_new_group and len(step.records) == records_before:
            # Kafka persists a newly created group even when the join itself wrote nothing.
            step.records.append(group_metadata_record(group.group_id, GroupMetadataValue(
                protocol_type="", generation=0, protocol=None, leader=None, members=(),
                current_state_timestamp=-1 if group.state_timestamp is None else group.state_timestamp)))

    @staticmethod
    def _rebalance_timeout(req: JoinGroup) -> int:
        return req.session_timeout_ms if req.api_version == 0 else req.rebalance_timeout_ms

    def _join_new_member(self, group: ClassicGroup, req: JoinGroup, step: Step) -> None:
        names = [name for name, _ in req.protocols]
        if group.state == GroupState.DEAD:
            step.complete(req.token, JoinGroupResult(COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID))
            return
        if not group.supports_protocols(req.protocol_type, names):
            step.complete(req.token, JoinGroupResult(INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID))
            return
        new_id = self._new_member_id(req.client_id, req.group_instance_id)
        if req.group_instance_id is not None:
            existing = group.static_members.get(req.group_instance_id)
            if existing is not None:
                self._update_static_member(group, req, existing, new_id, step)
            else:
                self._add_member_and_rebalance(group, req, new_id, step)
        elif req.api_version >= 4:
            # The member must come back with this id, so that a client that never receives the
            # answer does not leave a phantom member behind (KIP-394).
            group.pending_members[new_id] = None
            gid = group.group_id
            self._schedule(("heartbeat", gid, new_id), req.session_timeout_ms,
                           lambda s: self._expire_heartbeat(gid, new_id, s))
            step.complete(req.token, JoinGroupResult(MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, req, new_id, step)

    def _join_existing_member(self, group: ClassicGroup, req: JoinGroup, step: Step) -> None:
        member_id = req.member_id
        names = [name for name, _ in req.protocols]

        def answer(result: JoinGroupResult) -> None:
            step.complete(req.token, result)

        if group.state == GroupState.DEAD:
            return answer(JoinGroupResult(COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports_protocols(req.protocol_type, names):
            return answer(JoinGroupResult(INCONSISTENT_GROUP_PROTOCOL, member_id))
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka throws IllegalStateException here: a pending id is never a static member's.
                return answer(JoinGroupResult(UNKNOWN_SERVER_ERROR, member_id))
            return self._add_member_and_rebalance(group, req, member_id, step)
        err = group.validate_member(member_id, req.group_instance_id)
        if err != NONE:
            return answer(JoinGroupResult(err, member_id))
        member = group.members[member_id]
        state = group.state
        if state == GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, req, step)
        elif state == GroupState.COMPLETING_REBALANCE:
            if member.matches(req.protocols):
                # The member lost the first answer: repeat the current generation's.
                answer(JoinGroupResult(
                    error_code=NONE, member_id=member_id, generation_id=group.generation_id,
                    protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                    leader=group.leader_id or "", skip_assignment=False,
                    members=group.current_member_metadata() if group.is_leader(member_id) else []))
            else:
                self._update_member_and_rebalance(group, member, req, step)
        elif state == GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(req.protocols):
                # A leader's JoinGroup always rebalances: it may have seen metadata changes
                # (new partitions) that the member metadata does not show.
                self._update_member_and_rebalance(group, member, req, step)
            else:
                answer(JoinGroupResult(error_code=NONE, member_id=member_id, generation_id=group.generation_id,
                                       protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                       leader=group.leader_id or "", skip_assignment=False, members=[]))
        else:
            answer(JoinGroupResult(UNKNOWN_MEMBER, member_id))

    def _add_member_and_rebalance(self, group: ClassicGroup, req: JoinGroup, member_id: str, step: Step) -> None:
        member = Member(
            member_id=member_id, group_instance_id=req.group_instance_id, client_id=req.client_id,
            client_host=req.client_host, rebalance_timeout_ms=self._rebalance_timeout(req),
            session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
            protocols=list(req.protocols), is_new=True)
        if group.state == GroupState.PREPARING_REBALANCE and group.previous_state == GroupState.EMPTY:
            group.new_member_added = True       # lets the initial delay extend (InitialDelayedJoin)
        group.add(member, _Waiter(req.token))
        # A new member cannot heartbeat while its JoinGroup is parked; if the rebalance never
        # completes, drop it after the new-member timeout (it will simply retry).
        self._reschedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(group, step)

    def _update_member_and_rebalance(self, group: ClassicGroup, member: Member, req: JoinGroup, step: Step) -> None:
        waiter = self._park_join(group, member, req.token, step)
        group.update_member(member, req.protocols, self._rebalance_timeout(req), req.session_timeout_ms, waiter)
        self._maybe_prepare_rebalance_or_complete_join(group, step)

    def _update_static_member(self, group: ClassicGroup, req: JoinGroup, old_id: str, new_id: str,
                              step: Step) -> None:
        """A known static member rejoins without its member id (a restarted instance)."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        old = group.members[old_id]
        # Fence the old incarnation if it still has requests parked.
        self._complete_join(group, old, JoinGroupResult(FENCED_INSTANCE_ID, old_id), step)
        self._complete_sync(old, SyncGroupResult(FENCED_INSTANCE_ID), step)
        old_protocols, old_rebalance, old_session = list(old.protocols), old.rebalance_timeout_ms, old.session_timeout_ms
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._cancel(("heartbeat", group.group_id, old_id))
        self._reschedule_heartbeat(group, member)
        group.update_member(member, req.protocols, self._rebalance_timeout(req), req.session_timeout_ms,
                            _Waiter(req.token))
        if group.state == GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # Same protocol for the next generation: no rebalance, just persist the new id
                # and give the member the current generation (it keeps its assignment).
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                record = group_metadata_record(group.group_id, group.metadata_value(assignment))
                if not self._fits(record):
                    # Kafka's failed append: the old member id is restored and the joiner told.
                    group.update_member(member, old_protocols, old_rebalance, old_session, None)
                    restored = group.replace_static_member(instance_id, new_id, old_id)
                    self._cancel(("heartbeat", group.group_id, new_id))
                    self._reschedule_heartbeat(group, restored)
                    step.complete(req.token, JoinGroupResult(
                        error_code=UNKNOWN_SERVER_ERROR, member_id=UNKNOWN_MEMBER_ID,
                        generation_id=group.generation_id, protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name, leader=current_leader or ""))
                    return
                step.records.append(record)
                if req.api_version >= 9:
                    # v9+: the leader learns it leads but must skip the assignor (KIP-814).
                    is_leader = group.is_leader(new_id)
                    result = JoinGroupResult(
                        error_code=NONE, member_id=new_id, generation_id=group.generation_id,
                        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                        leader=group.leader_id or "", skip_assignment=is_leader,
                        members=group.current_member_metadata() if is_leader else [])
                else:
                    # Older clients get the old leader id so a restarted leader does not run a
                    # trivial assignment that a Stable group would never propagate.
                    result = JoinGroupResult(error_code=NONE, member_id=new_id,
                                             generation_id=group.generation_id,
                                             protocol_type=group.protocol_type,
                                             protocol_name=group.protocol_name, leader=current_leader or "",
                                             skip_assignment=False, members=[])
                self._complete_join(group, member, result, step)
            else:
                self._maybe_prepare_rebalance_or_complete_join(group, step)
        elif group.state == GroupState.COMPLETING_REBALANCE:
            # The leader may already be assigning with the old member id: start over.
            self._prepare_rebalance(group, step)
        else:
            self._maybe_complete_join_phase(group, step)

    # ------------------------------------------------------------------ rebalance machinery

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup, step: Step) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, step)
        else:
            self._maybe_complete_join_phase(group, step)

    def _maybe_complete_join_phase(self, group: ClassicGroup, step: Step) -> None:
        """Complete the join phase once everyone known has joined, except during the initial
        rebalance of a group, which always waits out its (extending) initial delay."""
        if group.state != GroupState.PREPARING_REBALANCE:
            return
        if group.previous_state == GroupState.EMPTY:
            return
        if group.has_all_members_joined():
            self._complete_join_phase(group, step)

    def _prepare_rebalance(self, group: ClassicGroup, step: Step) -> None:
        if group.state == GroupState.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(group, REBALANCE_IN_PROGRESS, step)
        self._remove_sync_expiration(group)
        initial = group.state == GroupState.EMPTY
        gid = group.group_id
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            self._schedule(("join", gid), delay,
                           lambda s: self._try_complete_initial_rebalance(gid, delay, remaining, s))
        group.transition_to(GroupState.PREPARING_REBALANCE, self._now_ms())
        if not initial:
            if group.has_all_members_joined():
                self._complete_join_phase(group, step)
            else:
                self._schedule(("join", gid), group.rebalance_timeout_ms,
                               lambda s: self._complete_join_phase_timer(gid, s))

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int, remaining_ms: int, step: Step) -> None:
        """Kafka's InitialDelayedJoin: while new members keep arriving, extend the wait by the
        initial delay, never beyond the rebalance timeout."""
        group = self._groups.get(group_id)
        if group is None or group.state != GroupState.PREPARING_REBALANCE:
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self._schedule(("join", group_id), new_delay,
                           lambda s: self._try_complete_initial_rebalance(group_id, new_delay, new_remaining, s))
        else:
            self._complete_join_phase(group, step)

    def _complete_join_phase_timer(self, group_id: str, step: Step) -> None:
        group = self._groups.get(group_id)
        if group is not None and group.state == GroupState.PREPARING_REBALANCE:
            self._complete_join_phase(group, step)

    def _complete_join_phase(self, group: ClassicGroup, step: Step) -> None:
        """End of the join phase: drop dynamic members that did not rejoin, start the next
        generation and answer every parked JoinGroup (the leader gets all members' metadata)."""
        gid = group.group_id
        self._cancel(("join", gid))
        for member in [m for m in group.members.values() if not m.awaiting_join and not m.is_static]:
            self._remove_member(group, member.member_id, step)
        if group.state == GroupState.DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Only static members that did not rejoin are left: wait another rebalance timeout
            # for them (their sessions will expire if they are gone).
            self._schedule(("join", gid), group.rebalance_timeout_ms,
                           lambda s: self._complete_join_phase_timer(gid, s))
            return
        group.init_next_generation(self._now_ms())
        if group.state == GroupState.EMPTY:
            step.records.append(group_metadata_record(gid, group.metadata_value({})))
            return
        members_for_leader = group.current_member_metadata()
        for member in list(group.members.values()):
            is_leader = group.is_leader(member.member_id)
            self._complete_join(group, member, JoinGroupResult(
                error_code=NONE, member_id=member.member_id, generation_id=group.generation_id,
                protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                leader=group.leader_id or "", skip_assignment=False,
                members=list(members_for_leader) if is_leader else []), step)
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self._schedule(("sync", gid), group.rebalance_timeout_ms,
                       lambda s: self._expire_pending_sync(gid, generation, s))

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self._cancel(("sync", group.group_id))

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) \
                or not group.pending_sync_members:
            self._cancel(("sync", group.group_id))

    def _expire_pending_sync(self, group_id: str, generation_id: int, step: Step) -> None:
        """Members that got their JoinGroup answer but never sent SyncGroup within the rebalance
        timeout are removed and the group rebalances."""
        group = self._groups.get(group_id)
        if group is None or generation_id != group.generation_id:
            return
        if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and group.pending_sync_members:
            for member_id in sorted(group.pending_sync_members):
                self._remove_member(group, member_id, step)
            self._prepare_rebalance(group, step)

    def _expire_heartbeat(self, group_id: str, member_id: str, step: Step) -> None:
        group = self._groups.get(group_id)
        if group is None or group.state == GroupState.DEAD:
            return
        if member_id in group.pending_members:
            group.remove(member_id)
            if group.state == GroupState.PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join_phase(group, step)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        self._remove_member(group, member_id, step)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, step)
        elif group.state == GroupState.PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join_phase(group, step)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int, step: Step) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, step)

    def _propagate_assignment(self, group: ClassicGroup, error: int, step: Step) -> None:
        ptype, pname = (group.protocol_type, group.protocol_name) if error == NONE else (None, None)
        for member in group.members.values():
            if self._complete_sync(member, SyncGroupResult(error_code=error, protocol_type=ptype,
                                                           protocol_name=pname, assignment=member.assignment), step):
                # Sessions restart once a member has its assignment (it may have been waiting a while).
                self._reschedule_heartbeat(group, member)

    # ================================================================== SyncGroup

    def _handle_sync(self, req: SyncGroup, step: Step) -> None:
        def answer(result: SyncGroupResult) -> None:
            step.complete(req.token, result)

        if not req.group_id:
            return answer(SyncGroupResult(INVALID_GROUP_ID))
        if not self._owns(req.group_id):
            return answer(SyncGroupResult(NOT_COORDINATOR))
        group = self._groups.get(req.group_id)
        if group is None:
            return answer(SyncGroupResult(UNKNOWN_MEMBER))
        if group.state == GroupState.DEAD:
            return answer(SyncGroupResult(COORDINATOR_NOT_AVAILABLE))
        err = group.validate_member(req.member_id, req.group_instance_id)
        if err != NONE:
            return answer(SyncGroupResult(err))
        if req.generation_id != group.generation_id:
            return answer(SyncGroupResult(ILLEGAL_GENERATION))
        if (req.protocol_type is not None and group.protocol_type is not None
                and req.protocol_type != group.protocol_type) or \
           (req.protocol_name is not None and group.protocol_name is not None
                and req.protocol_name != group.protocol_name):
            return answer(SyncGroupResult(INCONSISTENT_GROUP_PROTOCOL))
        if group.state == GroupState.EMPTY:
            return answer(SyncGroupResult(UNKNOWN_MEMBER))
        if group.state == GroupState.PREPARING_REBALANCE:
            return answer(SyncGroupResult(REBALANCE_IN_PROGRESS))
        member = group.members[req.member_id]
        if group.state == GroupState.STABLE:
            self._remove_pending_sync_member(group, req.member_id)
            return answer(SyncGroupResult(error_code=NONE, protocol_type=group.protocol_type,
                                          protocol_name=group.protocol_name, assignment=member.assignment))
        # CompletingRebalance: park until the leader's assignment is stored.
        if member.sync_waiter is not None:      # Deviation: see _park_join
            self._complete_sync(member, SyncGroupResult(REBALANCE_IN_PROGRESS), step)
        member.sync_waiter = _Waiter(req.token)
        self._remove_pending_sync_member(group, req.member_id)
        if group.is_leader(req.member_id):
            assignment = {mid: bytes(a) for mid, a in req.assignments}
            full = {mid: assignment.get(mid, b"") for mid in group.members}
            record = group_metadata_record(group.group_id, group.metadata_value(full))
            if not self._fits(record):
                # Kafka's failed append: everyone waiting gets the (mapped) error and the group
                # starts over; nothing is stored.
                self._reset_and_propagate_assignment_error(group, UNKNOWN_SERVER_ERROR, step)
                self._maybe_prepare_rebalance_or_complete_join(group, step)
                return
            # The assignment is durable before anyone hears of it: the record goes first in the step.
            step.records.append(record)
            for m in group.members.values():
                m.assignment = full[m.member_id]
            self._propagate_assignment(group, NONE, step)
            group.transition_to(GroupState.STABLE, self._now_ms())

    # ================================================================== Heartbeat

    def _handle_heartbeat(self, req: Heartbeat, step: Step) -> None:
        def answer(code: int) -> None:
            step.complete(req.token, HeartbeatResult(code))

        if not req.group_id:
            return answer(INVALID_GROUP_ID)
        if not self._owns(req.group_id):
            return answer(NOT_COORDINATOR)
        group = self._groups.get(req.group_id)
        if group is None:
            return answer(UNKNOWN_MEMBER)
        if group.state == GroupState.DEAD:
            return answer(COORDINATOR_NOT_AVAILABLE)
        err = group.validate_member(req.member_id, req.group_instance_id)
        if err != NONE:
            return answer(err)
        if req.generation_id != group.generation_id:
            return answer(ILLEGAL_GENERATION)
        if group.state == GroupState.EMPTY:
            return answer(UNKNOWN_MEMBER)
        self._reschedule_heartbeat(group, group.members[req.member_id])
        if group.state == GroupState.PREPARING_REBALANCE:
            return answer(REBALANCE_IN_PROGRESS)
        return answer(NONE)

    # ================================================================== LeaveGroup

    def _handle_leave(self, req: LeaveGroup, step: Step) -> None:
        def answer(result: LeaveGroupResult) -> None:
            step.complete(req.token, result)

        if not req.group_id:
            return answer(LeaveGroupResult(INVALID_GROUP_ID))
        if not self._owns(req.group_id):
            return answer(LeaveGroupResult(NOT_COORDINATOR))
        group = self._groups.get(req.group_id)
        if group is None:
            return answer(LeaveGroupResult(NONE, [LeaveMemberResult(m.member_id, m.group_instance_id, UNKNOWN_MEMBER)
                                                  for m in req.members]))
        if group.state == GroupState.DEAD:
            return answer(LeaveGroupResult(COORDINATOR_NOT_AVAILABLE))
        results: list[LeaveMemberResult] = []
        left = False
        for m in req.members:
            if m.member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal by group.instance.id (e.g. Admin.removeMembersFromConsumerGroup).
                current = group.static_members.get(m.group_instance_id) if m.group_instance_id is not None else None
                if current is not None:
                    self._remove_member(group, current, step)
                    results.append(LeaveMemberResult(m.member_id, m.group_instance_id, NONE))
                    left = True
                else:
                    results.append(LeaveMemberResult(m.member_id, m.group_instance_id, UNKNOWN_MEMBER))
            elif m.member_id in group.pending_members:
                group.remove(m.member_id)
                self._cancel(("heartbeat", group.group_id, m.member_id))
                results.append(LeaveMemberResult(m.member_id, m.group_instance_id, NONE))
                left = True
            else:
                err = group.validate_member(m.member_id, m.group_instance_id)
                if err == NONE:
                    self._remove_member(group, m.member_id, step)
                    left = True
                results.append(LeaveMemberResult(m.member_id, m.group_instance_id, err))
        if left:
            if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group, step)
            elif group.state == GroupState.PREPARING_REBALANCE:
                # A member that leaves while others (or it) had a JoinGroup parked must not wedge
                # the group: the join completes now if everyone left has rejoined.
                self._maybe_complete_join_phase(group, step)
        answer(LeaveGroupResult(NONE, results))

