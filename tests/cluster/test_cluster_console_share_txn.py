"""Every broker's console shows the cluster's consumer groups, transactions, producers and share
groups, wherever they live (issue 24): a consumer group coordinated by broker 2, a transaction
coordinated by broker 3, a transactional producer on a partition led by broker 3, and a share group
whose membership broker 2 coordinates while its share partition's state is held by broker 3 (the
data partition's leader) — each read from brokers 1, 2 and 3 alike."""
from __future__ import annotations

import time
from typing import Any

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.cluster_support import (FAST_REPLICATION, console_page, create_topic, http_overrides,
                                           key_led_by)

ck = pytest.importorskip("confluent_kafka")
pytestmark = [pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed"),
              pytest.mark.skipif(not hasattr(ck, "ShareConsumer"), reason="confluent-kafka without ShareConsumer")]

INTERNAL_PARTITIONS = 6


@pytest.mark.slow
@pytest.mark.parametrize("samsa_cluster", [{
    "overrides": {**FAST_REPLICATION, "group.initial.rebalance.delay.ms": "0",
                  "offsets.topic.num.partitions": str(INTERNAL_PARTITIONS),
                  "transaction.state.log.num.partitions": str(INTERNAL_PARTITIONS),
                  "group.share.enable": "true", "samsa.share.auto.offset.reset": "earliest",
                  "group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "100",
                  "group.share.record.lock.duration.ms": "60000"},
    "broker_overrides": http_overrides()}], indirect=True, ids=["http"])
def test_groups_transactions_producers_and_share_groups_on_every_broker(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    bs = c.bootstrap_servers
    create_topic(c, "q", assignment={0: [3, 1, 2]})       # led by broker 3
    warm = ck.Consumer({"bootstrap.servers": bs, "group.id": "warmup"})
    warm.list_topics(timeout=10)
    warm.close()
    warm_txn = ck.Producer({"bootstrap.servers": bs, "transactional.id": "warmup"})
    warm_txn.init_transactions(30)
    c.wait_for(lambda: all(c.leader(t, q) > 0 for t in ("__consumer_offsets", "__transaction_state")
                           for q in range(INTERNAL_PARTITIONS)), timeout=30, what="coordinators")
    group = key_led_by(c, "__consumer_offsets", "grp", 2, INTERNAL_PARTITIONS)
    share_group = key_led_by(c, "__consumer_offsets", "share", 2, INTERNAL_PARTITIONS)
    txn_id = key_led_by(c, "__transaction_state", "txn", 3, INTERNAL_PARTITIONS)

    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 500, "batch.num.messages": 10, "acks": "all"})
    for i in range(10):
        p.produce("q", value=f"v{i}".encode(), partition=0)
    assert p.flush(30) == 0
    consumer = ck.Consumer({"bootstrap.servers": bs, "group.id": group, "client.id": "grp-client",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["q"])
    share = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": share_group, "client.id": "share-client",
                              "share.acknowledgement.mode": "explicit"})
    share.subscribe(["q"])
    txn = ck.Producer({"bootstrap.servers": bs, "transactional.id": txn_id})
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.5)
        consumer.commit(offsets=[ck.TopicPartition("q", 0, 4)], asynchronous=False)
        got: list[Any] = []
        while len(got) < 10 and time.monotonic() < deadline:
            got += [m for m in share.poll(1.0) if m.error() is None]
        assert sorted(m.offset() for m in got) == list(range(10))
        for m in got:
            if m.offset() < 3:
                share.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        share.commit_sync(30)                       # start 3; 3-9 acquired
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce("q", value=b"pending", partition=0)
        assert txn.flush(30) == 0                   # open at offset 10 of q-0 (led by broker 3)

        for node in (1, 2, 3):
            _, t = c.wait_for(lambda: (got := console_page(c, node, "/transactions")) and
                              any(r[0] == txn_id for r in got[1].get("all-transactions", [])) and got,
                              timeout=15, what=f"the transaction on broker {node}'s console")
            (tx,) = [r for r in t["all-transactions"] if r[0] == txn_id]
            assert tx[1] == "Ongoing" and tx[7] == "q-0" and tx[8] == "3", (node, tx)
            _, t = console_page(c, node, "/")
            (g,) = [r for r in t["groups"] if r[0] == group]
            assert g[1] == "Stable" and g[-1] == "2", (node, g)
            _, t = console_page(c, node, f"/groups/{group}")
            (m,) = t["members"]
            assert m[2] == "grp-client" and m[4] == "q: 0", (node, m)
            assert t["offsets"][0][:3] == ["q", "0", "4"], (node, t["offsets"])
            _, t = console_page(c, node, "/producers?topic=q")
            (pr,) = [r for r in t["producers"] if r[6] == "10"]
            assert pr[0:2] == ["q", "0"] and pr[2] == tx[2], (node, pr)
            _, t = console_page(c, node, "/share-groups")
            (sg,) = [r for r in t["share-groups"] if r[0] == share_group]
            assert sg[1:3] == ["Stable", "1"] and sg[-1] == "2", (node, sg)
            _, t = console_page(c, node, f"/share-groups/{share_group}")
            (sm,) = t["members"]
            assert sm[2] == "share-client" and sm[5] == "q: 0", (node, sm)
            # start 3, end 10, 7 acquired, held by the leader, broker 3; lag 11 - 3 (HW counts the open txn)
            assert t["share-partitions"] == [["q", "0", "3", "10", "7", "0", "7", "0", "0", "11", "8", "3"]], node
        txn.commit_transaction(30)
        for node in (1, 2, 3):
            c.wait_for(lambda: [r[1] for r in console_page(c, node, "/transactions")[1].get("all-transactions", [])
                                if r[0] == txn_id] == ["CompleteCommit"], timeout=15, what="CompleteCommit")
    finally:
        share.close()
        consumer.close()
        del txn, warm_txn
