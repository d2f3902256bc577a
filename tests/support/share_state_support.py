"""Helpers of the share-coordinator tests: an in-process broker's topic ids and its async
functions (the Persister) run on its trio loop; ShareGroupHeartbeat and AlterShareGroupOffsets
over a RawClient (a member joins and leaves to make an empty share group, whose offsets are then set)."""
from __future__ import annotations

import uuid
from typing import Any

import trio

from broker.testing.inprocess import InProcessBroker
from protocol import schema_messages as m
from tests.support.rawclient import RawClient


def topic_id(b: InProcessBroker, name: str = "t") -> uuid.UUID:
    def get() -> uuid.UUID:
        assert b.broker is not None
        return b.broker.logs.topics[name].topic_id
    result: uuid.UUID = b._on_loop(get)
    return result


def on_loop(b: InProcessBroker, fn: Any, *args: Any) -> Any:
    """Run an async function of the broker on its trio loop and return its result."""
    return trio.from_thread.run(fn, *args, trio_token=b._token)


def share_heartbeat(c: RawClient, group: str, member_id: str, epoch: int, topics: list[str] | None) -> Any:
    """ShareGroupHeartbeat v1: epoch 0 joins (subscribed to ``topics``), -1 leaves."""
    R = m.ShareGroupHeartbeatRequest
    return c.call(R(group_id=group, member_id=member_id, member_epoch=epoch, rack_id=None,
                    subscribed_topic_names=topics), m.ShareGroupHeartbeatResponse, 1)


def alter_share_offsets(c: RawClient, group: str, offsets: dict[str, dict[int, int]]) -> Any:
    """AlterShareGroupOffsets v0: {topic: {partition: start offset}}."""
    R = m.AlterShareGroupOffsetsRequest
    T = R.AlterShareGroupOffsetsRequestTopic
    return c.call(R(group_id=group, topics=[T(topic_name=n, partitions=[
        T.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o) for p, o in ps.items()])
        for n, ps in offsets.items()]), m.AlterShareGroupOffsetsResponse, 0)
