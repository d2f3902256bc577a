"""Transactions on a 3-broker cluster whose partition leaders are not the transaction coordinator
(issue 20, items 3 and 4): the leader verifies a transaction's first batch on a partition with the
coordinator on another broker (KIP-890, AddPartitionsToTxn v4/v5 between brokers), so

- the Java client 4.3 (transactions v2: partitions join the transaction through Produce v12) gets
  every partition into the transaction, and read_committed readers see exactly the committed
  records, in a commit/abort scenario and in consume-transform-produce (and so does the same
  client held to transactions v1, whose partitions the leaders verify);
- a transactional Produce (v11, transactions v1) to a partition that was never added answers
  INVALID_TXN_STATE and appends nothing, and Produce v12 adds the partition at the coordinator.

Real processes: etcd, 3 brokers, the Java client."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from protocol import records as rb
from protocol.messages import REQUESTS
from tests.support.cluster_support import FAST_GROUPS, coordinator_of, create_topic, one_broker
from tests.support.javaclient import last, requires_java, run_java
from tests.support.rawclient import RawClient
from tests.support.transactions_support import PARTITIONS, read_all, watermarks

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed")

JAVA = "4.3.0"
PRODUCE, FIND_COORDINATOR, INIT_PID, ADD_PARTITIONS, DESCRIBE_TXNS = 0, 10, 22, 24, 65
INVALID_TXN_STATE = 48


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module", params=[2, 1], ids=["tv2", "tv1"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The cluster, finalizing transaction.version 2 (the Java client's transactions v2) or 1
    (it then adds partitions with AddPartitionsToTxn and produces with v11: the leaders verify)."""
    overrides = {"broker.session.timeout.ms": "3000", **FAST_GROUPS, "samsa.transaction.version": str(request.param),
                 "transaction.state.log.num.partitions": "6", "num.partitions": str(PARTITIONS)}
    c = LocalCluster(Path(tmp_path_factory.mktemp("txn-cluster")) / "cluster", brokers=3, overrides=overrides)
    c.tv = request.param     # type: ignore[attr-defined]
    try:
        c.start()
        yield c
    finally:
        c.stop_all()


def txn_coordinator(c: LocalCluster, tid: str) -> int | None:
    with RawClient(one_broker(c)) as rc:
        r = rc.request(FIND_COORDINATOR, 3, key=tid, key_type=1)
    return r.node_id if r.error_code == 0 else None


def remote_setup(c: LocalCluster, topic: str) -> tuple[str, int, list[int]]:
    """A 3-partition RF=3 topic and a transactional id whose coordinator leads at most one of its
    partitions: (transactional id, coordinator, partitions led elsewhere)."""
    create_topic(c, topic, PARTITIONS, rf=3)
    for i in range(200):
        tid = name(f"tx{i}")
        coord = c.wait_for(lambda t=tid: txn_coordinator(c, t), what="a transaction coordinator")
        elsewhere = [p for p in range(PARTITIONS) if c.leader(topic, p) != coord]
        if len(elsewhere) >= 2:
            return tid, coord, elsewhere
    raise AssertionError(f"no transactional id with its coordinator away from {topic}'s leaders")


def describe(c: LocalCluster, coord: int, tid: str):
    with RawClient(c.brokers[coord].bootstrap_servers) as rc:
        return rc.request(DESCRIBE_TXNS, 0, transactional_ids=[tid]).transaction_states[0]


@pytest.mark.java
@requires_java
def test_java_commit_and_abort_with_leaders_away_from_the_coordinator(cluster: LocalCluster) -> None:
    c = cluster
    topic = name("t")
    tid, coord, elsewhere = remote_setup(c, topic)
    bs = c.bootstrap_servers
    done = last(run_java(JAVA, bs, "produce", "--topic", topic, "--count", 60, "--partitions", PARTITIONS,
                         "--transactional-id", tid), "produce")
    assert (done["acked"], done["aborted"]) == (60, False), done
    # EndTxn is answered once PrepareCommit is written; the markers follow (as in Kafka)
    c.wait_for(lambda: describe(c, coord, tid).transaction_state == "CompleteCommit", what="the markers")
    d1 = describe(c, coord, tid)
    done = last(run_java(JAVA, bs, "produce", "--topic", topic, "--count", 30, "--start", 60,
                         "--partitions", PARTITIONS, "--transactional-id", tid, "--abort"), "produce")
    assert (done["acked"], done["aborted"]) == (30, True), done
    c.wait_for(lambda: describe(c, coord, tid).transaction_state == "CompleteAbort", what="the markers")
    d2 = describe(c, coord, tid)
    assert (d1.transaction_state, d2.transaction_state) == ("CompleteCommit", "CompleteAbort")
    assert d1.producer_epoch == (1 if c.tv == 2 else 0)     # transactions v2: one bump per commit
    got = read_all(bs, topic, "read_committed", expect=60, timeout=30)
    assert sorted(v for _, _, v in got) == sorted(b"v-%d" % i for i in range(60))
    assert {p for p, _, _ in got} == set(range(PARTITIONS)) and set(elsewhere) <= {p for p, _, _ in got}


