"""DescribeLogDirs on a real cluster (etcd and three Samsa broker processes, the samsa_cluster
fixture): each broker lists exactly the partitions it is a replica of, with their sizes."""
from __future__ import annotations

import pytest
from kafka import KafkaProducer

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.cluster_support import create_topic_at, log_dirs

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")


def test_each_broker_lists_only_its_replicas(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    assert create_topic_at(c.brokers[1].bootstrap_servers, "placed", assignments=[[1, 2], [2, 3], [3, 1]]).error_code == 0
    c.wait_for(lambda: all(c.leader("placed", p) >= 0 for p in range(3)), what="leaders")
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all")
    for p in range(3):
        producer.send("placed", value=b"x" * 100, partition=p).get(timeout=20)
    producer.close()
    hosted = {1: {0, 2}, 2: {0, 1}, 3: {1, 2}}
    for node, parts in hosted.items():
        # followers catch up by fetching: wait until every listed replica holds the record
        seen = c.wait_for(lambda b=c.brokers[node].bootstrap_servers: (d := log_dirs(b)).get("placed") and
                          all(size > 0 for size in d["placed"].values()) and d, what=f"broker {node}'s log dirs")
        assert set(seen["placed"]) == parts
