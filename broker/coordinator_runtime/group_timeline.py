"""Group lifecycle as people want to see it: info log lines (member joined/left/expired with the
reason, rebalance started/completed with generation, duration and assignment sizes) and a
per-group rebalance timeline for the web console.

The group coordinators are pure state machines and say nothing about this, so it is derived in
the shell from what it already sees: the requests it steps (JoinGroup and LeaveGroup carry the
client's reason), the group metadata records each step writes (a generation's members and
assignment, or an emptied group), and the group's state and members as DescribeGroups answers
them right after a step that touched the group. An expiry that fires inside a timer tick with no
record is noticed at the group's next request (the other members' heartbeats), so its time is
that request's.
"""
from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol
from collections.abc import Callable

import structlog

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from coordinator.group import coordinator as g
from coordinator.group.offsets_records import GroupMetadataKey, decode_group_metadata_value, decode_key
from coordinator.step import Step

log = structlog.get_logger("samsa.groups")

# the requests whose own step may change a group's members without a group metadata record
_MEMBERSHIP_REQUESTS = (g.JoinGroup, g.SyncGroup, g.Heartbeat, g.LeaveGroup)


class GroupQueries(Protocol):
    """What the timeline asks of the GroupShell (broker/coordinator_runtime/group_runtime.py), which owns it."""

    def query(self, partition: int, request: Any) -> Any: ...


def decode_assignment(data: bytes, protocol_type: str) -> dict[str, list[int]]:
    """A consumer-protocol member assignment as topic → partitions ({} for other protocols or
    bytes that do not parse: a console must not fail on a custom assignor's bytes)."""
    if protocol_type != "consumer" or not data:
        return {}
    try:
        a = ConsumerProtocolAssignment.decode(bytes(data))
    except Exception:
        return {}
    out: dict[str, list[int]] = {}
    for tp in a.assigned_partitions:
        out.setdefault(tp.topic, []).extend(tp.partitions)
    return {t: sorted(ps) for t, ps in sorted(out.items())}


TIMELINE_LENGTH = 50      # generations kept per group
REBALANCING = ("PreparingRebalance", "CompletingRebalance")


@dataclass(slots=True)
class MemberChange:
    member_id: str
    client_id: str
    client_host: str
    reason: str


@dataclass(slots=True)
class Rebalance:
    """One generation's rebalance: what started it and how it ended."""
    started_ms: int
    previous_generation: int
    reasons: list[str] = field(default_factory=list)
    joined: list[MemberChange] = field(default_factory=list)
    left: list[MemberChange] = field(default_factory=list)
    generation: int | None = None
    completed_ms: int | None = None
    protocol: str | None = None
    leader: str | None = None
    assignment: dict[str, int] = field(default_factory=dict)   # member id -> partitions assigned
    held: dict[str, list[str]] = field(default_factory=dict)    # member id -> "topic-partition"s (console detail)

    @property
    def duration_ms(self) -> int | None:
        return None if self.completed_ms is None else self.completed_ms - self.started_ms


def timeline_to_json(timeline: list[Rebalance]) -> list[dict[str, Any]]:
    """A timeline as JSON, for another broker's console (broker/observability/cluster_view.py)."""
    return [asdict(r) for r in timeline]


def timeline_from_json(data: list[dict[str, Any]]) -> list[Rebalance]:
    """The inverse of :func:`timeline_to_json`."""
    out = []
    for d in data:
        d = dict(d)
        d["joined"] = [MemberChange(**m) for m in d.get("joined", [])]
        d["left"] = [MemberChange(**m) for m in d.get("left", [])]
        out.append(Rebalance(**d))
    return out


@dataclass(slots=True)
class _Tracked:
    state: str = ""
    generation: int = 0
    members: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (client id, host)
    current: Rebalance | None = None
    timeline: deque = field(default_factory=lambda: deque(maxlen=TIMELINE_LENGTH))
    leaving: dict[str, str] = field(default_factory=dict)              # member id -> leave reason
    joining_reason: str | None = None


