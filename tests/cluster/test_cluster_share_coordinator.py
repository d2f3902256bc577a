"""The share coordinator in a 3-broker cluster (KIP-932, issue 21): FindCoordinator key type 2
from any broker names the leader of the share partition's ``__share_group_state`` partition (the
topic is created through the controller on first use, replicated); state written there is
answered only once replicated, so after that leader is SIGKILLed the new leader's coordinator reads
back exactly the same state and still fences the old leader epoch.

Real processes: etcd and 3 brokers."""
from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from coordinator.share.persister import PersisterStateBatch as B, SharePartitionKey
from coordinator.share_state.records import share_coordinator_key
from protocol import schema_messages as m
from protocol.errors import ErrorCode
from tests.support.cluster_support import FAST_REPLICATION, create_topic
from tests.support.rawclient import RawClient

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed")

GROUP = "sg"
FIND_COORDINATOR = 10
NOT_READY = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE}


def find_share_coordinator(c: LocalCluster, via: int, key: str) -> int | None:
    with RawClient(c.brokers[via].bootstrap_servers) as rc:
        coord = rc.request(FIND_COORDINATOR, 6, key_type=2, coordinator_keys=[key]).coordinators[0]
    return coord.node_id if coord.error_code == 0 else None


def until_ready(c: LocalCluster, call: Callable[[], Any]) -> Any:
    """The partition result of ``call`` once the coordinator is loaded (the clients' retry)."""
    def attempt() -> Any:
        try:
            p = call()
        except (OSError, ConnectionError):
            return None
        return None if p.error_code in NOT_READY else p
    return c.wait_for(attempt, timeout=30, what="a loaded share coordinator")


def write(bootstrap: str, tid: uuid.UUID, batches: list[B], start: int, leader_epoch: int) -> Any:
    R = m.WriteShareGroupStateRequest
    P = R.WriteStateData.PartitionData
    with RawClient(bootstrap) as rc:
        return rc.call(R(group_id=GROUP, topics=[R.WriteStateData(topic_id=tid, partitions=[P(
            partition=0, state_epoch=0, leader_epoch=leader_epoch, start_offset=start, delivery_complete_count=-1,
            state_batches=[P.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                        delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                           for b in batches])])]), m.WriteShareGroupStateResponse, 1).results[0].partitions[0]


def initialize(bootstrap: str, tid: uuid.UUID) -> Any:
    R = m.InitializeShareGroupStateRequest
    with RawClient(bootstrap) as rc:
        return rc.call(R(group_id=GROUP, topics=[R.InitializeStateData(topic_id=tid, partitions=[
            R.InitializeStateData.PartitionData(partition=0, state_epoch=0, start_offset=0)])]),
            m.InitializeShareGroupStateResponse, 0).results[0].partitions[0]


def read(bootstrap: str, tid: uuid.UUID, leader_epoch: int) -> Any:
    R = m.ReadShareGroupStateRequest
    with RawClient(bootstrap) as rc:
        return rc.call(R(group_id=GROUP, topics=[R.ReadStateData(topic_id=tid, partitions=[
            R.ReadStateData.PartitionData(partition=0, leader_epoch=leader_epoch)])]),
            m.ReadShareGroupStateResponse, 0).results[0].partitions[0]


def test_share_state_survives_the_coordinators_sigkill(tmp_path: Path):
    overrides = {"broker.session.timeout.ms": "3000", **FAST_REPLICATION, "group.share.enable": "true",
                 "share.coordinator.state.topic.num.partitions": "3",
                 "share.coordinator.snapshot.update.records.per.snapshot": "2"}
    c = LocalCluster(tmp_path / "cluster", brokers=3, overrides=overrides)
    try:
        c.start()
        create_topic(c, "t", 1, rf=3)
        tid = uuid.UUID(str(c.image().topics["t"].topic_id))
        key = share_coordinator_key(SharePartitionKey(GROUP, tid, 0))
        coord = c.wait_for(lambda: find_share_coordinator(c, 1, key), what="the share coordinator")
        assert find_share_coordinator(c, 2, key) == find_share_coordinator(c, 3, key) == coord
        assert len(c.image().topics["__share_group_state"].partitions) == 3
        at = c.brokers[coord].bootstrap_servers
        elsewhere = next(n for n in c.brokers if n != coord)
        assert write(c.brokers[elsewhere].bootstrap_servers, tid, [], 0, 1).error_code == ErrorCode.NOT_COORDINATOR

        assert until_ready(c, lambda: initialize(at, tid)).error_code == 0
        for i in range(5):          # updates and snapshots, each answered once replicated
            assert write(at, tid, [B(i * 10, i * 10 + 9, (0, 2, 4)[i % 3], 1 + i % 2)], i, 2).error_code == 0
        before = read(at, tid, 2)
        expected = [B(4, 9, 0, 1), B(10, 19, 2, 2), B(20, 29, 4, 1), B(30, 39, 0, 2), B(40, 49, 2, 1)]
        assert [B(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in before.state_batches] \
            == expected

        c.kill(coord)
        survivor = next(n for n in c.brokers if n != coord)
        new = c.wait_for(lambda: (n := find_share_coordinator(c, survivor, key)) not in (None, coord) and n,
                         timeout=30, what="a new share coordinator")
        after = until_ready(c, lambda: read(c.brokers[new].bootstrap_servers, tid, 3))
        assert (after.error_code, after.state_epoch, after.start_offset) == (0, 0, 4)
        assert [B(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in after.state_batches] \
            == expected
        # the new leader epoch (3) was recorded: the previous one is fenced on the new coordinator
        assert write(c.brokers[new].bootstrap_servers, tid, [], -1, 2).error_code == ErrorCode.FENCED_LEADER_EPOCH
    finally:
        c.stop_all()
