"""Transactions v2 (KIP-890 part 2) with the Java 4.3 client, and the same scenarios with
``samsa.transaction.version=1`` (the client then speaks transactions v1): commit/abort under
read_committed, consume-transform-produce with sendOffsetsToTransaction exactly once over 10,000
records, fencing by a younger producer; plus raw EndTxn v5/TxnOffsetCommit v5/Produce v12 rules."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing import SamsaBroker, running_broker
from protocol import records as rb
from protocol.messages import REQUESTS
from tests.support.javaclient import last, requires_java, run_java
from tests.support.rawclient import RawClient
from tests.support.transactions_support import read_all

PARTITIONS = 3
JAVA = "4.3.0"
INIT_PID, END_TXN, DESCRIBE_TXNS, API_VERSIONS, PRODUCE, TXN_OFFSET_COMMIT = 22, 26, 65, 18, 0, 28


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module", params=[2, 1], ids=["tv2", "tv1"])
def tbroker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("txn-v2") / "data", overrides={
            "num.partitions": str(PARTITIONS), "group.initial.rebalance.delay.ms": "0",
            "samsa.transaction.version": str(request.param),
            # the left-open transaction test waits for the timed-out transaction sweep
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}) as b:
        b.tv = request.param     # type: ignore[attr-defined]
        yield b


def describe(bs: str, tid: str) -> Any:
    with RawClient(bs) as c:
        return c.request(DESCRIBE_TXNS, 0, transactional_ids=[tid]).transaction_states[0]


def begin_raw(c: RawClient, topic: str, tid: str, timeout_ms: int) -> tuple[int, int]:
    """Create ``topic`` (Metadata auto-creation) and InitProducerId v5 for ``tid``: (producer id, epoch)."""
    c.request(3, 12, topics=[REQUESTS[3].MetadataRequestTopic(name=topic, topic_id=None)],
              allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    init = c.request(INIT_PID, 5, transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=-1,
                     producer_epoch=-1)
    return init.producer_id, init.producer_epoch


def produce_raw(c: RawClient, version: int, topic: str, tid: str, pid: int, epoch: int, value: bytes) -> int:
    """One transactional record to partition 0 with Produce ``version``: the partition's error code."""
    data = rb.build_batch([(None, value)], timestamp_ms=int(time.time() * 1000), producer_id=pid,
                          producer_epoch=epoch, base_sequence=0, transactional=True)
    P = REQUESTS[PRODUCE]
    r = c.request(PRODUCE, version, transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.TopicProduceData.PartitionProduceData(
            index=0, records=data)])])
    return r.responses[0].partition_responses[0].error_code


def test_finalized_transaction_version_follows_the_property(tbroker: SamsaBroker) -> None:
    with RawClient(tbroker.bootstrap_servers) as c:
        r = c.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    supported = {f.name: (f.min_version, f.max_version) for f in r.supported_features}
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    assert supported["transaction.version"] == (0, 2)
    assert finalized["transaction.version"] == tbroker.tv


@pytest.mark.java
@requires_java
def test_java_commit_and_abort_with_read_committed(tbroker: SamsaBroker) -> None:
    bs, topic, tid = tbroker.bootstrap_servers, name("t"), name("tx")
    done = last(run_java(JAVA, bs, "produce", "--topic", topic, "--count", 60, "--partitions", PARTITIONS,
                         "--transactional-id", tid), "produce")
    assert (done["acked"], done["aborted"]) == (60, False)
    d1 = describe(bs, tid)
    done = last(run_java(JAVA, bs, "produce", "--topic", topic, "--count", 30, "--start", 60,
                         "--partitions", PARTITIONS, "--transactional-id", tid, "--abort"), "produce")
    assert (done["acked"], done["aborted"]) == (30, True)
    d2 = describe(bs, tid)
    assert sorted(v for _, _, v in read_all(bs, topic, "read_committed", expect=60)) == \
        sorted(b"v-%d" % i for i in range(60))
    assert (d1.transaction_state, d2.transaction_state) == ("CompleteCommit", "CompleteAbort")
    # InitProducerId bumps once per process; transactions v2 bumps again on every commit/abort
    per_txn = 1 if tbroker.tv == 2 else 0
    assert d2.producer_epoch - d1.producer_epoch == 1 + per_txn
    assert d1.producer_epoch == per_txn


