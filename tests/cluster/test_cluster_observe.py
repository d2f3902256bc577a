"""Observability of a replicated cluster with real processes (etcd + 3 brokers, the samsa_cluster
fixture), each broker with its own ``samsa.http.listener``: /metrics scraped from every broker
(exact controller, leader, partition and under-replicated counts), the console's brokers and
topic pages, and the lifecycle log lines of a leader failover."""
from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.cluster_support import FAST_REPLICATION, ConsoleTables, create_topic, http_overrides, url

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")


def scrape(c: LocalCluster, node: int) -> dict[tuple[str, tuple], float]:
    resp = httpx.get(url(c, node) + "/metrics", timeout=10)
    assert resp.status_code == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(resp.text) for s in fam.samples}


def gauge(c: LocalCluster, node: int, name: str) -> float:
    return scrape(c, node)[(name, ())]


def produce(c: LocalCluster, node: int, topic: str, values: list[bytes], acks: int) -> int:
    from kafka.protocol.producer import ProduceRequest

    from tests.support.rawclient import RawClient
    from tests.support.wire import value_batch

    td = ProduceRequest.TopicProduceData(name=topic, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(value_batch(values)))])
    with RawClient(c.brokers[node].bootstrap_servers, timeout=30) as client:
        resp = client.request(0, 9, transactional_id=None, acks=acks, timeout_ms=15000, topic_data=[td])
    return resp.responses[0].partition_responses[0].error_code


def tables(c: LocalCluster, node: int, path: str) -> dict[str, list[list[str]]]:
    resp = httpx.get(url(c, node) + path, timeout=10)
    assert resp.status_code == 200, resp.text
    parser = ConsoleTables()
    parser.feed(resp.text)
    return parser.tables


def log_lines(c: LocalCluster, node: int, event: str, **fields: object) -> list[str]:
    """This broker's log lines for ``event`` carrying every ``key=value`` given (any order)."""
    text = Path(c.brokers[node].log_path).read_text(errors="replace")
    want = [f"{k}={v}" for k, v in fields.items()]
    return [line for line in text.splitlines()
            if re.search(rf"\] {re.escape(event)}\s", line) and all(re.search(rf"(^|\s){re.escape(w)}(\s|$)", line)
                                                                    for w in want)]


def expected_counts(c: LocalCluster, node: int) -> tuple[int, int]:
    """(partitions with a replica on ``node``, partitions it leads) as the metadata says."""
    image = c.image()
    regs = [reg for t in image.topics.values() for reg in t.partitions.values()]
    return sum(1 for r in regs if node in r.replicas), sum(1 for r in regs if r.leader == node)


@pytest.mark.slow
@pytest.mark.parametrize("samsa_cluster", [{
    # a long broker session: a paused follower leaves the ISR by replica lag, never by fencing
    "overrides": {**FAST_REPLICATION, "replica.lag.time.max.ms": "1000", "broker.session.timeout.ms": "30000"},
    "broker_overrides": http_overrides()}], indirect=True, ids=["http"])
