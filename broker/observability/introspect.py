"""Read-only views of the broker's state, shared by ``/metrics`` (gauges computed at scrape time)
and the web console.

Nothing here runs on the request path. Group state is read through the group coordinators'
own read-only requests (ListGroups, DescribeGroups, OffsetFetch) answered synchronously by
the group shell, so these views do not depend on the coordinators' internals.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coordinator.group import coordinator as g

# the console's views read group state below them; decode_assignment is re-exported for cluster_view
from broker.coordinator_runtime.group_timeline import decode_assignment as decode_assignment

if TYPE_CHECKING:
    from broker.common.services import BrokerServices


@dataclass(slots=True)
class PartitionView:
    topic: str
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    log_end_offset: int
    size_bytes: int
    segments: int
    leader_epoch: int = 0
    hosted: bool = True       # False: a cluster partition with no replica on this broker (no offsets here)


@dataclass(slots=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: dict[str, list[int]]

    @property
    def partition_count(self) -> int:
        return sum(len(p) for p in self.assignment.values())


@dataclass(slots=True)
class OffsetView:
    topic: str
    partition: int
    committed: int
    high_watermark: int   # -1 when the partition no longer exists

    @property
    def lag(self) -> int:
        """kafka_exporter's lag: high watermark less the committed offset, never negative."""
        if self.high_watermark < 0 or self.committed < 0:
            return 0
        return max(0, self.high_watermark - self.committed)


@dataclass(slots=True)
class GroupView:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator_partition: int
    members: list[MemberView] = field(default_factory=list)
    offsets: list[OffsetView] = field(default_factory=list)
    coordinator: int = -1     # the coordinating broker (cluster mode; -1: this one, single node)

    @property
    def total_lag(self) -> int:
        return sum(o.lag for o in self.offsets)


@dataclass(slots=True)
class BrokerView:
    node_id: int
    endpoints: list[str]
    rack: str | None
    is_controller: bool
    alive: bool
    state: str = "alive"      # cluster mode: alive, fenced or shutting down (controlled shutdown)


def brokers(broker: BrokerServices) -> list[BrokerView]:
    """The brokers DescribeCluster (with fenced brokers) would name, from the broker's Topology:
    every registered broker (a single node: itself), alive unless fenced, and the active
    controller as this broker last saw it."""
    topology = broker.topology
    controller = topology.controller_id
    return [BrokerView(b.id, [f"{e.name}://{e.host}:{e.port}" for e in b.endpoints], b.rack,
                       b.id == controller, not b.fenced,
                       "fenced" if b.fenced else "shutting down" if b.in_controlled_shutdown else "alive")
            for b in topology.brokers()]


def partitions(broker: BrokerServices, include_internal: bool = True, cluster_wide: bool = False) -> list[PartitionView]:
    """The partitions whose log is on this broker, with their offsets and sizes; leader, replicas
    and ISR as the broker's Topology records them (a single node leads every partition, its only
    replica and ISR). A local log of a partition this broker is no replica of is left out, and with
    ``cluster_wide`` every other partition of the topology is added with ``hosted=False`` and
    offsets of -1 (the console names every partition's leader)."""
    node = broker.node_id
    topology = broker.topology
    out = []
    for name in sorted(broker.logs.topics):
        topic = broker.logs.topics[name]
        if topic.internal and not include_internal:
            continue
        states = {p.index: p for p in topology.partitions(name)}
        for part in topic.partitions:
            st = states.get(part.index)
            if st is None or node not in st.replicas:
                continue
            out.append(PartitionView(name, part.index, st.leader, list(st.replicas), list(st.isr),
                                     part.log_start_offset, part.high_watermark, part.last_stable_offset,
                                     part.log_end_offset, part.size_bytes, len(part.segments), st.leader_epoch))
    if cluster_wide:
        local = {(v.topic, v.partition) for v in out}
        added = False
        for name, t in list(topology.topics().items()):
            if t.internal and not include_internal:
                continue
            for st in topology.partitions(name):
                if (name, st.index) not in local:
                    added = True
                    out.append(PartitionView(name, st.index, st.leader, list(st.replicas), list(st.isr),
                                             -1, -1, -1, -1, 0, 0, st.leader_epoch, hosted=False))
        if added:
            out.sort(key=lambda v: (v.topic, v.partition))
    return out


def _high_watermark(broker: BrokerServices, topic: str, partition: int) -> int:
    """The partition's high watermark as this broker knows it (a follower's trails the leader's by
    a fetch); -1 when the partition does not exist or has no replica here."""
    part = broker.logs.partition(topic, partition)
    if part is None:
        return -1
    st = next((p for p in broker.topology.partitions(topic) if p.index == partition), None)
    if st is None or broker.node_id not in st.replicas:
        return -1
    return part.high_watermark


