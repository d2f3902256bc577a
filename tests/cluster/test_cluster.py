"""A replicated cluster's control plane with real processes: etcd and three brokers
(the ``samsa_cluster`` fixture), answers read with a raw client from every broker."""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import pytest
from kafka.protocol.admin import CreateTopicsRequest

from broker.testing.local_cluster import find_etcd
from broker.testing import SamsaBroker, free_port
from broker.testing.ports import free_port_run
from tests.support.cluster_support import create_topic_at, metadata, wait_for
from tests.support.rawclient import RawClient

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

CT = CreateTopicsRequest.CreatableTopic
CTA = CT.CreatableReplicaAssignment


def test_three_brokers_agree_and_replicas_are_placed(samsa_cluster) -> None:
    c = samsa_cluster
    boots = c.bootstrap_servers.split(",")
    first = metadata(boots[0])
    assert first["brokers"] == [1, 2, 3] and first["controller"] in (1, 2, 3)
    r = create_topic_at(boots[1], "rf3", partitions=3, rf=3)
    assert (r.error_code, r.num_partitions, r.replication_factor) == (0, 3, 3)
    views = [wait_for(lambda b=b: (m := metadata(b))["topics"].get("rf3") and m, what=f"rf3 on {b}") for b in boots]
    for v in views:
        assert v["brokers"] == [1, 2, 3] and v["controller"] == first["controller"]
        assert v["cluster_id"] == first["cluster_id"]
        assert v["topics"]["rf3"] == views[0]["topics"]["rf3"]
    parts = views[0]["topics"]["rf3"]
    for p, (leader, epoch, replicas, isr) in parts.items():
        assert sorted(replicas) == [1, 2, 3] and sorted(isr) == [1, 2, 3]
        assert leader == replicas[0] and epoch == 0
    assert {parts[p][0] for p in parts} == {1, 2, 3}       # leadership spread over the brokers
    assert c.leader("rf3", 0) == parts[0][0]

    r4 = create_topic_at(boots[2], "rf4", rf=4)
    assert r4.error_code == 37 + 1  # INVALID_REPLICATION_FACTOR
    assert "only 3 broker(s) are registered" in r4.error_message
    manual = create_topic_at(boots[0], "manual", assignments=[[3, 1], [2, 3]])
    assert manual.error_code == 0 and manual.replication_factor == 2
    got = wait_for(lambda: metadata(boots[2])["topics"].get("manual"), what="manual topic")
    assert got[0][2] == (3, 1) and got[1][2] == (2, 3) and got[0][0] == 3
    bad = create_topic_at(boots[0], "bad", assignments=[[1, 7]])
    assert bad.error_code == 39  # INVALID_REPLICATION_ASSIGNMENT: broker 7 is not registered
    with RawClient(boots[1]) as cl:
        dc = cl.request(60, 0, include_cluster_authorized_operations=False)
    assert sorted(b.broker_id for b in dc.brokers) == [1, 2, 3] and dc.controller_id == first["controller"]


@pytest.mark.slow
def test_killed_leader_is_replaced_from_the_isr_with_a_new_epoch(samsa_cluster) -> None:
    c = samsa_cluster
    boots = dict(zip(c.brokers, c.bootstrap_servers.split(",")))
    assert create_topic_at(boots[1], "fo", rf=3).error_code == 0
    leader, epoch, replicas, isr = wait_for(lambda: metadata(boots[1])["topics"].get("fo"), what="fo")[0]
    c.kill(leader)
    survivor = next(b for b in boots if b != leader)

    def moved():
        p = metadata(boots[survivor])["topics"]["fo"][0]
        return p if p[0] not in (leader, -1) else None
    new_leader, new_epoch, new_replicas, new_isr = wait_for(moved, timeout=20, what="a new leader")
    assert new_leader in isr and new_epoch == epoch + 1 and new_replicas == replicas
    assert leader not in new_isr and sorted(new_isr) == sorted(b for b in isr if b != leader)
    assert metadata(boots[survivor])["brokers"] == sorted(b for b in boots if b != leader)
    # it comes back: registered again, a follower (not in the ISR until the data plane adds it)
    c.restart(leader)
    wait_for(lambda: metadata(boots[leader])["brokers"] == [1, 2, 3], what="the broker back in Metadata")
    assert metadata(boots[leader])["topics"]["fo"][0][0] == new_leader


