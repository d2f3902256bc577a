"""The coordinator runtime answers only committed state (issue 20; Kafka's CoordinatorRuntime).

A real ``Broker`` (no listener) whose ``__consumer_offsets`` partition of the group is made the
leader of a two-replica partition with a follower that has not fetched yet: its high watermark
stays below the coordinator's writes until the test calls ``follower_fetched`` as a follower's
Fetch would. So the tests decide exactly when a write is committed.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

import broker.apis  # noqa: F401  (registers the API handlers)
from broker.common.config import BrokerConfig
from broker.replica.state import ReplicaState
from broker.server.broker_server import Broker
from coordinator.group.common import OffsetCommit, OffsetFetch, OffsetFetchGroup
from coordinator.group.offsets import OffsetCommitPartition, OffsetCommitTopic, TopicPartitions
from protocol.errors import ErrorCode

GROUP = "g"


@asynccontextmanager
async def leader_of_offsets_partition(tmp_path: Path, **props: str) -> AsyncIterator[tuple[Broker, Any]]:
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path), "offsets.topic.num.partitions": "1", **props}))
    broker.logs.load()
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.groups.run_timers)
        shell = broker.groups
        shell.ensure_topic()
        part = broker.logs.partition(shell.topic, shell.partition_for(GROUP))
        assert part is not None
        rs = ReplicaState(node_id=broker.node_id, leader_id=broker.node_id, leader_epoch=0, partition_epoch=0,
                          replicas=[broker.node_id, 99], isr=[broker.node_id, 99])
        rs.reset_followers(broker.now_ms())
        rs.followers[99].leo = part.log_end_offset
        part.replica = rs
        part.hw = part.log_end_offset
        try:
            yield broker, part
        finally:
            nursery.cancel_scope.cancel()


def follower_caught_up(broker: Broker, part: Any) -> None:
    assert broker.replicas.follower_fetched(part, 99, part.log_end_offset, broker.now_ms()) == ErrorCode.NONE


def commit(offset: int) -> OffsetCommit:
    return OffsetCommit(group_id=GROUP, topics=[OffsetCommitTopic("t", [OffsetCommitPartition(0, offset)])],
                        api_version=8)


def fetch() -> OffsetFetch:
    return OffsetFetch(groups=[OffsetFetchGroup(GROUP, [TopicPartitions("t", [0])])], api_version=8)


def commit_error(result: Any) -> int:
    return result.topics[0].partitions[0].error_code


def fetched_offset(result: Any) -> int:
    group = result.groups[0]
    assert group.error_code == ErrorCode.NONE
    return group.topics[0].partitions[0].committed_offset


async def answer_later(broker: Broker, request: Any, answers: dict[str, Any], name: str) -> None:
    answers[name] = await broker.groups.call_for(GROUP, request)


def test_an_offset_is_answered_and_read_only_once_committed(tmp_path: Path) -> None:
    async def main() -> None:
        async with leader_of_offsets_partition(tmp_path) as (broker, part):
            answers: dict[str, Any] = {}
            async with trio.open_nursery() as n:
                n.start_soon(answer_later, broker, commit(42), answers, "commit")
                await trio.sleep(0.05)
                assert part.log_end_offset > part.high_watermark       # written, not committed
                n.start_soon(answer_later, broker, fetch(), answers, "fetch")
                await trio.sleep(0.05)
                assert answers == {}      # neither the commit nor a read of it leaves before the HW
                follower_caught_up(broker, part)
            assert commit_error(answers["commit"]) == ErrorCode.NONE
            assert fetched_offset(answers["fetch"]) == 42
    trio.run(main)


def test_losing_leadership_answers_waiting_requests_not_coordinator(tmp_path: Path) -> None:
    async def main() -> None:
        async with leader_of_offsets_partition(tmp_path) as (broker, part):
            answers: dict[str, Any] = {}
            async with trio.open_nursery() as n:
                n.start_soon(answer_later, broker, commit(7), answers, "commit")
                await trio.sleep(0.05)
                broker.groups.resign(broker.groups.partition_for(GROUP))
            assert commit_error(answers["commit"]) == ErrorCode.NOT_COORDINATOR
    trio.run(main)


def test_a_write_refused_for_too_few_in_sync_replicas_leaves_no_state(tmp_path: Path) -> None:
    async def main() -> None:
        async with leader_of_offsets_partition(tmp_path, **{"min.insync.replicas": "2"}) as (broker, part):
            committed_before = part.log_end_offset
            part.replica.isr = [broker.node_id]      # the follower fell out of the ISR
            result = await broker.groups.call_for(GROUP, commit(5))
            assert commit_error(result) == ErrorCode.COORDINATOR_NOT_AVAILABLE
            assert part.log_end_offset == committed_before              # nothing was appended
            part.replica.isr = [broker.node_id, 99]
            # the coordinator was rebuilt from its log: the refused offset is not there
            group = (await broker.groups.call_for(GROUP, fetch())).groups[0]
            assert group.topics[0].partitions[0].committed_offset == -1
    trio.run(main)


def test_a_write_that_times_out_still_holds_back_later_reads_until_it_commits(tmp_path: Path) -> None:
    async def main() -> None:
        async with leader_of_offsets_partition(tmp_path, **{"offsets.commit.timeout.ms": "200"}) as (broker, part):
            result = await broker.groups.call_for(GROUP, commit(11))
            assert commit_error(result) == ErrorCode.COORDINATOR_NOT_AVAILABLE   # not committed in time
            answers: dict[str, Any] = {}
            async with trio.open_nursery() as n:
                n.start_soon(answer_later, broker, fetch(), answers, "fetch")
                await trio.sleep(0.1)
                assert answers == {}      # the offset is in the log, not committed: no one reads it yet
                follower_caught_up(broker, part)
            assert fetched_offset(answers["fetch"]) == 11   # it committed after all, as in Kafka
    trio.run(main)