def test_metrics_and_console_of_a_cluster(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    controller = c.wait_for(lambda: c.controller() if c.controller() > 0 else None, what="a controller")
    counts = {n: gauge(c, n, "kafka_controller_kafkacontroller_activecontrollercount") for n in (1, 2, 3)}
    assert counts == {n: (1.0 if n == controller else 0.0) for n in (1, 2, 3)}
    # elected once, never flapping; the others name it
    assert len(log_lines(c, controller, "became the active controller", node_id=controller)) == 1
    assert not log_lines(c, controller, "resigned as the active controller")
    for n in (1, 2, 3):
        if n != controller:
            assert log_lines(c, n, "active controller changed", controller=controller)

    create_topic(c, "obs", partitions=3, rf=3)
    create_topic(c, "obs1", partitions=1, rf=3)
    c.wait_for(lambda: all(sorted(c.image().partition(t, p).isr) == [1, 2, 3]
                           for t, n in (("obs", 3), ("obs1", 1)) for p in range(n)), what="full ISRs")
    for n in (1, 2, 3):
        want = expected_counts(c, n)
        c.wait_for(lambda n=n, want=want: (gauge(c, n, "kafka_server_replicamanager_partitioncount"),
                                           gauge(c, n, "kafka_server_replicamanager_leadercount")) == want,
                   timeout=10, what=f"broker {n}'s partition and leader counts = {want}")
        m = scrape(c, n)
        assert m[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
        assert m[("kafka_brokers", ())] == 3
        # the cluster-wide counts are the active controller's alone
        assert m[("kafka_controller_kafkacontroller_globalpartitioncount", ())] == (4 if n == controller else 0)
        assert m[("kafka_controller_kafkacontroller_globaltopiccount", ())] == (2 if n == controller else 0)
    assert sum(expected_counts(c, n)[1] for n in (1, 2, 3)) == 4

    # the console: every broker of the image, its endpoint, and the controller, as any broker sees it
    for n in (1, 2, 3):
        rows = tables(c, n, "/")["brokers"]
        assert [r[0] for r in rows] == ["1", "2", "3"]
        assert [r[1] for r in rows] == [f"PLAINTEXT://127.0.0.1:{c.brokers[b].port}" for b in (1, 2, 3)]
        assert [r[3] for r in rows] == ["yes" if b == controller else "" for b in (1, 2, 3)]
        assert [r[4] for r in rows] == ["yes", "yes", "yes"]
        assert [r[5] for r in rows] == [str(expected_counts(c, b)[1]) for b in (1, 2, 3)]   # partitions led
    image = c.image()
    for n in (1, 2, 3):
        parts = tables(c, n, "/topics/obs")["partitions"]
        assert [(r[0], r[1], r[2], r[3], r[-1]) for r in parts] == [
            (str(p), str(reg.leader), ",".join(map(str, reg.replicas)), ",".join(map(str, reg.isr)),
             str(reg.leader_epoch)) for p, reg in sorted(image.topics["obs"].partitions.items())]
    # a topic whose one replica is on broker 1: the other brokers' pages name its leader and show the
    # offsets it answers (ListOffsets to the leader); segments are counted only where hosted
    create_topic(c, "solo", assignment={0: [1]})
    for n in (1, 2, 3):
        resp = c.wait_for(lambda n=n: (r := httpx.get(url(c, n) + "/topics/solo", timeout=10)).status_code == 200
                          and r, timeout=10, what=f"/topics/solo on {n}")
        parser = ConsoleTables()
        parser.feed(resp.text)
        row = parser.tables["partitions"][0]
        assert row[:4] == ["0", "1", "1", "1"] and row[-1] == "0"
        assert row[4:8] == ["0", "0", "0", "0"]
        assert (row[9] == "") == (n != 1)
    assert httpx.get(url(c, 2) + "/topics/nope", timeout=10).status_code == 404

    # a hung follower of obs1-0 falls behind and leaves the ISR: its leader counts one
    # under-replicated partition (obs1-0: the other partitions get no writes, so stay in sync)
    leader = c.leader("obs1", 0)
    follower, other = [b for b in (1, 2, 3) if b != leader]
    assert produce(c, leader, "obs1", [b"a"], acks=-1) == 0
    epoch_before = c.image().partition("obs1", 0).partition_epoch
    c.pause(follower)
    try:
        assert produce(c, leader, "obs1", [b"b"], acks=1) == 0
        c.wait_for(lambda: gauge(c, leader, "kafka_server_replicamanager_underreplicatedpartitions") == 1,
                   timeout=20, what="the leader reports one under-replicated partition")
        reg = c.image().partition("obs1", 0)
        assert sorted(reg.isr) == sorted([leader, other])
        m = scrape(c, leader)
        pl = (("partition", "0"), ("topic", "obs1"))
        assert m[("kafka_cluster_partition_underreplicated", pl)] == 1
        assert m[("kafka_cluster_partition_insyncreplicascount", pl)] == 2
        assert gauge(c, other, "kafka_server_replicamanager_underreplicatedpartitions") == 0
        row = next(r for r in tables(c, other, "/topics/obs1")["partitions"] if r[0] == "0")
        assert row[3] == ",".join(map(str, reg.isr))
        shrunk = log_lines(c, leader, "ISR shrunk", partition="obs1-0", removed=f"[{follower}]",
                           partition_epoch=reg.partition_epoch)
        assert len(shrunk) == 1 and reg.partition_epoch == epoch_before + 1, shrunk
    finally:
        c.resume(follower)
    c.wait_for(lambda: gauge(c, leader, "kafka_server_replicamanager_underreplicatedpartitions") == 0,
               timeout=30, what="the follower back in the ISR")
    reg = c.image().partition("obs1", 0)
    assert sorted(reg.isr) == [1, 2, 3]
    assert len(log_lines(c, leader, "ISR expanded", partition="obs1-0", added=f"[{follower}]",
                         partition_epoch=reg.partition_epoch)) == 1
    # each ISR change is logged once in the cluster: by the partition's leader
    for n in (follower, other):
        assert not log_lines(c, n, "ISR shrunk", partition="obs1-0")


@pytest.mark.slow
@pytest.mark.parametrize("samsa_cluster", [{"overrides": {**FAST_REPLICATION, "replica.lag.time.max.ms": "1500"},
                                            "broker_overrides": http_overrides()}], indirect=True, ids=["http"])
def test_leader_failover_is_logged_and_shown(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    # the active controller leads fo-0 (the first replica): killing it moves both
    old = c.wait_for(lambda: c.controller() if c.controller() > 0 else None, what="a controller")
    create_topic(c, "fo", assignment={0: [old] + [b for b in (1, 2, 3) if b != old]})
    c.wait_for(lambda: sorted(c.image().partition("fo", 0).isr) == [1, 2, 3], what="full ISR")
    assert c.leader("fo", 0) == old
    assert c.image().partition("fo", 0).leader_epoch == 0
    assert log_lines(c, old, "became leader", partition="fo-0", leader_epoch=0)
    c.kill(old)
    survivors = [b for b in (1, 2, 3) if b != old]
    c.wait_for(lambda: c.leader("fo", 0) in survivors, timeout=30, what="a new leader")
    reg = c.image().partition("fo", 0)
    new = reg.leader
    assert reg.leader_epoch == 1 and old not in reg.isr
    # the new leader's replica manager, and the follower's
    c.wait_for(lambda: log_lines(c, new, "became leader", partition="fo-0", leader_epoch=1),
               timeout=10, what="'became leader' on the new leader")
    follower = next(b for b in survivors if b != new)
    c.wait_for(lambda: log_lines(c, follower, "became follower", partition="fo-0", leader=new, leader_epoch=1),
               timeout=10, what="'became follower' on the other survivor")
    # the fencing, on every survivor; the election, once, on the active controller
    for b in survivors:
        c.wait_for(lambda b=b: log_lines(c, b, "broker fenced", broker=old), timeout=10,
                   what=f"'broker fenced' on {b}")
    controller = c.wait_for(lambda: c.controller() if c.controller() in survivors else None,
                            timeout=30, what="a live controller")
    elected = [line for b in survivors
               for line in log_lines(c, b, "partition leader changed", partition="fo-0", leader=new,
                                     previous_leader=old, leader_epoch=1)]
    assert len(elected) == 1 and elected == log_lines(c, controller, "partition leader changed", partition="fo-0",
                                                       leader=new, previous_leader=old, leader_epoch=1)
    # the take-over: logged by the new controller, and seen by the other survivor
    assert log_lines(c, controller, "became the active controller", node_id=controller)
    other = next(b for b in survivors if b != controller)
    c.wait_for(lambda: log_lines(c, other, "active controller changed", controller=controller),
               timeout=10, what="'active controller changed' on the other survivor")
    # metrics and console on the survivors: one active controller, the dead broker shown fenced
    c.wait_for(lambda: [gauge(c, b, "kafka_controller_kafkacontroller_activecontrollercount") for b in survivors]
               == [1.0 if b == controller else 0.0 for b in survivors], timeout=10, what="one active controller")
    for b in survivors:
        rows = {r[0]: r for r in tables(c, b, "/")["brokers"]}
        assert sorted(rows) == ["1", "2", "3"]
        assert rows[str(old)][4] == "no (fenced)"
        assert [r[3] for _, r in sorted(rows.items())] == ["yes" if n == controller else "" for n in (1, 2, 3)]
        assert gauge(c, b, "kafka_brokers") == 2
    parts = tables(c, new, "/topics/fo")["partitions"]
    assert [(r[1], r[3], r[-1]) for r in parts] == [(str(new), ",".join(map(str, reg.isr)), "1")]

    # the killed broker comes back: unfenced (a new registration), a follower again, back in the ISR
    c.start_broker(old)
    for b in survivors:
        c.wait_for(lambda b=b: log_lines(c, b, "broker unfenced", broker=old, reregistered=True), timeout=20,
                   what=f"'broker unfenced' on {b}")
    c.wait_for(lambda: sorted(c.image().partition("fo", 0).isr) == [1, 2, 3], timeout=30, what="ISR back to 3")
    reg = c.image().partition("fo", 0)
    assert log_lines(c, old, "became follower", partition="fo-0", leader=new, leader_epoch=1)
    assert len(log_lines(c, new, "ISR expanded", partition="fo-0", added=f"[{old}]",
                         partition_epoch=reg.partition_epoch)) == 1
    for b in (1, 2, 3):
        c.wait_for(lambda b=b: gauge(c, b, "kafka_brokers") == 3, timeout=10, what=f"3 live brokers on {b}")
        assert [r[4] for r in tables(c, b, "/")["brokers"]] == ["yes", "yes", "yes"]


@pytest.mark.slow
@pytest.mark.parametrize("samsa_cluster", [{"overrides": {**FAST_REPLICATION, "group.initial.rebalance.delay.ms": "0"},
                                            "broker_overrides": http_overrides()}], indirect=True, ids=["http"])
def test_consumer_group_lag_on_the_coordinator(samsa_cluster: LocalCluster) -> None:
    """kafka_consumergroup_* come from the group's coordinator (the leader of its
    __consumer_offsets partition), with lag from its replica's high watermark; the other brokers
    report no series for the group."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    c = samsa_cluster
    create_topic(c, "lag3", partitions=2, rf=3)
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
    for i in range(12):
        p.produce("lag3", value=b"v%d" % i, partition=0 if i < 7 else 1)
    assert p.flush(30) == 0

    def commit(offsets: list) -> None:
        consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "g"})
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        finally:
            consumer.close()

    commit([TopicPartition("lag3", 0, 3), TopicPartition("lag3", 1, 2)])
    lag = lambda m, t, part: m.get(("kafka_consumergroup_lag", (("consumergroup", "g"), ("partition", str(part)),
                                                                 ("topic", t))))
    want = {0: 4.0, 1: 3.0}
    c.wait_for(lambda: [n for n in (1, 2, 3) if {q: lag(scrape(c, n), "lag3", q) for q in (0, 1)} == want],
               timeout=20, what="the coordinator's exact lag")
    reporting = [n for n in (1, 2, 3) if ("kafka_consumergroup_members", (("consumergroup", "g"),)) in scrape(c, n)]
    assert len(reporting) == 1, reporting
    coordinator = reporting[0]
    m = scrape(c, coordinator)
    assert m[("kafka_consumergroup_lag_sum", (("consumergroup", "g"), ("topic", "lag3")))] == 7
    assert m[("kafka_consumergroup_current_offset", (("consumergroup", "g"), ("partition", "0"),
                                                     ("topic", "lag3")))] == 3
