"""Every broker's console shows the whole cluster (as kafbat UI / AKHQ do through the admin API):
consumer groups and transactions coordinated by other brokers, with members, committed offsets
and lag against the leaders' high watermarks, and every partition's offsets from its leader —
fetched from broker 1 while the groups' and the transaction's coordinators are brokers 2 and 3.
A hung broker costs the page at most its timeout, and the page names it."""
from __future__ import annotations

import time

import pytest

from broker.observability.cluster_view import PEER_TIMEOUT_S
from broker.testing.local_cluster import LocalCluster, find_etcd
from coordinator.hashing import partition_for_group
from tests.support.cluster_support import (FAST_REPLICATION, console_page, create_topic, http_overrides,
                                           key_led_by, url)

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

INTERNAL_PARTITIONS = 6


def missing(html: str) -> str:
    """The page's note of the brokers whose part is absent ("" when complete)."""
    start = html.find('<div class="missing">')
    return "" if start < 0 else html[start:html.find("</div>", start)]


@pytest.mark.slow
@pytest.mark.parametrize("samsa_cluster", [{
    "overrides": {**FAST_REPLICATION, "group.initial.rebalance.delay.ms": "0", "broker.session.timeout.ms": "30000",
                  "offsets.topic.num.partitions": str(INTERNAL_PARTITIONS),
                  "transaction.state.log.num.partitions": str(INTERNAL_PARTITIONS)},
    # broker 3 runs without samsa.http.listener: its groups' timelines cannot be read
    "broker_overrides": {n: o for n, o in http_overrides().items() if n != 3}}], indirect=True, ids=["http"])