@pytest.mark.java
@requires_java
def test_java_consume_transform_produce_with_leaders_away_from_the_coordinator(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer

    from tests.support.groups_support import committed

    c = cluster
    src, dst, group = name("in"), name("out"), name("g")
    create_topic(c, src, PARTITIONS, rf=3)
    tid, coord, _ = remote_setup(c, dst)
    bs = c.bootstrap_servers
    total = 600
    p = KafkaProducer(bootstrap_servers=bs, linger_ms=5, acks="all")
    for i in range(total):
        p.send(src, value=b"r-%d" % i, partition=i % PARTITIONS)
    p.flush(30)
    p.close()
    t = last(run_java(JAVA, bs, "transform", "--input", src, "--output", dst, "--group", group,
                      "--transactional-id", tid, "--max", total, "--timeout-ms", 90000, timeout=180), "transform")
    assert t["count"] == total and t["transactions"] >= 1
    got = [v for _, _, v in read_all(bs, dst, "read_committed", expect=total, timeout=30)]
    assert sorted(got) == sorted(b"R-%d" % i for i in range(total))
    group_coordinator = c.brokers[coordinator_of(c, group)].bootstrap_servers
    assert {k: v[0] for k, v in committed(group_coordinator, group).items()} == {
        (src, part): len(range(part, total, PARTITIONS)) for part in range(PARTITIONS)}
    if c.tv == 2:
        assert describe(c, coord, tid).producer_epoch >= t["transactions"]     # one bump per transaction


def _produce(c: LocalCluster, leader: int, version: int, topic: str, partition: int, tid: str, pid: int,
             epoch: int, seq: int, value: bytes) -> tuple[int, str | None]:
    data = rb.build_batch([(None, value)], timestamp_ms=int(time.time() * 1000), producer_id=pid,
                          producer_epoch=epoch, base_sequence=seq, transactional=True)
    P = REQUESTS[PRODUCE]
    with RawClient(c.brokers[leader].bootstrap_servers) as rc:
        r = rc.request(PRODUCE, version, transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
            P.TopicProduceData(name=topic, partition_data=[P.TopicProduceData.PartitionProduceData(
                index=partition, records=data)])])
    pr = r.responses[0].partition_responses[0]
    return pr.error_code, pr.error_message


def test_produce_to_a_partition_not_in_the_transaction_is_refused_by_a_remote_leader(cluster: LocalCluster) -> None:
    """Transactions v1 (Produce v11): the leader asks the coordinator on another broker
    (AddPartitionsToTxn v4, verify_only) and refuses a partition that was never added."""
    c = cluster
    topic = name("nv")
    tid, coord, elsewhere = remote_setup(c, topic)
    part = elsewhere[0]
    leader = c.leader(topic, part)
    assert leader != coord
    with RawClient(c.brokers[coord].bootstrap_servers) as rc:
        init = rc.request(INIT_PID, 4, transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1,
                          producer_epoch=-1)
        assert init.error_code == 0
    pid, epoch = init.producer_id, init.producer_epoch
    assert _produce(c, leader, 11, topic, part, tid, pid, epoch, 0, b"stray") == \
        (INVALID_TXN_STATE, "Partition was not added to the transaction")
    assert watermarks(c.bootstrap_servers, topic)[part] == 0          # nothing was appended
    A = REQUESTS[ADD_PARTITIONS]
    with RawClient(c.brokers[coord].bootstrap_servers) as rc:
        r = rc.request(ADD_PARTITIONS, 3, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                       v3_and_below_producer_epoch=epoch, v3_and_below_topics=[A.AddPartitionsToTxnTopic(
                           name=topic, partitions=[part])])
        assert [p.partition_error_code for t in r.results_by_topic_v3_and_below for p in t.results_by_partition] == [0]
    assert _produce(c, leader, 11, topic, part, tid, pid, epoch, 0, b"added")[0] == 0
    # transactions v2 (Produce v12): the leader adds the partition at the coordinator itself
    other = elsewhere[1]
    assert _produce(c, c.leader(topic, other), 12, topic, other, tid, pid, epoch, 0, b"implicit")[0] == 0
    d = describe(c, coord, tid)
    assert d.transaction_state == "Ongoing"
    assert sorted(p for t in d.topics for p in t.partitions) == sorted([part, other])
