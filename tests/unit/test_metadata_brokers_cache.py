"""The brokers part of Metadata answers is made once and reused (broker/apis/metadata.py
``broker_entries``, broker/metadata/single_node.py ``brokers``): it must follow every change of
what it comes from (the advertised listeners, the rack, the live brokers, a cluster's new image)
and answer per listener, each answer with a list of its own."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from broker.apis import metadata
from broker.common.config import BrokerConfig
from broker.metadata.single_node import SingleNodeTopology
from broker.metadata.topology import BrokerNode, Endpoint
from broker.network.dispatch import RequestContext


def _ctx(topology: Any, listener: str) -> RequestContext:
    return RequestContext(SimpleNamespace(topology=topology), 3, 12, 1, "tests", "127.0.0.1", listener)


def _entries(topology: Any, listener: str) -> list[tuple[int, str, int, str | None]]:
    return [(b.node_id, b.host, b.port, b.rack) for b in metadata.broker_entries(_ctx(topology, listener))]


def _single_node(**props: str) -> SingleNodeTopology:
    config = BrokerConfig({"listeners": "PLAINTEXT://:9092,INTERNAL://:9093",
                           "advertised.listeners": "PLAINTEXT://h1:9092,INTERNAL://h2:9093",
                           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT", **props})
    return SingleNodeTopology(SimpleNamespace(node_id=1, config=config))


def test_single_node_brokers_are_made_once_and_follow_their_properties() -> None:
    topology = _single_node(**{"broker.rack": "r1"})
    first = topology.brokers()
    assert topology.brokers() is first
    assert _entries(topology, "PLAINTEXT") == [(1, "h1", 9092, "r1")]
    assert _entries(topology, "INTERNAL") == [(1, "h2", 9093, "r1")]
    assert _entries(topology, "OTHER") == [(1, "h1", 9092, "r1")]     # unknown listener: the first endpoint
    values = topology.broker.config.values
    values["advertised.listeners"] = "PLAINTEXT://h3:9092,INTERNAL://h4:9093"
    values["broker.rack"] = None
    assert topology.brokers() is not first
    assert _entries(topology, "PLAINTEXT") == [(1, "h3", 9092, None)]
    assert _entries(topology, "INTERNAL") == [(1, "h4", 9093, None)]


def test_each_answer_gets_its_own_list() -> None:
    topology = _single_node()
    ctx = _ctx(topology, "PLAINTEXT")
    a, b = metadata.broker_entries(ctx), metadata.broker_entries(ctx)
    assert a == b and a is not b
    a.clear()
    assert len(metadata.broker_entries(ctx)) == 1


class _Cluster:
    """A cluster topology's shape: its brokers and live ids replaced with each new image."""

    def __init__(self, nodes: list[BrokerNode], live: frozenset[int]) -> None:
        self.nodes, self.live = nodes, live

    def brokers(self) -> list[BrokerNode]:
        return self.nodes

    def live_broker_ids(self) -> frozenset[int]:
        return self.live


def _node(i: int, host: str = "h") -> BrokerNode:
    return BrokerNode(i, (Endpoint("PLAINTEXT", f"{host}{i}", 9090 + i), Endpoint("INTERNAL", f"i{i}", 9190 + i)),
                      None)


def test_cluster_entries_follow_the_live_brokers_and_each_new_image() -> None:
    cluster = _Cluster([_node(1), _node(2), _node(3)], frozenset({1, 2, 3}))
    assert [e[0] for e in _entries(cluster, "PLAINTEXT")] == [1, 2, 3]
    cluster.live = frozenset({1, 3})                  # broker 2 fenced
    assert [e[0] for e in _entries(cluster, "PLAINTEXT")] == [1, 3]
    assert _entries(cluster, "INTERNAL") == [(1, "i1", 9191, None), (3, "i3", 9193, None)]
    cluster.nodes = [_node(1, "moved"), _node(2), _node(3)]      # a new image: a new sequence
    assert _entries(cluster, "PLAINTEXT")[0] == (1, "moved1", 9091, None)
    cluster.live = frozenset({1, 2, 3})
    assert [e[0] for e in _entries(cluster, "PLAINTEXT")] == [1, 2, 3]


def test_two_topologies_do_not_share_entries() -> None:
    a, b = _Cluster([_node(1)], frozenset({1})), _Cluster([_node(1, "b")], frozenset({1}))
    for _ in range(2):
        assert _entries(a, "PLAINTEXT") == [(1, "h1", 9091, None)]
        assert _entries(b, "PLAINTEXT") == [(1, "b1", 9091, None)]
