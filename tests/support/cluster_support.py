"""Helpers shared by the tests that run a real cluster (the samsa_cluster fixture: etcd and
Samsa broker processes)."""
from __future__ import annotations

from broker.testing.local_cluster import LocalCluster


def create_topic(c: LocalCluster, name: str, partitions: int = 1, rf: int = 3,
                 assignment: dict[int, list[int]] | None = None) -> None:
    """Create ``name`` through the Admin API (``assignment``: explicit replicas per partition) and
    wait until every partition has a leader in the cluster's metadata."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment) if assignment
                             else NewTopic(name, partitions, rf)])
    finally:
        admin.close()
    c.wait_for(lambda: all(c.leader(name, p) >= 0 for p in range(partitions)), what=f"leaders of {name}")
