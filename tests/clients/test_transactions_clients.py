"""Transactions end to end with real clients (confluent-kafka/librdkafka, the Java client) and
exact raw requests: read_committed isolation, consume-transform-produce with offsets in the
transaction, fencing, timeouts, restarts in the middle of a transaction, and Kafka's error codes
for bad input.

Error codes: 3 UNKNOWN_TOPIC_OR_PARTITION, 47 INVALID_PRODUCER_EPOCH, 48 INVALID_TXN_STATE,
49 INVALID_PRODUCER_ID_MAPPING, 50 INVALID_TRANSACTION_TIMEOUT, 55 OPERATION_NOT_ATTEMPTED,
90 PRODUCER_FENCED.
"""
from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest

from broker.testing import SamsaBroker, running_broker
from coordinator.hashing import partition_for_group
from coordinator.txn.records import TransactionLogValue, transaction_record
from protocol import records as rb
from protocol.messages import REQUESTS
from tests.support.javaclient import last, requires_java, run_java
from tests.support.rawclient import RawClient
from tests.support.transactions_support import PARTITIONS, describe_txn, read_all, txn_producer, watermarks

PRODUCE, FETCH, METADATA, OFFSET_FETCH, FIND_COORDINATOR, INIT_PID = 0, 1, 3, 9, 10, 22
ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
DESCRIBE_TXNS, LIST_TXNS, DESCRIBE_PRODUCERS = 65, 66, 61
OVERRIDES = {"num.partitions": str(PARTITIONS), "group.initial.rebalance.delay.ms": "0",
             # the timed-out transaction test waits for the abort sweep
             "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("samsa-txn") / "data", overrides=OVERRIDES) as b:
        yield b


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides=OVERRIDES) as b:
        yield b


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# =========================================================================== confluent-kafka

def test_commit_and_abort_isolation(broker: SamsaBroker) -> None:
    bs, topic = broker.bootstrap_servers, name("iso")
    p = txn_producer(bs, name("tx"))
    for label, n, commit in (("c1", 30, True), ("a1", 21, False), ("c2", 12, True)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, key=b"k%d" % i, value=f"{label}-{i}".encode(), partition=i % PARTITIONS)
        if commit:
            p.commit_transaction(20)
        else:
            p.flush(20)
            p.abort_transaction(20)
    committed = read_all(bs, topic, "read_committed", expect=42)
    everything = read_all(bs, topic, "read_uncommitted", expect=63)
    assert sorted(v for _, _, v in committed) == sorted(
        [f"c1-{i}".encode() for i in range(30)] + [f"c2-{i}".encode() for i in range(12)])
    assert len(everything) == 63 and {v[:2] for _, _, v in everything} == {b"c1", b"a1", b"c2"}
    # each partition holds its records plus one control batch per transaction, which no
    # application ever sees: offsets 10, 18 and 23 of each partition are the markers
    assert watermarks(bs, topic) == [10 + 1 + 7 + 1 + 4 + 1] * PARTITIONS
    for part in range(PARTITIONS):
        offsets = [o for p_, o, _ in everything if p_ == part]
        assert offsets == list(range(10)) + list(range(11, 18)) + list(range(19, 23))
        assert [o for p_, o, _ in committed if p_ == part] == list(range(10)) + list(range(19, 23))


