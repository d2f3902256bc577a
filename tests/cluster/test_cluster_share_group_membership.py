"""Share-group membership survives a coordinator failover in a 3-broker cluster (KIP-932): the
group's records are on its replicated ``__consumer_offsets`` partition and answered only once
replicated, so after the coordinator is SIGKILLed the new leader of that partition replays the same
group epoch, assignment epoch, members and assignments, and a member heartbeats on at its epoch
there without rejoining. A broker that does not coordinate the group answers NOT_COORDINATOR.

Real processes: etcd and 3 brokers."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from protocol import schema_messages as m
from protocol.errors import ErrorCode
from tests.support.cluster_support import FAST_GROUPS, create_topic
from tests.support.rawclient import RawClient
from tests.support.share_state_support import share_heartbeat

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed")

GROUP = "sg-failover"
NOT_READY = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE}


def find_coordinator(c: LocalCluster, via: int) -> int | None:
    try:
        with RawClient(c.brokers[via].bootstrap_servers) as rc:
            r = rc.request(10, 3, key=GROUP, key_type=0)
    except (OSError, ConnectionError):
        return None
    return r.node_id if r.error_code == 0 else None


def describe(bootstrap: str) -> Any:
    R = m.ShareGroupDescribeRequest
    with RawClient(bootstrap) as rc:
        return rc.call(R(group_ids=[GROUP], include_authorized_operations=False), m.ShareGroupDescribeResponse,
                       1).groups[0]


def heartbeat(bootstrap: str, member: str, epoch: int, topics: list[str] | None) -> Any:
    with RawClient(bootstrap) as rc:
        return share_heartbeat(rc, GROUP, member, epoch, topics)


def members(d: Any) -> list[tuple[str, int, list[tuple[str, list[int]]]]]:
    return sorted((x.member_id, x.member_epoch,
                   sorted((str(tp.topic_id), sorted(tp.partitions)) for tp in x.assignment.topic_partitions))
                  for x in d.members)


def test_share_group_membership_survives_the_coordinators_sigkill(tmp_path: Path) -> None:
    overrides = {"broker.session.timeout.ms": "3000", **FAST_GROUPS, "offsets.topic.replication.factor": "3"}
    c = LocalCluster(tmp_path / "cluster", brokers=3, overrides=overrides)
    try:
        c.start()
        create_topic(c, "t", 4, rf=3)
        coord = c.wait_for(lambda: find_coordinator(c, 1), timeout=30, what="the group coordinator")
        at = c.brokers[coord].bootstrap_servers
        a = c.wait_for(lambda: (r := heartbeat(at, "member-a", 0, ["t"])).error_code not in NOT_READY and r,
                       timeout=30, what="a loaded group coordinator")
        b = heartbeat(at, "member-b", 0, ["t"])
        a = heartbeat(at, "member-a", a.member_epoch, None)
        assert (a.error_code, b.error_code, a.member_epoch) == (0, 0, b.member_epoch)
        before = describe(at)
        assert before.error_code == 0 and len(before.members) == 2
        elsewhere = next(n for n in c.brokers if n != coord)
        assert heartbeat(c.brokers[elsewhere].bootstrap_servers, "member-c", 0, ["t"]).error_code == \
            ErrorCode.NOT_COORDINATOR
        assert describe(c.brokers[elsewhere].bootstrap_servers).error_code == ErrorCode.NOT_COORDINATOR

        c.kill(coord)
        survivor = next(n for n in c.brokers if n != coord)
        new = c.wait_for(lambda: (n := find_coordinator(c, survivor)) not in (None, coord) and n,
                         timeout=30, what="a new group coordinator")
        there = c.brokers[new].bootstrap_servers
        after = c.wait_for(lambda: (d := describe(there)).error_code not in NOT_READY and d, timeout=30,
                           what="the group on the new coordinator")
        assert (after.error_code, after.group_state, after.group_epoch, after.assignment_epoch) == \
            (0, "Stable", before.group_epoch, before.assignment_epoch)
        assert members(after) == members(before)
        again = heartbeat(there, "member-a", a.member_epoch, None)
        assert (again.error_code, again.member_epoch) == (0, a.member_epoch)
    finally:
        c.stop_all()