class GroupTimeline:
    def __init__(self, shell: GroupQueries, clock: Callable[[], int]) -> None:
        self.shell = shell
        self.clock = clock
        self.groups: dict[str, _Tracked] = {}
        self._request: Any = None
        self._observing = False

    # -- what the shell tells us -------------------------------------------------------------
    def before_request(self, request: Any) -> None:
        self._request = request
        gid = getattr(request, "group_id", None)
        if gid is None:
            return
        if isinstance(request, g.JoinGroup):
            t = self.groups.setdefault(gid, _Tracked())
            if request.member_id == g.UNKNOWN_MEMBER_ID:
                t.joining_reason = request.reason or "new member"
            else:
                t.joining_reason = request.reason or "member rejoined"
        elif isinstance(request, g.LeaveGroup):
            t = self.groups.setdefault(gid, _Tracked())
            for m in request.members:
                t.leaving[m.member_id] = m.reason or "the member left the group"

    def after_step(self, partition: int, step: Step) -> None:
        if self._observing:
            return
        touched: dict[str, Any] = {}
        for key, value in step.records:
            if key.startswith(b"\x00\x02"):       # group metadata record (key version 2)
                k = decode_key(key)
                if isinstance(k, GroupMetadataKey):
                    touched[k.group] = decode_group_metadata_value(value) if value is not None else None
        request, self._request = self._request, None    # only the request's own step names it
        if isinstance(request, _MEMBERSHIP_REQUESTS) and request.group_id:
            touched.setdefault(request.group_id, False)
        if not touched:
            return
        self._observing = True
        try:
            for group_id, record in touched.items():
                self._observe(partition, group_id, record)
        finally:
            self._observing = False

    # -- deriving the events -----------------------------------------------------------------
    def _observe(self, partition: int, group_id: str, record: Any) -> None:
        now = self.clock()
        described = self.shell.query(partition, g.DescribeGroups(groups=[group_id], api_version=5))
        d = described.groups[0] if described and described.groups else None
        t = self.groups.setdefault(group_id, _Tracked())
        if d is None or d.error_code or d.group_state == "Dead":
            if record is None and t.state:
                log.info("group deleted", group=group_id)
            self.groups.pop(group_id, None)
            return
        members = {m.member_id: (m.client_id, m.client_host) for m in d.members}
        was_rebalancing = t.current is not None
        for mid in members.keys() - t.members.keys():
            reason = t.joining_reason if t.joining_reason and t.joining_reason != "member rejoined" else "new member"
            self._start(t, now, f"{mid} joined: {reason}").joined.append(MemberChange(mid, members[mid][0], members[mid][1], reason))
            log.info("member joined", group=group_id, member_id=mid, client_id=members[mid][0],
                     client_host=members[mid][1], reason=reason)
        for mid in t.members.keys() - members.keys():
            left = mid in t.leaving
            reason = t.leaving.pop(mid, "") or (
                "did not rejoin within the rebalance timeout" if t.state in REBALANCING
                else "session timeout expired")
            self._start(t, now, f"{mid} {'left' if left else 'expired'}: {reason}").left.append(MemberChange(mid, *t.members[mid], reason=reason))
            log.info("member left" if left else "member expired", group=group_id, member_id=mid,
                     client_id=t.members[mid][0], reason=reason)
        if d.group_state in REBALANCING and t.current is None:
            # an existing member's rejoin: a lone member's JoinGroup completes the join phase in
            # its own step, so the group is already CompletingRebalance when first seen here
            self._start(t, now, t.joining_reason or "member rejoined")
        if t.current is not None and not was_rebalancing:
            log.info("rebalance started", group=group_id, generation=t.generation,
                     reasons=t.current.reasons, members=len(members))
        t.joining_reason = None
        t.members = members
        t.state = d.group_state
        if record:          # a generation's assignment (or an emptied group) was written
            self._complete(group_id, t, record, now)

    def _start(self, t: _Tracked, now: int, reason: str) -> Rebalance:
        """The group's current rebalance (begun now if none is), with ``reason`` added."""
        if t.current is None:
            t.current = Rebalance(started_ms=now, previous_generation=t.generation)
        t.current.reasons.append(reason)
        return t.current

    def _complete(self, group_id: str, t: _Tracked, value: Any, now: int) -> None:
        if value.generation <= t.generation:
            return              # a new group's generation-0 record, or a static member's new id
        r = t.current
        if r is None:       # a generation nothing here saw begin: say it began, then that it ended
            r = Rebalance(started_ms=now, previous_generation=t.generation)
            log.info("rebalance started", group=group_id, generation=t.generation, reasons=r.reasons,
                     members=len(value.members))
        r.generation, r.completed_ms = value.generation, now
        r.protocol, r.leader = value.protocol, value.leader
        decoded = {m.member_id: decode_assignment(m.assignment, value.protocol_type) for m in value.members}
        r.assignment = {m: sum(len(p) for p in a.values()) for m, a in decoded.items()}
        r.held = {m: [f"{t}-{p}" for t, ps in sorted(a.items()) for p in sorted(ps)] for m, a in decoded.items()}
        t.generation = value.generation
        t.current = None
        t.timeline.append(r)
        log.info("rebalance completed", group=group_id, generation=r.generation, duration_ms=r.duration_ms,
                 protocol=r.protocol, members=len(value.members), assignment=r.assignment or None,
                 state="Empty" if not value.members else "Stable")

    def timeline(self, group_id: str) -> list[Rebalance]:
        t = self.groups.get(group_id)
        if t is None:
            return []
        out = list(t.timeline)
        if t.current is not None:
            out.append(t.current)
        return out
