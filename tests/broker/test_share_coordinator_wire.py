"""Kafka's share coordinator on ``__share_group_state`` (KIP-932, issue 21) over the wire, on an
in-process broker with share groups enabled: the five share-group state APIs answer exact states
and Kafka's fencing codes, FindCoordinator key type 2 finds the coordinator, the state survives a
restart (replayed from ShareSnapshot / ShareUpdate records), a ShareSnapshot follows every
``share.coordinator.snapshot.update.records.per.snapshot`` updates, and the broker's Persister
(``broker.share_persister``) reads and writes the same state in process."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.testing.inprocess import InProcessBroker
from coordinator.share.persister import PersisterStateBatch as B, ReadStateResult, SharePartitionKey, ShareState
from coordinator.share_state import records as rec
from protocol import records as rb
from protocol import schema_messages as m
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.support.rawclient import RawClient

PER_SNAPSHOT = 3
PROPS = {"group.share.enable": "true", "share.coordinator.state.topic.num.partitions": "3",
         "share.coordinator.snapshot.update.records.per.snapshot": str(PER_SNAPSHOT)}
GROUP = "sg"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data", overrides=PROPS, topics={"t": 2}).start()
    try:
        yield b
    finally:
        b.stop()


def topic_id(b: InProcessBroker, name: str = "t") -> uuid.UUID:
    def get() -> uuid.UUID:
        assert b.broker is not None
        return b.broker.logs.topics[name].topic_id
    result: uuid.UUID = b._on_loop(get)
    return result


def on_loop(b: InProcessBroker, fn: Any, *args: Any) -> Any:
    """Run an async function of the broker on its trio loop."""
    return trio.from_thread.run(fn, *args, trio_token=b._token)


# -- the requests ------------------------------------------------------------------------------------
def initialize(c: RawClient, tid: uuid.UUID, partition: int, state_epoch: int, start_offset: int) -> Any:
    R = m.InitializeShareGroupStateRequest
    resp = c.call(R(group_id=GROUP, topics=[R.InitializeStateData(topic_id=tid, partitions=[
        R.InitializeStateData.PartitionData(partition=partition, state_epoch=state_epoch, start_offset=start_offset)])]),
        m.InitializeShareGroupStateResponse, 0)
    return resp.results[0].partitions[0]


def write(c: RawClient, tid: uuid.UUID, partition: int, batches: list[B], *, start: int = -1, leader_epoch: int = 1,
          state_epoch: int = 0, dcc: int = -1, version: int = 1) -> Any:
    R = m.WriteShareGroupStateRequest
    P = R.WriteStateData.PartitionData
    resp = c.call(R(group_id=GROUP, topics=[R.WriteStateData(topic_id=tid, partitions=[P(
        partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start,
        delivery_complete_count=dcc,
        state_batches=[P.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                    delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                       for b in batches])])]), m.WriteShareGroupStateResponse, version)
    return resp.results[0].partitions[0]


def read(c: RawClient, tid: uuid.UUID, partition: int, leader_epoch: int) -> Any:
    R = m.ReadShareGroupStateRequest
    resp = c.call(R(group_id=GROUP, topics=[R.ReadStateData(topic_id=tid, partitions=[
        R.ReadStateData.PartitionData(partition=partition, leader_epoch=leader_epoch)])]),
        m.ReadShareGroupStateResponse, 0)
    return resp.results[0].partitions[0]


def summary(c: RawClient, tid: uuid.UUID, partition: int, leader_epoch: int = -1) -> Any:
    R = m.ReadShareGroupStateSummaryRequest
    resp = c.call(R(group_id=GROUP, topics=[R.ReadStateSummaryData(topic_id=tid, partitions=[
        R.ReadStateSummaryData.PartitionData(partition=partition, leader_epoch=leader_epoch)])]),
        m.ReadShareGroupStateSummaryResponse, 1)
    return resp.results[0].partitions[0]


def delete(c: RawClient, tid: uuid.UUID, partition: int) -> Any:
    R = m.DeleteShareGroupStateRequest
    resp = c.call(R(group_id=GROUP, topics=[R.DeleteStateData(topic_id=tid, partitions=[
        R.DeleteStateData.PartitionData(partition=partition)])]), m.DeleteShareGroupStateResponse, 0)
    return resp.results[0].partitions[0]


def batches_of(p: Any) -> list[B]:
    return [B(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches]


def state_record_types(b: InProcessBroker, key: SharePartitionKey) -> list[int]:
    """The record types (0 ShareSnapshot, 1 ShareUpdate) written for ``key``, in log order."""
    def collect() -> list[int]:
        assert b.broker is not None
        shell = b.broker.share_coordinator
        part = b.broker.logs.partition(shell.topic, shell.partition_for_key(key))
        assert part is not None
        kinds = []
        for seg in part.segments:
            for h in seg.iter_headers():
                data = seg.read(h.position, h.size)
                h.position = 0
                for r in rb.iter_records(data, h):
                    if r.key is not None and rec.decode_key(r.key) == key:
                        kinds.append(rec.key_type(r.key))
        return kinds
    result: list[int] = b._on_loop(collect)
    return result


# -- tests ---------------------------------------------------------------------------------------------
def test_apis_are_advertised_with_share_groups(broker):
    from tests.support.clienthelpers import advertised_apis

    apis = advertised_apis(broker.bootstrap_servers)
    assert {k: apis[k] for k in range(83, 88)} == {83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1)}


def test_write_then_read_back_over_the_wire(broker):
    tid = topic_id(broker)
    with RawClient(broker.bootstrap_servers) as c:
        assert (r := initialize(c, tid, 0, 0, 10)).error_code == 0 and r.error_message is None
        assert write(c, tid, 0, [B(10, 19, 0, 1)], start=10).error_code == 0
        assert write(c, tid, 0, [B(10, 12, 2, 1), B(15, 15, 4, 3)], dcc=4).error_code == 0
        p = read(c, tid, 0, leader_epoch=1)
        assert (p.error_code, p.state_epoch, p.start_offset) == (0, 0, 10)
        assert batches_of(p) == [B(10, 12, 2, 1), B(13, 14, 0, 1), B(15, 15, 4, 3), B(16, 19, 0, 1)]
        s = summary(c, tid, 0)
        assert (s.error_code, s.state_epoch, s.leader_epoch, s.start_offset, s.delivery_complete_count) == (0, 0, 1, 10, 4)
        # v0 of WriteShareGroupState has no delivery-complete count: it stays
        assert write(c, tid, 0, [B(13, 14, 2, 1)], start=15, version=0).error_code == 0
        p = read(c, tid, 0, leader_epoch=1)
        assert (p.start_offset, batches_of(p)) == (15, [B(15, 15, 4, 3), B(16, 19, 0, 1)])
        assert summary(c, tid, 0).delivery_complete_count == 4
        # the other partition of the topic is its own state
        assert read(c, tid, 1, 0).error_code == ErrorCode.INVALID_REQUEST
        assert delete(c, tid, 0).error_code == 0
        p = read(c, tid, 0, leader_epoch=1)
        assert (p.error_code, p.error_message) == (ErrorCode.INVALID_REQUEST,
                                                   "Read operation on uninitialized share partition not allowed.")


def test_fencing_and_refusals_over_the_wire(broker):
    tid = topic_id(broker)
    with RawClient(broker.bootstrap_servers) as c:
        w = write(c, tid, 0, [B(0, 0, 2, 1)])
        assert (w.error_code, w.error_message) == (ErrorCode.INVALID_REQUEST,
                                                   "Write operation on uninitialized share partition not allowed.")
        assert initialize(c, tid, 0, 2, 0).error_code == 0
        assert read(c, tid, 0, leader_epoch=5).error_code == 0           # the new leader's epoch is recorded
        assert write(c, tid, 0, [], leader_epoch=4, state_epoch=2).error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert read(c, tid, 0, leader_epoch=4).error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert write(c, tid, 0, [], leader_epoch=5, state_epoch=1).error_code == ErrorCode.FENCED_STATE_EPOCH
        assert initialize(c, tid, 0, 1, 0).error_code == ErrorCode.FENCED_STATE_EPOCH
        assert write(c, tid, 0, [], leader_epoch=5, state_epoch=2).error_code == 0
        assert initialize(c, uuid.uuid4(), 0, 0, 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert initialize(c, tid, 7, 0, 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_find_coordinator_key_type_share(broker):
    tid = topic_id(broker)
    key = rec.share_coordinator_key(SharePartitionKey(GROUP, tid, 0))
    with RawClient(broker.bootstrap_servers) as c:
        r = c.request(ApiKey.FIND_COORDINATOR, 6, key_type=2, coordinator_keys=[key, "nonsense"])
        ok, bad = r.coordinators
        assert (ok.key, ok.error_code, ok.port) == (key, 0, broker.port)
        assert (bad.key, bad.error_code, bad.node_id) == ("nonsense", ErrorCode.INVALID_REQUEST, -1)


def test_state_survives_a_restart(broker):
    tid = topic_id(broker)
    with RawClient(broker.bootstrap_servers) as c:
        assert initialize(c, tid, 1, 0, 0).error_code == 0
        for i in range(5):      # snapshot and updates, replayed in order
            assert write(c, tid, 1, [B(i * 10, i * 10 + 9, (0, 2, 4)[i % 3], 1 + i % 2)], leader_epoch=3,
                         start=i, dcc=i).error_code == 0
        before = read(c, tid, 1, leader_epoch=3)
    broker.restart()
    with RawClient(broker.bootstrap_servers) as c:
        after = read(c, tid, 1, leader_epoch=3)
        assert (after.error_code, after.state_epoch, after.start_offset, batches_of(after)) == \
            (0, before.state_epoch, before.start_offset, batches_of(before))
        assert batches_of(after) == [B(4, 9, 0, 1), B(10, 19, 2, 2), B(20, 29, 4, 1), B(30, 39, 0, 2),
                                     B(40, 49, 2, 1)]
        assert write(c, tid, 1, [], leader_epoch=2).error_code == ErrorCode.FENCED_LEADER_EPOCH   # the epoch too


def test_a_snapshot_follows_n_updates(broker):
    tid = topic_id(broker)
    key = SharePartitionKey(GROUP, tid, 0)
    with RawClient(broker.bootstrap_servers) as c:
        assert initialize(c, tid, 0, 0, 0).error_code == 0
        for i in range(2 * PER_SNAPSHOT + 2):
            assert write(c, tid, 0, [B(i, i, 2, 1)]).error_code == 0
    U, S = rec.SHARE_UPDATE, rec.SHARE_SNAPSHOT
    # Kafka's count: the first snapshot after N+1 updates, later ones after N
    assert state_record_types(broker, key) == [S, U, U, U, U, S, U, U, U]
    broker.restart()
    with RawClient(broker.bootstrap_servers) as c:
        assert batches_of(read(c, tid, 0, 1)) == [B(0, 2 * PER_SNAPSHOT + 1, 2, 1)]
        assert write(c, tid, 0, [B(100, 100, 2, 1)]).error_code == 0
    assert state_record_types(broker, key)[-1] == S     # the count survived the restart


def test_the_persister_in_process(broker):
    tid = topic_id(broker)
    key = SharePartitionKey(GROUP, tid, 1)

    async def scenario() -> tuple[Any, ...]:
        assert broker.broker is not None
        p = broker.broker.share_persister
        uninitialized = await p.read_state(key, 0)
        init = await p.initialize_state(key, 1, 5)
        written = await p.write_state(key, ShareState(state_epoch=1, start_offset=5, leader_epoch=2,
                                                      batches=(B(5, 9, 0, 2), B(6, 6, 2, 2)),
                                                      delivery_complete_count=1))
        fenced = await p.write_state(key, ShareState(state_epoch=1, start_offset=5, leader_epoch=1))
        state = await p.read_state(key, 2)
        summ = await p.read_summary(key)
        deleted = await p.delete_state(key)
        return uninitialized, init, written, fenced, state, summ, deleted

    uninitialized, init, written, fenced, state, summ, deleted = on_loop(broker, scenario)
    assert uninitialized.error_code == ErrorCode.INVALID_REQUEST
    assert (init, written, fenced, deleted) == (0, 0, ErrorCode.FENCED_LEADER_EPOCH, 0)
    assert state == ReadStateResult(0, ShareState(state_epoch=1, start_offset=5, leader_epoch=2,
                                                  batches=(B(5, 5, 0, 2), B(6, 6, 2, 2), B(7, 9, 0, 2)),
                                                  delivery_complete_count=1))
    assert (summ.error_code, summ.state_epoch, summ.leader_epoch, summ.start_offset) == (0, 1, 2, 5)
