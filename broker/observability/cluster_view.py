"""The whole cluster as one broker's console shows it, gathered the way kafbat UI or AKHQ gather
it through the admin API: each broker is asked, over the broker-to-broker client
(broker/replica/client.py, the inter-broker listener), for what it coordinates or leads —
ListGroups, DescribeGroups and OffsetFetch for its consumer groups (classic and KIP-848: a
broker answers ListGroups with the groups of the ``__consumer_offsets`` partitions it leads),
ListTransactions and DescribeTransactions for its transactions in flight, ListOffsets and
DescribeLogDirs for the partitions it leads. This broker's own part is read locally
(broker/observability/introspect.py). Every other broker is asked in parallel, each within
``PEER_TIMEOUT_S`` (a cancel scope): a broker that is fenced, down or hung is named in
``missing`` with the reason, and the page renders without its part instead of hanging.

Nothing here runs on the request path: only a console page load calls :func:`gather`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable
from urllib.parse import quote, urlsplit, urlunsplit

import trio
from kafka.protocol.admin import (DescribeGroupsRequest, DescribeLogDirsRequest, DescribeTransactionsRequest,
                                  ListGroupsRequest, ListTransactionsRequest)
from kafka.protocol.consumer import ListOffsetsRequest, OffsetFetchRequest

from protocol.errors import ErrorCode

from . import introspect
from broker.coordinator_runtime.group_timeline import Rebalance, timeline_from_json
from .introspect import GroupView, MemberView, OffsetView
from broker.replica.client import BrokerConnection, BrokerConnectionError

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

# How long a page load waits for one other broker (all its requests); a console refreshes every 2 s.
PEER_TIMEOUT_S = 2.0
# Kafka's ListOffsets replica id for debugging tools: "latest" is then the log end offset
# (no isolation level applies), as Kafka's ReplicaManager answers a non-consumer replica id.
DEBUGGING_REPLICA_ID = -2
LATEST, EARLIEST = -1, -2


@dataclass(slots=True)
class TxnView:
    """A transaction in flight, as DescribeTransactions describes it (the same attribute names as
    coordinator/txn/coordinator.py's DescribedTransaction, which the local part uses)."""
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    start_time_ms: int
    timeout_ms: int
    topics: list[tuple[str, list[int]]]
    coordinator: int = -1


@dataclass(slots=True)
class LeaderOffsets:
    """A partition's offsets and size as its leader answers ListOffsets and DescribeLogDirs."""
    log_start_offset: int = -1
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_end_offset: int = -1
    size_bytes: int = -1


@dataclass(slots=True)
class ClusterView:
    groups: list[GroupView] = field(default_factory=list)
    transactions: list[Any] = field(default_factory=list)
    offsets: dict[tuple[str, int], LeaderOffsets] = field(default_factory=dict)
    missing: dict[int, str] = field(default_factory=dict)   # broker → why its part is absent

    def high_watermark(self, topic: str, partition: int) -> int:
        o = self.offsets.get((topic, partition))
        return -1 if o is None else o.high_watermark


def _endpoint(broker: Broker, node: int) -> tuple[str, int] | None:
    """(host, port) of a registered broker on the replication listener (else its first one)."""
    b = next((b for b in broker.topology.brokers() if b.id == node), None)
    ep = b.endpoint(broker.replicas.listener) if b is not None else None
    return None if ep is None else (ep.host, ep.port)


def local_view(broker: Broker, group: str | None = None, everything: bool = True,
               all_transactions: bool = False) -> ClusterView:
    """This broker's own part: the groups and transactions it coordinates (in flight, or in any
    state with ``all_transactions``), the partitions it leads (only the partitions without
    ``everything``)."""
    view = ClusterView(groups=introspect.groups(broker, only=group) if everything else [],
                       transactions=[] if not everything or group is not None else [TxnView(d.transactional_id, d.state, d.producer_id, d.producer_epoch,
                                             d.start_time_ms, d.timeout_ms, list(d.topics), broker.node_id)
                                     for d in introspect.transactions(broker, in_flight=not all_transactions)])
    for p in introspect.partitions(broker):
        if p.leader == broker.node_id:
            view.offsets[(p.topic, p.partition)] = LeaderOffsets(p.log_start_offset, p.high_watermark,
                                                                 p.last_stable_offset, p.log_end_offset, p.size_bytes)
    for g in view.groups:
        g.coordinator = broker.node_id
    return view


async def gather(broker: Broker, group: str | None = None, everything: bool = True,
                 all_transactions: bool = False) -> ClusterView:
    """The cluster's groups (or just ``group``), transactions in flight and partition offsets
    (only the offsets without ``everything``): this broker's part read locally, every other
    registered broker's asked in parallel."""
    view = local_view(broker, group, everything, all_transactions)
    topology = broker.topology
    others = [b for b in topology.brokers() if b.id != broker.node_id]
    if not others:
        return view     # one broker: its own part is the whole view
    peers = [b.id for b in others]
    for peer in others:
        if peer.fenced:
            b = peer.id
            view.missing[b] = f"broker {b} is fenced (not registered alive): its groups, transactions and " \
                              f"partitions are not shown"
    asked = [b for b in peers if b not in view.missing]

    async def one(node: int) -> None:
        endpoint = _endpoint(broker, node)
        if endpoint is None:
            view.missing[node] = f"broker {node} has no endpoint"
            return
        conn = BrokerConnection(*endpoint, f"samsa-console-{broker.node_id}", timeout_s=PEER_TIMEOUT_S)
        try:
            with trio.move_on_after(PEER_TIMEOUT_S) as scope:
                await _ask(conn, node, topology, view, group, everything, all_transactions)
            if scope.cancelled_caught:
                view.missing[node] = f"broker {node} did not answer within {PEER_TIMEOUT_S:g} s"
        except BrokerConnectionError as exc:
            view.missing[node] = f"broker {node} did not answer: {exc}"
        finally:
            with trio.CancelScope(shield=True):
                await conn.close()

    async with trio.open_nursery() as nursery:
        for node in asked:
            nursery.start_soon(one, node)
    for g in view.groups:   # lag against each partition's leader's high watermark
        if g.coordinator_partition < 0:
            g.coordinator_partition = broker.groups.partition_for(g.group_id)
        for o in g.offsets:
            o.high_watermark = view.high_watermark(o.topic, o.partition)
    view.groups.sort(key=lambda g: g.group_id)
    view.transactions.sort(key=lambda t: t.transactional_id)
    return view


async def ask_peers(broker: Broker, nodes: list[int], missing: dict[int, str],
                    ask: Callable[[BrokerConnection, int], Awaitable[None]]) -> None:
    """``ask(conn, node)`` of each broker in ``nodes`` in parallel over the broker-to-broker client,
    each within ``PEER_TIMEOUT_S``; a broker fenced, without an endpoint, failing or hung is named
    in ``missing`` instead (the pages that gather other things than :func:`gather` use this)."""
    fenced = {b.id for b in broker.topology.brokers() if b.fenced}

    async def one(node: int) -> None:
        if node in fenced:
            missing[node] = f"broker {node} is fenced (not registered alive): its part is not shown"
            return
        endpoint = _endpoint(broker, node)
        if endpoint is None:
            missing[node] = f"broker {node} has no endpoint"
            return
        conn = BrokerConnection(*endpoint, f"samsa-console-{broker.node_id}", timeout_s=PEER_TIMEOUT_S)
        try:
            with trio.move_on_after(PEER_TIMEOUT_S) as scope:
                await ask(conn, node)
            if scope.cancelled_caught:
                missing[node] = f"broker {node} did not answer within {PEER_TIMEOUT_S:g} s"
        except BrokerConnectionError as exc:
            missing[node] = f"broker {node} did not answer: {exc}"
        finally:
            with trio.CancelScope(shield=True):
                await conn.close()

    async with trio.open_nursery() as nursery:
        for node in nodes:
            if node != broker.node_id:
                nursery.start_soon(one, node)


def http_url_of(broker: Broker, node: int) -> str | None:
    """Another broker's ``samsa.http.listener`` as it registered it in etcd (``brokers/<id>``),
    with a wildcard host replaced by the host it advertises; None when it has none."""
    cluster = getattr(broker, "cluster", None)
    live = getattr(getattr(cluster, "store", None), "live", {}) or {}
    url = (live.get(node) or {}).get("http")
    if not url or cluster is None:     # (a url comes from the cluster's store)
        return None
    parts = urlsplit(url)
    if parts.hostname in (None, "", "0.0.0.0", "::"):
        endpoint = _endpoint(broker, node)
        if endpoint is None:
            return None
        host = f"[{endpoint[0]}]" if ":" in endpoint[0] else endpoint[0]
        url = urlunsplit((parts.scheme, f"{host}:{parts.port}", parts.path, "", ""))
    return url.rstrip("/")


async def peer_json(broker: Broker, node: int, path: str) -> tuple[Any, str]:
    """GET ``path`` from another broker's console (its ``samsa.http.listener``) within
    ``PEER_TIMEOUT_S``: (the JSON answer, the console's base url), or (None, why not)."""
    import httpx

    base = http_url_of(broker, node)
    if base is None:
        return None, f"broker {node} registered no samsa.http.listener: its console is off"
    try:
        with trio.move_on_after(PEER_TIMEOUT_S):
            async with httpx.AsyncClient(timeout=PEER_TIMEOUT_S) as client:
                resp = await client.get(f"{base}{path}")
            if resp.status_code != 200:
                return None, f"broker {node}'s console answered HTTP {resp.status_code} at {base}"
            return resp.json(), base
    except (httpx.HTTPError, ValueError, TypeError) as exc:
        return None, f"broker {node}'s console at {base} did not answer: {exc!r}"
    return None, f"broker {node}'s console at {base} did not answer within {PEER_TIMEOUT_S:g} s"


async def remote_timeline(broker: Broker, node: int, group_id: str) -> tuple[list[Rebalance] | None, str]:
    """The rebalance timeline the group's coordinator ``node`` keeps in memory, read from its
    console (``/timeline/<group>`` on its ``samsa.http.listener``) within ``PEER_TIMEOUT_S``;
    (None, why) when it cannot be had."""
    payload, source = await peer_json(broker, node, f"/timeline/{quote(group_id, safe='')}")
    if payload is None:
        return None, source
    try:
        return timeline_from_json(payload), source
    except (ValueError, TypeError, KeyError) as exc:
        return None, f"broker {node}'s console at {source} answered an unreadable timeline: {exc!r}"


async def _ask(conn: BrokerConnection, node: int, topology: Any, view: ClusterView, group: str | None,
               everything: bool, all_transactions: bool = False) -> None:
    """One broker's part, appended to ``view`` only once all of it arrived (a half answer from a
    broker that then hangs is not shown as if complete)."""
    groups = await _groups(conn, node, group, view) if everything else []
    txns = await _transactions(conn, node, view, all_transactions) if everything and group is None else []
    led = await _offsets(conn, [(name, p.index) for name in list(topology.topics())
                                    for p in topology.partitions(name) if p.leader == node])
    view.groups.extend(groups)
    view.transactions.extend(txns)
    view.offsets.update(led)


def _check(view: ClusterView, node: int, api: str, error_code: int) -> None:
    """A whole-request error (a coordinator still loading or just moved, not authorized, ...):
    what the broker did list is shown, and the page says its part may be incomplete."""
    if error_code:
        try:
            name = ErrorCode(error_code).name
        except ValueError:
            name = str(error_code)
        note = f"broker {node} answered {name} to {api}: its part may be incomplete"
        view.missing[node] = f"{view.missing[node]}; {note}" if node in view.missing else note


async def _groups(conn: BrokerConnection, node: int, only: str | None, view: ClusterView) -> list[GroupView]:
    listed = await conn.call(ListGroupsRequest(states_filter=[], types_filter=[]), 5)
    _check(view, node, "ListGroups", listed.error_code)
    ids = sorted(g.group_id for g in listed.groups if only is None or g.group_id == only)
    if not ids:
        return []
    described = await conn.call(DescribeGroupsRequest(groups=ids, include_authorized_operations=False), 5)
    out = []
    for d in described.groups:
        if d.error_code:
            continue
        v = GroupView(d.group_id, d.group_state, d.protocol_type, d.protocol_data, -1)
        v.coordinator = node
        v.members = [MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                introspect.decode_assignment(m.member_assignment, d.protocol_type))
                     for m in d.members]
        out.append(v)
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    fetched = await conn.call(OffsetFetchRequest(groups=[G(group_id=v.group_id, topics=None) for v in out],
                                                 require_stable=False), 8)
    by_id = {v.group_id: v for v in out}
    for res in fetched.groups:
        found = by_id.get(res.group_id)
        if found is None or res.error_code:
            continue
        found.offsets = sorted((OffsetView(t.name, p.partition_index, p.committed_offset, -1)
                            for t in res.topics for p in t.partitions
                            if p.error_code == 0 and p.committed_offset >= 0),
                           key=lambda o: (o.topic, o.partition))
    return out