def groups(broker: BrokerServices, with_offsets: bool = True, only: str | None = None) -> list[GroupView]:
    """Every group (or just ``only``) with its members, assignments and committed offsets."""
    shell = broker.groups
    out: list[GroupView] = []
    for p in shell.owned_partitions():
        listed: g.ListGroupsResult | None = shell.query(p, g.ListGroups(api_version=5))
        if listed is None or listed.error_code:
            continue
        ids = sorted(x.group_id for x in listed.groups if only is None or x.group_id == only)
        if not ids:
            continue
        described: g.DescribeGroupsResult | None = shell.query(p, g.DescribeGroups(groups=list(ids), api_version=5))
        for d in described.groups if described else []:
            if d.error_code:
                continue
            view = GroupView(d.group_id, d.group_state, d.protocol_type, d.protocol_data, p)
            view.members = [MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                       decode_assignment(m.member_assignment, d.protocol_type))
                            for m in d.members]
            out.append(view)
        if with_offsets:
            wanted = [v for v in out if v.coordinator_partition == p]
            fetched: g.OffsetFetchResult | None = shell.query(p, g.OffsetFetch(
                api_version=8, groups=[g.OffsetFetchGroup(v.group_id) for v in wanted]))
            for v, res in zip(wanted, fetched.groups if fetched else []):
                for t in res.topics:
                    for part in t.partitions:
                        if part.error_code == 0 and part.committed_offset >= 0:
                            v.offsets.append(OffsetView(t.name, part.partition_index, part.committed_offset,
                                                        _high_watermark(broker, t.name, part.partition_index)))
                v.offsets.sort(key=lambda o: (o.topic, o.partition))
    return out


IN_FLIGHT = ["Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"]


def transactions(broker: BrokerServices, in_flight: bool = True) -> list[Any]:
    """Transactions (coordinator/txn/coordinator.py DescribedTransaction), in-flight ones by default."""
    from coordinator.txn import coordinator as tx

    shell = broker.txns
    out: list[Any] = []     # DescribedTransaction: kafka-python's DescribeTransactionsResponse items
    for p in shell.owned_partitions():
        listed = shell.query(p, tx.ListTransactions(state_filters=IN_FLIGHT if in_flight else []))
        ids = [t.transactional_id for t in (listed.transactions if listed else [])]
        if ids:
            described = shell.query(p, tx.DescribeTransactions(transactional_ids=ids))
            out.extend(d for d in (described.transactions if described else []) if d.error_code == 0)
    return sorted(out, key=lambda d: d.transactional_id)


@dataclass(slots=True)
class ProducerView:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    current_txn_start_offset: int


def producers(broker: BrokerServices, topic: str, partition: int) -> list[ProducerView]:
    part = broker.logs.partition(topic, partition)
    if part is None:
        return []
    return [ProducerView(pid, e.epoch, e.last_seq, e.last_timestamp, part.ongoing_txns.get(pid, -1))
            for pid, e in sorted(part.producers.producers.items())]


@dataclass(slots=True)
class RecordView:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def recent_records(broker: BrokerServices, topic: str, per_partition: int = 20,
                   max_bytes: int = 256 * 1024) -> list[RecordView]:
    """The last committed records of each partition (at most ``per_partition``, reading at most
    ``max_bytes`` of batches per partition), newest first; records of aborted transactions are
    left out, as a read_committed consumer would."""
    from protocol import records as rb

    t = broker.logs.topics.get(topic)
    out: list[RecordView] = []
    if t is None:
        return out
    for part in t.partitions:
        upper = part.last_stable_offset
        start = max(part.log_start_offset, upper - per_partition)
        if start >= upper:
            continue
        data = part.read(start, max_bytes, upper, min_one=True)
        aborted = part.aborted_in_range(start, upper)
        got: list[RecordView] = []
        try:
            for h in rb.iter_batches(data, validate=False):
                if h.is_control or (h.is_transactional and any(
                        a.producer_id == h.producer_id and a.first_offset <= h.base_offset <= a.last_offset
                        for a in aborted)):
                    continue
                for r in rb.iter_records(data, h):
                    if start <= r.offset < upper:
                        got.append(RecordView(part.index, r.offset, r.timestamp, r.key, r.value, r.headers))
        except rb.InvalidBatch:
            pass
        out.extend(got[-per_partition:])
    out.sort(key=lambda r: (r.timestamp, r.offset), reverse=True)
    return out
