"""The console's producers page, ``/producers`` (``?topic=`` for one topic): per partition, the
active idempotent and transactional producers as its leader answers DescribeProducers
(``kafka-transactions.sh describe-producers``): producer id, epoch, last sequence, last write and
the start offset of the transaction it has open.

Only a partition's leader knows its producers for sure (a follower's state trails it by a fetch),
so this broker reads the partitions it leads locally (broker/observability/introspect.py producers)
and asks each other leader for its own with one DescribeProducers request, in parallel, within
cluster_view.PEER_TIMEOUT_S; a broker that does not answer is named on the page.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from kafka.protocol.admin import DescribeProducersRequest

from ..log.manager import INTERNAL_TOPICS
from . import cluster_view, introspect
from .introspect import ProducerView
from .markup import e, table, td, when
from broker.replica.client import BrokerConnection

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

Producers = dict[tuple[str, int], list[ProducerView]]


async def gather(broker: Broker, topic: str | None = None) -> tuple[Producers, dict[int, str]]:
    """The producers of every partition (of ``topic`` only, else of every non-internal topic), each
    as its leader answers; (producers by partition, the brokers that did not answer and why)."""
    topology = broker.topology
    names = [topic] if topic is not None else [n for n in sorted(topology.topics()) if n not in INTERNAL_TOPICS]
    led: dict[int, list[tuple[str, int]]] = {}
    for name in names:
        for p in topology.partitions(name):
            led.setdefault(p.leader, []).append((name, p.index))
    out: Producers = {}
    for name, index in led.pop(broker.node_id, []):
        out[(name, index)] = introspect.producers(broker, name, index)
    missing: dict[int, str] = {}
    led.pop(-1, None)    # no leader: nobody to ask

    async def ask(conn: BrokerConnection, node: int) -> None:
        by_topic: dict[str, list[int]] = {}
        for name, index in led[node]:
            by_topic.setdefault(name, []).append(index)
        T = DescribeProducersRequest.TopicRequest
        resp = await conn.call(DescribeProducersRequest(
            topics=[T(name=n, partition_indexes=ps) for n, ps in by_topic.items()]), 0)
        got: Producers = {}
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == 0:
                    got[(t.name, p.partition_index)] = [
                        ProducerView(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                                     s.current_txn_start_offset) for s in p.active_producers]
        out.update(got)    # only once the whole answer arrived

    await cluster_view.ask_peers(broker, sorted(led), missing, ask)
    return out, missing


def section(producers: Producers, missing: dict[int, str], with_topic: bool = True) -> str:
    """The producers table (a partition whose leader did not answer has no rows)."""
    rows = []
    for (name, index), ps in sorted(producers.items()):
        for pr in ps:
            rows.append(([td(f'<a href="/topics/{quote(name, safe="")}">{e(name)}</a>', raw=True)] if with_topic else [])
                        + [td(index, num=True), td(pr.producer_id, num=True), td(pr.producer_epoch, num=True),
                           td(pr.last_sequence, num=True), td(when(pr.last_timestamp), raw=True),
                           td(pr.current_txn_start_offset if pr.current_txn_start_offset >= 0 else "", num=True)])
    note = "".join(f'<p class="missing">{e(why)}</p>' for _, why in sorted(missing.items()))
    if not rows:
        return note + '<p class="muted">No idempotent producers.</p>'
    return note + table((["Topic"] if with_topic else []) + ["Partition", "Producer id", "Epoch", "Last sequence",
                                                              "Last write", "Open txn from"], rows, "producers")


def page(producers: Producers, missing: dict[int, str], topic: str | None) -> str:
    scope = f" of {e(topic)}" if topic else ""
    return (f"<h2>Producers{scope}</h2><p class=\"muted\">Per partition, as its leader answers DescribeProducers: "
            f"the producers with state in the partition (idempotent or transactional), their last sequence and "
            f"the first offset of an open transaction.</p>{section(producers, missing)}")