def test_kill_the_controller_another_takes_over_and_topics_can_be_created(samsa_cluster) -> None:
    c = samsa_cluster
    boots = dict(zip(c.brokers, c.bootstrap_servers.split(",")))
    old = wait_for(lambda: c.controller() if c.controller() > 0 else None, what="a controller")
    c.kill(old)
    rest = [b for b in boots if b != old]
    new = wait_for(lambda: (n := c.controller()) not in (-1, old) and n, timeout=20, what="a new controller")
    assert new in rest
    wait_for(lambda: all(metadata(boots[b])["controller"] == new for b in rest), what="brokers see the controller")
    r = create_topic_at(boots[rest[0]], "after", partitions=2, rf=2)
    assert r.error_code == 0
    got = wait_for(lambda: metadata(boots[rest[1]])["topics"].get("after"), what="the topic")
    assert all(set(p[2]) == set(rest) for p in got.values())
    assert create_topic_at(boots[rest[0]], "after3", rf=3).error_code == 38   # only 2 live brokers now


def test_controlled_shutdown_moves_leadership_first(samsa_cluster) -> None:
    c = samsa_cluster
    boots = dict(zip(c.brokers, c.bootstrap_servers.split(",")))
    assert create_topic_at(boots[1], "cs", rf=3).error_code == 0
    leader, epoch, _, _ = wait_for(lambda: metadata(boots[1])["topics"].get("cs"), what="cs")[0]
    started = time.monotonic()
    assert c.stop(leader) == 0
    took = time.monotonic() - started
    other = next(b for b in boots if b != leader)
    p = metadata(boots[other])["topics"]["cs"][0]
    assert p[0] not in (leader, -1) and p[1] == epoch + 1   # moved before the broker exited
    assert took < 8


def test_brokers_reconnect_after_etcd_restarts(samsa_cluster) -> None:
    c = samsa_cluster
    boots = c.bootstrap_servers.split(",")
    assert create_topic_at(boots[0], "before", rf=3).error_code == 0
    before = wait_for(lambda: metadata(boots[2])["topics"].get("before"), what="before")
    c.stop_etcd()
    # etcd down: brokers answer from the image they have; a metadata change waits, then times out
    for b in boots:
        m = metadata(b)
        assert m["topics"]["before"] == before and m["brokers"] == [1, 2, 3]
    with RawClient(boots[1]) as cl:
        t0 = time.monotonic()
        r = cl.request(19, 7, topics=[CT(name="while-down", num_partitions=1, replication_factor=3, assignments=[],
                                         configs=[])], timeout_ms=1500, validate_only=False).topics[0]
        assert r.error_code == 7 and 1.2 < time.monotonic() - t0 < 10   # REQUEST_TIMED_OUT
    c.start_etcd()
    # brokers kept their leases (TTL 3 s > the outage) or registered again; writes work again
    r = wait_for(lambda: (x := create_topic_at(boots[1], "after-etcd", rf=3)).error_code == 0 and x, timeout=30,
                 what="a topic created after etcd restarted")
    assert r.num_partitions == 1
    for b in boots:
        wait_for(lambda b=b: (m := metadata(b))["topics"].get("after-etcd") and m["brokers"] == [1, 2, 3],
                 what=f"{b} to see the new topic and every broker")


@pytest.mark.slow
def test_a_live_node_id_and_a_foreign_log_dir_refuse_to_start(samsa_cluster, tmp_path) -> None:
    c = samsa_cluster
    common = {"samsa.metadata.etcd.endpoints": c.etcd.endpoint, "broker.session.timeout.ms": "3000"}
    dup = SamsaBroker(tmp_path / "dup", overrides={**common, "node.id": "2"})
    with pytest.raises(RuntimeError, match="node.id=2 is already live"):
        dup.start(timeout=30)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "meta.properties").write_text("version=1\ncluster.id=someOtherCluster\nnode.id=4\n")
    stranger = SamsaBroker(foreign, overrides={**common, "node.id": "4"})
    with pytest.raises(RuntimeError, match="someOtherCluster"):
        stranger.start(timeout=30)