def test_consume_transform_produce_exactly_once(broker: SamsaBroker) -> None:
    bs, src, dst, group = broker.bootstrap_servers, name("src"), name("dst"), name("ctp")
    n = 3000
    plain = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for i in range(n):
        plain.produce(src, key=b"k%d" % i, value=b"%d" % i, partition=i % PARTITIONS)
    assert plain.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    producer = txn_producer(bs, name("ctp-tx"))
    consumer.subscribe([src])
    done, aborted, commits = 0, 0, 0
    deadline = time.monotonic() + 90
    try:
        while done < n:
            assert time.monotonic() < deadline, f"only {done} of {n} records transformed"
            msgs = consumer.consume(400, 1.0)
            assert all(m.error() is None for m in msgs), [m.error() for m in msgs if m.error()]
            if not msgs:
                continue
            producer.begin_transaction()
            for m in msgs:
                producer.produce(dst, key=m.key(), value=b"out-" + m.value(), partition=m.partition())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 20)
            if commits == 1 and not aborted:
                # one transaction is abandoned: its output and its offsets must vanish, and the
                # consumer resumes from the offsets committed before it
                assert producer.flush(20) == 0          # the output reaches the log before the abort
                producer.abort_transaction(20)
                aborted = len(msgs)
                for tp in consumer.committed(consumer.assignment(), timeout=10):
                    consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
                continue
            producer.commit_transaction(20)
            commits += 1
            done += len(msgs)
        committed = consumer.committed([TopicPartition(src, p) for p in range(PARTITIONS)], timeout=10)
    finally:
        consumer.close()
    assert aborted > 0
    assert done == n
    assert [tp.offset for tp in committed] == [n // PARTITIONS] * PARTITIONS
    out = read_all(bs, dst, "read_committed", expect=n)
    assert sorted(v for _, _, v in out) == sorted(b"out-%d" % i for i in range(n))
    raw = read_all(bs, dst, "read_uncommitted", expect=n + aborted)
    assert len(raw) == n + aborted                 # the aborted output is in the log, just invisible


def test_second_producer_fences_the_first(broker: SamsaBroker) -> None:
    bs, topic, tid = broker.bootstrap_servers, name("fence"), name("tx")
    p1 = txn_producer(bs, tid)
    p1.begin_transaction()
    p1.produce(topic, value=b"p1-a", partition=0)
    assert p1.flush(10) == 0
    p2 = txn_producer(bs, tid)                    # aborts p1's transaction, bumps the epoch
    p1.produce(topic, value=b"p1-b", partition=1)
    with pytest.raises(KafkaException) as info:
        p1.commit_transaction(10)
    err = info.value.args[0]
    assert (err.code(), err.fatal()) == (KafkaError._FENCED, True)
    p2.begin_transaction()
    p2.produce(topic, value=b"p2", partition=2)
    p2.commit_transaction(10)
    assert [v for _, _, v in read_all(bs, topic, "read_committed", expect=1)] == [b"p2"]
    with RawClient(bs) as c:
        d = describe_txn(c, tid)
        assert (d.error_code, d.transaction_state, d.producer_epoch) == (0, "CompleteCommit", 2)


def test_transaction_left_open_past_its_timeout_is_aborted(broker: SamsaBroker) -> None:
    bs, topic, tid = broker.bootstrap_servers, name("slow"), name("tx")
    p = txn_producer(bs, tid, **{"transaction.timeout.ms": 1500, "message.timeout.ms": 1500})
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, value=b"late-%d" % i, partition=i % PARTITIONS)
    assert p.flush(10) == 0
    with RawClient(bs) as c:
        d = describe_txn(c, tid)
        assert (d.transaction_state, d.producer_epoch, d.transaction_timeout_ms) == ("Ongoing", 0, 1500)
        deadline = time.monotonic() + 10
        while describe_txn(c, tid).transaction_state != "CompleteAbort":
            assert time.monotonic() < deadline, "the coordinator never aborted the transaction"
            time.sleep(0.1)
        assert describe_txn(c, tid).producer_epoch == 1
    assert watermarks(bs, topic) == [3] * PARTITIONS                      # 2 records + the ABORT marker
    assert read_all(bs, topic, "read_committed", timeout=2) == []
    with pytest.raises(KafkaException) as info:
        p.commit_transaction(10)
    assert info.value.args[0].code() == KafkaError._FENCED


def test_confluent_producer_commits_across_a_broker_restart(own_broker: SamsaBroker) -> None:
    bs, topic = own_broker.bootstrap_servers, name("rs")
    p = txn_producer(bs, name("tx"))
    p.begin_transaction()
    for i in range(9):
        p.produce(topic, value=b"r-%d" % i, partition=i % PARTITIONS)
    assert p.flush(10) == 0
    own_broker.restart(signal.SIGKILL)
    p.commit_transaction(30)
    assert sorted(v for _, _, v in read_all(bs, topic, "read_committed", expect=9)) == \
        sorted(b"r-%d" % i for i in range(9))


