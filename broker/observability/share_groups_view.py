"""The console's share groups (KIP-932): ``/share-groups`` lists them, ``/share-groups/<id>`` shows a
group's members (member id, epoch, client id and host, assigned partitions) and, per share
partition, its start offset (SPSO), end offset, the in-flight records by state (available,
acquired, acknowledged, archived) and the lag.

Where the state lives: a share group's membership on the broker whose share-group coordinator its
members heartbeat to, each share partition's in-flight records on the partition's leader (in
memory, beside what the share coordinator persists; a share partition no member fetched since the
leader took over is not loaded and not shown). No Kafka request tells the in-flight records by
state (DescribeShareGroupOffsets answers the start offset and the lag only), so each broker serves
its own part as JSON at ``/share-state`` and a page merges every broker's, asked in parallel
within cluster_view.PEER_TIMEOUT_S (a broker without ``samsa.http.listener`` or that does not
answer is named on the page).

Lag is KIP-1226's, as DescribeShareGroupOffsets v1 answers it: the leader's high watermark less the
start offset less the records past the start already delivery-complete (acknowledged or archived).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import trio

from coordinator.share.partition import RecordState

from . import cluster_view
from .markup import e, table, td

if TYPE_CHECKING:
    from broker.server.broker_server import Broker


@dataclass(slots=True)
class ShareMemberView:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    subscribed: list[str]
    assignment: dict[str, list[int]]


@dataclass(slots=True)
class ShareGroupView:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    coordinator: int
    members: list[ShareMemberView] = field(default_factory=list)


@dataclass(slots=True)
class SharePartitionView:
    group_id: str
    topic: str
    partition: int
    start_offset: int
    end_offset: int
    available: int
    acquired: int
    acknowledged: int
    archived: int
    high_watermark: int
    leader: int

    @property
    def in_flight(self) -> int:
        return self.available + self.acquired + self.acknowledged + self.archived

    @property
    def lag(self) -> int:
        """KIP-1226: HW − start offset − delivery-complete records past the start; -1 unknown."""
        if self.high_watermark < 0 or self.start_offset < 0:
            return -1
        return max(0, self.high_watermark - self.start_offset - self.acknowledged - self.archived)


@dataclass(slots=True)
class ShareView:
    groups: list[ShareGroupView] = field(default_factory=list)
    partitions: list[SharePartitionView] = field(default_factory=list)
    missing: dict[int, str] = field(default_factory=dict)


def local_state(broker: Broker) -> dict[str, Any]:
    """This broker's part as JSON: the share groups its coordinator holds and the share partitions
    it leads. Read-only (no lock expiry is evaluated: a lock past its deadline still counts as
    acquired until the partition is next touched, as Kafka's lazy timers would show it)."""
    shares = broker.share_groups
    # the cluster's topics (the coordinator of a group need not host the topics it assigns)
    by_id = {t.topic_id: name for name, t in broker.topology.topics().items()}
    groups = []
    for gid, g in sorted(shares.coordinator.groups.items()):
        groups.append({"group_id": gid, "state": g.state, "group_epoch": g.group_epoch,
                       "assignment_epoch": g.assignment_epoch, "coordinator": broker.node_id,
                       "members": [{"member_id": m.member_id, "member_epoch": m.member_epoch,
                                    "client_id": m.client_id, "client_host": m.client_host,
                                    "subscribed": list(m.subscribed),
                                    "assignment": {by_id.get(tid, str(tid)): sorted(ps)
                                                   for tid, ps in sorted(m.assignment.items(), key=lambda kv: str(kv[0]))
                                                   if ps}}
                                   for m in g.members.values()]})
    partitions = []
    for (gid, tid, index), sp in sorted(shares.partitions.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        name = by_id.get(tid)
        part = broker.logs.partition(name, index) if name is not None else None
        counts = {s: 0 for s in RecordState}
        for r in sp.records.values():
            counts[r.state] += 1
        partitions.append({"group_id": gid, "topic": name or str(tid), "partition": index,
                           "start_offset": sp.start_offset, "end_offset": sp.end_offset,
                           "available": counts[RecordState.AVAILABLE], "acquired": counts[RecordState.ACQUIRED],
                           "acknowledged": counts[RecordState.ACKNOWLEDGED], "archived": counts[RecordState.ARCHIVED],
                           "high_watermark": part.high_watermark if part is not None else -1,
                           "leader": broker.node_id})
    return {"groups": groups, "partitions": partitions}


def _merge(view: ShareView, state: dict[str, Any]) -> None:
    for g in state.get("groups", []):
        view.groups.append(ShareGroupView(g["group_id"], g["state"], g["group_epoch"], g["assignment_epoch"],
                                          g["coordinator"], [ShareMemberView(**m) for m in g["members"]]))
    view.partitions.extend(SharePartitionView(**p) for p in state.get("partitions", []))


async def gather(broker: Broker) -> ShareView:
    """Every broker's share groups and share partitions: this broker's read locally, the others'
    from their consoles' ``/share-state`` in parallel."""
    view = ShareView()
    _merge(view, local_state(broker))
    others = [b for b in broker.topology.brokers() if b.id != broker.node_id]

    async def one(node: int) -> None:
        state, why = await cluster_view.peer_json(broker, node, "/share-state")
        if state is None:
            view.missing[node] = why
        else:
            _merge(view, state)

    async with trio.open_nursery() as nursery:
        for b in others:
            if b.fenced:
                view.missing[b.id] = f"broker {b.id} is fenced (not registered alive): its share groups are not shown"
            else:
                nursery.start_soon(one, b.id)
    view.groups.sort(key=lambda g: g.group_id)
    view.partitions.sort(key=lambda p: (p.group_id, p.topic, p.partition))
    return view


def _missing(view: ShareView) -> str:
    if not view.missing:
        return ""
    items = "".join(f"<li>{e(why)}</li>" for _, why in sorted(view.missing.items()))
    return f'<div class="missing"><b>Incomplete:</b><ul>{items}</ul></div>'


def _link(group_id: str) -> str:
    return f'<a href="/share-groups/{quote(group_id, safe="")}">{e(group_id)}</a>'


def _assignment(a: dict[str, list[int]]) -> str:
    return "; ".join(f"{t}: {','.join(map(str, ps))}" for t, ps in sorted(a.items()))


def list_page(view: ShareView) -> str:
    if not view.groups:
        return f'{_missing(view)}<h2>Share groups</h2><p class="muted">No share groups.</p>'
    rows = []
    for g in view.groups:
        parts = [p for p in view.partitions if p.group_id == g.group_id]
        lags = [p.lag for p in parts if p.lag >= 0]
        rows.append([td(_link(g.group_id), raw=True), td(g.state, cls="state"), td(len(g.members), num=True),
                     td(g.group_epoch, num=True), td(len(parts), num=True),
                     td(sum(p.acquired for p in parts), num=True),
                     td(sum(lags), num=True, cls="lag" if sum(lags) else "ok"), td(g.coordinator, num=True)])
    return (f"{_missing(view)}<h2>Share groups</h2>"
            + table(["Group", "State", "Members", "Group epoch", "Share partitions", "Acquired", "Lag", "Coordinator"],
                    rows, "share-groups"))


def group_page(view: ShareView, group_id: str) -> str | None:
    g = next((g for g in view.groups if g.group_id == group_id), None)
    parts = [p for p in view.partitions if p.group_id == group_id]
    if g is None and not parts:
        return None if not view.missing else \
            f"{_missing(view)}<h2>Share group {e(group_id)}</h2><p>Not found on the brokers that answered.</p>"
    members = table(["Member id", "Member epoch", "Client id", "Host", "Subscribed", "Assigned partitions"], [[
        td(m.member_id), td(m.member_epoch, num=True), td(m.client_id), td(m.client_host),
        td(", ".join(m.subscribed)), td(_assignment(m.assignment))] for m in (g.members if g else [])],
        "members") if g is not None and g.members else '<p class="muted">No members.</p>'
    partitions = table(["Topic", "Partition", "Start offset", "End offset", "In flight", "Available", "Acquired",
                        "Acknowledged", "Archived", "High watermark", "Lag", "Leader"], [[
        td(f'<a href="/topics/{quote(p.topic, safe="")}">{e(p.topic)}</a>', raw=True), td(p.partition, num=True),
        td(p.start_offset, num=True), td(p.end_offset, num=True), td(p.in_flight, num=True),
        td(p.available, num=True), td(p.acquired, num=True), td(p.acknowledged, num=True), td(p.archived, num=True),
        td(p.high_watermark, num=True), td(p.lag if p.lag >= 0 else "", num=True, cls="lag" if p.lag > 0 else "ok"),
        td(p.leader, num=True)] for p in parts], "share-partitions") if parts else \
        '<p class="muted">No share partition loaded: a share partition is read by its leader when a member first ' \
        'fetches from it.</p>'
    head = (f"<p>State <span class=\"state\" id=\"group-state\">{e(g.state)}</span> · group epoch {g.group_epoch} · "
            f"assignment epoch {g.assignment_epoch} · coordinator broker {g.coordinator}</p>") if g is not None else \
        '<p class="muted">No member heartbeats on the brokers that answered; share-partition state below.</p>'
    return (f"{_missing(view)}<h2>Share group {e(group_id)}</h2>{head}<h2>Members</h2>{members}"
            f"<h2>Share partitions</h2><p class=\"muted\">Held by each partition's leader; lag as KIP-1226 "
            f"(high watermark − start offset − records past the start acknowledged or archived).</p>{partitions}")
