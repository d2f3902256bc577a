"""Data APIs sent to a broker that holds no replica of a partition answer as Kafka's
ReplicaManager.getPartitionOrError does: NOT_LEADER_OR_FOLLOWER when the cluster's metadata has
the partition (the client refreshes metadata and goes to the leader; Produce v10+ and Fetch v12+
name the leader in ``current_leader``), UNKNOWN_TOPIC_OR_PARTITION when it does not, UNKNOWN_TOPIC_ID
for an unknown topic id (Produce v13+, Fetch v13+). Real processes: etcd and 3 brokers, RF=1 topics
all on broker 1, raw requests to broker 3."""
from __future__ import annotations

import uuid
from typing import Iterator

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS
from protocol.records import build_batch
from tests.support.rawclient import RawClient
from tests.support.cluster_support import create_topic_at

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER
UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
UNKNOWN_ID = ErrorCode.UNKNOWN_TOPIC_ID
FT, LT, DT, OT = (REQUESTS[1].FetchTopic, REQUESTS[2].ListOffsetsTopic, REQUESTS[21].DeleteRecordsTopic,
                  REQUESTS[23].OffsetForLeaderTopic)
TOPIC = "far"        # 2 partitions, both on broker 1 only
ASKED = 3            # hosts no replica of TOPIC


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("not-hosted") / "cluster", brokers=3,
                     overrides={"broker.session.timeout.ms": "3000", "log.cleaner.enable": "false"})
    try:
        c.start()
        assert create_topic_at(c.brokers[1].bootstrap_servers, TOPIC, assignments=[[1], [1]]).error_code == 0
        c.wait_for(lambda: all(c.leader(TOPIC, p) == 1 for p in (0, 1)), what=f"{TOPIC} led by broker 1")
        # broker 3 has replayed the topic (its Metadata names it)
        c.wait_for(lambda: TOPIC in _metadata_topics(c.brokers[ASKED].bootstrap_servers), what="broker 3's image")
        yield c
    finally:
        c.stop_all()


