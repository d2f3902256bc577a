"""Share-group state survives a leader change (issue 21): three Samsa brokers and etcd (the
samsa_cluster fixture), a topic with RF=3, confluent-kafka 2.16's ``ShareConsumer``. 20 records, 10
accepted and 10 released, then the data partition's leader is SIGKILLed: on the new leader, which
reads the state from the share coordinator (``__share_group_state``), exactly the 10 released come
back with delivery count 2, none of the accepted."""
from __future__ import annotations

import pytest

from broker.testing.local_cluster import LocalCluster
from tests.support.cluster_support import create_topic
from tests.support.groups_support import unique
from tests.support.share_clients_support import consume_released, poll_until, share_consumer

ck = pytest.importorskip("confluent_kafka")

OVERRIDES = {"replica.lag.time.max.ms": "1500", "min.insync.replicas": "2", "broker.session.timeout.ms": "3000",
             "replica.fetch.wait.max.ms": "200", "replica.fetch.backoff.ms": "100", "log.cleaner.enable": "false",
             "group.share.enable": "true", "samsa.share.auto.offset.reset": "earliest",
             "group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "100"}

pytestmark = [pytest.mark.parametrize("samsa_cluster", [{"overrides": OVERRIDES}], indirect=True, ids=["rf3"]),
              pytest.mark.skipif(not hasattr(ck, "ShareConsumer"), reason="confluent-kafka without ShareConsumer")]


@pytest.mark.slow
def test_released_records_come_back_on_the_new_leader_after_a_leader_kill(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    topic, group = unique("q"), unique("sg")
    create_topic(c, topic)
    p = ck.Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 500})
    for i in range(20):
        p.produce(topic, value=f"v{i}".encode(), partition=0)
    assert p.flush(30) == 0
    first = share_consumer(c.bootstrap_servers, group, topic, explicit=True)
    try:
        got = poll_until(first, lambda rs: len(rs) >= 20, 60)
        assert sorted((m.offset(), m.delivery_count()) for m in got) == [(o, 1) for o in range(20)]
        for m in got:
            first.acknowledge(m, ck.AcknowledgeType.ACCEPT if m.offset() < 10 else ck.AcknowledgeType.RELEASE)
        first.commit_sync(30)
    finally:
        first.close()
    old = c.leader(topic, 0)
    c.kill(old)
    c.wait_for(lambda: c.leader(topic, 0) not in (old, -1), timeout=30, what="a new leader")
    alive = ",".join(b.bootstrap_servers for n, b in c.brokers.items() if n != old)
    again = consume_released(alive, group, topic, timeout=90, idle=8)
    assert sorted((m.offset(), m.delivery_count()) for m in again) == [(o, 2) for o in range(10, 20)]
