"""KIP-932 share-group membership survives a broker restart (raw ShareGroupHeartbeat /
ShareGroupDescribe / DeleteGroups against a real broker process): the group's records are on
``__consumer_offsets`` as Kafka writes them, so after a restart ShareGroupDescribe shows the same
group epoch, assignment epoch, members and assignments, a member heartbeats on at its epoch, a
member that does not heartbeat is removed one session timeout after the load (as Kafka schedules
the session timeouts of loaded members), and a deleted group stays deleted."""
from __future__ import annotations

import time
import uuid
from typing import Any

from broker.testing import SamsaBroker
from protocol import schema_messages as m
from protocol.messages import REQUESTS
from tests.support.rawclient import RawClient
from tests.support.share_state_support import share_heartbeat

METADATA, DELETE_GROUPS = 3, 42
NONE, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND = 0, 25, 69
SESSION_MS = 6000
PROPS = {"num.partitions": "4", "group.share.session.timeout.ms": str(SESSION_MS),
         "group.share.min.session.timeout.ms": str(SESSION_MS), "group.share.heartbeat.interval.ms": "1000",
         "group.share.min.heartbeat.interval.ms": "1000"}


def create_topic(c: RawClient, topic: str) -> uuid.UUID:
    md = c.request(METADATA, 12, topics=[REQUESTS[METADATA].MetadataRequestTopic(name=topic, topic_id=None)],
                   allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    assert md.topics[0].error_code == NONE
    return md.topics[0].topic_id


def describe(c: RawClient, group: str) -> Any:
    R = m.ShareGroupDescribeRequest
    return c.call(R(group_ids=[group], include_authorized_operations=False), m.ShareGroupDescribeResponse, 1).groups[0]


def members(d: Any) -> list[tuple[str, int, str, list[str], list[tuple[str, list[int]]]]]:
    return sorted((x.member_id, x.member_epoch, x.client_id, sorted(x.subscribed_topic_names),
                   sorted((str(tp.topic_id), sorted(tp.partitions)) for tp in x.assignment.topic_partitions))
                  for x in d.members)


def test_membership_survives_a_restart_and_silent_members_expire_after_it(tmp_path: Any) -> None:
    broker = SamsaBroker(tmp_path / "data", overrides=PROPS).start()
    group, topic = f"sg-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    try:
        with RawClient(broker.bootstrap_servers) as c:
            create_topic(c, topic)
            a = share_heartbeat(c, group, "member-a", 0, [topic])
            b = share_heartbeat(c, group, "member-b", 0, [topic])
            a = share_heartbeat(c, group, "member-a", a.member_epoch, None)     # moves to b's epoch
            assert (a.error_code, b.error_code) == (NONE, NONE) and a.member_epoch == b.member_epoch
            before = describe(c, group)
            assert before.error_code == NONE and before.group_state == "Stable" and len(before.members) == 2
            assert sum(len(tp.partitions) for x in before.members for tp in x.assignment.topic_partitions) == 4
        broker.stop()
        broker.start()
        with RawClient(broker.bootstrap_servers) as c:
            loaded = time.monotonic()
            after = describe(c, group)
            assert (after.error_code, after.group_state, after.group_epoch, after.assignment_epoch) == \
                (NONE, "Stable", before.group_epoch, before.assignment_epoch)
            assert members(after) == members(before)
            # member-a heartbeats on at its epoch (Kafka 4.x replays members: no rejoin); member-b is silent
            again = share_heartbeat(c, group, "member-a", a.member_epoch, None)
            assert (again.error_code, again.member_epoch) == (NONE, a.member_epoch)
            while time.monotonic() - loaded < SESSION_MS / 1000 - 2:
                assert share_heartbeat(c, group, "member-a", a.member_epoch, None).error_code == NONE
                time.sleep(0.5)
            assert [x.member_id for x in describe(c, group).members] == ["member-a", "member-b"]
            deadline = time.monotonic() + 15
            while True:
                r = share_heartbeat(c, group, "member-a", a.member_epoch, None)
                if r.error_code == NONE and r.member_epoch != a.member_epoch:
                    break       # member-b expired: a new target assignment gives member-a everything
                assert r.error_code == NONE and time.monotonic() < deadline, r
                time.sleep(0.5)
            d = describe(c, group)
            assert [x.member_id for x in d.members] == ["member-a"] and d.group_epoch > before.group_epoch
            assert sum(len(tp.partitions) for tp in d.members[0].assignment.topic_partitions) == 4
            gone = share_heartbeat(c, group, "member-b", b.member_epoch, None)
            assert gone.error_code == UNKNOWN_MEMBER_ID
            expired = d
        broker.stop()
        broker.start()
        with RawClient(broker.bootstrap_servers) as c:
            d = describe(c, group)             # the expiry was written too
            assert (d.group_epoch, d.assignment_epoch, members(d)) == \
                (expired.group_epoch, expired.assignment_epoch, members(expired))
            assert share_heartbeat(c, group, "member-a", -1, None).error_code == NONE     # leaves: empty
            deleted = c.request(DELETE_GROUPS, 2, groups_names=[group])
            assert [(g.group_id, g.error_code) for g in deleted.results] == [(group, NONE)]
        broker.stop()
        broker.start()
        with RawClient(broker.bootstrap_servers) as c:
            assert describe(c, group).error_code == GROUP_ID_NOT_FOUND     # the tombstones were replayed
    finally:
        broker.stop()