def test_any_broker_console_shows_the_whole_cluster(samsa_cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    c = samsa_cluster
    bs = c.bootstrap_servers
    create_topic(c, "cc", partitions=2, rf=3)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for i in range(12):
        p.produce("cc", value=b"v%d" % i, partition=0 if i < 7 else 1)   # HW 7 and 5
    assert p.flush(30) == 0
    # the internal topics exist once a client first needs them; then pick ids led by 2 and 3
    warm = Consumer({"bootstrap.servers": bs, "group.id": "warmup"})
    warm.commit(offsets=[TopicPartition("cc", 0, 0)], asynchronous=False)
    warm.close()
    warm_txn = Producer({"bootstrap.servers": bs, "transactional.id": "warmup"})
    warm_txn.init_transactions(30)
    c.wait_for(lambda: all(c.leader(t, q) > 0 for t in ("__consumer_offsets", "__transaction_state")
                           for q in range(INTERNAL_PARTITIONS)), what="internal topics' leaders")
    # a broker asked for a group or transactional id it does not coordinate (a client with stale
    # metadata) answers NOT_COORDINATOR for it, yet still lists its own groups and transactions
    from kafka.protocol.consumer import OffsetFetchRequest

    from tests.support.rawclient import RawClient
    elsewhere_group = key_led_by(c, "__consumer_offsets", "elsewhere", 1, INTERNAL_PARTITIONS)
    elsewhere_txn = key_led_by(c, "__transaction_state", "elsewhere", 1, INTERNAL_PARTITIONS)
    for node in (2, 3):
        with RawClient(c.brokers[node].bootstrap_servers) as raw:
            r = raw.request(9, 8, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=elsewhere_group,
                                                                                     topics=None)])
            assert r.groups[0].error_code == 16            # NOT_COORDINATOR
            r = raw.request(22, 4, transactional_id=elsewhere_txn, transaction_timeout_ms=60000, producer_id=-1,
                            producer_epoch=-1)
            assert r.error_code == 16
            assert raw.request(16, 5, states_filter=[], types_filter=[]).error_code == 0
            assert raw.request(66, 0, state_filters=[], producer_id_filters=[]).error_code == 0
    classic = key_led_by(c, "__consumer_offsets", "classic", 2, INTERNAL_PARTITIONS)
    modern = key_led_by(c, "__consumer_offsets", "modern", 3, INTERNAL_PARTITIONS)
    txn_id = key_led_by(c, "__transaction_state", "txn", 3, INTERNAL_PARTITIONS)

    def member(group: str, client_id: str, **extra: str) -> Consumer:
        consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "client.id": client_id,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest", **extra})
        consumer.subscribe(["cc"])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2:
            consumer.poll(0.2)
            assert time.monotonic() < deadline, f"{group} got no assignment"
        return consumer

    a = member(classic, "classic-client")
    b = member(modern, "modern-client", **{"group.protocol": "consumer"})
    txn = Producer({"bootstrap.servers": bs, "transactional.id": txn_id})
    try:
        a.commit(offsets=[TopicPartition("cc", 0, 3), TopicPartition("cc", 1, 2)], asynchronous=False)
        b.commit(offsets=[TopicPartition("cc", 0, 6), TopicPartition("cc", 1, 5)], asynchronous=False)
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce("cc", value=b"pending", partition=1)
        assert txn.flush(30) == 0         # open at offset 5 of cc-1: HW 6, LSO 5
        # lag = leader's HW - committed: classic 7-3=4, 6-2=4; modern 7-6=1, 6-5=1

        # complete once every coordinator has loaded (a coordinator just elected answers
        # ListTransactions with NOT_COORDINATOR until its partition is loaded, as Kafka's)
        html, t = c.wait_for(lambda: (got := console_page(c, 1, "/")) and not missing(got[0]) and got, timeout=15,
                             what="a complete overview")
        groups = {r[0]: r for r in t["groups"]}
        assert groups[classic][1:] == ["Stable", "consumer/range", "1", "2", "8", "2"]
        assert groups[modern][1] == "Stable" and groups[modern][3:] == ["1", "2", "2", "3"]
        tx = {r[0]: r for r in t["transactions"]}
        assert tx[txn_id][1] == "Ongoing" and tx[txn_id][-2:] == ["cc[1]", "3"]
        topics = {r[0]: r for r in t["topics"]}
        assert topics["cc"][1:3] == ["2", "13"]          # 7 + 6 records below the leaders' HWs

        html, t = console_page(c, 1, f"/groups/{classic}")
        assert "(broker 2)" in html and 'id="timeline-source"' in html
        assert f"read from its console at {url(c, 2)}" in html
        (m,) = t["members"]
        assert m[2] == "classic-client" and m[4] == "cc: 0,1"
        # the timeline broker 2 keeps in memory: generation 1, the member joined and got 2 partitions
        gens = [r for r in t["timeline"] if r[0].isdigit()]
        assert gens[0][0] == "1" and m[0] in gens[0][5] and gens[0][7] == f"{m[0]}: 2 partitions", gens
        assert t["offsets"] == [["cc", "0", "3", "7", "4"], ["cc", "1", "2", "6", "4"]]
        html, t = console_page(c, 1, f"/groups/{modern}")
        assert 'id="timeline-elsewhere"' in html and "broker 3 registered no samsa.http.listener" in html
        (m,) = t["members"]
        assert m[2] == "modern-client" and m[4] == "cc: 0,1"
        assert t["offsets"] == [["cc", "0", "6", "7", "1"], ["cc", "1", "5", "6", "1"]]

        _, t = console_page(c, 1, "/topics/cc")
        rows = {r[0]: r for r in t["partitions"]}
        # log start, HW, LSO, log end, from each partition's leader
        assert rows["0"][4:8] == ["0", "7", "7", "7"] and rows["1"][4:8] == ["0", "6", "5", "6"]

        # broker 3 hangs (SIGSTOP): broker 1's page answers within the peer timeout, names it,
        # and still shows what broker 2 coordinates. hw-0 (leader 2) keeps its HW while its
        # follower 3 hangs: acks=1 writes raise only the leader's log end, which broker 1 shows
        create_topic(c, "hw", assignment={0: [2, 1, 3]})
        c.wait_for(lambda: sorted(c.image().partition("hw", 0).isr) == [1, 2, 3], what="hw's full ISR")
        p.produce("hw", value=b"a", partition=0)
        p.produce("hw", value=b"b", partition=0)
        assert p.flush(30) == 0
        c.pause(3)
        try:
            p1 = Producer({"bootstrap.servers": c.brokers[2].bootstrap_servers, "acks": 1})
            for v in (b"c", b"d", b"e"):
                p1.produce("hw", value=v, partition=0)
            assert p1.flush(30) == 0
            _, t = console_page(c, 1, "/topics/hw")
            assert t["partitions"][0][4:8] == ["0", "2", "2", "5"]
            start = time.monotonic()
            html, t = console_page(c, 1, "/")
            took = time.monotonic() - start
            assert took < PEER_TIMEOUT_S + 3, took
            assert f"broker 3 did not answer within {PEER_TIMEOUT_S:g} s" in html
            names = [r[0] for r in t["groups"]]
            assert classic in names and modern not in names
            assert txn_id not in [r[0] for r in t.get("transactions", [])]
        finally:
            c.resume(3)
        html, t = console_page(c, 1, "/")
        assert not missing(html), missing(html) and modern in [r[0] for r in t["groups"]]
        # broker 3 stops cleanly: fenced, so not asked, and named; its groups moved with the
        # leadership of their __consumer_offsets partitions and show with their new coordinator
        c.stop(3)
        html, t = c.wait_for(lambda: (got := console_page(c, 1, "/")) and "broker 3 is fenced" in got[0] and got,
                             timeout=15, what="broker 3 named fenced")
        coordinator = c.leader("__consumer_offsets", partition_for_group(modern, INTERNAL_PARTITIONS))
        assert coordinator in (1, 2)
        c.wait_for(lambda: {r[0]: r for r in console_page(c, 1, "/")[1]["groups"]}.get(modern, [""])[-1]
                   == str(coordinator),
                   timeout=15, what="the modern group shown with its new coordinator")
        # broker 2 is killed (still registered until its session times out): refused, named
        c.kill(2)
        html, t = console_page(c, 1, f"/groups/{classic}")
        assert "broker 2 did not answer: cannot connect" in html and "Not found on the brokers that answered" in html
    finally:
        a.close()
        b.close()
        del txn
