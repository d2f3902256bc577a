"""Start-up: state rebuilt from the __consumer_offsets records, as Kafka loads it."""
from __future__ import annotations

import itertools
import struct

from coordinator.group.coordinator import (GroupCoordinator, GroupCoordinatorConfig, JoinGroupResult, SyncGroupResult)
from coordinator.group.offsets_records import (GroupMetadataKey, GroupMetadataValue, MemberMetadataValue, decode_group_metadata_value, decode_key, encode_group_metadata_value, group_metadata_record)
from tests.support.coordinator_harness import RANGE, Harness, subscription

META = RANGE[0][1]


def build_history() -> Harness:
    """A stable group g, an emptied consumer group e, a simple group s and a deleted group d."""
    h = Harness()
    (a, b), _ = h.stable_group(2, "g", protocols=[("range", subscription("t1", "t2"))])
    h.commit({("t1", 0): (10, 2, "x"), ("t2", 3): 20}, "g", generation=1, member_id=a)
    (c,), _ = h.stable_group(1, "e")
    h.commit({("t1", 0): 5}, "e", generation=1, member_id=c)
    h.at(10000)
    h.leave(c, group_id="e")
    h.commit({("t1", 1): 1, ("t1", 2): 2}, "s")
    h.delete_offsets({"t1": [2]}, "s")
    h.commit({("t9", 0): 9}, "d")
    h.delete_groups("d")
    return h


def restored(log: list[tuple[bytes, bytes | None]], now: int, **config: int) -> Harness:
    h = Harness(loading=True, **config)
    for key, value in log:
        h.co.replay(key, value)
    h.log = []
    step = h.co.load_complete(now)
    assert step.completions == []
    h.at(now)
    return h


def snapshot(h: Harness) -> dict:
    out = {}
    for gid in sorted(h.co.group_ids()):
        g = h.co.group(gid)
        out[gid] = dict(
            state=g.state.value, generation=g.generation_id, protocol_type=g.protocol_type,
            protocol=g.protocol_name, leader=g.leader_id, subscribed=g.subscribed_topics,
            members=[(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                      m.rebalance_timeout_ms, m.metadata(g.protocol_name), m.assignment)
                     for m in g.members.values()],
            offsets=h.co.offsets.group_offsets(gid))
    return out


def test_replay_rebuilds_groups_and_offsets() -> None:
    h = build_history()
    r = restored(h.log, 12000)
    expected = snapshot(h)
    assert set(expected) == {"g", "e", "s"}
    assert snapshot(r) == expected
    assert r.state("g") == "Stable" and r.state("e") == "Empty" and r.state("s") == "Empty"
    assert r.co.group("e").state_timestamp == 10000 and r.co.group("e").protocol_type == "consumer"
    assert r.co.group("s").protocol_type is None
    assert r.co.group("g").subscribed_topics == frozenset({"t1", "t2"})
    assert r.describe("g", "e", "s", "d") == h.describe("g", "e", "s", "d")
    assert r.fetched("g") == {("t1", 0): (10, 2, "x", 0), ("t2", 3): (20, -1, "", 0)}
    assert r.fetched("s") == {("t1", 1): (1, -1, "", 0)}


def test_compacted_log_gives_the_same_state() -> None:
    h = build_history()
    latest: dict[bytes, bytes | None] = {}
    for key, value in h.log:
        latest.pop(key, None)
        latest[key] = value
    compacted = [(k, v) for k, v in latest.items() if v is not None]      # tombstones eventually vanish
    assert len(compacted) < len(h.log)
    assert snapshot(restored(compacted, 12000)) == snapshot(h)


def test_restored_members_continue_and_silent_ones_expire() -> None:
    h = build_history()
    (a, b) = list(h.co.group("g").members)
    r = restored(h.log, 100000)
    assert r.heartbeat(a, 1, group_id="g") == 0
    assert r.result(*r.sync(b, 1, group_id="g")) == SyncGroupResult(0, "consumer", "range", b"a-" + b.encode())
    r.at(105000)
    assert r.heartbeat(a, 1, group_id="g") == 0
    r.tick(110000)                                   # b never heartbeat after the restart: expired
    assert list(r.co.group("g").members) == [a]
    assert r.state("g") == "PreparingRebalance"


