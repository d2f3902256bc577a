"""Incremental fetch sessions (KIP-227) between real Samsa brokers in one process
(tests/support/replica_double.py): the leader's answers on the wire to a follower's full and
incremental fetches, session errors, consumers still sessionless, and an idle partition that
stays in the ISR while its followers' incremental fetches never name it."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.producer import ProduceRequest

from protocol.errors import ErrorCode
from tests.support.rawclient import RawClient
from tests.support.replica_double import InProcessCluster
from tests.broker.test_replication_inprocess import values_in, wait_for
from tests.support.wire import value_batch

FETCH = 1
FT = FetchRequest.FetchTopic
OUTSIDER = 9        # a replica id outside every replica set: its fetches move no follower state


@pytest.fixture
def cluster(tmp_path: Path):
    c = InProcessCluster(tmp_path, 3, **{"replica.lag.time.max.ms": 1000, "min.insync.replicas": 2}).start()
    yield c
    c.stop()


def produce(c: InProcessCluster, partition: int, values: list[bytes], acks: int = -1) -> int:
    td = ProduceRequest.TopicProduceData(name="s", partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=bytes(value_batch(values)))])
    with RawClient(c.bootstrap(1), timeout=20) as client:
        resp = client.request(0, 9, transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[td])
    return resp.responses[0].partition_responses[0].error_code


def replica_fetch(client: RawClient, session_id: int, epoch: int, parts: list[tuple[object, int, int]],
                  forgotten: list[tuple[object, list[int]]] = (), replica_id: int = OUTSIDER, version: int = 15):
    topics: dict[object, list] = {}
    for tid, index, offset in parts:
        topics.setdefault(tid, []).append(FT.FetchPartition(partition=index, current_leader_epoch=0, fetch_offset=offset,
                                                            last_fetched_epoch=-1, log_start_offset=0,
                                                            partition_max_bytes=1 << 20))
    return client.request(FETCH, version, replica_state=FetchRequest.ReplicaState(replica_id=replica_id, replica_epoch=-1),
                          replica_id=replica_id, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                          session_id=session_id, session_epoch=epoch,
                          topics=[FT(topic_id=t, partitions=ps) for t, ps in topics.items()],
                          forgotten_topics_data=[FetchRequest.ForgottenTopic(topic_id=t, partitions=ps)
                                                 for t, ps in forgotten],
                          rack_id="")


def answered(resp) -> dict[tuple[object, int], tuple[int, int, list[bytes]]]:
    """(topic id, partition) -> (error, high watermark, values) of an answer."""
    return {(t.topic_id, p.partition_index): (p.error_code, p.high_watermark, values_in(p.records))
            for t in resp.responses for p in t.partitions}


def test_full_then_incremental_answers_carry_only_news(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("s", partitions=3, replicas=(1, 2, 3))
    tid = c.topics["s"].topic_id
    for p in range(3):
        wait_for(lambda p=p: c.call(lambda: c.partition(1, "s", p).replica is not None), what="leader")
    assert produce(c, 0, [b"a"]) == 0
    with RawClient(c.bootstrap(1)) as client:
        full = replica_fetch(client, 0, 0, [(tid, 0, 0), (tid, 1, 0), (tid, 2, 0)])
        sid = full.session_id
        assert full.error_code == 0 and sid > 0
        assert answered(full) == {(tid, 0): (0, 1, [b"a"]), (tid, 1): (0, 0, []), (tid, 2): (0, 0, [])}
        # epoch 1 names p0 at its new offset: nothing new anywhere, so nothing answered
        inc = replica_fetch(client, sid, 1, [(tid, 0, 1)])
        assert (inc.error_code, inc.session_id, answered(inc)) == (0, sid, {})
        # a write to p2 (fetched at its cached offset 0 though not named): only p2 answered
        assert produce(c, 2, [b"b"]) == 0
        assert answered(replica_fetch(client, sid, 2, [])) == {(tid, 2): (0, 1, [b"b"])}
        # unnamed, p2 is fetched again at its cached offset 0 (the follower did not move it)
        assert answered(replica_fetch(client, sid, 3, [])) == {(tid, 2): (0, 1, [b"b"])}
        # p2 named at its new offset, p1 forgotten: nothing new; then a wrong epoch
        assert answered(replica_fetch(client, sid, 4, [(tid, 2, 1)], forgotten=[(tid, [1])])) == {}
        assert c.call(lambda: [k[1] for k in c.brokers[1].replicas.fetch_sessions.get(sid).partitions]) == [0, 2]
        bad = replica_fetch(client, sid, 4, [])
        assert (bad.error_code, bad.session_id, bad.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
        assert replica_fetch(client, sid, 5, []).error_code == 0       # the session is still there
        assert replica_fetch(client, sid + 1, 1, []).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        # a full fetch naming the session closes it and opens another; epoch -1 closes without one
        again = replica_fetch(client, sid, 0, [(tid, 0, 1)])
        assert again.session_id not in (0, sid) and answered(again) == {(tid, 0): (0, 1, [])}
        assert replica_fetch(client, sid, 6, []).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        final = replica_fetch(client, again.session_id, -1, [(tid, 0, 1)])
        assert final.session_id == 0 and answered(final) == {(tid, 0): (0, 1, [])}
        assert c.call(lambda: c.brokers[1].replicas.fetch_sessions.get(again.session_id)) is None


def test_consumer_fetches_stay_sessionless(cluster: InProcessCluster) -> None:
    c = cluster
    c.create_topic("s", replicas=(1, 2, 3))
    tid = c.topics["s"].topic_id
    wait_for(lambda: c.call(lambda: c.partition(1, "s").replica is not None), what="leader")
    with RawClient(c.bootstrap(1)) as client:
        resp = replica_fetch(client, 0, 0, [(tid, 0, 0)], replica_id=-1)    # a consumer asking for a session
        assert (resp.error_code, resp.session_id) == (0, 0) and answered(resp) == {(tid, 0): (0, 0, [])}


def test_idle_partition_stays_in_the_isr_while_another_is_written(cluster: InProcessCluster) -> None:
    """The followers' incremental fetches name only the written partition; the leader still
    counts their fetch of the idle one (at its cached offset) as caught up, so when the idle
    partition is written after longer than replica.lag.time.max.ms (1000 ms here) its
    followers are still in sync: the ISR check right after that append removes nobody."""
    c = cluster
    c.create_topic("s", partitions=2, replicas=(1, 2, 3))
    for p in range(2):
        wait_for(lambda p=p: c.call(lambda: c.partition(1, "s", p).replica is not None), what="leader")
    assert produce(c, 0, [b"first"]) == 0
    assert produce(c, 1, [b"idle"]) == 0
    leader = c.brokers[1].replicas
    start = time.monotonic()
    sent = 1
    while time.monotonic() - start < 3.0:
        assert produce(c, 0, [b"x%d" % sent]) == 0
        sent += 1
        time.sleep(0.05)
    # the followers did fetch incrementally: one session each, holding both partitions, many epochs on
    sessions = c.call(lambda: [(s.replica_id, sorted(k[1] for k in s.partitions), s.epoch)
                               for s in leader.fetch_sessions.sessions.values()])
    assert sorted(r for r, _, _ in sessions) == [2, 3]
    assert all(parts == [0, 1] and epoch > 10 for _, parts, epoch in sessions), sessions
    for node in (2, 3):
        fetcher = c.brokers[node].replicas.fetchers[1]
        assert c.call(lambda f=fetcher: f.session.session_id) in {s.id for s in leader.fetch_sessions.sessions.values()}

    def write_idle_and_check_isr() -> tuple[list[int] | None, dict[int, int]]:
        part = c.partition(1, "s", 1)
        now = c.brokers[1].now_ms()
        part.append_internal([(None, b"late")], now)
        leader.leader_appended(part)
        leader.maybe_shrink_isr(now)
        rs = part.replica
        return rs.pending_isr, {r: now - f.last_caught_up_ms for r, f in rs.followers.items()}

    pending, lag_ms = c.call(write_idle_and_check_isr)
    assert pending is None, f"the ISR check would shrink the idle partition's ISR to {pending}; lag {lag_ms}"
    assert all(ms < 1000 for ms in lag_ms.values()), lag_ms
    assert not [call for call in c.alter_calls if call[0] == "s"]
    assert c.registration("s", 1).isr == (1, 2, 3) and c.registration("s", 0).isr == (1, 2, 3)
    for node in (2, 3):
        wait_for(lambda n=node: c.call(lambda: c.partition(n, "s", 0).log_end_offset) == sent, what="replicated")
        wait_for(lambda n=node: c.call(lambda: c.partition(n, "s", 1).log_end_offset) == 2, what="idle replicated")
