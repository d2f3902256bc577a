"""APIs that only ask "does this topic exist, with which id and how many partitions" answer from the
cluster's metadata image (broker/metadata/topic_catalog.py), not from the topics the answering broker hosts:
real processes (etcd + 3 brokers, the ``samsa_cluster`` fixture), a topic with one replica placed
on a broker that is NOT the group's coordinator."""
from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from protocol.messages import REQUESTS
from tests.support.cluster_support import FAST_GROUPS, commit_topic, coordinator_of, create_topic_at, one_broker
from tests.support.rawclient import RawClient

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

CLUSTER = pytest.mark.parametrize("samsa_cluster", [{"overrides": FAST_GROUPS}], indirect=True, ids=["fast"])
DTP = 75
OCT = REQUESTS[8].OffsetCommitRequestTopic
OCP = OCT.OffsetCommitRequestPartition
OFG = REQUESTS[9].OffsetFetchRequestGroup
ODT = REQUESTS[47].OffsetDeleteRequestTopic


def remote_topic(c: LocalCluster, group: str, name: str, partitions: int) -> tuple[int, int]:
    """Create ``name`` with RF=1, every partition on one broker that is not ``group``'s coordinator;
    returns (coordinator, host)."""
    coord = coordinator_of(c, group)
    host = min(b for b in c.brokers if b != coord)
    r = create_topic_at(one_broker(c), name, assignments=[[host]] * partitions)
    assert r.error_code == 0, r
    c.wait_for(lambda: all(c.leader(name, p) == host for p in range(partitions)), what=f"{name} led by {host}")
    return coord, host


def topic_id_of(c: LocalCluster, name: str) -> uuid.UUID:
    with RawClient(one_broker(c)) as rc:
        r = rc.request(3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    (tid,) = [t.topic_id for t in r.topics if t.name == name]
    assert tid != uuid.UUID(int=0)
    return tid


@CLUSTER
def test_offsets_commit_and_fetch_for_a_topic_hosted_elsewhere(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    group = "g-remote"
    coord, host = remote_topic(c, group, "remote", 2)
    assert coord != host
    tid = topic_id_of(c, "remote")
    with RawClient(c.brokers[coord].bootstrap_servers) as rc:
        # by name (v8) and by topic id (v10): accepted, as Kafka does, though no replica is here
        r = rc.request(8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                       topics=[commit_topic(0, 5, "m0", name="remote")])
        assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(0, 0)]
        r = rc.request(8, 10, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                       topics=[commit_topic(1, 7, "m1", topic_id=tid)])
        assert [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(1, 0)]
        # a partition the topic does not have is still refused
        r = rc.request(8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                       topics=[commit_topic(2, 1, "", name="remote")])
        assert r.topics[0].partitions[0].error_code == 3                     # UNKNOWN_TOPIC_OR_PARTITION

        r = rc.request(9, 7, group_id=group, topics=None, require_stable=False)
        assert r.error_code == 0
        assert {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
                for t in r.topics for p in t.partitions} == {("remote", 0): (5, "m0", 0), ("remote", 1): (7, "m1", 0)}
        r = rc.request(9, 10, groups=[OFG(group_id=group, member_id=None, member_epoch=-1, topics=[
                           OFG.OffsetFetchRequestTopics(name=None, topic_id=tid, partition_indexes=[0, 1])])],
                       require_stable=False)
        g = r.groups[0]
        assert g.error_code == 0
        assert [(t.topic_id, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in g.topics] \
            == [(tid, [(0, 5), (1, 7)])]

    # a real client: librdkafka commits and reads back through the coordinator it finds itself
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition("remote", 0, 11), TopicPartition("remote", 1, 13)],
                        asynchronous=False)
        got = consumer.committed([TopicPartition("remote", 0), TopicPartition("remote", 1)], timeout=20)
        assert [(tp.partition, tp.offset, tp.error) for tp in got] == [(0, 11, None), (1, 13, None)]
    finally:
        consumer.close()

    # OffsetDelete: the topic exists (GROUP_SUBSCRIBED_TO_TOPIC is not at stake: the group is empty)
    with RawClient(c.brokers[coord].bootstrap_servers) as rc:
        r = rc.request(47, 0, group_id=group, topics=[ODT(name="remote", partitions=[
            ODT.OffsetDeleteRequestPartition(partition_index=1)])])
        assert r.error_code == 0 and [(p.partition_index, p.error_code) for p in r.topics[0].partitions] == [(1, 0)]
        r = rc.request(9, 7, group_id=group, topics=None, require_stable=False)
        assert {(t.name, p.partition_index): p.committed_offset for t in r.topics for p in t.partitions} \
            == {("remote", 0): 11}


