"""KIP-932 share-group membership on ``__consumer_offsets``: the records each request leaves
(Kafka's types 10-15, encoded by kafka-python's JSON-schema machinery), and a coordinator rebuilt
from them by ``replay`` that answers as the one that wrote them. Pure: time is injected, no broker."""
from __future__ import annotations

import uuid

from coordinator.share import records as sr
from coordinator.share.group import (FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, NONE, NON_EMPTY_GROUP, ShareGroupConfig,
                                     ShareGroupCoordinator, ShareGroupHeartbeat)

T1 = uuid.UUID("11111111-1111-1111-1111-111111111111")
T2 = uuid.UUID("22222222-2222-2222-2222-222222222222")
TOPICS = {"a": (T1, 4), "b": (T2, 2)}
SESSION = 45000


def hb(member: str, epoch: int, topics: list[str] | None = None, group: str = "g", view=None) -> ShareGroupHeartbeat:
    return ShareGroupHeartbeat(group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                               subscribed_topic_names=topics, client_id=f"client-{member}", client_host="/10.0.0.1",
                               topics=TOPICS if view is None else view)


def replayed(records: list[tuple[str, tuple[bytes, bytes | None]]], now_ms: int = 0) -> ShareGroupCoordinator:
    c = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=SESSION))
    for _, (key, value) in records:
        c.replay(key, value)
    c.load_complete(now_ms)
    return c


def view(c: ShareGroupCoordinator, gid: str = "g") -> tuple:
    """What a restart must keep of a group: epochs, members (subscription, client, epochs,
    assignment) and the target assignment (not the in-memory session deadlines)."""
    g = c.groups[gid]
    return (g.group_epoch, g.assignment_epoch, g.metadata_hash, dict(g.target),
            {m.member_id: (m.member_epoch, m.previous_member_epoch, m.client_id, m.client_host, m.rack_id,
                           m.subscribed, dict(m.assignment)) for m in g.members.values()})


def kinds(records) -> list[int]:
    return [sr.key_type(key) for _, (key, _) in records]


def test_keys_and_values_are_kafkas_layout():
    key, value = sr.group_metadata("g", 7, 99)
    assert key == b"\x00\x0b\x00\x01g"                          # record type 11, then GroupId
    assert value[:6] == b"\x00\x00\x00\x00\x00\x07"              # value version 0, Epoch 7
    back = sr.decode_value(sr.GROUP_METADATA, value)
    assert (back.epoch, back.metadata_hash) == (7, 99)
    key, value = sr.current_member_assignment("g", "m", 3, 2, {T1: frozenset({0, 2})})
    assert key == b"\x00\x0e\x00\x01g\x00\x01m"
    v = sr.decode_value(sr.CURRENT_MEMBER_ASSIGNMENT, value)
    assert (v.member_epoch, v.previous_member_epoch, v.state) == (3, 2, sr.MEMBER_STATE_STABLE)
    assert sr.assignment_of(v.assigned_partitions) == {T1: frozenset({0, 2})}
    k = sr.decode_key(sr.member_metadata("g", "m")[0])
    assert (k.group_id, k.member_id) == ("g", "m")
    assert [sr.key_type(r[0]) for r in (sr.member_metadata("g", "m"), sr.target_assignment_metadata("g", 1),
                                        sr.target_assignment_member("g", "m", {}),
                                        sr.state_partition_metadata_tombstone("g"))] == [10, 12, 13, 15]


def test_a_join_writes_kafkas_records_in_kafkas_order():
    c = ShareGroupCoordinator()
    r = c.heartbeat(hb("m1", 0, ["a"]), 0)
    assert r.error_code == NONE and r.member_epoch == 2     # joined (1) and the topic's metadata (2)
    records = c.take_records()
    assert kinds(records) == [10, 11, 13, 12, 14]
    assert {gid for gid, _ in records} == {"g"}
    assert c.take_records() == []
    c.heartbeat(hb("m1", 2), 1000)        # a plain heartbeat changes nothing durable
    assert c.take_records() == []


def test_replay_rebuilds_epochs_members_and_assignments():
    c = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=SESSION))
    c.heartbeat(hb("m1", 0, ["a", "b"]), 0)
    r2 = c.heartbeat(hb("m2", 0, ["a"]), 10)
    c.heartbeat(hb("m1", c.groups["g"].members["m1"].member_epoch), 20)
    written = c.take_records()
    again = replayed(written)
    assert view(again) == view(c)
    assert again.groups["g"].assignment_epoch == r2.member_epoch


