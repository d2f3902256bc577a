"""KIP-932 share-group membership: the pure state machine behind ShareGroupHeartbeat and
ShareGroupDescribe (``(state, request, now) -> result``, time injected).

As in KIP-848 (coordinator/group/consumer.py) the broker assigns: each group has a *group epoch*,
bumped whenever membership, a subscription or the subscribed topics' metadata change, and a
target assignment computed for it by the ``simple`` assignor (below). Unlike consumer groups
there is nothing to revoke: several members may hold one partition, so a member moves straight to
the target assignment and epoch on its next heartbeat (Kafka's ShareGroupMember has no
UNREVOKED state). Members choose their own member id (v1); epoch 0 joins, -1 leaves. A member
that does not heartbeat within ``group.share.session.timeout.ms`` (or the group config
``share.session.timeout.ms``, see ``configure``) is removed the next time the group is touched
(expiry is evaluated lazily at ``now``; no timers).

Error codes follow Kafka's GroupMetadataManager for share groups: INVALID_REQUEST for an empty
group id, member id or (on join) subscription; UNKNOWN_MEMBER_ID for an unknown member;
FENCED_MEMBER_EPOCH when the epoch does not match; GROUP_MAX_SIZE_REACHED past
``group.share.max.size``.

Persisted as Kafka persists it: every change of a group leaves records for its
``__consumer_offsets`` partition (Kafka's share-group records, types 10-14, coordinator/share/records.py),
computed by comparing what the records say about the group before and after the request
(``take_records``); the shell appends them through the group coordinator of that partition and
answers only once they are committed. ``replay`` rebuilds groups, members, epochs and assignments
from those records when the partition loads, as Kafka's GroupMetadataManager replays them: the
members come back as members, and ``load_complete`` starts their sessions, so a member that does
not heartbeat within its session timeout after the load is removed (Kafka schedules the session
timeouts of loaded share-group members in ``onLoaded``). Group ids are shared with classic and
consumer groups: the API layer answers GROUP_ID_NOT_FOUND across kinds, as Kafka's
GroupMetadataManager does.
"""
from __future__ import annotations

from protocol.errors import ErrorCode
import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast


from coordinator.share import records as sr
from coordinator.step import Coordinator, Record, Step

Assignment = dict[uuid.UUID, frozenset[int]]
TopicsView = Mapping[str, tuple[uuid.UUID, int]]

NONE = 0
INVALID_REQUEST: int = ErrorCode.INVALID_REQUEST
UNKNOWN_MEMBER_ID: int = ErrorCode.UNKNOWN_MEMBER_ID
FENCED_MEMBER_EPOCH: int = ErrorCode.FENCED_MEMBER_EPOCH
GROUP_MAX_SIZE_REACHED: int = ErrorCode.GROUP_MAX_SIZE_REACHED
GROUP_ID_NOT_FOUND: int = ErrorCode.GROUP_ID_NOT_FOUND
NON_EMPTY_GROUP: int = ErrorCode.NON_EMPTY_GROUP
NOT_COORDINATOR: int = ErrorCode.NOT_COORDINATOR

LEAVE_GROUP_MEMBER_EPOCH = -1
ASSIGNOR_NAME = "simple"


_KAFKA_NAMES = {   # Kafka's ShareGroupConfigs property -> field (and its default)
    "group.share.session.timeout.ms": ("session_timeout_ms", 45000),
    "group.share.min.session.timeout.ms": ("min_session_timeout_ms", 45000),
    "group.share.max.session.timeout.ms": ("max_session_timeout_ms", 60000),
    "group.share.heartbeat.interval.ms": ("heartbeat_interval_ms", 5000),
    "group.share.min.heartbeat.interval.ms": ("min_heartbeat_interval_ms", 5000),
    "group.share.max.heartbeat.interval.ms": ("max_heartbeat_interval_ms", 15000),
    "group.share.max.size": ("max_size", 200),
    "group.share.record.lock.duration.ms": ("record_lock_duration_ms", 30000),
    "group.share.min.record.lock.duration.ms": ("min_record_lock_duration_ms", 15000),
    "group.share.max.record.lock.duration.ms": ("max_record_lock_duration_ms", 60000),
    "group.share.delivery.count.limit": ("delivery_count_limit", 5),
    "group.share.partition.max.record.locks": ("partition_max_record_locks", 2000),
}


SHARE_GROUP_PROPERTIES = tuple(_KAFKA_NAMES)