@CLUSTER
def test_describe_topic_partitions_lists_every_topic_from_every_broker(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    hosts = sorted(c.brokers)
    for i, b in enumerate(hosts):        # one RF=1 topic on each broker, one RF=3
        assert create_topic_at(one_broker(c), f"only{b}", assignments=[[b], [b]]).error_code == 0
    assert create_topic_at(one_broker(c), "all3", partitions=1, rf=3).error_code == 0
    names = [f"only{b}" for b in hosts]
    c.wait_for(lambda: all(c.leader(n, p) >= 0 for n in names for p in (0, 1)) and c.leader("all3", 0) >= 0,
               what="leaders")
    Req = REQUESTS[DTP]
    for b in hosts:
        with RawClient(c.brokers[b].bootstrap_servers) as rc:
            r = rc.request(DTP, 0, topics=[], response_partition_limit=2000, cursor=None)
            seen = {t.name: (t.error_code, [(p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes))
                                            for p in t.partitions]) for t in r.topics}
            for h in hosts:
                assert seen[f"only{h}"] == (0, [(0, h, [h], [h]), (1, h, [h], [h])]), (b, seen)
            assert seen["all3"][0] == 0 and len(seen["all3"][1]) == 1
            assert sorted(seen["all3"][1][0][2]) == hosts
            # by name, with a cursor in the middle of a topic hosted elsewhere
            other = next(h for h in hosts if h != b)
            r = rc.request(DTP, 0, topics=[Req.TopicRequest(name=f"only{other}"), Req.TopicRequest(name="zz-nope")],
                           response_partition_limit=2000,
                           cursor=Req.Cursor(topic_name=f"only{other}", partition_index=1))
            assert [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in r.topics] \
                == [(f"only{other}", 0, [1]), ("zz-nope", 3, [])]


@CLUSTER
def test_kip848_consumer_gets_partitions_of_a_topic_hosted_elsewhere(samsa_cluster: LocalCluster) -> None:
    from confluent_kafka import Consumer, Producer

    c = samsa_cluster
    group = "g848-remote"
    coord, host = remote_topic(c, group, "remote848", 3)
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
    for part in range(3):
        for i in range(2):
            p.produce("remote848", value=b"p%d-%d" % (part, i), partition=part)
    assert p.flush(30) == 0
    assigned: list[Any] = []
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["remote848"], on_assign=lambda _c, ps: assigned.extend((tp.topic, tp.partition) for tp in ps))
    got: set[tuple[int, bytes]] = set()
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and len(got) < 6:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                got.add((m.partition(), m.value()))
        assert sorted(assigned) == [("remote848", 0), ("remote848", 1), ("remote848", 2)]
        assert got == {(part, b"p%d-%d" % (part, i)) for part in range(3) for i in range(2)}
    finally:
        consumer.close()


