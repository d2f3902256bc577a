"""FindCoordinator in cluster mode (broker/coordinator_runtime/placement.py) answers from the metadata image:
the leader of the key's internal partition, or COORDINATOR_NOT_AVAILABLE while that leader is fenced
(a client sent to a broker that Metadata no longer lists cannot reach it: kafka-python raised
UnknownBrokerIdError in a failover test)."""
from __future__ import annotations

from types import SimpleNamespace

import trio

from broker.coordinator_runtime.placement import GROUP_KEY, locate_coordinator
from coordinator.hashing import partition_for_group
from coordinator.metadata.controller import create_topic_records
from coordinator.metadata.image import replay_all
from coordinator.metadata.records import FenceBrokerRecord
from protocol.errors import ErrorCode
from tests.support.metadata_image import cluster_image


def _ctx(image):
    broker = SimpleNamespace(groups=SimpleNamespace(topic="__consumer_offsets"), txns=SimpleNamespace(topic="x"),
                             cluster=SimpleNamespace(image=image))
    return SimpleNamespace(broker=broker, listener="PLAINTEXT", advertised=SimpleNamespace(name="PLAINTEXT"))


def test_a_fenced_leader_is_not_named_coordinator() -> None:
    img = cluster_image(3)
    img, _ = replay_all(img, create_topic_records(img, "__consumer_offsets", "oid", [(1, 2, 3), (2, 3, 1)]))
    group = next(g for g in (f"g{i}" for i in range(100)) if partition_for_group(g, 2) == 0)
    live = trio.run(locate_coordinator, _ctx(img), GROUP_KEY, group)
    assert live == (ErrorCode.NONE, "NONE", 1, "127.0.0.1", 9091)
    fenced, _ = replay_all(img, [FenceBrokerRecord(id=1, epoch=10)])   # before leadership has moved
    assert fenced.partition("__consumer_offsets", 0).leader == 1
    assert trio.run(locate_coordinator, _ctx(fenced), GROUP_KEY, group)[:3] == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.", -1)
