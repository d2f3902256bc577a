"""Share-partition state through the Persister (issue 21), in process: a real ``Broker`` (no listener)
whose ShareFetch / ShareAcknowledge handlers are called with hand-built requests, with an in-memory
persister injected as ``broker.share_persister``. The share partition is dropped (as when its
leadership moves) and read again from the persister: exactly the released records come back, with
their delivery count, the accepted ones never."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

import broker.apis  # noqa: F401  (registers the API handlers)
from broker.apis.share_acknowledge import share_acknowledge
from broker.apis.share_fetch import share_fetch
from broker.common.config import BrokerConfig
from broker.network.dispatch import RequestContext
from broker.server.broker_server import Broker
from coordinator.share.memory_persister import MemoryPersister
from coordinator.share.persister import SharePartitionKey
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema_messages import ShareAcknowledgeRequest, ShareFetchRequest

GROUP, MEMBER = "sg", "member-1"
ACCEPT, RELEASE = 1, 2


def make_broker(tmp_path: Path) -> tuple[Broker, Any, MemoryPersister]:
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path), "group.share.enable": "true",
                                  "samsa.share.auto.offset.reset": "earliest"}))
    broker.logs.load()
    persister = MemoryPersister()
    broker.share_persister = persister      # type: ignore[attr-defined]  (the share coordinator's place)
    topic = broker.logs.create_topic("q", 1, {})
    part = topic.partitions[0]
    for i in range(20):
        part.append_internal([(None, f"v{i}".encode())], broker.now_ms())
    return broker, topic.topic_id, persister


def ctx(broker: Broker, key: ApiKey) -> RequestContext:
    return RequestContext(broker, key, 1, 0, "test", "127.0.0.1")


async def fetch(broker: Broker, tid: Any, epoch: int, acks: list[tuple[int, int, int]] = (), max_records: int = 100) -> Any:
    Q = ShareFetchRequest
    P = Q.FetchTopic.FetchPartition
    req = Q(version=1, group_id=GROUP, member_id=MEMBER, share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
            max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
            topics=[Q.FetchTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
                P.AcknowledgementBatch(first_offset=f, last_offset=l, acknowledge_types=[t]) for f, l, t in acks])])],
            forgotten_topics_data=[])
    return await share_fetch(ctx(broker, ApiKey.SHARE_FETCH), req)


async def acknowledge(broker: Broker, tid: Any, epoch: int, acks: list[tuple[int, int, int]]) -> Any:
    Q = ShareAcknowledgeRequest
    P = Q.AcknowledgeTopic.AcknowledgePartition
    req = Q(version=1, group_id=GROUP, member_id=MEMBER, share_session_epoch=epoch,
            topics=[Q.AcknowledgeTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
                P.AcknowledgementBatch(first_offset=f, last_offset=l, acknowledge_types=[t]) for f, l, t in acks])])])
    return await share_acknowledge(ctx(broker, ApiKey.SHARE_ACKNOWLEDGE), req)


def acquired(resp: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in resp.responses for p in t.partitions for a in p.acquired_records]


def partition_errors(resp: Any) -> list[tuple[int, int]]:
    return [(p.error_code, getattr(p, "acknowledge_error_code", ErrorCode.NONE))
            for t in resp.responses for p in t.partitions]


def test_released_records_come_back_after_the_share_partition_is_read_again(tmp_path):
    broker, tid, persister = make_broker(tmp_path)
    key = SharePartitionKey(GROUP, tid, 0)

    async def main():
        first = await fetch(broker, tid, 0)
        assert acquired(first) == [(0, 19, 1)]
        assert [c[0] for c in persister.calls] == ["read_state", "initialize_state", "read_state"]
        ack = await acknowledge(broker, tid, 1, [(0, 9, ACCEPT), (10, 19, RELEASE)])
        assert [p.error_code for t in ack.responses for p in t.partitions] == [ErrorCode.NONE]
        stored = persister.states[key]      # one write: the start moved past the accepted ten
        assert stored.start_offset == 10
        assert stored.offsets == {off: (0, 1) for off in range(10, 20)}       # AVAILABLE, delivery count 1
        assert [c[0] for c in persister.calls].count("write_state") == 1
        # the share partition goes (its leadership moved) and is read again on the next fetch
        part = broker.logs.topics["q"].partitions[0]
        broker.share_groups.on_role_change(part, False)
        assert broker.share_groups.existing(GROUP, tid, 0) is None
        again = await fetch(broker, tid, 2)
        assert acquired(again) == [(10, 19, 2)]                  # exactly the released ten, delivery count 2
        assert [c[0] for c in persister.calls][-1] == "read_state"
        assert await fetch(broker, tid, 3, acks=[(10, 19, ACCEPT)]) is not None
        assert persister.states[key].start_offset == 20 and persister.states[key].offsets == {}
        broker.share_groups.on_role_change(part, False)
        assert acquired(await fetch(broker, tid, 4)) == []       # nothing comes back: all twenty accepted once

    trio.run(main)


def test_an_acknowledgement_is_answered_after_its_write_and_a_failed_write_changes_nothing(tmp_path):
    broker, tid, persister = make_broker(tmp_path)

    async def main():
        assert acquired(await fetch(broker, tid, 0, max_records=5)) == [(0, 4, 1)]
        persister.fail["write_state"] = ErrorCode.COORDINATOR_NOT_AVAILABLE
        ack = await acknowledge(broker, tid, 1, [(0, 4, ACCEPT)])
        assert [p.error_code for t in ack.responses for p in t.partitions] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
        sp = broker.share_groups.existing(GROUP, tid, 0)
        assert sp.start_offset == 0 and {r.state for r in sp.records.values()} == {1}    # still ACQUIRED
        ack = await acknowledge(broker, tid, 2, [(0, 4, ACCEPT)])
        assert [p.error_code for t in ack.responses for p in t.partitions] == [ErrorCode.NONE]
        assert sp.start_offset == 5

    trio.run(main)


def test_a_fenced_read_answers_not_leader_and_the_next_fetch_reads_again(tmp_path):
    broker, tid, persister = make_broker(tmp_path)

    async def main():
        persister.fail["read_state"] = ErrorCode.FENCED_LEADER_EPOCH
        first = await fetch(broker, tid, 0)
        assert partition_errors(first) == [(ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE)]
        assert acquired(first) == []
        assert acquired(await fetch(broker, tid, 1)) == [(0, 19, 1)]

    trio.run(main)
