"""The console's record browser in a cluster: a broker that does not lead a partition reads its
records from the leader (a Fetch over the inter-broker listener), seeks by timestamp through the
leader's ListOffsets, and marks an aborted transaction's record as the leader's log says; with writes enabled, a record produced from a non-leader's console reaches the
leader, and a topic created from one broker's console is led and listed cluster-wide."""
from __future__ import annotations

import re
import time

import httpx
import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.cluster_support import FAST_REPLICATION, console_page, create_topic, http_overrides, url

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")


def rows(c: LocalCluster, node: int, path: str) -> list[list[str]]:
    return console_page(c, node, path)[1].get("records-browse", [])


@pytest.mark.parametrize("samsa_cluster", [{
    "overrides": {**FAST_REPLICATION, "transaction.state.log.num.partitions": "3",
                  "broker.session.timeout.ms": "30000", "samsa.http.console.write.enable": "true"},
    "broker_overrides": http_overrides()}], indirect=True, ids=["http"])
def test_records_read_from_the_leader(samsa_cluster: LocalCluster) -> None:
    from confluent_kafka import Producer

    c = samsa_cluster
    create_topic(c, "rc", partitions=1, rf=1)
    leader = c.leader("rc", 0)
    other = next(n for n in (1, 2, 3) if n != leader)
    t0 = (int(time.time()) - 600) * 1000
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
    for i in range(30):
        p.produce("rc", key=b"k%d" % i, value=b"v%d" % i, partition=0, timestamp=t0 + i * 1000)
    assert p.flush(30) == 0
    tx = Producer({"bootstrap.servers": c.bootstrap_servers, "transactional.id": "rc-tx"})
    tx.init_transactions(30)
    tx.begin_transaction()
    tx.produce("rc", key=b"k7", value=b"aborted", partition=0)
    tx.flush(30)
    tx.abort_transaction(30)

    got = rows(c, other, "/topics/rc/records?partition=0&seek=offset&offset=10&limit=4")
    assert [(r[1], r[3], r[4]) for r in got] == [(str(o), f"k{o}", f"v{o}") for o in range(10, 14)]
    got = rows(c, other, f"/topics/rc/records?partition=0&seek=timestamp&timestamp={t0 + 19_001}&limit=2")
    assert [r[1] for r in got] == ["20", "21"]
    assert [r[4] for r in rows(c, other, "/topics/rc/records?seek=beginning&key=k7")] == ["v7"]
    got = rows(c, other, "/topics/rc/records?seek=beginning&key=k7&isolation=read_uncommitted")
    assert [(r[4], r[6]) for r in got] == [("v7", ""), ("aborted", "aborted")]
    page = httpx.get(url(c, other) + "/topics/rc/records/0/5", timeout=15).text
    assert re.search(r'id="rec-value"><pre[^>]*>v5</pre>', page)

    # writes: the Produce goes to the leader, the CreateTopics through the cluster's Topology
    r = httpx.post(url(c, other) + "/topics/rc/produce", data={"partition": "0", "key": "new", "value": "from console"},
                   headers={"Origin": url(c, other)}, timeout=30)
    assert r.status_code == 200 and "Produced to partition 0 at offset 32." in r.text, r.text
    assert [r[4] for r in rows(c, leader, "/topics/rc/records?key=new")] == ["from console"]
    r = httpx.post(url(c, other) + "/topics", data={"name": "made-here", "partitions": "3", "replication_factor": "2"},
                   headers={"Origin": url(c, other)}, timeout=30)
    assert r.status_code == 200 and "Created topic made-here." in r.text, r.text
    c.wait_for(lambda: all(c.leader("made-here", q) > 0 for q in range(3)), what="made-here's leaders")
    third = next(n for n in (1, 2, 3) if n not in (leader, other))
    assert httpx.get(url(c, third) + "/topics/made-here", timeout=15).status_code == 200
