"""OffsetCommit / OffsetFetch / OffsetDelete and offset expiry, with exact codes and records.

Error codes: 12 OFFSET_METADATA_TOO_LARGE, 22 ILLEGAL_GENERATION, 24 INVALID_GROUP_ID,
25 UNKNOWN_MEMBER_ID, 27 REBALANCE_IN_PROGRESS, 68 NON_EMPTY_GROUP, 69 GROUP_ID_NOT_FOUND,
86 GROUP_SUBSCRIBED_TO_TOPIC.
"""
from __future__ import annotations

from coordinator.group.coordinator import ClassicGroup, GroupState
from coordinator.group.offsets_records import GroupMetadataKey, OffsetCommitKey, OffsetCommitValue
from tests.support.coordinator_harness import Harness, decode_records, subscription

MINUTE = 60000


# =========================================================================== OffsetCommit

def test_simple_consumer_commit_creates_an_empty_group_and_is_fetchable() -> None:
    h = Harness()
    h.at(500)
    token, step = h.commit({("t", 0): (10, 3, "meta"), ("t", 1): 20, ("u", 0): (5, 0, None)})
    res = h.result(token, step)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in res.topics] == \
        [("t", [(0, 0), (1, 0)]), ("u", [(0, 0)])]
    assert decode_records(step.records) == [
        (OffsetCommitKey("g", "t", 0), OffsetCommitValue(10, "meta", 500, 3, -1)),
        (OffsetCommitKey("g", "t", 1), OffsetCommitValue(20, "", 500, -1, -1)),
        (OffsetCommitKey("g", "u", 0), OffsetCommitValue(5, "", 500, 0, -1)),   # epoch 0 is a real epoch
    ]
    assert all(v[:2] == b"\x00\x03" for _, v in step.records)                  # OffsetCommitValue v3
    assert h.state() == "Empty"
    d = h.describe("g")[0]
    assert (d.group_state, d.protocol_type, d.members) == ("Empty", "", [])
    assert h.fetched() == {("t", 0): (10, 3, "meta", 0), ("t", 1): (20, -1, "", 0), ("u", 0): (5, 0, "", 0)}
    assert h.fetched("g", {"t": [0, 5]}) == {("t", 0): (10, 3, "meta", 0), ("t", 5): (-1, -1, "", 0)}


def test_members_commit_with_their_generation() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    assert h.commit_errors({("t", 0): 1}, generation=1, member_id=a) == {("t", 0): 0}
    assert h.commit_errors({("t", 0): 1}, generation=2, member_id=a) == {("t", 0): 22}
    assert h.commit_errors({("t", 0): 1}, generation=0, member_id=a) == {("t", 0): 22}
    assert h.commit_errors({("t", 0): 1}, generation=1, member_id="ghost") == {("t", 0): 25}
    assert h.commit_errors({("t", 0): 1}) == {("t", 0): 25}        # simple commit to a live group
    assert h.commit_errors({("t", 0): 1}, generation=1, member_id=a, instance="nope") == {("t", 0): 25}
    assert h.fetched() == {("t", 0): (1, -1, "", 0)}


def test_commit_during_rebalance() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)
    h.join("g", a)                                                   # PreparingRebalance
    assert h.commit_errors({("t", 0): 7}, generation=1, member_id=b) == {("t", 0): 0}
    h.join("g", b)                                                   # CompletingRebalance, generation 2
    assert h.commit_errors({("t", 0): 8}, generation=2, member_id=b) == {("t", 0): 27}
    assert h.commit_errors({("t", 0): 8}, generation=1, member_id=b) == {("t", 0): 22}
    assert h.fetched() == {("t", 0): (7, -1, "", 0)}


def test_commit_to_an_unknown_group_with_a_generation() -> None:
    h = Harness()
    assert h.commit_errors({("t", 0): 1}, generation=3, member_id="m", version=8) == {("t", 0): 22}
    assert h.commit_errors({("t", 0): 1}, generation=3, member_id="m", version=9) == {("t", 0): 69}
    assert h.state() is None
    assert h.commit_errors({("t", 0): 1}, None) == {("t", 0): 24}
    assert h.commit_errors({("t", 0): 1}, "") == {("t", 0): 0}       # Kafka still allows the empty group id


def test_commit_to_an_empty_consumer_group_by_a_former_member() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1)
    h.leave(a)
    assert h.state() == "Empty"
    assert h.commit_errors({("t", 0): 1}, generation=1, member_id=a) == {("t", 0): 25}
    assert h.commit_errors({("t", 0): 1}) == {("t", 0): 0}          # an assign() consumer may commit