@CLUSTER
@pytest.mark.parametrize("same_coordinator", [True, False], ids=["one-coordinator-broker", "two"])
def test_transaction_with_offsets_on_a_topic_hosted_elsewhere(samsa_cluster: LocalCluster,
                                                              same_coordinator: bool) -> None:
    """AddPartitionsToTxn (on the transaction coordinator) and TxnOffsetCommit (on the group
    coordinator) accept a topic neither of them hosts; the markers reach its leader. With the two
    coordinators on different brokers, TxnOffsetCommit's KIP-890 check asks the transaction
    coordinator's broker (AddPartitionsToTxn v4 verify_only between brokers)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    c = samsa_cluster
    group = "g-txn-remote"
    group_coord = coordinator_of(c, group)

    def txn_coordinator(txn_id: str) -> int | None:
        with RawClient(one_broker(c)) as rc:
            r = rc.request(10, 3, key=txn_id, key_type=1)
        return r.node_id if r.error_code == 0 else None
    txn_id = next(t for t in (f"tx-remote-{i}" for i in range(200))
                  if (c.wait_for(lambda t=t: txn_coordinator(t), timeout=30, what="a transaction coordinator")
                      == group_coord) == same_coordinator)
    txn_coord = c.wait_for(lambda: txn_coordinator(txn_id), what="the transaction coordinator")
    assert (txn_coord == group_coord) == same_coordinator
    host = min(b for b in c.brokers if b not in (group_coord, txn_coord))
    assert create_topic_at(one_broker(c), "txremote", assignments=[[host]]).error_code == 0
    c.wait_for(lambda: c.leader("txremote", 0) == host, what="txremote led by its only replica")

    meta = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": group})
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "transactional.id": txn_id})
    try:
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(3):
            p.produce("txremote", value=b"t%d" % i, partition=0)
        p.send_offsets_to_transaction([TopicPartition("txremote", 0, 42)], meta.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        got = meta.committed([TopicPartition("txremote", 0)], timeout=20)
        assert [(tp.offset, tp.error) for tp in got] == [(42, None)]
    finally:
        meta.close()
    reader = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "reader", "isolation.level": "read_committed",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        reader.assign([TopicPartition("txremote", 0, 0)])
        values: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(values) < 3:
            m = reader.poll(0.2)
            if m is not None and m.error() is None:
                values.append((m.offset(), m.value()))
        assert values == [(0, b"t0"), (1, b"t1"), (2, b"t2")]
    finally:
        reader.close()


@CLUSTER
def test_deleting_a_topic_drops_its_committed_offsets_on_the_coordinator(samsa_cluster: LocalCluster) -> None:
    """DeleteTopics answered by a broker that is not the group's coordinator: the coordinator
    sees the deletion in the metadata image and drops the group's offsets of the topic, so the
    topic created again under the name does not inherit them (Kafka's onPartitionsDeleted)."""
    c = samsa_cluster
    group = "g-deleted"
    coord, host = remote_topic(c, group, "gone", 1)
    assert create_topic_at(one_broker(c), "stays", assignments=[[host]]).error_code == 0
    with RawClient(c.brokers[coord].bootstrap_servers) as rc:
        r = rc.request(8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                       topics=[commit_topic(0, 9, "", name="gone"), commit_topic(0, 4, "", name="stays")])
        assert [p.error_code for t in r.topics for p in t.partitions] == [0, 0]

    def committed() -> dict[tuple[str, int], int]:
        with RawClient(c.brokers[coord].bootstrap_servers) as rc:
            r = rc.request(9, 7, group_id=group, topics=None, require_stable=False)
        assert r.error_code == 0
        return {(t.name, p.partition_index): p.committed_offset for t in r.topics for p in t.partitions}

    assert committed() == {("gone", 0): 9, ("stays", 0): 4}
    with RawClient(c.brokers[host].bootstrap_servers) as rc:
        r = rc.request(20, 6, topics=[REQUESTS[20].DeleteTopicState(name="gone", topic_id=uuid.UUID(int=0))],
                       timeout_ms=10000)
        assert r.responses[0].error_code == 0
    c.wait_for(lambda: committed() == {("stays", 0): 4}, timeout=20, what="the offsets of 'gone' dropped")
    assert create_topic_at(one_broker(c), "gone", assignments=[[host]]).error_code == 0
    c.wait_for(lambda: c.leader("gone", 0) == host, what="'gone' created again")
    assert committed() == {("stays", 0): 4}