def test_static_member_rejoins_after_a_broker_restart_without_rebalance() -> None:
    h = Harness()
    t1, _ = h.join(instance="i1")
    t2, _ = h.join(instance="i2")
    h.tick(6000)
    h.sync("i2-m2", 1, instance="i2")
    h.sync("i1-m1", 1, [("i1-m1", b"p0"), ("i2-m2", b"p1")], instance="i1")
    r = restored(h.log, 50000)
    r.ids = itertools.count(10)                      # new member ids continue at m10
    token, step = r.join(instance="i2")
    assert step.completions == [(token, JoinGroupResult(0, "i2-m10", 1, "consumer", "range", "i1-m1"))]
    assert r.state() == "Stable"
    assert r.result(*r.sync("i2-m10", 1, instance="i2")).assignment == b"p1"


def test_unknown_record_types_are_skipped() -> None:
    co = GroupCoordinator(loading=True)
    co.replay(struct.pack(">h", 3) + b"\x00\x01g", b"\x00\x00junk")      # a KIP-848 ConsumerGroupMetadata record
    co.replay(struct.pack(">h", 11) + b"\x00\x01g", None)
    co.load_complete(0)
    assert co.group_ids() == []


def test_old_records_without_rebalance_timeout_use_the_session_timeout() -> None:
    member_v0 = (struct.pack(">h", 1) + b"m" + struct.pack(">h", 3) + b"cid" + struct.pack(">h", 2) + b"/h"
                 + struct.pack(">i", 7000) + struct.pack(">i", len(META)) + META + struct.pack(">i", 1) + b"A")
    value = (struct.pack(">h", 0) + struct.pack(">h", 8) + b"consumer" + struct.pack(">i", 4)
             + struct.pack(">h", 5) + b"range" + struct.pack(">h", 1) + b"m" + struct.pack(">i", 1) + member_v0)
    key = group_metadata_record("g", None)[0]
    co = GroupCoordinator(loading=True)
    co.replay(key, value)
    co.load_complete(0)
    g = co.group("g")
    m = g.members["m"]
    assert (g.state.value, g.generation_id, g.leader_id, g.state_timestamp) == ("Stable", 4, "m", None)
    assert (m.client_id, m.client_host, m.session_timeout_ms, m.rebalance_timeout_ms, m.assignment) == \
        ("cid", "/h", 7000, 7000, b"A")


def test_group_over_the_max_size_rebalances_when_loaded() -> None:
    members = tuple(MemberMetadataValue(f"m{i}", "c", "/h", 10000, META, b"", 30000) for i in range(3))
    key, value = group_metadata_record("g", GroupMetadataValue("consumer", 2, "range", "m0", members, 0))
    co = GroupCoordinator(GroupCoordinatorConfig(group_max_size=2), loading=True)
    co.replay(key, value)
    co.load_complete(1000)
    assert co.group("g").state.value == "PreparingRebalance"


def test_tombstone_then_offsets_leave_a_simple_group() -> None:
    h = Harness()
    h.stable_group(1)
    h.at(4000)
    h.leave("client-m1")
    h.delete_groups("g")
    h.commit({("t", 0): 3})
    r = restored(h.log, 10000)
    g = r.co.group("g")
    assert (g.state.value, g.protocol_type, g.generation_id) == ("Empty", None, 0)
    assert r.fetched() == {("t", 0): (3, -1, "", 0)}


def test_replayed_value_matches_kafka_bytes() -> None:
    # The records we write are the records we read: a value re-encoded from its decoding is identical.
    h = build_history()
    for key, value in h.log:
        if value is not None and isinstance(decode_key(key), GroupMetadataKey):
            assert encode_group_metadata_value(decode_group_metadata_value(value)) == value


def test_replay_without_loading_mode_starts_sessions_at_the_first_request() -> None:
    h = build_history()
    co = GroupCoordinator()
    for key, value in h.log:
        co.replay(key, value)
    assert co.next_deadline() is None                  # no clock yet
    step = co.tick(50000)
    assert step.completions == [] and co.next_deadline() == 60000     # session timers from 50000
    co.tick(60000)
    assert co.group("g").members == {} and co.group("g").state.value == "Empty"
