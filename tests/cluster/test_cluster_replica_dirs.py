"""A broker's data dir holds exactly its replicas (Kafka keeps no log for a partition a broker is
not a replica of), and a replica that stops being one — moved away by a reassignment, its topic
deleted, also while the broker was down — has its files deleted (Kafka's stray replicas).
Real processes: etcd and three Samsa brokers (the ``samsa_cluster`` fixture)."""
from __future__ import annotations

import re

import pytest
from kafka import KafkaProducer
from kafka.protocol.admin import AlterPartitionReassignmentsRequest as APR

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.rawclient import RawClient
from tests.support.cluster_support import create_topic_at, log_dirs

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


def partition_dirs(c: LocalCluster, node: int, topics: set[str]) -> set[tuple[str, int]]:
    """(topic, partition) of the partition directories in a broker's data dir, for ``topics``."""
    out = set()
    for d in c.brokers[node].data_dir.iterdir():
        m = _PARTITION_DIR.match(d.name)
        if d.is_dir() and m and m.group(1) in topics:
            out.add((m.group(1), int(m.group(2))))
    return out


def expected_dirs(assignments: dict[str, list[list[int]]], node: int) -> set[tuple[str, int]]:
    return {(t, p) for t, parts in assignments.items() for p, replicas in enumerate(parts) if node in replicas}


def produce(c: LocalCluster, topic: str, partitions: int, count: int = 10) -> None:
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all")
    for p in range(partitions):
        for i in range(count):
            producer.send(topic, value=b"v%d" % i, partition=p)
    producer.flush(timeout=30)
    producer.close()


@pytest.mark.slow
def test_each_broker_data_dir_holds_exactly_its_replicas(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    placed = {"rf1": [[1], [2], [3], [1]], "rf2": [[1, 2], [2, 3], [3, 1]]}
    for name, parts in placed.items():
        assert create_topic_at(c.brokers[1].bootstrap_servers, name, assignments=parts).error_code == 0
    c.wait_for(lambda: all(c.image().partition(t, p).isr == tuple(rs) for t, ps in placed.items()
                           for p, rs in enumerate(ps)), what="full ISRs")
    produce(c, "rf1", 4)
    produce(c, "rf2", 3)
    for node in c.brokers:
        assert partition_dirs(c, node, set(placed)) == expected_dirs(placed, node), f"broker {node}"
        c.wait_for(lambda n=node: {(t, p) for t, ps in log_dirs(c.brokers[n].bootstrap_servers).items()
                                   for p, size in ps.items() if size > 0} == expected_dirs(placed, n),
                   what=f"broker {node}'s replicas with data in DescribeLogDirs")
    # a restarted broker opens just those, and still serves and follows
    c.restart(2)
    assert partition_dirs(c, 2, set(placed)) == expected_dirs(placed, 2)
    c.wait_for(lambda: all(2 in c.image().partition("rf2", p).isr for p in (0, 1)), what="broker 2 back in the ISRs")
    produce(c, "rf1", 2, count=5)
    c.wait_for(lambda: log_dirs(c.brokers[2].bootstrap_servers)["rf1"] != {}, what="broker 2 lists rf1-1")
    assert partition_dirs(c, 2, set(placed)) == expected_dirs(placed, 2)


def test_a_replica_moved_away_or_deleted_loses_its_files(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    T, P = APR.ReassignableTopic, APR.ReassignableTopic.ReassignablePartition
    assert create_topic_at(c.brokers[1].bootstrap_servers, "mv", assignments=[[1, 2], [1, 2]]).error_code == 0
    assert create_topic_at(c.brokers[1].bootstrap_servers, "away", assignments=[[2, 3]]).error_code == 0
    c.wait_for(lambda: c.image().partition("mv", 0).isr == (1, 2) and c.image().partition("away", 0).isr == (2, 3),
               what="full ISRs")
    produce(c, "mv", 2)
    assert partition_dirs(c, 1, {"mv"}) == {("mv", 0), ("mv", 1)}

    with RawClient(c.brokers[2].bootstrap_servers) as rc:      # move partition 0 from {1, 2} to {2, 3}
        r = rc.request(45, 1, timeout_ms=5000, allow_replication_factor_change=True,
                       topics=[T(name="mv", partitions=[P(partition_index=0, replicas=[2, 3])])])
    assert r.responses[0].partitions[0].error_code == 0
    c.wait_for(lambda: (g := c.image().partition("mv", 0)).replicas == (2, 3) and not g.removing_replicas,
               what="the move to complete")
    c.wait_for(lambda: partition_dirs(c, 1, {"mv"}) == {("mv", 1)}, what="broker 1 to delete mv-0")
    assert partition_dirs(c, 3, {"mv"}) == {("mv", 0)}
    # broker 1 no longer hosts mv-0: it answers NOT_LEADER_OR_FOLLOWER, and a restart does not bring it back
    c.restart(1)
    assert partition_dirs(c, 1, {"mv"}) == {("mv", 1)}

    # a deleted topic's files go from every replica, also from one that was down during the deletion
    assert c.stop(3) == 0
    with RawClient(c.brokers[1].bootstrap_servers) as rc:
        r = rc.request(20, 4, topic_names=["mv", "away"], timeout_ms=10000)
    assert [t.error_code for t in r.responses] == [0, 0]
    c.wait_for(lambda: not any(partition_dirs(c, n, {"mv", "away"}) for n in (1, 2)), what="the deletion on 1 and 2")
    assert partition_dirs(c, 3, {"mv", "away"}) == {("mv", 0), ("away", 0)}     # down: untouched
    c.start_broker(3)
    c.wait_for(lambda: not partition_dirs(c, 3, {"mv", "away"}), what="broker 3 to delete its stray logs")