def test_samsa_cluster_command_prints_bootstrap_and_stops_on_sigterm(tmp_path) -> None:
    base = free_port_run(2)
    proc = subprocess.Popen([sys.executable, "-m", "broker", "cluster", "--brokers", "2", "--base-port", str(base),
                             "--data-dir", str(tmp_path / "c"), "--override", "num.partitions=4"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")})
    try:
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if line.startswith("127.0.0.1:"):
                break
        assert lines[-1].strip() == f"127.0.0.1:{base},127.0.0.1:{base + 1}", "".join(lines)
        assert metadata(f"127.0.0.1:{base + 1}")["brokers"] == [1, 2]
        r = create_topic_at(f"127.0.0.1:{base}", "four", partitions=-1, rf=2)
        assert (r.error_code, r.num_partitions) == (0, 4)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    with pytest.raises(OSError):
        metadata(f"127.0.0.1:{base}")


def test_a_paused_leader_loses_its_lease_and_comes_back_registered_again(samsa_cluster) -> None:
    c = samsa_cluster
    boots = dict(zip(c.brokers, c.bootstrap_servers.split(",")))
    assert create_topic_at(boots[1], "hung", rf=3).error_code == 0
    leader, epoch, _, isr = wait_for(lambda: metadata(boots[1])["topics"].get("hung"), what="hung")[0]
    c.pause(leader)                               # SIGSTOP: a hung broker keeps its sockets
    other = next(b for b in boots if b != leader)
    p = wait_for(lambda: (q := metadata(boots[other])["topics"]["hung"][0])[0] not in (leader, -1) and q,
                 timeout=20, what="leadership to move off the hung broker")
    assert p[1] == epoch + 1 and leader not in p[3]
    assert c.image().brokers[leader].fenced
    c.resume(leader)
    # its keep-alive finds the lease gone: it registers again, unfenced, as a new incarnation
    wait_for(lambda: not c.image().brokers[leader].fenced, timeout=20, what="the broker to register again")
    wait_for(lambda: metadata(boots[other])["brokers"] == [1, 2, 3], what="all brokers listed again")


def test_producer_ids_are_unique_across_brokers(samsa_cluster) -> None:
    boots = samsa_cluster.bootstrap_servers.split(",")
    pids = []
    for _ in range(3):
        for b in boots:
            with RawClient(b) as c:
                r = c.request(22, 4, transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                              producer_epoch=-1)
            assert r.error_code == 0
            pids.append(r.producer_id)
    assert len(set(pids)) == len(pids)
    blocks = {p // 1000 for p in pids}
    assert len(blocks) == 3          # each broker hands out ids from its own reserved block


def test_elect_leaders_moves_leadership_back_to_the_preferred_replica(samsa_cluster) -> None:
    from kafka.protocol.admin import ElectLeadersRequest
    c = samsa_cluster
    boots = dict(zip(c.brokers, c.bootstrap_servers.split(",")))
    assert create_topic_at(boots[1], "pref", assignments=[[1, 2, 3]]).error_code == 0
    assert c.stop(1) == 0                               # controlled shutdown: 2 leads now
    assert metadata(boots[2])["topics"]["pref"][0][0] == 2
    with RawClient(boots[2]) as cl:
        tp = [ElectLeadersRequest.TopicPartitions(topic="pref", partitions=[0, 5])]
        r = cl.request(43, 2, election_type=0, topic_partitions=tp, timeout_ms=5000)
    codes = {p.partition_id: p.error_code for res in r.replica_election_results for p in res.partition_result}
    assert codes == {0: 80, 5: 3}          # PREFERRED_LEADER_NOT_AVAILABLE (1 is down), UNKNOWN_TOPIC_OR_PARTITION
    c.start_broker(1)
    # broker 1 is back but out of the ISR until the data plane adds it: still not available
    wait_for(lambda: metadata(boots[1])["brokers"] == [1, 2, 3], what="broker 1 registered")
    reg = c.image().partition("pref", 0)
    if 1 in reg.isr:                        # the data plane put it back in the ISR
        with RawClient(boots[3]) as cl:
            r = cl.request(43, 2, election_type=0, topic_partitions=None, timeout_ms=5000)
        assert [(res.topic, p.error_code) for res in r.replica_election_results for p in res.partition_result] \
            == [("pref", 0)]
        assert c.leader("pref", 0) == 1
    with RawClient(boots[3]) as cl:          # unclean: the partition has a live leader
        r = cl.request(43, 2, election_type=1, topic_partitions=[ElectLeadersRequest.TopicPartitions(
            topic="pref", partitions=[0])], timeout_ms=5000)
    assert r.replica_election_results[0].partition_result[0].error_code == 84   # ELECTION_NOT_NEEDED


def test_topic_configs_live_in_the_metadata_log(samsa_cluster) -> None:
    from kafka.protocol.admin import (CreateTopicsRequest, DescribeConfigsRequest,
                                      IncrementalAlterConfigsRequest)
    boots = samsa_cluster.bootstrap_servers.split(",")
    CC = CreateTopicsRequest.CreatableTopic.CreatableTopicConfig
    with RawClient(boots[0]) as c:
        t = CT(name="cfg", num_partitions=1, replication_factor=3, assignments=[],
               configs=[CC(name="retention.ms", value="12345")])
        assert c.request(19, 7, topics=[t], timeout_ms=5000, validate_only=False).topics[0].error_code == 0

    def describe(b: str) -> dict:
        with RawClient(b) as c:
            r = c.request(32, 4, resources=[DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=2, resource_name="cfg", configuration_keys=["retention.ms",
                                                                           "unclean.leader.election.enable"])],
                include_synonyms=False, include_documentation=False)
        res = r.results[0]
        if res.error_code != 0:   # UNKNOWN_TOPIC_OR_PARTITION until the broker has replayed the topic
            return {}
        return {cfg.name: (cfg.value, cfg.config_source) for cfg in res.configs}
    assert wait_for(lambda: describe(boots[2]).get("retention.ms") == ("12345", 1), what="the config on broker 3")
    A = IncrementalAlterConfigsRequest.AlterConfigsResource
    with RawClient(boots[1]) as c:
        r = c.request(44, 1, resources=[A(resource_type=2, resource_name="cfg", configs=[
            A.AlterableConfig(name="unclean.leader.election.enable", config_operation=0, value="true"),
            A.AlterableConfig(name="retention.ms", config_operation=1, value=None)])], validate_only=False)
        assert r.responses[0].error_code == 0
    got = wait_for(lambda: (d := describe(boots[0])).get("unclean.leader.election.enable", ("",))[0] == "true" and d,
                   what="the altered config on broker 1")
    assert got["unclean.leader.election.enable"] == ("true", 1) and got["retention.ms"] == ("604800000", 5)
    assert dict(samsa_cluster.image().topic_configs("cfg")) == {"unclean.leader.election.enable": "true"}


def test_partition_reassignment_starts_lists_completes_and_cancels(samsa_cluster) -> None:
    from kafka.protocol.admin import AlterPartitionReassignmentsRequest as APR
    T, P = APR.ReassignableTopic, APR.ReassignableTopic.ReassignablePartition
    c = samsa_cluster
    boots = dict(zip(c.brokers, c.bootstrap_servers.split(",")))
    assert create_topic_at(boots[1], "mv", assignments=[[1, 2], [1, 2]]).error_code == 0
    assert c.stop(3) == 0      # registered but down: it cannot join the ISR, so a move to it stays ongoing

    def alter(*parts):
        with RawClient(boots[2]) as cl:
            r = cl.request(45, 1, timeout_ms=5000, allow_replication_factor_change=True,
                           topics=[T(name="mv", partitions=[P(partition_index=i, replicas=rs) for i, rs in parts])])
        return [p.error_code for t in r.responses for p in t.partitions]

    def ongoing():
        with RawClient(boots[1]) as cl:
            r = cl.request(46, 0, timeout_ms=5000, topics=None)
        return {(t.name, p.partition_index): (tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
                for t in r.topics for p in t.partitions}
    assert alter((0, [2, 3]), (1, [2]), (5, [1])) == [0, 0, 3]
    assert ongoing() == {("mv", 0): ((2, 3, 1), (3,), (1,))}
    m = metadata(boots[1])["topics"]["mv"]
    assert m[1][0] == 2 and m[1][2] == (2,) and m[1][1] == 1      # [2] was in the ISR: done at once, 2 leads
    assert m[0][2] == (2, 3, 1) and m[0][0] == 1                  # moving: 1 still leads
    assert alter((0, None), (1, None)) == [0, 85]                 # cancel; nothing ongoing on partition 1
    assert ongoing() == {}
    assert metadata(boots[2])["topics"]["mv"][0][2] == (2, 1)


@pytest.mark.skipif(importlib.util.find_spec("broker.replica") is None,
                    reason="needs the replica manager (broker/replica/) to copy data")
def test_reassignment_with_replication_moves_the_data_and_completes(samsa_cluster) -> None:
    """With the data plane (broker/replica/, the replica manager), the new replica copies the
    log, joins the ISR, and the controller completes the move: the old leader leaves."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.protocol.admin import AlterPartitionReassignmentsRequest as APR
    T, P = APR.ReassignableTopic, APR.ReassignableTopic.ReassignablePartition
    c = samsa_cluster
    boots = c.bootstrap_servers.split(",")
    assert create_topic_at(boots[0], "moved", assignments=[[1, 2]]).error_code == 0
    producer = KafkaProducer(bootstrap_servers=boots[0], acks="all")
    for i in range(100):
        producer.send("moved", b"v%d" % i)
    producer.flush()
    producer.close()
    with RawClient(boots[1]) as cl:
        r = cl.request(45, 1, timeout_ms=5000, allow_replication_factor_change=True,
                       topics=[T(name="moved", partitions=[P(partition_index=0, replicas=[2, 3])])])
    assert r.responses[0].partitions[0].error_code == 0
    reg = wait_for(lambda: (g := c.image().partition("moved", 0)).replicas == (2, 3) and not g.adding_replicas and g,
                   what="the move to complete")
    assert reg.isr == (2, 3) and reg.leader == 2 and reg.leader_epoch == 1
    consumer = KafkaConsumer("moved", bootstrap_servers=boots[2], auto_offset_reset="earliest",
                             consumer_timeout_ms=5000)
    assert [m.value for m in consumer] == [b"v%d" % i for i in range(100)]
    consumer.close()


@pytest.mark.parametrize("samsa_cluster", [{"brokers": 4, "broker_overrides": {
    1: {"broker.rack": "rack-a"}, 2: {"broker.rack": "rack-a"}, 3: {"broker.rack": "rack-b"},
    4: {"broker.rack": "rack-b"}}}], indirect=True)
def test_rack_aware_placement(samsa_cluster) -> None:
    boots = samsa_cluster.bootstrap_servers.split(",")
    assert create_topic_at(boots[0], "racks", partitions=8, rf=2).error_code == 0

    def metadata():   # broker 4 learns of the topic when it has replayed the record (a moment later)
        with RawClient(boots[3]) as c:
            return c.request(3, 12, topics=None, allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False)
    wait_for(lambda: any(t.name == "racks" for t in metadata().topics), what="broker 4 knows 'racks'")
    r = metadata()
    racks = {b.node_id: b.rack for b in r.brokers}
    assert racks == {1: "rack-a", 2: "rack-a", 3: "rack-b", 4: "rack-b"}
    parts = next(t for t in r.topics if t.name == "racks").partitions
    assert len(parts) == 8
    for p in parts:
        assert {racks[b] for b in p.replica_nodes} == {"rack-a", "rack-b"}, p
    assert {p.leader_id for p in parts} == {1, 2, 3, 4}


@pytest.mark.slow
def test_never_elects_outside_the_isr_unless_unclean_election_is_enabled(samsa_cluster) -> None:
    from kafka.protocol.admin import CreateTopicsRequest
    CC = CreateTopicsRequest.CreatableTopic.CreatableTopicConfig
    c = samsa_cluster
    boots = dict(zip(c.brokers, c.bootstrap_servers.split(",")))
    with RawClient(boots[3]) as cl:
        for name, unclean in (("clean", "false"), ("dirty", "true")):
            t = CT(name=name, num_partitions=-1, replication_factor=-1,
                   assignments=[CTA(partition_index=0, broker_ids=[1, 2])],
                   configs=[CC(name="unclean.leader.election.enable", value=unclean)])
            assert cl.request(19, 7, topics=[t], timeout_ms=5000, validate_only=False).topics[0].error_code == 0
    c.kill(2)                                                   # the follower: it leaves the ISR
    wait_for(lambda: all(c.image().partition(t, 0).isr == (1,) for t in ("clean", "dirty")), what="ISR (1,)")
    c.kill(1)                                                   # the last ISR member: no leader left
    wait_for(lambda: all(c.image().partition(t, 0).leader == -1 for t in ("clean", "dirty")), what="no leader")
    assert metadata(boots[3])["topics"]["clean"][0][0] == -1
    c.start_broker(2)                                           # back, but it was out of the ISR
    dirty = wait_for(lambda: (r := c.image().partition("dirty", 0)).leader == 2 and r, what="unclean election")
    assert dirty.isr == (2,) and dirty.leader_epoch == 2
    time.sleep(1.5)                                             # the controller has reconciled meanwhile
    clean = c.image().partition("clean", 0)
    assert clean.leader == -1 and clean.isr == (1,)             # waits for broker 1: nothing is guessed
    c.start_broker(1)
    clean = wait_for(lambda: (r := c.image().partition("clean", 0)).leader == 1 and r, what="clean election")
    assert clean.leader_epoch == 2 and clean.isr[0] == 1   # (the data plane may add 2 back right away)