@pytest.mark.java
@requires_java
def test_java_consume_transform_produce_exactly_once_over_10000_records(tbroker: SamsaBroker) -> None:
    from kafka import KafkaProducer
    bs, src, dst, group, tid = (tbroker.bootstrap_servers, name("in"), name("out"), name("g"), name("tx"))
    total = 10000
    p = KafkaProducer(bootstrap_servers=bs, linger_ms=5)
    for i in range(total):
        p.send(src, value=b"r-%d" % i, partition=i % PARTITIONS)
    p.flush(30)
    p.close()
    lines = run_java(JAVA, bs, "transform", "--input", src, "--output", dst, "--group", group,
                     "--transactional-id", tid, "--max", total, "--timeout-ms", 90000, timeout=180)
    t = last(lines, "transform")
    assert t["count"] == total and t["transactions"] >= 1
    got = [v for _, _, v in read_all(bs, dst, "read_committed", expect=total)]
    assert sorted(got) == sorted(b"R-%d" % i for i in range(total))
    from tests.support.groups_support import committed
    assert {k: v[0] for k, v in committed(bs, group).items()} == {
        (src, part): len(range(part, total, PARTITIONS)) for part in range(PARTITIONS)}
    d = describe(bs, tid)
    if tbroker.tv == 2:
        assert d.producer_epoch >= t["transactions"]        # one bump per transaction


@pytest.mark.java
@requires_java
def test_java_producer_fenced_by_a_younger_instance(tbroker: SamsaBroker) -> None:
    bs, topic, tid = tbroker.bootstrap_servers, name("fence"), name("fence-tx")
    done = last(run_java(JAVA, bs, "fence", "--topic", topic, "--transactional-id", tid), "fence")
    assert done["older_stage"] in ("send", "commit"), done
    assert done["older_failure"] in ("ProducerFencedException", "InvalidProducerEpochException"), done
    assert [v for _, _, v in read_all(bs, topic, "read_committed", expect=1)] == [b"younger-1"]
    assert describe(bs, tid).transaction_state == "CompleteCommit"


def test_raw_transactions_v2_rules(tbroker: SamsaBroker) -> None:
    """Produce v12 adds the partition, TxnOffsetCommit v5 adds the group's partition, EndTxn v5
    bumps the epoch and answers it, a retry with the old epoch is recognised, the old epoch is
    fenced; librdkafka-style v1 requests on the same broker keep their rules."""
    bs, topic, tid = tbroker.bootstrap_servers, name("raw"), name("rawtx")
    with RawClient(bs) as c:
        pid, epoch = begin_raw(c, topic, tid, 60000)

        def produce(version: int, e: int) -> int:
            return produce_raw(c, version, topic, tid, pid, e, b"x")

        assert produce(11, epoch) == 48                     # v11: not added before -> INVALID_TXN_STATE
        assert produce(12, epoch) == 0                      # v12: added implicitly
        assert describe(bs, tid).transaction_state == "Ongoing"
        end = c.request(END_TXN, 5, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
        assert (end.error_code, end.producer_id, end.producer_epoch) == (0, pid, epoch + 1)
        retry = c.request(END_TXN, 5, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
        assert (retry.error_code, retry.producer_epoch) == (0, epoch + 1)
        assert produce(12, epoch) == 47                     # the old epoch is fenced: INVALID_PRODUCER_EPOCH
        # TxnOffsetCommit v5 without AddOffsetsToTxn
        T = REQUESTS[TXN_OFFSET_COMMIT]
        r = c.request(TXN_OFFSET_COMMIT, 5, transactional_id=tid, group_id=name("g"), producer_id=pid,
                      producer_epoch=epoch + 1, generation_id=-1, member_id="", group_instance_id=None,
                      topics=[T.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                          T.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                              partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                              committed_metadata="")])])
        assert r.topics[0].partitions[0].error_code == 0
        v4 = c.request(END_TXN, 4, transactional_id=tid, producer_id=pid, producer_epoch=epoch + 1, committed=False)
        assert (v4.error_code, v4.producer_id, v4.producer_epoch) == (0, -1, -1)       # v1 rules: no bump
        assert describe(bs, tid).producer_epoch == epoch + 1


def test_raw_v2_transaction_left_open_is_aborted_and_its_producer_fenced(tbroker: SamsaBroker) -> None:
    """Timeouts as in v1: the coordinator aborts at a bumped epoch; the producer's EndTxn v5 is
    fenced, its records are never visible."""
    bs, topic, tid = tbroker.bootstrap_servers, name("slow"), name("slowtx")
    with RawClient(bs) as c:
        pid, epoch = begin_raw(c, topic, tid, 1000)
        assert produce_raw(c, 12, topic, tid, pid, epoch, b"late") == 0
        deadline = time.monotonic() + 10
        while describe(bs, tid).transaction_state != "CompleteAbort":
            assert time.monotonic() < deadline, "the coordinator never aborted the transaction"
            time.sleep(0.1)
        assert describe(bs, tid).producer_epoch == epoch + 1
        end = c.request(END_TXN, 5, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=True)
        assert end.error_code == 90                                     # PRODUCER_FENCED
    assert read_all(bs, topic, "read_committed", timeout=2) == []