def test_a_replayed_member_heartbeats_on_at_its_epoch_without_a_new_group_epoch():
    c = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=SESSION))
    r = c.heartbeat(hb("m1", 0, ["a"]), 0)
    again = replayed(c.take_records(), now_ms=100_000)
    epoch = again.groups["g"].group_epoch
    back = again.heartbeat(hb("m1", r.member_epoch), 100_500)
    assert (back.error_code, back.member_epoch) == (NONE, r.member_epoch)
    assert again.groups["g"].group_epoch == epoch        # the metadata hash matched: no reassignment
    assert again.take_records() == []
    stale = again.heartbeat(hb("m1", r.member_epoch - 1), 100_600)
    assert stale.error_code == FENCED_MEMBER_EPOCH


def test_replayed_members_expire_a_session_timeout_after_the_load():
    c = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=SESSION))
    c.heartbeat(hb("m1", 0, ["a"]), 0)
    written = c.take_records()
    loaded_at = 1_000_000                  # long after the member's last heartbeat before the restart
    again = replayed(written, now_ms=loaded_at)
    epoch = again.groups["g"].group_epoch
    (d,) = again.describe(["g"], loaded_at + SESSION - 1)
    assert [m.member_id for m in d.members] == ["m1"]
    assert again.take_records() == []
    (d,) = again.describe(["g"], loaded_at + SESSION)
    assert d.members == () and d.group_epoch == epoch + 1 and d.group_state == "Empty"
    records = again.take_records()
    assert kinds(records) == [14, 13, 10, 11]           # its assignments and subscription tombstoned
    assert [v for _, (_, v) in records][:3] == [None, None, None]
    assert again.take_departed() == [("g", "m1")]
    final = replayed(written + records)
    assert final.groups["g"].members == {} and final.groups["g"].group_epoch == epoch + 1


def test_leaving_tombstones_the_member_and_the_next_join_reassigns():
    c = ShareGroupCoordinator()
    c.heartbeat(hb("m1", 0, ["a"]), 0)
    r2 = c.heartbeat(hb("m2", 0, ["a"]), 0)
    log = c.take_records()
    left = c.heartbeat(hb("m2", -1), 5)
    assert left.member_epoch == -1
    log += c.take_records()
    r1 = c.heartbeat(hb("m1", c.groups["g"].members["m1"].member_epoch), 6)    # retargets: m2's target goes
    log += c.take_records()
    again = replayed(log)
    assert view(again) == view(c)
    assert set(again.groups["g"].members) == {"m1"} and set(again.groups["g"].target) == {"m1"}
    assert again.groups["g"].members["m1"].assignment == {T1: frozenset(range(4))}
    assert r1.member_epoch > r2.member_epoch


def test_delete_tombstones_the_group_and_replay_forgets_it():
    c = ShareGroupCoordinator(ShareGroupConfig(session_timeout_ms=SESSION))
    c.heartbeat(hb("m1", 0, ["a"]), 0)
    log = c.take_records()
    assert c.delete("g", 1) == NON_EMPTY_GROUP
    assert c.take_records() == []
    c.heartbeat(hb("m1", -1), 2)
    left = c.take_records()
    assert kinds(left) == [14, 13, 10, 11, 12]    # tombstones of 14, 13, 10; new group and assignment epochs
    log += left
    assert c.delete("g", 3) == NONE
    tail = c.take_records()
    assert kinds(tail) == [12, 15, 11] and all(v is None for _, (_, v) in tail)
    log += tail
    assert "g" not in replayed(log).groups
    assert c.delete("g", 4) == GROUP_ID_NOT_FOUND


def test_groups_are_told_apart_and_a_refused_join_writes_nothing():
    c = ShareGroupCoordinator(ShareGroupConfig(max_size=1))
    c.heartbeat(hb("m1", 0, ["a"], group="g1"), 0)
    c.heartbeat(hb("m1", 0, ["b"], group="g2"), 0)
    records = c.take_records()
    assert {gid for gid, _ in records} == {"g1", "g2"}
    full = c.heartbeat(hb("m2", 0, ["a"], group="g1"), 0)
    assert full.error_code != NONE and c.take_records() == []
    c.heartbeat(hb("x", 0, ["a"], group="g3", view={}), 0)      # a topic not yet created: epoch 1 only
    g3 = [r for gid, r in c.take_records() if gid == "g3"]
    again = replayed([("g3", r) for r in g3])
    assert again.groups["g3"].group_epoch == 1 and again.groups["g3"].members["x"].subscribed == ("a",)