# =========================================================================== raw requests

def create(c: RawClient, topic: str) -> None:
    r = c.request(METADATA, 12, topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                  allow_auto_topic_creation=True)
    assert r.topics[0].error_code == 0


def init_pid(c: RawClient, tid: str, timeout: int = 60000, version: int = 4) -> Any:
    return c.request(INIT_PID, version, transactional_id=tid, transaction_timeout_ms=timeout,
                     producer_id=-1, producer_epoch=-1)


def add_partitions(c: RawClient, tid: str, pid: int, epoch: int, parts: dict[str, list[int]],
                   version: int = 3) -> dict[tuple[str, int], int]:
    T = REQUESTS[ADD_PARTITIONS].AddPartitionsToTxnTopic
    r = c.request(ADD_PARTITIONS, version, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[T(name=t, partitions=ps) for t, ps in parts.items()])
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def end_txn(c: RawClient, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return c.request(END_TXN, version, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                     committed=commit).error_code


def produce_txn(c: RawClient, tid: str, topic: str, pid: int, epoch: int, seq: int, n: int, partition: int = 0) -> Any:
    data = rb.build_batch([(None, f"{topic}-{seq + i}".encode()) for i in range(n)], timestamp_ms=int(time.time() * 1000),
                          producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True)
    td = ProduceRequest.TopicProduceData(name=topic, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=bytes(data))])
    r = c.request(PRODUCE, 9, transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[td])
    return r.responses[0].partition_responses[0]


