"""Kafka's replication between real Samsa brokers (one process, real sockets between them),
driven by an in-process double of the metadata publisher (tests/support/replica_double.py): followers
fetch and append with the leader's offsets, the HW bounds consumers, acks=all waits for the
ISR, the ISR shrinks and expands through alter_partition, min.insync.replicas, and an old
leader truncates its divergent tail by leader epoch."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka.protocol.consumer import FetchRequest, OffsetForLeaderEpochRequest
from kafka.protocol.producer import ProduceRequest

from protocol import records as rb
from protocol.errors import ErrorCode
from tests.support.rawclient import RawClient
from tests.support.replica_double import InProcessCluster
from tests.support.wire import value_batch

PRODUCE, FETCH, OFFSET_FOR_EPOCH = 0, 1, 23


def produce(c: InProcessCluster, node: int, topic: str, values: list[bytes], acks: int = -1,
            timeout_ms: int = 5000, version: int = 10, **kw):
    td = ProduceRequest.TopicProduceData(name=topic, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(value_batch(values, **kw)))])
    with RawClient(c.bootstrap(node), timeout=timeout_ms / 1000 + 10) as client:
        resp = client.request(PRODUCE, version, transactional_id=None, acks=acks, timeout_ms=timeout_ms,
                              topic_data=[td])
    return resp, resp.responses[0].partition_responses[0]


def fetch(c: InProcessCluster, node: int, topic: str, offset: int, version: int = 12, replica_id: int = -1,
          isolation_level: int = 0):
    FT = FetchRequest.FetchTopic
    with RawClient(c.bootstrap(node)) as client:
        resp = client.request(FETCH, version, replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                              isolation_level=isolation_level, session_id=0, session_epoch=-1,
                              topics=[FT(topic=topic, topic_id=c.topics[topic].topic_id, partitions=[FT.FetchPartition(
                                  partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                                  partition_max_bytes=1 << 20)])],
                              forgotten_topics_data=[], rack_id="")
    return resp, resp.responses[0].partitions[0]


def values_in(records: bytes | None) -> list[bytes]:
    out: list[bytes] = []
    if records:
        for h in rb.iter_batches(records):
            out += [r.value for r in rb.iter_records(records, h)]
    return out


def log_values(c: InProcessCluster, node: int, topic: str) -> list[bytes]:
    def read() -> list[bytes]:
        part = c.partition(node, topic)
        out: list[bytes] = []
        off = part.log_start_offset
        while off < part.log_end_offset:
            data = part.read(off, 1 << 30, part.log_end_offset)
            for h in rb.iter_batches(data, validate=False):
                out += [r.value for r in rb.iter_records(data, h)]
                off = h.last_offset + 1
        return out
    return c.call(read)


def wait_for(cond, timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def cluster(tmp_path: Path):
    c = InProcessCluster(tmp_path, 3, **{"replica.lag.time.max.ms": 1000, "min.insync.replicas": 2,
                                         "replica.high.watermark.checkpoint.interval.ms": 100}).start()
    yield c
    c.stop()


def test_followers_copy_the_leader_and_consumers_stop_at_the_hw(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3))
    _, pr = produce(c, 1, "t", [b"a", b"b", b"c"])
    assert (pr.error_code, pr.base_offset) == (0, 0)
    _, pr = produce(c, 1, "t", [b"d"])
    assert (pr.error_code, pr.base_offset) == (0, 3)
    # acks=all answered: every ISR member has the records, with the leader's offsets and bytes
    leader = c.partition(1, "t")
    for node in (2, 3):
        assert c.call(lambda n=node: c.partition(n, "t").log_end_offset) == 4
        assert c.call(lambda n=node: c.partition(n, "t").read(0, 1 << 20, 4)) == c.call(lambda: leader.read(0, 1 << 20, 4))
        assert c.call(lambda n=node: c.partition(n, "t").epochs.entries) == [(0, 0)]
    assert c.call(lambda: leader.high_watermark) == 4
    wait_for(lambda: c.call(lambda: c.partition(2, "t").high_watermark) == 4, what="follower HW")
    # replication-offset-checkpoint (Kafka's format) holds every replica's HW for a restart
    from broker.replica.checkpoint import read_offsets_checkpoint
    for node in (1, 2, 3):
        path = c.brokers[node].logs.log_dir + "/replication-offset-checkpoint"
        wait_for(lambda: read_offsets_checkpoint(path) == {("t", 0): 4}, what="HW checkpoint")
    assert open(path).read() == "0\n1\nt 0 4\n"
    _, pd = fetch(c, 1, "t", 0)
    assert pd.error_code == 0 and pd.high_watermark == 4 and values_in(pd.records) == [b"a", b"b", b"c", b"d"]
    # a follower answers consumers NOT_LEADER_OR_FOLLOWER, naming the leader (Fetch v12+, KIP-951 v16)
    _, pd = fetch(c, 2, "t", 0)
    assert pd.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (pd.current_leader.leader_id, pd.current_leader.leader_epoch) == (1, 0)
    resp, pd = fetch(c, 2, "t", 0, version=16)
    assert pd.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert [(e.node_id, e.port) for e in resp.node_endpoints] == [(1, c.ports[1])]
    resp, pr = produce(c, 3, "t", [b"x"])
    assert pr.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and pr.current_leader.leader_id == 1
    assert [(e.node_id, e.port) for e in resp.node_endpoints] == [(1, c.ports[1])]


def test_consumers_never_read_above_the_hw(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3))
    assert produce(c, 1, "t", [b"a"])[1].error_code == 0
    c.pause(2)
    c.pause(3)
    _, pr = produce(c, 1, "t", [b"b"], acks=1)        # acks=1: the leader alone has it
    assert (pr.error_code, pr.base_offset) == (0, 1)
    _, pd = fetch(c, 1, "t", 0)
    assert pd.high_watermark == 1 and values_in(pd.records) == [b"a"]
    _, pd = fetch(c, 1, "t", 1)                         # at the HW: nothing yet, no error
    assert pd.error_code == 0 and values_in(pd.records) == []
    c.resume(2)
    c.resume(3)
    wait_for(lambda: fetch(c, 1, "t", 0)[1].high_watermark == 2, what="HW to reach 2")
    assert values_in(fetch(c, 1, "t", 0)[1].records) == [b"a", b"b"]


def test_isr_shrinks_and_expands_with_min_insync(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3))
    assert produce(c, 1, "t", [b"a"])[1].error_code == 0
    c.pause(3)
    # acks=all goes on: the ISR drops 3 after replica.lag.time.max.ms, then the HW moves
    start = time.monotonic()
    _, pr = produce(c, 1, "t", [b"b"], timeout_ms=10000)
    assert pr.error_code == 0, ErrorCode(pr.error_code).name
    assert time.monotonic() - start >= 0.9
    assert c.registration("t").isr == (1, 2)
    c.pause(2)
    # a follower at the leader's log end stays in sync (Kafka's isCaughtUp); new records make it lag
    _, pr = produce(c, 1, "t", [b"c"], acks=1)         # acks=1 is not held to min.insync.replicas
    assert pr.error_code == 0
    wait_for(lambda: c.registration("t").isr == (1,), what="ISR to shrink to the leader")
    _, pr = produce(c, 1, "t", [b"x"])
    assert pr.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    c.resume(2)
    c.resume(3)
    wait_for(lambda: sorted(c.registration("t").isr) == [1, 2, 3], what="ISR to expand")
    _, pr = produce(c, 1, "t", [b"d"])
    assert pr.error_code == 0
    for node in (1, 2, 3):
        assert log_values(c, node, "t") == [b"a", b"b", b"c", b"d"]
    rejected = [a for a in c.alter_calls if a[3]]
    assert rejected == []


def test_acks_all_times_out_and_after_append_error(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3), configs={"min.insync.replicas": "3"})
    assert produce(c, 1, "t", [b"a"])[1].error_code == 0
    c.pause(3)
    # ISR still (1,2,3) until the lag passes: the wait ends at the request timeout
    _, pr = produce(c, 1, "t", [b"b"], timeout_ms=300)
    assert pr.error_code == ErrorCode.REQUEST_TIMED_OUT
    # shrinking under min.insync.replicas=3 lets the HW pass: NOT_ENOUGH_REPLICAS_AFTER_APPEND
    _, pr = produce(c, 1, "t", [b"c"], timeout_ms=10000)
    assert pr.error_code == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    wait_for(lambda: c.registration("t").isr == (1, 2), what="ISR to shrink")
    _, pr = produce(c, 1, "t", [b"d"])
    assert pr.error_code == ErrorCode.NOT_ENOUGH_REPLICAS


def test_old_leader_truncates_its_divergent_tail(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3))
    assert produce(c, 1, "t", [b"a", b"b"])[1].error_code == 0
    c.pause(2)
    c.pause(3)
    assert produce(c, 1, "t", [b"lost1", b"lost2"], acks=1)[1].error_code == 0   # never replicated
    assert produce(c, 1, "t", [b"lost3"], acks=1)[1].error_code == 0
    c.pause(1)                                  # the old leader hangs
    c.elect("t", 0, 2, isr=(2, 3))              # (the followers, paused, learn it as they resume)
    c.resume(2)
    c.resume(3)
    _, pr = produce(c, 2, "t", [b"c"])
    assert (pr.error_code, pr.base_offset) == (0, 2)
    _, pr = produce(c, 1, "t", [b"stale"], acks=1)  # the hung leader has not heard yet: still appends
    assert log_values(c, 1, "t")[-1] == b"stale"
    c.resume(1)                                 # it learns of epoch 1, truncates, follows
    wait_for(lambda: log_values(c, 1, "t") == [b"a", b"b", b"c"], what="old leader to truncate and catch up")
    assert c.call(lambda: c.partition(1, "t").epochs.entries) == [(0, 0), (1, 2)]
    wait_for(lambda: sorted(c.registration("t").isr) == [1, 2, 3], what="old leader back in the ISR")
    _, pd = fetch(c, 2, "t", 0)
    assert values_in(pd.records) == [b"a", b"b", b"c"]
    # OffsetForLeaderEpoch answers from the epoch cache; a stale epoch is fenced
    OT = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    with RawClient(c.bootstrap(2)) as client:
        resp = client.request(OFFSET_FOR_EPOCH, 4, replica_id=-1, topics=[OT(topic="t", partitions=[
            OT.OffsetForLeaderPartition(partition=0, current_leader_epoch=1, leader_epoch=0),
        ])])
        p = resp.topics[0].partitions[0]
        assert (p.error_code, p.leader_epoch, p.end_offset) == (0, 0, 2)
        resp = client.request(OFFSET_FOR_EPOCH, 4, replica_id=-1, topics=[OT(topic="t", partitions=[
            OT.OffsetForLeaderPartition(partition=0, current_leader_epoch=0, leader_epoch=0),
        ])])
        assert resp.topics[0].partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH


def test_idempotent_sequences_continue_on_the_new_leader(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3))
    pid = 4242
    assert produce(c, 1, "t", [b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)[1].error_code == 0
    c.elect("t", 0, 2)
    wait_for(lambda: c.call(lambda: c.partition(2, "t").replica.is_leader), what="new leader")
    # a retry of the acknowledged batch is a duplicate on the new leader, with its original offset
    _, pr = produce(c, 2, "t", [b"a", b"b"], producer_id=pid, producer_epoch=0, base_sequence=0)
    assert (pr.error_code, pr.base_offset) == (0, 0)
    _, pr = produce(c, 2, "t", [b"x"], producer_id=pid, producer_epoch=0, base_sequence=5)
    assert pr.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    _, pr = produce(c, 2, "t", [b"c"], producer_id=pid, producer_epoch=0, base_sequence=2)
    assert (pr.error_code, pr.base_offset) == (0, 2)
    wait_for(lambda: log_values(c, 1, "t") == [b"a", b"b", b"c"], what="old leader to follow")


def test_follower_fetch_v15_replica_state_reads_past_the_hw(cluster: InProcessCluster) -> None:
    """KIP-903: from Fetch v15 the follower's id travels in ReplicaState; a follower's fetch
    reads up to the log end (not the HW) and its fetch offset moves the HW."""
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3))
    assert produce(c, 1, "t", [b"a"])[1].error_code == 0
    c.pause(2)
    c.pause(3)
    assert produce(c, 1, "t", [b"b"], acks=1)[1].error_code == 0
    FT = FetchRequest.FetchTopic
    tid = c.topics["t"].topic_id

    def follower_fetch(offset: int):
        with RawClient(c.bootstrap(1)) as client:
            resp = client.request(FETCH, 15, replica_state=FetchRequest.ReplicaState(replica_id=2, replica_epoch=-1),
                                  max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                                  session_epoch=-1, topics=[FT(topic_id=tid, partitions=[FT.FetchPartition(
                                      partition=0, current_leader_epoch=0, fetch_offset=offset, last_fetched_epoch=0,
                                      log_start_offset=0, partition_max_bytes=1 << 20)])],
                                  forgotten_topics_data=[], rack_id="")
        return resp.responses[0].partitions[0]

    pd = follower_fetch(1)
    assert pd.error_code == 0 and pd.high_watermark == 1 and values_in(pd.records) == [b"b"]
    # the follower now reports offset 2: with it and the leader at 2 ... 3 still holds the HW at 1
    assert follower_fetch(2).high_watermark == 1
    assert c.call(lambda: c.partition(1, "t").replica.followers[2].leo) == 2


def list_offset(c: InProcessCluster, node: int, topic: str, timestamp: int, version: int = 7):
    from kafka.protocol.consumer import ListOffsetsRequest
    LT = ListOffsetsRequest.ListOffsetsTopic
    with RawClient(c.bootstrap(node)) as client:
        resp = client.request(2, version, replica_id=-1, isolation_level=0, topics=[LT(name=topic, partitions=[
            LT.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])])
    return resp.topics[0].partitions[0]


def test_list_offsets_waits_for_a_new_leaders_lagging_hw(cluster: InProcessCluster) -> None:
    """Kafka's Partition.fetchOffsetForTimestamp: offsets at or above the last fetchable offset
    are never answered, and a new leader whose HW is still below its epoch's start offset answers
    OFFSET_NOT_AVAILABLE (retriable) for latest and for lookups finding nothing below it."""
    c = cluster
    c.create_topic("t", replicas=(1, 2, 3))
    assert produce(c, 1, "t", [b"a"])[1].error_code == 0
    c.pause(3)
    before_b = int(time.time() * 1000)
    assert produce(c, 1, "t", [b"b"], acks=1)[1].base_offset == 1
    wait_for(lambda: c.call(lambda: c.partition(2, "t").log_end_offset) == 2, what="follower 2 to copy b")
    p = list_offset(c, 1, "t", -1)
    assert (p.error_code, p.offset) == (0, 1)          # HW: 3 has not fetched b
    p = list_offset(c, 1, "t", before_b)
    assert (p.error_code, p.offset) == (0, -1)         # b is above the HW: not answered
    c.pause(1)
    c.elect("t", 0, 2, isr=(2, 3))                     # 2 leads from offset 2 on, its HW is 1
    wait_for(lambda: c.call(lambda: c.partition(2, "t").replica.is_leader), what="2 to lead")
    p = list_offset(c, 2, "t", -1)
    assert p.error_code == ErrorCode.OFFSET_NOT_AVAILABLE
    p = list_offset(c, 2, "t", before_b)
    assert p.error_code == ErrorCode.OFFSET_NOT_AVAILABLE
    p = list_offset(c, 2, "t", -2)
    assert (p.error_code, p.offset) == (0, 0)          # earliest is always known
    c.resume(3)
    wait_for(lambda: list_offset(c, 2, "t", -1).error_code == 0, what="the new leader's HW")
    p = list_offset(c, 2, "t", -1)
    assert (p.offset, p.leader_epoch) == (2, 1)
    assert list_offset(c, 2, "t", before_b).offset == 1
