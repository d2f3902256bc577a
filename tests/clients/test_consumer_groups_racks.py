"""Rack-aware server-side assignment with real clients: a 3-broker cluster with ``broker.rack``
a/b/c, a topic whose partitions each live on one rack, and three Java 4.3 members with
``group.protocol=consumer`` and ``client.rack`` a/b/c (sent as ConsumerGroupHeartbeat RackId):
each member is assigned exactly the partitions whose replica is on its rack."""
from __future__ import annotations

from typing import Any

import pytest

from tests.support.groups_support import unique, wait_until
from tests.support.rawclient import RawClient
from tests.support.cluster_support import create_topic_at
from tests.support.consumer_groups_support import JAVA, java_ready

RACKS = {1: "a", 2: "b", 3: "c"}
CLUSTER = {"brokers": 3, "broker_overrides": {n: {"broker.rack": r} for n, r in RACKS.items()}, "overrides": {
    "samsa.group.consumer.rack.aware.assignment": "true",
    "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "4000",
    "group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "500"}}


def coordinator_of(boots: dict[int, str], group: str) -> str:
    with RawClient(boots[1]) as c:
        r = c.request(10, 4, key_type=0, coordinator_keys=[group])
    node = r.coordinators[0].node_id
    assert r.coordinators[0].error_code == 0 and node in boots, r
    return boots[node]


@pytest.mark.java
@pytest.mark.parametrize("samsa_cluster", [CLUSTER], indirect=True)
def test_members_are_assigned_the_partitions_on_their_rack(samsa_cluster: Any) -> None:
    from tests.support.javaclient import start_java
    java_ready()
    boots = dict(zip(samsa_cluster.brokers, samsa_cluster.bootstrap_servers.split(",")))
    topic, group = unique("t"), unique("racks")
    # partition p on broker p % 3 + 1: racks a, b, c, a, b, c
    assert create_topic_at(boots[1], topic, assignments=[[p % 3 + 1] for p in range(6)]).error_code == 0
    coord = wait_until("the group's coordinator", lambda: coordinator_of(boots, group), 30, interval=0.2)
    members = [start_java(JAVA, samsa_cluster.bootstrap_servers, "consume-group", "--topic", topic, "--group", group,
                          "--timeout-ms", 15000, "--prop", "group.protocol=consumer", "--prop", f"client.rack={r}",
                          "--prop", f"client.id=rack-{r}") for r in "abc"]

    def by_rack() -> Any:
        with RawClient(coord) as c:
            g = c.request(69, 0, group_ids=[group], include_authorized_operations=False).groups[0]
        if g.error_code or g.group_state != "Stable" or len(g.members) != 3:
            return None
        return {m.rack_id: sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions)
                for m in g.members}
    try:
        got = wait_until("a Stable rack-aware assignment", lambda: (v := by_rack()) and
                         v == {"a": [0, 3], "b": [1, 4], "c": [2, 5]} and v, 40, interval=0.2)
    finally:
        for m in members:
            m.kill()
    assert got == {"a": [0, 3], "b": [1, 4], "c": [2, 5]}