async def _transactions(conn: BrokerConnection, node: int, view: ClusterView,
                        all_transactions: bool = False) -> list[TxnView]:
    listed = await conn.call(ListTransactionsRequest(
        state_filters=[] if all_transactions else introspect.IN_FLIGHT, producer_id_filters=[]), 0)
    _check(view, node, "ListTransactions", listed.error_code)
    ids = sorted(t.transactional_id for t in listed.transaction_states)
    if not ids:
        return []
    described = await conn.call(DescribeTransactionsRequest(transactional_ids=ids), 0)
    return [TxnView(d.transactional_id, d.transaction_state, d.producer_id, d.producer_epoch,
                    d.transaction_start_time_ms, d.transaction_timeout_ms,
                    [(t.topic, sorted(t.partitions)) for t in d.topics], node)
            for d in described.transaction_states if d.error_code == 0]


async def _offsets(conn: BrokerConnection, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], LeaderOffsets]:
    """ListOffsets earliest, latest (read_uncommitted: HW; read_committed: LSO; debugging replica
    id: log end) and DescribeLogDirs sizes for the partitions this broker leads."""
    out = {tp: LeaderOffsets() for tp in partitions}
    if not partitions:
        return out
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    T = ListOffsetsRequest.ListOffsetsTopic
    P = T.ListOffsetsPartition

    async def list_offsets(timestamp: int, isolation: int, replica_id: int, attr: str) -> None:
        req = ListOffsetsRequest(replica_id=replica_id, isolation_level=isolation, topics=[
            T(name=t, partitions=[P(partition_index=p, current_leader_epoch=-1, timestamp=timestamp) for p in ps])
            for t, ps in by_topic.items()])
        resp = await conn.call(req, 7)
        for rt in resp.topics:
            for rp in rt.partitions:
                if rp.error_code == 0 and (rt.name, rp.partition_index) in out:
                    setattr(out[(rt.name, rp.partition_index)], attr, rp.offset)

    steps: list[Callable[[], Awaitable[None]]] = [
        lambda: list_offsets(EARLIEST, 0, -1, "log_start_offset"),
        lambda: list_offsets(LATEST, 0, -1, "high_watermark"),
        lambda: list_offsets(LATEST, 1, -1, "last_stable_offset"),
        lambda: list_offsets(LATEST, 0, DEBUGGING_REPLICA_ID, "log_end_offset")]
    for step in steps:   # one request in flight per connection
        await step()
    D = DescribeLogDirsRequest.DescribableLogDirTopic
    dirs = await conn.call(DescribeLogDirsRequest(topics=[D(topic=t, partitions=ps) for t, ps in by_topic.items()]), 1)
    for result in dirs.results:
        for t in result.topics:
            for p in t.partitions:
                o = out.get((t.name, p.partition_index))
                if o is not None:
                    o.size_bytes = max(o.size_bytes, 0) + p.partition_size
    return out
