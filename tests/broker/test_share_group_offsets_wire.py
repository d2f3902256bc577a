"""The share admin APIs over the wire (KIP-932, issue 21): DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets answer from, and change, the state the share
coordinator holds (through the broker's Persister), with Kafka's group checks (GROUP_ID_NOT_FOUND,
NON_EMPTY_GROUP) and per-partition errors. An in-process broker with share groups enabled; the
share group is made with ShareGroupHeartbeat (a member joins, then leaves)."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testing.inprocess import InProcessBroker
from coordinator.share.persister import SharePartitionKey, ShareState
from protocol import schema_messages as m
from protocol.errors import ErrorCode
from tests.support.rawclient import RawClient
from tests.support.share_state_support import alter_share_offsets, on_loop, share_heartbeat, topic_id

PROPS = {"group.share.enable": "true", "share.coordinator.state.topic.num.partitions": "2"}
GROUP = "admin-sg"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data", overrides=PROPS, topics={"t": 3, "u": 1}).start()
    try:
        yield b
    finally:
        b.stop()


def describe(c: RawClient, topics: dict[str, list[int]] | None, version: int = 1) -> Any:
    R = m.DescribeShareGroupOffsetsRequest
    G = R.DescribeShareGroupOffsetsRequestGroup
    group = G(group_id=GROUP, topics=None if topics is None else [
        G.DescribeShareGroupOffsetsRequestTopic(topic_name=n, partitions=ps) for n, ps in topics.items()])
    return c.call(R(groups=[group]), m.DescribeShareGroupOffsetsResponse, version).groups[0]


def delete_offsets(c: RawClient, topics: list[str]) -> Any:
    R = m.DeleteShareGroupOffsetsRequest
    return c.call(R(group_id=GROUP, topics=[R.DeleteShareGroupOffsetsRequestTopic(topic_name=n) for n in topics]),
                  m.DeleteShareGroupOffsetsResponse, 0)


def offsets(group: Any) -> dict[tuple[str, int], tuple[int, int, int]]:
    return {(t.topic_name, p.partition_index): (p.start_offset, p.error_code, p.lag)
            for t in group.topics for p in t.partitions}


def test_reset_describe_and_delete_offsets(broker):
    tid = topic_id(broker)
    with RawClient(broker.bootstrap_servers) as c:
        # no such group yet
        assert alter_share_offsets(c, GROUP, {"t": {0: 5}}).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert describe(c, None).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        member = uuid.uuid4().hex
        assert share_heartbeat(c, GROUP, member, 0, ["t"]).error_code == 0
        r = alter_share_offsets(c, GROUP, {"t": {0: 5}})
        assert (r.error_code, r.error_message) == (ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        assert delete_offsets(c, ["t"]).error_code == ErrorCode.NON_EMPTY_GROUP
        assert share_heartbeat(c, GROUP, member, -1, None).error_code == 0        # leaves: the group is empty

        r = alter_share_offsets(c, GROUP, {"t": {0: 5, 2: 7, 9: 1}, "nope": {0: 1}})
        assert r.error_code == 0
        assert {(t.topic_name, p.partition_index): p.error_code for t in r.responses for p in t.partitions} == {
            ("t", 0): 0, ("t", 2): 0, ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        # null topics: the initialized share partitions only (partition 1 never was)
        g = describe(c, None)
        assert g.error_code == 0 and offsets(g) == {("t", 0): (5, 0, -1), ("t", 2): (7, 0, -1)}
        assert {t.topic_id for t in g.topics} == {tid}
        # named partitions: an uninitialized one answers start offset -1, an unknown topic its error
        g = describe(c, {"t": [1, 2], "nope": [0]}, version=0)
        assert offsets(g) == {("t", 1): (-1, 0, -1), ("t", 2): (7, 0, -1),
                              ("nope", 0): (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}

        # the reset fenced the state epoch of whoever wrote before: the leader must read again
        async def stale_write() -> int:
            assert broker.broker is not None
            return await broker.broker.share_persister.write_state(
                SharePartitionKey(GROUP, tid, 0), ShareState(state_epoch=0, start_offset=6, leader_epoch=0))
        assert on_loop(broker, stale_write) == ErrorCode.FENCED_STATE_EPOCH
        assert alter_share_offsets(c, GROUP, {"t": {0: 3}}).error_code == 0     # again, at the next state epoch
        assert offsets(describe(c, {"t": [0]}))[("t", 0)][0] == 3

        r = delete_offsets(c, ["t", "nope"])
        assert {t.topic_name: t.error_code for t in r.responses} == {"t": 0, "nope": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert offsets(describe(c, None)) == {}
        assert offsets(describe(c, {"t": [0]})) == {("t", 0): (-1, 0, -1)}


def test_lag_counts_from_the_high_watermark(broker):
    tid = topic_id(broker, "u")
    with RawClient(broker.bootstrap_servers) as c:
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        for i in range(10):
            p.send("u", value=b"v%d" % i, partition=0)
        p.flush()
        p.close()
        member = uuid.uuid4().hex
        share_heartbeat(c, GROUP, member, 0, ["u"])
        share_heartbeat(c, GROUP, member, -1, None)
        assert alter_share_offsets(c, GROUP, {"u": {0: 4}}).error_code == 0

        async def acknowledged() -> int:    # the leader acknowledged 2 records above the start offset
            assert broker.broker is not None
            persister = broker.broker.share_persister
            state = await persister.read_state(SharePartitionKey(GROUP, tid, 0), 0)
            return await persister.write_state(SharePartitionKey(GROUP, tid, 0), ShareState(
                state_epoch=state.state.state_epoch, start_offset=4, leader_epoch=0, delivery_complete_count=2))
        assert on_loop(broker, acknowledged) == 0
        assert offsets(describe(c, {"u": [0]}))[("u", 0)] == (4, 0, 10 - 4 - 2)
        assert offsets(describe(c, {"u": [0]}, version=0))[("u", 0)][:2] == (4, 0)