def fetch_committed(c: RawClient, topic: str, partition: int = 0) -> Any:
    FT = FetchRequest.FetchTopic
    r = c.request(FETCH, 11, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                  session_id=0, session_epoch=-1, topics=[FT(topic=topic, partitions=[FT.FetchPartition(
                      partition=partition, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                      partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")
    return r.responses[0].partitions[0]


def values(records: bytes | None) -> list[bytes]:
    out = []
    for h in (rb.iter_batches(records) if records else []):
        if not h.is_control:
            out.extend(r.value for r in rb.iter_records(records, h))
    return out


def test_find_coordinator_for_transactions(broker: SamsaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as c:
        r = c.request(FIND_COORDINATOR, 3, key="some-txn", key_type=1)
        assert (r.error_code, r.node_id, r.port) == (0, 1, broker.port)
        r = c.request(FIND_COORDINATOR, 4, key_type=1, coordinator_keys=["a", "b"])
        assert [(x.key, x.error_code, x.node_id) for x in r.coordinators] == [("a", 0, 1), ("b", 0, 1)]
        md = c.request(METADATA, 12, topics=[MetadataRequest.MetadataRequestTopic(name="__transaction_state")],
                       allow_auto_topic_creation=False).topics[0]
        assert (md.error_code, md.is_internal, len(md.partitions)) == (0, True, 50)


@pytest.mark.parametrize("kill", [signal.SIGTERM, signal.SIGKILL], ids=["clean", "kill-9"])
@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_restart_between_add_partitions_and_end_txn(own_broker: SamsaBroker, kill: int, commit: bool) -> None:
    tid, topic = name("tx"), name("mid")
    with RawClient(own_broker.bootstrap_servers) as c:
        create(c, topic)
        r = init_pid(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        assert add_partitions(c, tid, pid, epoch, {topic: [0]}) == {(topic, 0): 0}
        assert produce_txn(c, tid, topic, pid, epoch, 0, 5).error_code == 0
    own_broker.restart(kill)
    with RawClient(own_broker.bootstrap_servers) as c:
        d = describe_txn(c, tid)
        assert (d.transaction_state, d.producer_id, [(t.topic, t.partitions) for t in d.topics]) == \
            ("Ongoing", pid, [(topic, [0])])
        part = fetch_committed(c, topic)
        assert (part.high_watermark, part.last_stable_offset, values(part.records)) == (5, 0, [])
        assert end_txn(c, tid, pid, epoch, commit) == 0
        part = fetch_committed(c, topic)
        assert (part.high_watermark, part.last_stable_offset) == (6, 6)
        if commit:
            assert values(part.records) == [f"{topic}-{i}".encode() for i in range(5)]
            assert part.aborted_transactions == []
        else:
            assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(pid, 0)]
        assert describe_txn(c, tid).transaction_state == ("CompleteCommit" if commit else "CompleteAbort")
        assert end_txn(c, tid, pid, epoch, commit) == 0                    # a retry is answered the same


def test_start_up_finishes_a_transaction_caught_after_prepare_commit(own_broker: SamsaBroker) -> None:
    """A crash after PrepareCommit reached the log but before the markers: start-up writes them,
    including the one that makes the transactional offset commit visible."""
    from broker.common.config import BrokerConfig
    from broker.log.manager import LogManager

    tid, topic, group = name("tx"), name("prep"), name("g")
    with RawClient(own_broker.bootstrap_servers) as c:
        create(c, topic)
        r = init_pid(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        assert add_partitions(c, tid, pid, epoch, {topic: [0, 1]}) == {(topic, 0): 0, (topic, 1): 0}
        assert produce_txn(c, tid, topic, pid, epoch, 0, 3, partition=0).error_code == 0
        assert produce_txn(c, tid, topic, pid, epoch, 0, 2, partition=1).error_code == 0
        assert c.request(ADD_OFFSETS, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         group_id=group).error_code == 0
        assert txn_commit(c, tid, group, pid, epoch, {topic: {0: 3, 1: 2}}) == {(topic, 0): 0, (topic, 1): 0}
        started = describe_txn(c, tid).transaction_start_time_ms
    own_broker.stop()
    logs = LogManager(BrokerConfig({"log.dirs": str(own_broker.data_dir)}))
    logs.load()
    offsets_partition = partition_for_group(group, 50)
    prepare = TransactionLogValue(pid, epoch, 60000, 2, ((topic, (0, 1)), ("__consumer_offsets", (offsets_partition,))),
                                  started + 1, started)
    logs.partition("__transaction_state", partition_for_group(tid, 50)).append_internal(
        [transaction_record(tid, prepare)], started + 1)
    logs.shutdown()
    own_broker.start()
    with RawClient(own_broker.bootstrap_servers) as c:
        assert describe_txn(c, tid).transaction_state == "CompleteCommit"
        assert values(fetch_committed(c, topic, 0).records) == [f"{topic}-{i}".encode() for i in range(3)]
        assert values(fetch_committed(c, topic, 1).records) == [f"{topic}-{i}".encode() for i in range(2)]
        assert offset_fetch(c, group, topic, [0, 1], require_stable=True) == {0: (3, 0), 1: (2, 0)}


def txn_commit(c: RawClient, tid: str, group: str, pid: int, epoch: int, offsets: dict[str, dict[int, int]],
               version: int = 3) -> dict[tuple[str, int], int]:
    T = REQUESTS[TXN_OFFSET_COMMIT].TxnOffsetCommitRequestTopic
    r = c.request(TXN_OFFSET_COMMIT, version, transactional_id=tid, group_id=group, producer_id=pid,
                  producer_epoch=epoch, generation_id=-1, member_id="", group_instance_id=None,
                  topics=[T(name=t, partitions=[T.TxnOffsetCommitRequestPartition(
                      partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
                      for p, o in ps.items()]) for t, ps in offsets.items()])
    return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}


def offset_fetch(c: RawClient, group: str, topic: str, parts: list[int],
                 require_stable: bool = False) -> dict[int, tuple[int, int]]:
    R = REQUESTS[OFFSET_FETCH]
    r = c.request(OFFSET_FETCH, 7, group_id=group, require_stable=require_stable,
                  topics=[R.OffsetFetchRequestTopic(name=topic, partition_indexes=parts)])
    return {p.partition_index: (p.committed_offset, p.error_code) for t in r.topics for p in t.partitions}


def test_txn_offsets_unstable_until_commit(broker: SamsaBroker) -> None:
    tid, topic, group = name("tx"), name("off"), name("g")
    with RawClient(broker.bootstrap_servers) as c:
        create(c, topic)
        r = init_pid(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        assert txn_commit(c, tid, group, pid, epoch, {topic: {0: 7}}) == {(topic, 0): 48}   # group not added yet
        assert c.request(ADD_OFFSETS, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         group_id=group).error_code == 0
        assert txn_commit(c, tid, group, pid, epoch, {topic: {0: 7}}) == {(topic, 0): 0}
        assert offset_fetch(c, group, topic, [0], require_stable=True) == {0: (-1, 88)}
        assert offset_fetch(c, group, topic, [0]) == {0: (-1, 0)}
        assert end_txn(c, tid, pid, epoch, True) == 0
        assert offset_fetch(c, group, topic, [0], require_stable=True) == {0: (7, 0)}
        # the next transaction's offsets are aborted: the committed ones stay
        assert c.request(ADD_OFFSETS, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         group_id=group).error_code == 0
        assert txn_commit(c, tid, group, pid, epoch, {topic: {0: 9}}) == {(topic, 0): 0}
        assert end_txn(c, tid, pid, epoch, False) == 0
        assert offset_fetch(c, group, topic, [0], require_stable=True) == {0: (7, 0)}


def test_bad_input_gets_kafkas_error_codes(broker: SamsaBroker) -> None:
    tid, topic, group = name("tx"), name("bad"), name("g")
    with RawClient(broker.bootstrap_servers) as c:
        create(c, topic)
        # EndTxn / AddPartitionsToTxn for a transactional id nobody initialized
        assert end_txn(c, name("unknown"), 1234, 0, True) == 49
        assert add_partitions(c, name("unknown"), 1234, 0, {topic: [0]}) == {(topic, 0): 49}
        assert init_pid(c, tid, timeout=900001).error_code == 50               # over transaction.max.timeout.ms
        assert init_pid(c, "", timeout=1000).error_code == 42
        r = init_pid(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        # a topic that does not exist: nothing is added, the rest is "not attempted"
        assert add_partitions(c, tid, pid, epoch, {topic: [0], "no-such-topic": [0], }) == \
            {(topic, 0): 55, ("no-such-topic", 0): 3}
        assert add_partitions(c, tid, pid, epoch, {topic: [0, 99]}) == {(topic, 0): 55, (topic, 99): 3}
        d = describe_txn(c, tid)
        assert (d.error_code, d.transaction_state, d.topics) == (0, "Empty", [])
        assert end_txn(c, tid, pid, epoch, True) == 48                        # nothing to end
        # TxnOffsetCommit with a wrong epoch
        assert c.request(ADD_OFFSETS, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         group_id=group).error_code == 0
        assert txn_commit(c, tid, group, pid, epoch + 1, {topic: {0: 1}}) == {(topic, 0): 47}
        assert txn_commit(c, tid, group, pid + 1, epoch, {topic: {0: 1}}) == {(topic, 0): 49}
        assert txn_commit(c, tid, group, pid, epoch, {"no-such-topic": {0: 1}}) == {("no-such-topic", 0): 3}
        # fencing errors by version: PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before
        assert end_txn(c, tid, pid, epoch + 1, True, version=1) == 47
        assert end_txn(c, tid, pid, epoch + 1, True, version=3) == 90
        # nothing was corrupted: the transaction still commits
        assert add_partitions(c, tid, pid, epoch, {topic: [0]}) == {(topic, 0): 0}
        assert produce_txn(c, tid, topic, pid, epoch, 0, 2).error_code == 0
        assert end_txn(c, tid, pid, epoch, True) == 0
        assert values(fetch_committed(c, topic).records) == [f"{topic}-0".encode(), f"{topic}-1".encode()]
        assert offset_fetch(c, group, topic, [0], require_stable=True) == {0: (-1, 0)}


def test_operator_apis(broker: SamsaBroker) -> None:
    tid, topic = name("ops"), name("ops")
    with RawClient(broker.bootstrap_servers) as c:
        create(c, topic)
        r = init_pid(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        add_partitions(c, tid, pid, epoch, {topic: [0]})
        produce_txn(c, tid, topic, pid, epoch, 0, 4)
        d = describe_txn(c, tid)
        assert (d.transaction_state, d.producer_id, d.producer_epoch, [(t.topic, t.partitions) for t in d.topics]) == \
            ("Ongoing", pid, epoch, [(topic, [0])])
        assert c.request(DESCRIBE_TXNS, 0, transactional_ids=[name("nope")]).transaction_states[0].error_code == 105
        listed = c.request(LIST_TXNS, 1, state_filters=["Ongoing", "Nonsense"], producer_id_filters=[pid],
                           duration_filter=-1)
        assert listed.unknown_state_filters == ["Nonsense"]
        assert [(t.transactional_id, t.producer_id, t.transaction_state) for t in listed.transaction_states] == \
            [(tid, pid, "Ongoing")]
        T = REQUESTS[DESCRIBE_PRODUCERS].TopicRequest
        dp = c.request(DESCRIBE_PRODUCERS, 0, topics=[T(name=topic, partition_indexes=[0, 7])]).topics[0]
        p0, p7 = dp.partitions
        assert [(s.producer_id, s.producer_epoch, s.last_sequence, s.current_txn_start_offset, s.coordinator_epoch)
                for s in p0.active_producers] == [(pid, epoch, 3, 0, -1)]    # no marker written yet
        assert p7.error_code == 3
        assert end_txn(c, tid, pid, epoch, True) == 0
        listed = c.request(LIST_TXNS, 0, state_filters=[], producer_id_filters=[pid])
        assert [t.transaction_state for t in listed.transaction_states] == ["CompleteCommit"]
        # the COMMIT marker carries the coordinator's epoch (0: the only leader of its partition)
        dp = c.request(DESCRIBE_PRODUCERS, 0, topics=[T(name=topic, partition_indexes=[0])]).topics[0]
        assert [(s.producer_id, s.current_txn_start_offset, s.coordinator_epoch)
                for s in dp.partitions[0].active_producers] == [(pid, -1, 0)]
        listed = c.request(LIST_TXNS, 2, state_filters=[], producer_id_filters=[], duration_filter=-1,
                           transactional_id_pattern=tid[:4] + ".*")
        assert [t.transactional_id for t in listed.transaction_states if t.transactional_id == tid] == [tid]
        assert c.request(LIST_TXNS, 2, state_filters=[], producer_id_filters=[], duration_filter=-1,
                         transactional_id_pattern="(").error_code == 128     # INVALID_REGULAR_EXPRESSION


# =========================================================================== Java client

@pytest.mark.java
@requires_java
@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_transactional_producer(broker: SamsaBroker, version: str) -> None:
    bs, topic, tid = broker.bootstrap_servers, name("java"), name("jtx")
    done = last(run_java(version, bs, "produce", "--topic", topic, "--count", 60, "--partitions", PARTITIONS,
                         "--transactional-id", tid), "produce")
    assert (done["acked"], done["aborted"]) == (60, False)
    done = last(run_java(version, bs, "produce", "--topic", topic, "--count", 30, "--start", 60,
                         "--partitions", PARTITIONS, "--transactional-id", tid, "--abort"), "produce")
    assert (done["acked"], done["aborted"]) == (30, True)
    lines = run_java(version, bs, "consume-assign", "--topic", topic, "--isolation", "read_committed",
                     "--to", "latest", "--timeout-ms", 20000)
    got = sorted(int(r["value"][2:]) for r in lines if r.get("type") == "record")
    assert got == list(range(60))
    assert last(lines, "summary")["positions"] == {str(p): 20 + 1 + 10 + 1 for p in range(PARTITIONS)}
    assert sorted(v for _, _, v in read_all(bs, topic, "read_committed", expect=60)) == \
        sorted(b"v-%d" % i for i in range(60))


@pytest.mark.java
@requires_java
@pytest.mark.parametrize("version", ["3.9.0", "4.3.0"])
def test_java_producer_fenced_by_a_younger_instance(broker: SamsaBroker, version: str) -> None:
    """initTransactions of a second producer with the same transactional id aborts the first one's
    open transaction and fences it: its next send fails, and readers never see its records."""
    bs, topic, tid = broker.bootstrap_servers, name("jfence"), name("jfence-tx")
    done = last(run_java(version, bs, "fence", "--topic", topic, "--transactional-id", tid), "fence")
    assert done["older_stage"] in ("send", "commit"), done
    assert done["older_failure"] in ("ProducerFencedException", "InvalidProducerEpochException"), done
    assert [v for _, _, v in read_all(bs, topic, "read_committed", expect=1)] == [b"younger-1"]
    with RawClient(bs) as c:
        d = describe_txn(c, tid)
        assert (d.transaction_state, d.producer_epoch >= 1) == ("CompleteCommit", True)


# =========================================================================== kafka-python and aiokafka

def test_kafka_python_and_aiokafka_transactional_producers(broker: SamsaBroker) -> None:
    import asyncio

    import aiokafka
    from kafka import KafkaProducer

    bs = broker.bootstrap_servers
    kp_topic, aio_topic = name("kp"), name("aio")
    p = KafkaProducer(bootstrap_servers=bs, transactional_id=name("kp-tx"))
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(6):
            p.send(kp_topic, b"c%d" % i, partition=i % PARTITIONS)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(6):
            p.send(kp_topic, b"a%d" % i, partition=i % PARTITIONS)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()

    async def aio() -> None:
        pr = aiokafka.AIOKafkaProducer(bootstrap_servers=bs, transactional_id=name("aio-tx"))
        await pr.start()
        try:
            async with pr.transaction():
                for i in range(6):
                    await pr.send(aio_topic, b"c%d" % i, partition=i % PARTITIONS)
            with pytest.raises(RuntimeError):
                async with pr.transaction():
                    for i in range(6):
                        await pr.send_and_wait(aio_topic, b"a%d" % i, partition=i % PARTITIONS)
                    raise RuntimeError("abort")
        finally:
            await pr.stop()

    asyncio.run(aio())
    for topic in (kp_topic, aio_topic):
        assert sorted(v for _, _, v in read_all(bs, topic, "read_committed", expect=6)) == [b"c%d" % i for i in range(6)]
        assert len(read_all(bs, topic, "read_uncommitted", expect=12)) == 12


def test_transactional_produce_outside_the_transaction_is_refused(broker: SamsaBroker) -> None:
    """KIP-890 verification: a transactional batch for a partition not added to the ongoing
    transaction answers INVALID_TXN_STATE and is not appended; after AddPartitionsToTxn it is."""
    tid, topic = name("verify-tid"), name("verify")
    with RawClient(broker.bootstrap_servers) as c:
        create(c, topic)
        r = init_pid(c, tid)
        pid, epoch = r.producer_id, r.producer_epoch
        refused = produce_txn(c, tid, topic, pid, epoch, 0, 3)
        assert refused.error_code == 48          # INVALID_TXN_STATE: no transaction yet
        assert add_partitions(c, tid, pid, epoch, {topic: [0]}) == {(topic, 0): 0}
        stale = produce_txn(c, tid, topic, pid, epoch - 1 if epoch else epoch + 5, 0, 3)
        assert stale.error_code == 47            # INVALID_PRODUCER_EPOCH
        ok = produce_txn(c, tid, topic, pid, epoch, 0, 3)
        assert (ok.error_code, ok.base_offset) == (0, 0)
        assert end_txn(c, tid, pid, epoch, commit=True) == 0
        assert values(fetch_committed(c, topic).records) == [f"{topic}-{i}".encode() for i in range(3)]