def test_metadata_size_limit_applies_per_partition() -> None:
    h = Harness()
    token, step = h.commit({("t", 0): (1, -1, "x" * 4096), ("t", 1): (2, -1, "x" * 4097)})
    assert [(p.partition_index, p.error_code) for p in h.result(token, step).topics[0].partitions] == \
        [(0, 0), (1, 12)]
    assert [k for k, _ in decode_records(step.records)] == [OffsetCommitKey("g", "t", 0)]
    assert h.fetched() == {("t", 0): (1, -1, "x" * 4096, 0)}


def test_retention_time_of_v2_to_v4_becomes_an_expire_timestamp() -> None:
    h = Harness()
    h.at(100)
    token, step = h.commit({("t", 0): 1}, version=2, retention=5000)
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t", 0), OffsetCommitValue(1, "", 100, -1, 5100))]
    assert step.records[0][1][:2] == b"\x00\x01"                                 # v1 carries the expiry
    token, step = h.commit({("t", 0): 2}, version=5, retention=5000)           # ignored from v5 on
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t", 0), OffsetCommitValue(2, "", 100, -1, -1))]


def test_committing_keeps_a_member_alive() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1)                 # stable at 3000, session 10000
    for t in range(8000, 40000, 5000):
        h.at(t)
        assert h.commit_errors({("t", 0): t}, generation=1, member_id=a) == {("t", 0): 0}
    assert h.state() == "Stable"


# =========================================================================== OffsetFetch

def test_fetch_several_groups_at_once() -> None:
    h = Harness()
    h.commit({("t", 0): 5}, "g1")
    h.commit({("t", 1): 6, ("a", 2): (7, 4, "m")}, "g2")
    res = h.fetch(("g1", {"t": [0, 1]}), ("g2", None), ("missing", {"t": [0]}), ("missing", None), (None, None))
    assert [(g.group_id, g.error_code) for g in res.groups] == \
        [("g1", 0), ("g2", 0), ("missing", 0), ("missing", 0), (None, 24)]
    flat = [[(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
             for t in g.topics for p in t.partitions] for g in res.groups]
    assert flat == [
        [("t", 0, 5, -1, "", 0), ("t", 1, -1, -1, "", 0)],
        [("a", 2, 7, 4, "m", 0), ("t", 1, 6, -1, "", 0)],          # all offsets, by topic then partition
        [("t", 0, -1, -1, "", 0)],
        [],
        [],
    ]
    assert h.fetch(("g1", None), require_stable=True).groups[0].topics[0].partitions[0].committed_offset == 5


# =========================================================================== OffsetDelete

def test_offset_delete_on_an_empty_group_writes_tombstones_for_existing_offsets() -> None:
    h = Harness()
    h.commit({("t", 0): 1, ("t", 1): 2, ("u", 0): 3})
    token, step = h.delete_offsets({"t": [0, 9], "u": [0]})
    res = h.result(token, step)
    assert res.error_code == 0
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in res.topics] == \
        [("t", [(0, 0), (9, 0)]), ("u", [(0, 0)])]
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t", 0), None), (OffsetCommitKey("g", "u", 0), None)]
    assert h.fetched() == {("t", 1): (2, -1, "", 0)}


def test_offset_delete_refuses_topics_the_consumer_group_subscribes_to() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1, protocols=[("range", subscription("t1"))])
    h.commit({("t1", 0): 1, ("t2", 0): 2}, generation=1, member_id=a)
    token, step = h.delete_offsets({"t1": [0], "t2": [0]})
    res = h.result(token, step)
    assert res.error_code == 0
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in res.topics] == \
        [("t1", [(0, 86)]), ("t2", [(0, 0)])]
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t2", 0), None)]


def test_offset_delete_when_subscriptions_cannot_be_parsed_treats_every_topic_as_subscribed() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1, protocols=[("range", b"\x00")])
    h.commit({("t2", 0): 2}, generation=1, member_id=a)
    res = h.result(*h.delete_offsets({"t2": [0]}))
    assert [(p.partition_index, p.error_code) for p in res.topics[0].partitions] == [(0, 86)]