def _metadata_topics(bootstrap: str) -> dict[str, uuid.UUID]:
    with RawClient(bootstrap) as rc:
        r = rc.request(3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return {t.name: t.topic_id for t in r.topics if t.error_code == 0}


def _ask(c: LocalCluster, api_key: int, version: int, **fields):
    with RawClient(c.brokers[ASKED].bootstrap_servers) as rc:
        return rc.request(api_key, version, **fields)


def _topic_id(c: LocalCluster) -> uuid.UUID:
    return uuid.UUID(c.image().topics[TOPIC].topic_id)


def _produce(c: LocalCluster, version: int, topic: dict, partition: int):
    TD = REQUESTS[0].TopicProduceData
    data = bytes(build_batch([(b"k", b"v")]))
    r = _ask(c, 0, version, transactional_id=None, acks=1, timeout_ms=5000,
             topic_data=[TD(**topic, partition_data=[TD.PartitionProduceData(index=partition, records=data)])])
    return r, r.responses[0].partition_responses[0]


def test_produce_to_a_broker_without_the_replica(cluster) -> None:
    c = cluster
    _, p = _produce(c, 9, dict(name=TOPIC), 0)
    assert p.error_code == NOT_LEADER
    r, p = _produce(c, 10, dict(name=TOPIC), 1)
    assert p.error_code == NOT_LEADER
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (1, 0)
    assert [(e.node_id, e.port) for e in r.node_endpoints] == [(1, c.brokers[1].port)]
    assert _produce(c, 10, dict(name=TOPIC), 2)[1].error_code == UNKNOWN           # no partition 2 anywhere
    assert _produce(c, 10, dict(name="nowhere"), 0)[1].error_code == UNKNOWN
    assert _produce(c, 10, dict(name="__consumer_offsets"), 0)[1].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    _, p = _produce(c, 13, dict(topic_id=_topic_id(c)), 0)                           # by topic id
    assert p.error_code == NOT_LEADER and p.current_leader.leader_id == 1
    assert _produce(c, 13, dict(topic_id=uuid.uuid4()), 0)[1].error_code == UNKNOWN_ID


def _fetch(c: LocalCluster, version: int, topic: dict, partition: int):
    r = _ask(c, 1, version, replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
             session_id=0, session_epoch=-1, topics=[FT(**topic, partitions=[FT.FetchPartition(
                 partition=partition, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                 log_start_offset=-1, partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")
    return r, r.responses[0].partitions[0]


def test_fetch_from_a_broker_without_the_replica(cluster) -> None:
    c = cluster
    _, p = _fetch(c, 12, dict(topic=TOPIC), 0)
    assert p.error_code == NOT_LEADER and p.current_leader.leader_id == 1 and p.records in (b"", None)
    assert _fetch(c, 12, dict(topic=TOPIC), 2)[1].error_code == UNKNOWN
    assert _fetch(c, 12, dict(topic="nowhere"), 0)[1].error_code == UNKNOWN
    r, p = _fetch(c, 16, dict(topic_id=_topic_id(c)), 1)                             # by topic id, v16 endpoints
    assert p.error_code == NOT_LEADER and p.current_leader.leader_id == 1
    assert [(e.node_id, e.port) for e in r.node_endpoints] == [(1, c.brokers[1].port)]
    assert _fetch(c, 13, dict(topic_id=uuid.uuid4()), 0)[1].error_code == UNKNOWN_ID


def test_list_offsets_at_a_broker_without_the_replica(cluster) -> None:
    def code(topic: str, partition: int) -> int:
        r = _ask(cluster, 2, 7, replica_id=-1, isolation_level=0, topics=[
            LT(name=topic, partitions=[LT.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1, timestamp=-1)])])
        return r.topics[0].partitions[0].error_code
    assert (code(TOPIC, 0), code(TOPIC, 2), code("nowhere", 0)) == (NOT_LEADER, UNKNOWN, UNKNOWN)


def test_offset_for_leader_epoch_at_a_broker_without_the_replica(cluster) -> None:
    def code(topic: str, partition: int) -> int:
        r = _ask(cluster, 23, 4, replica_id=-1, topics=[OT(topic=topic, partitions=[
            OT.OffsetForLeaderPartition(partition=partition, current_leader_epoch=-1, leader_epoch=0)])])
        return r.topics[0].partitions[0].error_code
    assert (code(TOPIC, 1), code(TOPIC, 2), code("nowhere", 0)) == (NOT_LEADER, UNKNOWN, UNKNOWN)


def test_delete_records_at_a_broker_without_the_replica(cluster) -> None:
    def code(topic: str, partition: int) -> int:
        r = _ask(cluster, 21, 2, topics=[DT(name=topic, partitions=[DT.DeleteRecordsPartition(partition_index=partition, offset=0)])],
                 timeout_ms=5000)
        return r.topics[0].partitions[0].error_code
    assert (code(TOPIC, 0), code(TOPIC, 2), code("nowhere", 0)) == (NOT_LEADER, UNKNOWN, UNKNOWN)
    assert code("__transaction_state", 0) == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_describe_producers_at_a_broker_without_the_replica(cluster) -> None:
    def code(topic: str, partition: int, node: int = ASKED) -> int:
        with RawClient(cluster.brokers[node].bootstrap_servers) as rc:
            r = rc.request(61, 0, topics=[REQUESTS[61].TopicRequest(name=topic, partition_indexes=[partition])])
        return r.topics[0].partitions[0].error_code
    assert (code(TOPIC, 0), code(TOPIC, 2), code("nowhere", 0)) == (NOT_LEADER, UNKNOWN, UNKNOWN)
    assert code(TOPIC, 0, node=1) == ErrorCode.NONE          # the leader answers


def test_a_fault_matches_a_topic_id_hosted_elsewhere(cluster) -> None:
    """Faults match requests by topic; a Fetch naming by id a topic with no replica here still matches."""
    c = cluster
    faults = c.brokers[ASKED].faults
    faults.fail("Fetch", "KAFKA_STORAGE_ERROR", count=1, topic=TOPIC)
    try:
        _, p = _fetch(c, 13, dict(topic_id=_topic_id(c)), 0)
        assert p.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert [(f["api"], f["topics"]) for f in faults.log()] == [("Fetch", [TOPIC])]
    finally:
        faults.clear()
