"""The broker's own appends (offset commits, transaction markers) read their topic's configs from a
per-topic cache (broker/log/append_settings.py): an AlterConfigs or IncrementalAlterConfigs of the
topic still reaches the very next append, as every config lookup did before the cache.

A real ``Broker`` answering request frames through ``dispatch`` on its own trio loop (no socket).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

import broker.apis  # noqa: F401  (registers the API handlers)
from broker.common.config import BrokerConfig
from broker.log.partition import CONTROL_ABORT, control_record
from broker.network.dispatch import dispatch
from broker.server.broker_server import Broker
from protocol import records as rb
from protocol.messages import REQUESTS, RESPONSES

HOST, LISTENER = "127.0.0.1", "PLAINTEXT"
OFFSETS = "__consumer_offsets"
TOPIC_RESOURCE, SET = 2, 0


async def call(broker: Broker, key: int, version: int, **fields: Any) -> Any:
    req = REQUESTS[key](version=version, **fields)
    req.with_header(correlation_id=1, client_id="test")
    out = await dispatch(broker, bytes(req.encode(header=True, framed=False)), HOST, LISTENER)
    return RESPONSES[key].decode(bytes(out)[4:], version=version, header=True)


async def commit(broker: Broker, group: str, offset: int) -> None:
    C = REQUESTS[8]
    P = C.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    r = await call(broker, 8, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                   group_instance_id=None, topics=[C.OffsetCommitRequestTopic(name="t", partitions=[
                       P(partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                         committed_metadata="")])])
    assert r.topics[0].partitions[0].error_code == 0


async def incremental_alter(broker: Broker, topic: str, configs: dict[str, str]) -> None:
    R = REQUESTS[44].AlterConfigsResource
    r = await call(broker, 44, 0, validate_only=False, resources=[R(
        resource_type=TOPIC_RESOURCE, resource_name=topic,
        configs=[R.AlterableConfig(name=k, config_operation=SET, value=v) for k, v in configs.items()])])
    assert r.responses[0].error_code == 0, r


async def alter(broker: Broker, topic: str, configs: dict[str, str]) -> None:
    """AlterConfigs (the legacy one): the topic's overrides become exactly ``configs``."""
    R = REQUESTS[33].AlterConfigsResource
    r = await call(broker, 33, 0, validate_only=False, resources=[R(
        resource_type=TOPIC_RESOURCE, resource_name=topic,
        configs=[R.AlterableConfig(name=k, value=v) for k, v in configs.items()])])
    assert r.responses[0].error_code == 0, r


def last_batch(part: Any) -> rb.BatchHeader:
    return list(part.segments[-1].iter_headers())[-1]


def run(tmp_path: Path, body: Any) -> None:
    async def main() -> None:
        broker = Broker(BrokerConfig({"listeners": f"{LISTENER}://{HOST}:0", "log.dirs": str(tmp_path),
                                      "offsets.topic.num.partitions": "1"}))
        broker.start()
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.run_services)
            broker.logs.create_topic("t", 1)
            await body(broker)
            nursery.cancel_scope.cancel()
    trio.run(main)


def test_offset_commit_appends_follow_segment_bytes_and_timestamp_type_changes(tmp_path: Path) -> None:
    async def body(broker: Broker) -> None:
        await commit(broker, "g", 1)
        part = broker.logs.partition(OFFSETS, 0)
        assert part is not None and len(part.segments) == 1
        first = part.log_end_offset
        await commit(broker, "g", 2)
        assert len(part.segments) == 1
        # a segment smaller than one commit's batch: the next commit rolls, and so does each after it
        await incremental_alter(broker, OFFSETS, {"segment.bytes": "14"})
        await commit(broker, "g", 3)
        assert len(part.segments) == 2
        await commit(broker, "g", 4)
        assert len(part.segments) == 3
        assert not last_batch(part).is_log_append_time
        # AlterConfigs replaces the overrides whole: segment.bytes is back to its default (the
        # broker's offsets.topic.segment.bytes is only applied at creation), log-append time is on
        await alter(broker, OFFSETS, {"message.timestamp.type": "LogAppendTime"})
        await commit(broker, "g", 5)
        await commit(broker, "g", 6)
        assert len(part.segments) == 3
        h = last_batch(part)
        assert h.is_log_append_time and h.max_timestamp >= h.base_timestamp
        await incremental_alter(broker, OFFSETS, {"message.timestamp.type": "CreateTime"})
        await commit(broker, "g", 7)
        assert not last_batch(part).is_log_append_time
        assert len(part.segments) == 3
        assert part.log_end_offset == first + 6    # one record per commit, whichever path wrote it
    run(tmp_path, body)


def test_markers_follow_the_user_topics_configs(tmp_path: Path) -> None:
    async def body(broker: Broker) -> None:
        part = broker.logs.partition("t", 0)
        assert part is not None
        now = broker.now_ms()
        assert part.append_control(7, 0, True, 0, now) == 0
        assert not last_batch(part).is_log_append_time
        await incremental_alter(broker, "t", {"message.timestamp.type": "LogAppendTime", "segment.bytes": "14"})
        assert part.append_control(7, 0, False, 0, now + 5) == 1
        h = last_batch(part)
        assert h.is_log_append_time and h.is_control and h.max_timestamp == now + 5
        assert len(part.segments) == 2
        seg = part.segments[-1]
        assert control_record(seg.read(h.position, h.size), rb.parse_header(seg.read(h.position, h.size))) == \
            (CONTROL_ABORT, 0)
    run(tmp_path, body)