def test_offset_delete_errors() -> None:
    h = Harness()
    assert h.result(*h.delete_offsets({"t": [0]}, "missing")).error_code == 69
    assert h.result(*h.delete_offsets({"t": [0]}, None)).error_code == 24
    h.stable_group(1, "connect-group", protocol_type="connect", protocols=[("default", b"x")])
    res = h.result(*h.delete_offsets({"t": [0]}, "connect-group"))
    assert (res.error_code, res.topics) == (68, [])


# =========================================================================== expiry

def test_simple_group_offsets_expire_by_commit_time_then_the_group_goes() -> None:
    h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    h.commit({("t", 0): 1})                         # at 0
    h.at(30000)
    h.commit({("t", 1): 2})
    assert h.co.next_deadline() == 31000            # the periodic check, every second
    step = h.tick(60000)
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t", 0), None)]
    assert h.state() == "Empty"
    assert h.tick(89999).records == []
    step = h.tick(90000)
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t", 1), None), (GroupMetadataKey("g"), None)]
    assert h.state() is None
    assert h.fetched() == {}


def test_empty_consumer_group_offsets_expire_from_the_time_it_became_empty() -> None:
    h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    (a,), _ = h.stable_group(1)                     # stable at 3000
    h.commit({("t", 0): 1}, generation=1, member_id=a)
    h.at(10000)
    h.leave(a)                                      # Empty since 10000
    assert h.tick(69999).records == []
    step = h.tick(70000)
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t", 0), None), (GroupMetadataKey("g"), None)]
    assert h.state() is None


def test_stable_consumer_group_keeps_subscribed_offsets_and_expires_the_rest() -> None:
    h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1000)
    (a,), _ = h.stable_group(1, session=1800000, protocols=[("range", subscription("t1"))])
    h.commit({("t1", 0): 1, ("t2", 0): 2}, generation=1, member_id=a)      # at 3000
    step = h.tick(63000)
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t2", 0), None)]
    assert h.tick(600000).records == []
    assert h.state() == "Stable"
    assert h.fetched() == {("t1", 0): (1, -1, "", 0)}


def test_explicit_expire_timestamp_wins_over_retention() -> None:
    h = Harness(offsets_retention_check_interval_ms=1000)    # default retention: 7 days
    h.commit({("t", 0): 1}, version=2, retention=5000)
    h.commit({("t", 1): 1})
    step = h.tick(5000)
    assert decode_records(step.records) == [(OffsetCommitKey("g", "t", 0), None)]
    assert h.state() == "Empty"


def test_an_empty_group_without_offsets_is_deleted_at_the_next_check() -> None:
    h = Harness(offsets_retention_check_interval_ms=1000)
    h.join("stray", protocols=[])                   # a failed first join still creates the group
    assert h.state("stray") == "Empty"
    step = h.tick(1000)
    assert decode_records(step.records) == [(GroupMetadataKey("stray"), None)]
    assert h.state("stray") is None


def test_no_offset_expires_while_a_group_rebalances() -> None:
    group = ClassicGroup("g", GroupState.EMPTY, 0)
    group.protocol_type = "consumer"
    group.state = GroupState.PREPARING_REBALANCE
    assert group.offset_expiration_base() is None
    group.state = GroupState.COMPLETING_REBALANCE
    assert group.offset_expiration_base() is None
    group.protocol_type = None
    assert group.offset_expiration_base() is not None      # simple groups always expire by commit time


# =========================================================================== deleted topics

def test_deleting_a_topic_removes_its_offsets_from_every_group_with_tombstones() -> None:
    from coordinator.group.coordinator import TopicsDeleted
    h = Harness()
    h.commit({("gone", 0): 1, ("gone", 1): 2, ("kept", 0): 3}, "g1")
    h.commit({("gone", 0): 4}, "g2")
    h.commit({("kept", 1): 5}, "g3")
    token, step = h.send(TopicsDeleted(topics=["gone", "never-committed"]))
    assert (h.result(token, step).error_code, h.result(token, step).offsets_removed) == (0, 3)
    assert decode_records(step.records) == [(OffsetCommitKey("g1", "gone", 0), None),
                                            (OffsetCommitKey("g1", "gone", 1), None),
                                            (OffsetCommitKey("g2", "gone", 0), None)]
    assert h.fetched("g1") == {("kept", 0): (3, -1, "", 0)}
    assert h.fetched("g2") == {}
    assert h.fetched("g3") == {("kept", 1): (5, -1, "", 0)}
    # the groups themselves stay until the periodic cleanup finds them empty
    assert (h.state("g1"), h.state("g2")) == ("Empty", "Empty")
