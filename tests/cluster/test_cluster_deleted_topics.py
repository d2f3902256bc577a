"""Offsets of a topic deleted while no broker led its ``__consumer_offsets`` partition: the
coordinator that loads the partition afterwards replays them, then drops them (tombstones), as
Kafka's coordinators drop deleted topics' offsets. Real processes: etcd and 3 brokers, the offsets
topic with one partition and one replica, so stopping its broker leaves nobody to hear the deletion."""
from __future__ import annotations

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.cluster_support import FAST_GROUPS, commit_topic, coordinator_of, create_topic_at
from tests.support.rawclient import RawClient

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

ONE_OFFSETS_REPLICA = {**FAST_GROUPS, "offsets.topic.num.partitions": "1", "offsets.topic.replication.factor": "1"}


def committed(c: LocalCluster, node: int, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets, once its coordinator answers (it may still be loading)."""
    def fetch() -> dict[tuple[str, int], int] | None:
        with RawClient(c.brokers[node].bootstrap_servers) as rc:
            r = rc.request(9, 7, group_id=group, topics=None, require_stable=False)
        return None if r.error_code else \
            {(t.name, p.partition_index): p.committed_offset for t in r.topics for p in t.partitions}
    return c.wait_for(lambda: (got := fetch()) is not None and (got,), what=f"{group}'s offsets")[0]


@pytest.mark.parametrize("samsa_cluster", [{"overrides": ONE_OFFSETS_REPLICA}], indirect=True, ids=["rf1"])
def test_a_coordinator_loading_after_a_deletion_drops_the_deleted_topics_offsets(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    group = "g-deleted-meanwhile"
    coord = coordinator_of(c, group)
    host = min(b for b in c.brokers if b != coord)
    for name in ("gone", "kept"):
        assert create_topic_at(c.brokers[host].bootstrap_servers, name, assignments=[[host]]).error_code == 0
    c.wait_for(lambda: c.leader("gone", 0) == host and c.leader("kept", 0) == host, what="leaders")
    with RawClient(c.brokers[coord].bootstrap_servers) as rc:
        for name, offset in (("gone", 5), ("kept", 3)):
            r = rc.request(8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                           group_instance_id=None, topics=[commit_topic(0, offset, "", name=name)])
            assert r.topics[0].partitions[0].error_code == 0
    assert committed(c, coord, group) == {("gone", 0): 5, ("kept", 0): 3}

    assert c.stop(coord) == 0            # the offsets partition's only replica: no coordinator now
    with RawClient(c.brokers[host].bootstrap_servers) as rc:
        r = rc.request(20, 4, topic_names=["gone"], timeout_ms=10000)
    assert r.responses[0].error_code == 0
    c.wait_for(lambda: "gone" not in c.image().topics, what="the deletion")

    c.start_broker(coord)
    c.wait_for(lambda: coordinator_of(c, group) == coord, what="the coordinator back")
    assert committed(c, coord, group) == {("kept", 0): 3}
    # the drop was written (tombstones): a second load replays none of "gone" either
    c.restart(coord)
    c.wait_for(lambda: coordinator_of(c, group) == coord, what="the coordinator back again")
    assert committed(c, coord, group) == {("kept", 0): 3}
    log = (c.data_dir / f"broker-{coord}.log").read_text()
    assert log.count("offsets of deleted topics removed on loading") == 1