@dataclass(frozen=True)
class ShareGroupConfig:
    """Kafka's share-group broker properties, checked as its ShareGroupConfig does: a broker with
    inconsistent bounds does not start."""
    session_timeout_ms: int = 45000
    min_session_timeout_ms: int = 45000
    max_session_timeout_ms: int = 60000
    heartbeat_interval_ms: int = 5000
    min_heartbeat_interval_ms: int = 5000
    max_heartbeat_interval_ms: int = 15000
    max_size: int = 200
    record_lock_duration_ms: int = 30000
    min_record_lock_duration_ms: int = 15000
    max_record_lock_duration_ms: int = 60000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2000

    def __post_init__(self) -> None:
        def between(name: str, value: int, lo: int, hi: int, lo_name: str, hi_name: str) -> None:
            if value < lo:
                raise ValueError(f"{name} must be greater than or equal to {lo_name}")
            if value > hi:
                raise ValueError(f"{name} must be less than or equal to {hi_name}")
        between("group.share.session.timeout.ms", self.session_timeout_ms, self.min_session_timeout_ms,
                self.max_session_timeout_ms, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")
        between("group.share.heartbeat.interval.ms", self.heartbeat_interval_ms, self.min_heartbeat_interval_ms,
                self.max_heartbeat_interval_ms, "group.share.min.heartbeat.interval.ms",
                "group.share.max.heartbeat.interval.ms")
        between("group.share.record.lock.duration.ms", self.record_lock_duration_ms, self.min_record_lock_duration_ms,
                self.max_record_lock_duration_ms, "group.share.min.record.lock.duration.ms",
                "group.share.max.record.lock.duration.ms")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms")
        between("group.share.delivery.count.limit", self.delivery_count_limit, 2, 10, "2", "10")
        between("group.share.partition.max.record.locks", self.partition_max_record_locks, 100, 10000, "100", "10000")
        if self.max_size < 1:
            raise ValueError("group.share.max.size must be at least 1")

    @classmethod
    def from_properties(cls, props: Mapping[str, object]) -> ShareGroupConfig:
        return cls(**{field_name: int(cast("str | int", props[name])) if props.get(name) is not None else default
                      for name, (field_name, default) in _KAFKA_NAMES.items()})


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: tuple[str, ...]
    assignment: Assignment
    deadline_ms: int     # SESSION_NOT_STARTED for a member replayed until ``load_complete``
    previous_member_epoch: int = -1


SESSION_NOT_STARTED = -1     # a replayed member's deadline until its session starts (load_complete)


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    subscribed_metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    metadata_hash: int = 0     # of subscribed_metadata (records.metadata_hash), what record 11 keeps of it

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass(frozen=True)
class ShareGroupHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    client_id: str
    client_host: str
    topics: TopicsView
    token: Any = None


@dataclass(frozen=True)
class ShareGroupDescribe:
    group_ids: list[str]
    token: Any = None


@dataclass(frozen=True)
class ShareGroupHeartbeatResult:
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None
    left: tuple[str, ...] = ()   # members that left or expired: their acquired records go back


@dataclass(frozen=True)
class DescribedShareGroup:
    group_id: str
    error_code: int
    error_message: str | None
    group_state: str
    group_epoch: int
    assignment_epoch: int
    members: tuple[ShareMember, ...]


@dataclass(frozen=True)
class _Persisted:
    """What a group's records say about it: compared before and after a request to find the
    records the request writes."""
    epoch: int
    metadata_hash: int
    assignment_epoch: int
    members: dict[str, tuple[str | None, str, str, tuple[str, ...]]]
    target: dict[str, Assignment]
    current: dict[str, tuple[int, int, Assignment]]


def _persisted(group: ShareGroup | None) -> _Persisted | None:
    if group is None:
        return None
    return _Persisted(
        epoch=group.group_epoch, metadata_hash=group.metadata_hash, assignment_epoch=group.assignment_epoch,
        members={m.member_id: (m.rack_id, m.client_id, m.client_host, m.subscribed) for m in group.members.values()},
        target={mid: dict(a) for mid, a in group.target.items()},
        current={m.member_id: (m.member_epoch, m.previous_member_epoch, dict(m.assignment))
                 for m in group.members.values()})


def records_between(group_id: str, before: _Persisted | None, after: _Persisted | None) -> list[Record]:
    """The records that take a group from ``before`` to ``after`` in Kafka's order: a departed
    member's current assignment, target assignment and subscription tombstoned first (14, 13, 10,
    as Kafka's removeMember records, whose replay requires that order), then new or changed
    subscriptions (10), the group epoch (11), changed target assignments (13) and the assignment
    epoch (12), then changed current assignments (14). A deleted group (``after`` None) also
    tombstones its assignment epoch, state-partition metadata and epoch, as Kafka's
    createGroupTombstoneRecords."""
    empty = _Persisted(0, 0, 0, {}, {}, {})
    if before is None and after == empty:
        return []      # created and left untouched (a refused first join): nothing to write
    old = before or empty
    new = after or empty
    out: list[Record] = []
    departed = sorted(old.members.keys() - new.members.keys())
    for mid in departed:
        out.append(sr.current_member_assignment(group_id, mid))
        if mid in old.target and mid not in new.target:
            out.append(sr.target_assignment_member(group_id, mid, None))
        out.append(sr.member_metadata(group_id, mid))
    for mid, (rack, client_id, host, subscribed) in sorted(new.members.items()):
        if old.members.get(mid) != new.members[mid]:
            out.append(sr.member_metadata(group_id, mid, rack, client_id, host, subscribed))
    if after is not None and (before is None or (old.epoch, old.metadata_hash) != (new.epoch, new.metadata_hash)):
        out.append(sr.group_metadata(group_id, new.epoch, new.metadata_hash))
    for mid in sorted(old.target.keys() | new.target.keys()):
        if old.target.get(mid) != new.target.get(mid) and not (mid in departed and mid not in new.target):
            out.append(sr.target_assignment_member(group_id, mid, new.target.get(mid)))
    if after is not None and (before is None or old.assignment_epoch != new.assignment_epoch):
        out.append(sr.target_assignment_metadata(group_id, new.assignment_epoch))
    for mid, (epoch, previous, assignment) in sorted(new.current.items()):
        if old.current.get(mid) != new.current[mid]:
            out.append(sr.current_member_assignment(group_id, mid, epoch, previous, assignment))
    if after is None and before is not None:
        out += [sr.target_assignment_metadata(group_id, None), sr.state_partition_metadata_tombstone(group_id),
                sr.group_metadata(group_id, None)]
    return out


def simple_assign(subscriptions: Mapping[str, tuple[str, ...]], topics: TopicsView) -> dict[str, Assignment]:
    """Kafka's SimpleAssignor for the homogeneous case, per topic: with at least as many partitions
    as subscribers each partition goes to one member, round-robin over the sorted members; with
    more subscribers than partitions each member gets one partition, round-robin over the
    partitions, so a partition is shared by several members and every member has work."""
    out: dict[str, Assignment] = {m: {} for m in subscriptions}
    for name in sorted({t for subs in subscriptions.values() for t in subs}):
        if name not in topics:
            continue
        tid, count = topics[name]
        members = sorted(m for m, subs in subscriptions.items() if name in subs)
        if not members or count <= 0:
            continue
        chosen: dict[str, set[int]] = {m: set() for m in members}
        if count >= len(members):
            for p in range(count):
                chosen[members[p % len(members)]].add(p)
        else:
            for i, m in enumerate(members):
                chosen[m].add(i % count)
        for m, ps in chosen.items():
            out[m][tid] = frozenset(ps)
    return out


class ShareGroupCoordinator:
    """Every share group this broker coordinates. Implements :class:`coordinator.step.Coordinator`
    (``handle`` steps a ShareGroupHeartbeat or ShareGroupDescribe, its step carrying the answer and
    the records); it has no timers (expiry is lazy). The API layer calls ``heartbeat`` /
    ``describe`` / ``delete`` directly and takes the records each left with ``take_records``
    (``(group id, record)``: the shell writes each group's to that group's partition)."""

    def __init__(self, config: ShareGroupConfig | None = None) -> None:
        self.config = config or ShareGroupConfig()
        self.groups: dict[str, ShareGroup] = {}
        self.departed: list[tuple[str, str]] = []   # (group, member) that left or expired, for the shell
        self.records: list[tuple[str, Record]] = []  # (group, record) to write, for the shell
        self._unloaded = False
        # the group configs share.session.timeout.ms / share.heartbeat.interval.ms, per group
        self.timeouts: dict[str, tuple[int, int]] = {}

    def configure(self, group_id: str, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """The group's ``share.session.timeout.ms`` and ``share.heartbeat.interval.ms`` (Kafka's
        group configs, set by the shell before each heartbeat; the broker's values otherwise). A
        member's deadline is set on each heartbeat, so a change applies from its next one."""
        if (session_timeout_ms, heartbeat_interval_ms) == (self.config.session_timeout_ms,
                                                           self.config.heartbeat_interval_ms):
            self.timeouts.pop(group_id, None)
        else:
            self.timeouts[group_id] = (session_timeout_ms, heartbeat_interval_ms)

    def _timeouts(self, group_id: str) -> tuple[int, int]:
        return self.timeouts.get(group_id, (self.config.session_timeout_ms, self.config.heartbeat_interval_ms))

    # -- the Coordinator protocol ------------------------------------------------------------------
    def handle(self, request: Any, now_ms: int) -> Step:
        step = Step()
        if self._unloaded:
            step.complete(request.token, self.unavailable(request))
        elif isinstance(request, ShareGroupHeartbeat):
            step.complete(request.token, self.heartbeat(request, now_ms))
        elif isinstance(request, ShareGroupDescribe):
            step.complete(request.token, self.describe(request.group_ids, now_ms))
        else:
            raise TypeError(f"unsupported request {type(request).__name__}")
        step.records.extend(record for _, record in self.take_records())
        return step

    def tick(self, now_ms: int) -> Step:
        """No timers: a member's session expiry is evaluated when its group is next touched."""
        return Step()

    def next_deadline(self) -> int | None:
        return None

    def replay(self, key: bytes, value: bytes | None, producer_id: int | None = None) -> None:
        """Apply one share-group record (types 10-15) of ``__consumer_offsets``, as Kafka's
        GroupMetadataManager replays them; other records are not this coordinator's. Replayed
        members' sessions start at ``load_complete``."""
        if not sr.is_share_group_record(key):
            return
        kind = sr.key_type(key)
        k = sr.decode_key(key)
        gid = k.group_id
        group = self.groups.get(gid)
        if kind == sr.STATE_PARTITION_METADATA:
            return                    # only ever tombstoned here (coordinator/share/records.py)
        if value is None:             # tombstones
            if kind == sr.GROUP_METADATA:
                self.groups.pop(gid, None)
            elif group is None:
                pass
            elif kind == sr.TARGET_ASSIGNMENT_METADATA:
                group.assignment_epoch = 0
            elif kind == sr.TARGET_ASSIGNMENT_MEMBER:
                group.target.pop(k.member_id, None)
            elif kind == sr.MEMBER_METADATA:
                group.members.pop(k.member_id, None)
            elif (member := group.members.get(k.member_id)) is not None:    # CURRENT_MEMBER_ASSIGNMENT
                member.member_epoch, member.previous_member_epoch, member.assignment = 0, -1, {}
            return
        v: Any = sr.decode_value(kind, value)
        if group is None:
            group = self.groups[gid] = ShareGroup(gid)
        if kind == sr.GROUP_METADATA:
            group.group_epoch, group.metadata_hash = v.epoch, v.metadata_hash
        elif kind == sr.TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = v.assignment_epoch
        elif kind == sr.TARGET_ASSIGNMENT_MEMBER:
            group.target[k.member_id] = sr.assignment_of(v.topic_partitions)
        else:
            member = group.members.get(k.member_id)
            if member is None:
                member = group.members[k.member_id] = ShareMember(
                    member_id=k.member_id, member_epoch=0, client_id="", client_host="", rack_id=None,
                    subscribed=(), assignment={}, deadline_ms=SESSION_NOT_STARTED)
            if kind == sr.MEMBER_METADATA:
                member.rack_id, member.client_id, member.client_host = v.rack_id, v.client_id, v.client_host
                member.subscribed = tuple(v.subscribed_topic_names)
            else:                     # CURRENT_MEMBER_ASSIGNMENT
                member.member_epoch, member.previous_member_epoch = v.member_epoch, v.previous_member_epoch
                member.assignment = sr.assignment_of(v.assigned_partitions)

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        """Nothing to do: share-group records are never transactional."""

    def load_complete(self, now_ms: int) -> Step:
        """The replayed members' sessions start now (Kafka's onLoaded schedules their session
        timeouts): each must heartbeat within its group's session timeout or is removed."""
        for group in self.groups.values():
            session_timeout, _ = self._timeouts(group.group_id)
            for member in group.members.values():
                if member.deadline_ms == SESSION_NOT_STARTED:
                    member.deadline_ms = now_ms + session_timeout
        return Step()

    def forget(self, group_ids: list[str]) -> None:
        """Drop groups without writing anything: their ``__consumer_offsets`` partition is no longer
        coordinated here (or is replayed again); its next coordinator replays them."""
        for gid in group_ids:
            self.groups.pop(gid, None)

    def take_records(self) -> list[tuple[str, Record]]:
        """(group id, record) written since the last call, in order, for the shell to append."""
        out, self.records = self.records, []
        return out

    def _record(self, group_id: str, before: _Persisted | None) -> None:
        self.records.extend((group_id, r) for r in
                            records_between(group_id, before, _persisted(self.groups.get(group_id))))

    def unload(self) -> Step:
        self.groups.clear()
        self._unloaded = True
        return Step()

    @property
    def unloaded(self) -> bool:
        return self._unloaded

    def unavailable(self, request: Any, error: int | None = None) -> Any:
        err = NOT_COORDINATOR if error is None else error
        if isinstance(request, ShareGroupHeartbeat):
            return ShareGroupHeartbeatResult(error_code=err, error_message=None,
                                             member_id=request.member_id or None,
                                             member_epoch=request.member_epoch,
                                             heartbeat_interval_ms=self.config.heartbeat_interval_ms,
                                             assignment=None)
        if isinstance(request, ShareGroupDescribe):
            return [DescribedShareGroup(group_id=gid, error_code=err, error_message=None, group_state="",
                                        group_epoch=-1, assignment_epoch=-1, members=()) for gid in request.group_ids]
        raise TypeError(type(request).__name__)

    def take_departed(self) -> list[tuple[str, str]]:
        """Members gone since the last call (their share sessions and records are the shell's)."""
        out, self.departed = self.departed, []
        return out

    # -- time ------------------------------------------------------------------------------------
    def expire(self, group: ShareGroup, now_ms: int) -> list[str]:
        """Remove members whose session timed out; returns their ids."""
        gone = [m.member_id for m in group.members.values() if m.deadline_ms <= now_ms]
        for mid in gone:
            del group.members[mid]
            group.target.pop(mid, None)      # Kafka removes a fenced member's target assignment with it
            self.departed.append((group.group_id, mid))
        if gone:
            group.group_epoch += 1
        return gone

    def is_member(self, group_id: str, member_id: str, now_ms: int) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members and group.members[member_id].deadline_ms > now_ms

    # -- ShareGroupHeartbeat ------------------------------------------------------------------------
    def heartbeat(self, req: ShareGroupHeartbeat, now_ms: int) -> ShareGroupHeartbeatResult:
        """The heartbeat's answer; its records are left for ``take_records``."""
        before = _persisted(self.groups.get(req.group_id))
        result = self._heartbeat(req, now_ms)
        self._record(req.group_id, before)
        return result

    def _heartbeat(self, req: ShareGroupHeartbeat, now_ms: int) -> ShareGroupHeartbeatResult:
        session_timeout, interval = self._timeouts(req.group_id)

        def error(code: int, message: str) -> ShareGroupHeartbeatResult:
            return ShareGroupHeartbeatResult(error_code=code, error_message=message,
                                             member_id=req.member_id or None, member_epoch=req.member_epoch,
                                             heartbeat_interval_ms=interval, assignment=None)

        if not req.group_id:
            return error(INVALID_REQUEST, "GroupId can't be empty.")
        if not req.member_id:
            return error(INVALID_REQUEST, "MemberId can't be empty.")
        if req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            return error(INVALID_REQUEST, f"MemberEpoch is invalid: {req.member_epoch}.")
        if req.member_epoch == 0 and not req.subscribed_topic_names:
            return error(INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        if req.rack_id is not None and not req.rack_id.strip():
            return error(INVALID_REQUEST, "RackId can't be empty.")

        group = self.groups.get(req.group_id)
        left = self.expire(group, now_ms) if group is not None else []
        member = group.members.get(req.member_id) if group is not None else None

        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if group is not None and member is not None:
                del group.members[req.member_id]
                group.target.pop(req.member_id, None)
                group.group_epoch += 1
                left.append(req.member_id)
                self.departed.append((group.group_id, req.member_id))
                self._retarget(group, req.topics)
            return ShareGroupHeartbeatResult(error_code=NONE, error_message=None, member_id=req.member_id,
                                             member_epoch=LEAVE_GROUP_MEMBER_EPOCH, heartbeat_interval_ms=interval,
                                             assignment=None, left=tuple(left))
        if req.member_epoch > 0:
            if member is None:
                return self._with_left(error(UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                                                 f"{req.group_id}."), left)
            if req.member_epoch != member.member_epoch:
                return self._with_left(error(FENCED_MEMBER_EPOCH, f"The share group member has a smaller member "
                                             f"epoch ({req.member_epoch}) than the one known by the group "
                                             f"coordinator ({member.member_epoch})."), left)
        if group is None:
            group = self.groups[req.group_id] = ShareGroup(req.group_id)
        bump = False
        if member is None:
            if len(group.members) >= self.config.max_size:
                return self._with_left(error(GROUP_MAX_SIZE_REACHED, f"The share group has reached its maximum "
                                             f"capacity of {self.config.max_size} members."), left)
            member = ShareMember(member_id=req.member_id, member_epoch=0, client_id=req.client_id,
                                 client_host=req.client_host, rack_id=req.rack_id,
                                 subscribed=tuple(sorted(set(req.subscribed_topic_names or ()))), assignment={},
                                 deadline_ms=0)
            group.members[req.member_id] = member
            bump = True
        elif req.subscribed_topic_names is not None:
            subscribed = tuple(sorted(set(req.subscribed_topic_names)))
            if subscribed != member.subscribed:
                member.subscribed = subscribed
                bump = True
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        member.deadline_ms = now_ms + session_timeout
        if bump:
            group.group_epoch += 1
        self._retarget(group, req.topics)

        previous_epoch = member.member_epoch
        if member.member_epoch != group.assignment_epoch:   # nothing to revoke: straight to the target
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
            member.assignment = group.target.get(member.member_id, {})
        send = member.member_epoch != previous_epoch or req.member_epoch == 0 or req.subscribed_topic_names is not None
        return ShareGroupHeartbeatResult(error_code=NONE, error_message=None, member_id=member.member_id,
                                         member_epoch=member.member_epoch, heartbeat_interval_ms=interval,
                                         assignment=dict(member.assignment) if send else None, left=tuple(left))

    @staticmethod
    def _with_left(result: ShareGroupHeartbeatResult, left: list[str]) -> ShareGroupHeartbeatResult:
        return dataclasses.replace(result, assignment=None, left=tuple(left))

    def _retarget(self, group: ShareGroup, topics: TopicsView) -> None:
        """Recompute the target assignment when the group epoch moved or the subscribed topics'
        metadata (ids, partition counts) changed."""
        names = {t for m in group.members.values() for t in m.subscribed}
        metadata = {n: topics[n] for n in sorted(names) if n in topics}
        hash_ = sr.metadata_hash(metadata)
        if hash_ != group.metadata_hash:      # a replayed group has the hash only
            group.group_epoch += 1
        group.subscribed_metadata, group.metadata_hash = metadata, hash_
        if group.assignment_epoch == group.group_epoch:
            return
        group.target = simple_assign({m.member_id: m.subscribed for m in group.members.values()}, metadata)
        group.assignment_epoch = group.group_epoch

    # -- DeleteGroups ------------------------------------------------------------------------------------
    def delete(self, group_id: str, now_ms: int) -> int:
        """DeleteGroups of an empty share group: its records are tombstoned (``take_records``)."""
        group = self.groups.get(group_id)
        if group is None:
            return GROUP_ID_NOT_FOUND
        before = _persisted(group)
        self.expire(group, now_ms)
        if not group.members:
            del self.groups[group_id]
        self._record(group_id, before)
        return NON_EMPTY_GROUP if group.members else NONE

    # -- ShareGroupDescribe ---------------------------------------------------------------------------
    def describe(self, group_ids: list[str], now_ms: int) -> list[DescribedShareGroup]:
        out = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if group is None:
                out.append(DescribedShareGroup(group_id=gid, error_code=GROUP_ID_NOT_FOUND,
                                               error_message=f"Group {gid} not found.", group_state="Dead",
                                               group_epoch=-1, assignment_epoch=-1, members=()))
                continue
            before = _persisted(group)
            self.expire(group, now_ms)
            self._record(gid, before)
            out.append(DescribedShareGroup(group_id=gid, error_code=NONE, error_message=None,
                                           group_state=group.state, group_epoch=group.group_epoch,
                                           assignment_epoch=group.assignment_epoch,
                                           members=tuple(group.members.values())))
        return out


def _implements_coordinator(coordinator: ShareGroupCoordinator) -> Coordinator:
    """Never called: mypy checks here that ShareGroupCoordinator implements the Coordinator protocol."""
    return coordinator
