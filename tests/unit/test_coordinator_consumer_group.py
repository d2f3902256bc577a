"""The KIP-848 consumer group state machine with a fake clock: epochs, reconciliation, timers,
static members, topic changes, records and replay — no broker, no sleeping."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from coordinator.group import consumer_records as rec
from coordinator.group.consumer import (FENCED_MEMBER_EPOCH, INVALID_REQUEST, STABLE, UNRELEASED_INSTANCE_ID, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ConsumerGroupDescribe, ConsumerGroupHeartbeat)
from coordinator.group.coordinator import GroupCoordinator, GroupCoordinatorConfig, JoinGroup, JoinGroupResult

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
SESSION, REBALANCE = 45000, 30000


class CG:
    def __init__(self, **config: Any) -> None:
        self.co = GroupCoordinator(GroupCoordinatorConfig(**config))
        self.now = 0
        self.topics: dict[str, tuple[uuid.UUID, int]] = {"t1": (T1, 6)}
        self.records: list = []

    def hb(self, member: str, epoch: int, owned: dict[uuid.UUID, list[int]] | None = None, **kw: Any) -> Any:
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", REBALANCE)
            if "subscribed_topic_regex" not in kw:
                kw.setdefault("subscribed_topic_names", ["t1"])
            owned = owned or {}
        req = ConsumerGroupHeartbeat(group_id=kw.pop("group_id", "g"), member_id=member, member_epoch=epoch,
                                     topic_partitions=None if owned is None else list(owned.items()),
                                     topics=dict(self.topics), token=object(), **kw)
        step = self.co.handle(req, self.now)
        self.records.extend(step.records)
        [(token, result)] = step.completions
        assert token is req.token
        return result

    def tick(self, now: int) -> None:
        self.now = now
        self.records.extend(self.co.tick(now).records)

    def group(self, gid: str = "g") -> Any:
        return self.co._consumer_groups.get(gid)


def resolving(cg: CG, gid: str = "g") -> bool:
    """A regex resolution of the group is scheduled (Kafka: its executor task is pending)."""
    return ("cg-regex", gid) in cg.co._timers


def mine(result: Any) -> dict[uuid.UUID, list[int]]:
    return {t: sorted(ps) for t, ps in (result.assignment or {}).items()}


def test_first_member_gets_everything_at_epoch_one_and_writes_kafkas_records_in_order() -> None:
    cg = CG()
    r = cg.hb("a", 0)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "a", 1, 5000)
    assert mine(r) == {T1: [0, 1, 2, 3, 4, 5]}
    assert [rec.key_type(k) for k, _ in cg.records] == [
        rec.MEMBER_METADATA, rec.PARTITION_METADATA, rec.GROUP_METADATA, rec.TARGET_ASSIGNMENT_MEMBER,
        rec.TARGET_ASSIGNMENT_METADATA, rec.CURRENT_MEMBER_ASSIGNMENT]
    assert cg.group().state == "Stable"


def test_reconciliation_revokes_before_assigning_and_epochs_move_as_kafkas() -> None:
    cg = CG()
    a = cg.hb("a", 0)
    b = cg.hb("b", 0)
    assert (b.member_epoch, mine(b)) == (2, {})
    assert cg.group().members["b"].state == UNRELEASED_PARTITIONS
    assert cg.group().state == "Reconciling"
    a2 = cg.hb("a", 1, mine(a))
    assert (a2.member_epoch, cg.group().members["a"].state, len(mine(a2)[T1])) == (1, UNREVOKED_PARTITIONS, 3)
    revoked = set(range(6)) - set(mine(a2)[T1])
    assert cg.hb("b", 2, {}).assignment is None            # still held by a
    a3 = cg.hb("a", 1, mine(a2))                           # a no longer reports the revoked ones
    m_a = cg.group().members["a"]
    assert (a3.member_epoch, m_a.state, m_a.previous_member_epoch) == (2, STABLE, 1)
    b3 = cg.hb("b", 2, {})
    assert mine(b3) == {T1: sorted(revoked)} and cg.group().members["b"].state == STABLE
    assert cg.group().state == "Stable"


def test_previous_epoch_with_a_subset_is_accepted_otherwise_fenced() -> None:
    cg = CG()
    a = cg.hb("a", 0)
    cg.hb("b", 0)
    a2 = cg.hb("a", 1, mine(a))
    cg.hb("a", 1, mine(a2))                                # now at epoch 2, previous 1
    assert cg.hb("a", 1, mine(a2)).error_code == 0          # lost answer: previous epoch + subset
    assert cg.hb("a", 1, {T1: [0, 1, 2, 3, 4, 5]}).error_code == FENCED_MEMBER_EPOCH
    assert cg.hb("a", 3, mine(a2)).error_code == FENCED_MEMBER_EPOCH
    assert cg.group().members["a"].member_epoch == 2       # group state intact


def test_session_timeout_fences_and_the_survivor_takes_everything() -> None:
    cg = CG()
    a = cg.hb("a", 0)
    cg.hb("b", 0)
    a2 = cg.hb("a", 1, mine(a))
    cg.hb("a", 1, mine(a2))
    b = cg.hb("b", 2, {})
    for t in range(5000, SESSION, 5000):                   # only a keeps heartbeating
        cg.tick(t)
        cg.hb("a", 2, mine(a2))
    cg.tick(SESSION - 1)
    assert "b" in cg.group().members
    cg.tick(SESSION + 1)
    assert "b" not in cg.group().members and cg.group().group_epoch == 3
    a3 = cg.hb("a", 2, mine(a2))
    assert (a3.member_epoch, mine(a3)) == (3, {T1: [0, 1, 2, 3, 4, 5]})
    assert b.error_code == 0


def test_revocation_timeout_fences_a_member_that_never_revokes() -> None:
    cg = CG()
    a = cg.hb("a", 0)
    cg.hb("b", 0)
    cg.hb("a", 1, mine(a))                                  # told to revoke, never does
    got = {}
    for t in range(5000, REBALANCE + 1, 5000):
        cg.tick(t)
        assert not got
        got = mine(cg.hb("b", 2, {}))
        assert ("a" in cg.group().members) == (t < REBALANCE)
    assert got == {T1: [0, 1, 2, 3, 4, 5]}


def test_static_member_minus_two_keeps_partitions_then_rejoin_takes_them_over() -> None:
    cg = CG()
    a = cg.hb("a1", 0, instance_id="i")
    assert cg.hb("a1", -2, instance_id="i").member_epoch == -2
    x = cg.hb("x", 0)
    assert mine(x) == {}                                   # a's partitions stay reserved
    assert cg.hb("a9", 0, instance_id="j").error_code == 0
    back = cg.hb("a2", 0, instance_id="i")
    assert back.error_code == 0 and set(mine(back)[T1]) <= set(mine(a)[T1])
    assert "a1" not in cg.group().members
    assert cg.hb("a3", 0, instance_id="i").error_code == UNRELEASED_INSTANCE_ID


def test_partition_growth_and_topic_deletion_update_the_target() -> None:
    cg = CG()
    a = cg.hb("a", 0, subscribed_topic_names=["t1", "t2"])
    assert mine(a) == {T1: [0, 1, 2, 3, 4, 5]}
    cg.topics["t2"] = (T2, 2)
    a2 = cg.hb("a", 1, mine(a))
    assert (a2.member_epoch, mine(a2)) == (2, {T1: [0, 1, 2, 3, 4, 5], T2: [0, 1]})
    cg.topics["t1"] = (T1, 8)
    a3 = cg.hb("a", 2, mine(a2))
    assert mine(a3) == {T1: list(range(8)), T2: [0, 1]}
    del cg.topics["t1"]
    a4 = cg.hb("a", 3, mine(a3))
    assert a4.member_epoch == 3 and mine(a4) == {T2: [0, 1]}   # revoke first (epoch kept)
    a5 = cg.hb("a", 3, mine(a4))
    assert (a5.member_epoch, a5.assignment) == (4, None)


def test_regex_and_literal_topic_kafkas_two_assignments_literal_first() -> None:
    """Kafka 4.0 resolves regexes asynchronously: the first heartbeat assigns the literal topic; the
    resolution (a timer due at once) writes ConsumerGroupRegularExpression and bumps the group
    epoch; the next heartbeat assigns the matched topic too."""
    cg = CG()
    cg.topics = {"orders-eu": (T1, 2), "payments": (T2, 2)}
    a = cg.hb("a", 0, subscribed_topic_names=["payments"], subscribed_topic_regex="orders-.*")
    assert (a.member_epoch, mine(a)) == (1, {T2: [0, 1]})
    assert (cg.group().group_epoch, cg.group().assignment_epoch) == (1, 1)
    assert cg.co.next_deadline() == 0 and resolving(cg)   # the resolution, due at once, not yet run
    cg.records.clear()
    cg.tick(0)
    assert [rec.key_type(k) for k, _ in cg.records] == [
        rec.REGULAR_EXPRESSION, rec.PARTITION_METADATA, rec.GROUP_METADATA]
    regex_key, regex_value = cg.records[0]
    k = rec.decode_key(regex_key)
    v = rec.decode_value(rec.REGULAR_EXPRESSION, regex_value)
    assert (k.group_id, k.regular_expression, v.topics, v.resolved_version, v.timestamp) == (
        "g", "orders-.*", ["orders-eu"], 2, 0)
    assert (cg.group().group_epoch, cg.group().assignment_epoch) == (2, 1)
    assert not resolving(cg) and cg.co.next_deadline() == SESSION
    a2 = cg.hb("a", 1, mine(a))
    assert (a2.member_epoch, mine(a2)) == (2, {T1: [0, 1], T2: [0, 1]})
    assert cg.group().state == "Stable"


def test_regex_only_member_gets_nothing_until_the_resolution() -> None:
    cg = CG()
    cg.topics = {"orders-eu": (T1, 2), "payments": (T2, 2)}
    a = cg.hb("a", 0, subscribed_topic_regex="orders-.*")
    assert (a.member_epoch, mine(a)) == (1, {})           # a new group moves off epoch 0 at once
    a1 = cg.hb("a", 1, {})                                 # the due resolution runs first
    assert (a1.member_epoch, mine(a1)) == (2, {T1: [0, 1]})
    assert cg.hb("b", 0, subscribed_topic_regex="orders-(").error_code == 128


def test_new_topics_are_picked_up_by_a_refresh_at_most_every_ten_seconds() -> None:
    cg = CG()
    cg.topics = {"orders-eu": (T1, 2)}
    a = cg.hb("a", 0, subscribed_topic_regex="orders-.*")
    cg.tick(0)
    a = cg.hb("a", 1, {})
    assert (a.member_epoch, mine(a)) == (2, {T1: [0, 1]})
    T3 = uuid.UUID(int=3)
    cg.topics["orders-us"] = (T3, 1)
    cg.now = 10_000                                        # not later than the last refresh + 10 s
    a = cg.hb("a", 2, {T1: [0, 1]})
    assert (a.member_epoch, a.assignment, resolving(cg)) == (2, None, False)
    cg.now = 10_001
    a = cg.hb("a", 2, {T1: [0, 1]})
    assert (a.member_epoch, a.assignment, resolving(cg), cg.co.next_deadline()) == (2, None, True, 10_001)
    cg.tick(10_001)
    assert cg.group().resolved_regexes["orders-.*"].topics == frozenset({"orders-eu", "orders-us"})
    a = cg.hb("a", 2, {T1: [0, 1]})
    assert (a.member_epoch, mine(a)) == (3, {T1: [0, 1], T3: [0]})


def test_a_second_member_of_a_resolved_regex_bumps_at_once_and_the_last_one_tombstones_it() -> None:
    cg = CG()
    cg.topics = {"orders-eu": (T1, 2), "payments": (T2, 2)}
    cg.hb("a", 0, subscribed_topic_regex="orders-.*")
    a = cg.hb("a", 1, {})                                  # resolved (timer fired first)
    assert (a.member_epoch, mine(a)) == (2, {T1: [0, 1]})
    b = cg.hb("b", 0, subscribed_topic_regex="orders-.*")
    assert (b.member_epoch, cg.group().group_epoch, resolving(cg)) == (3, 3, False)
    # replayed into a fresh coordinator, the resolution comes back with the group
    replayed = GroupCoordinator(GroupCoordinatorConfig())
    for key, value in cg.records:
        replayed.replay(key, value)
    assert replayed._consumer_groups["g"].resolved_regexes["orders-.*"].topics == frozenset({"orders-eu"})
    cg.records.clear()
    cg.hb("a", -1)
    assert not [k for k, _ in cg.records if rec.key_type(k) == rec.REGULAR_EXPRESSION]   # b still uses it
    cg.hb("b", -1)
    assert [(rec.decode_key(k).regular_expression, v) for k, v in cg.records
            if rec.key_type(k) == rec.REGULAR_EXPRESSION] == [("orders-.*", None)]
    assert cg.group().resolved_regexes == {}


@pytest.mark.parametrize("assignors,asked,expected", [(("uniform", "range"), None, "uniform"),
                                                      (("range", "uniform"), None, "range"),
                                                      (("uniform", "range"), "range", "range")])
def test_assignor_choice(assignors: tuple[str, ...], asked: str | None, expected: str) -> None:
    cg = CG(consumer_group_assignors=assignors)
    cg.hb("a", 0, server_assignor=asked)
    [d] = cg.co.handle(ConsumerGroupDescribe(groups=["g"], token=1), 0).completions[0][1].groups
    assert d.assignor_name == expected


def test_range_assignor_gives_contiguous_ranges_in_member_order() -> None:
    cg = CG(consumer_group_assignors=("range",))
    cg.hb("m2", 0)
    cg.hb("m1", 0)
    target = cg.group().target
    assert {m: sorted(a[T1]) for m, a in target.items()} == {"m1": [0, 1, 2], "m2": [3, 4, 5]}


def test_invalid_requests_and_max_size() -> None:
    cg = CG(consumer_group_max_size=1)
    assert cg.hb("a", 0, rebalance_timeout_ms=-1).error_code == INVALID_REQUEST
    assert cg.hb("a", 0, subscribed_topic_names=[]).error_code == INVALID_REQUEST
    assert cg.hb("a", 0, owned={T1: [0]}).error_code == INVALID_REQUEST
    assert cg.hb("a", -3, owned={}).error_code == INVALID_REQUEST
    assert cg.hb("a", 0).error_code == 0
    assert cg.hb("b", 0).error_code == 81
    assert cg.hb("zz", 4, {}).error_code == 25              # unknown member


def test_config_bounds_are_checked_as_kafka_does() -> None:
    with pytest.raises(ValueError, match="group.consumer.session.timeout.ms"):
        GroupCoordinatorConfig(consumer_group_session_timeout_ms=1000)
    with pytest.raises(ValueError, match="heartbeat.interval"):
        GroupCoordinatorConfig(consumer_group_heartbeat_interval_ms=20000)
    cfg = GroupCoordinatorConfig.from_properties({
        "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform"})
    assert cfg.consumer_group_assignors == ("range", "uniform")


def test_replay_rebuilds_the_group_exactly() -> None:
    cg = CG()
    a = cg.hb("a", 0, instance_id="i")
    cg.hb("b", 0)
    a2 = cg.hb("a", 1, mine(a), instance_id="i")
    cg.hb("a", 1, mine(a2), instance_id="i")
    cg.hb("b", 2, {})
    cg.hb("c", 0)
    cg.hb("c", -1)
    fresh = GroupCoordinator(GroupCoordinatorConfig(), loading=True)
    for k, v in cg.records:
        fresh.replay(k, v)
    fresh.load_complete(cg.now)
    old, new = cg.group(), fresh._consumer_groups["g"]
    assert (new.group_epoch, new.assignment_epoch, new.subscription_metadata) == \
        (old.group_epoch, old.assignment_epoch, old.subscription_metadata)
    assert new.target == old.target and new.owners == old.owners
    assert {m: v.current() + v.metadata()[:1] for m, v in new.members.items()} == \
        {m: v.current() + v.metadata()[:1] for m, v in old.members.items()}


def test_classic_join_without_a_consumer_subscription_is_inconsistent_and_empty_group_converts() -> None:
    cg = CG()
    cg.hb("a", 0)
    join = JoinGroup(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                     protocol_type="consumer", protocols=[("range", b"")], token=1)
    r: JoinGroupResult = cg.co.handle(join, 0).completions[0][1]
    assert r.error_code == 23       # INCONSISTENT_GROUP_PROTOCOL: no ConsumerProtocolSubscription to assign by
    cg.hb("a", -1)
    step = cg.co.handle(join, 0)
    assert cg.group() is None and cg.co.group("g") is not None
    assert any(rec.key_type(k) == rec.GROUP_METADATA and v is None for k, v in step.records)


def test_ten_thousand_join_attempts_beyond_the_max_size_are_refused_and_the_group_is_intact() -> None:
    cg = CG(consumer_group_max_size=50)
    codes = [cg.hb(f"m{i}", 0).error_code for i in range(10000)]
    assert codes[:50] == [0] * 50 and set(codes[50:]) == {81}       # GROUP_MAX_SIZE_REACHED
    g = cg.group()
    assert len(g.members) == 50 and g.group_epoch == 50
    assert sorted(p for a in g.target.values() for p in a.get(T1, ())) == list(range(6))
    assert cg.hb("m0", g.members["m0"].member_epoch, {}).error_code == 0


def test_delete_groups_of_a_consumer_group_and_replay_keeps_it_deleted() -> None:
    from coordinator.group.coordinator import DeleteGroups, ListGroups
    cg = CG()
    cg.hb("a", 0)
    r = cg.co.handle(DeleteGroups(groups=["g"], token=1), 0).completions[0][1]
    assert [(x.group_id, x.error_code) for x in r.results] == [("g", 68)]       # NON_EMPTY_GROUP
    cg.hb("a", -1)
    step = cg.co.handle(DeleteGroups(groups=["g"], token=2), 0)
    cg.records.extend(step.records)
    assert [(x.group_id, x.error_code) for x in step.completions[0][1].results] == [("g", 0)]
    assert cg.group() is None
    assert cg.co.handle(ListGroups(token=3), 0).completions[0][1].groups == []
    fresh = GroupCoordinator(GroupCoordinatorConfig(), loading=True)
    for k, v in cg.records:
        fresh.replay(k, v)
    fresh.load_complete(0)
    assert fresh._consumer_groups == {} and fresh.group_ids() == []


def test_offsets_expire_by_commit_time_except_subscribed_topics_then_the_empty_group_goes() -> None:
    from coordinator.group.coordinator import OffsetCommit, OffsetCommitPartition, OffsetCommitTopic
    cg = CG(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10000)
    a = cg.hb("a", 0)

    def commit(topic: str) -> int:
        req = OffsetCommit(group_id="g", topics=[OffsetCommitTopic(topic, [OffsetCommitPartition(0, 5, -1, "")])],
                           generation_id=a.member_epoch, member_id="a", api_version=9, token=1)
        step = cg.co.handle(req, cg.now)
        return step.completions[0][1].topics[0].partitions[0].error_code

    assert commit("t1") == 0 and commit("gone") == 0
    for t in range(5000, 70001, 5000):                   # a stays a member (heartbeats)
        cg.tick(t)
        cg.hb("a", a.member_epoch, mine(a))
    left = {t.name for t in cg.co.offsets.fetch("g", None, True, False)}
    assert left == {"t1"}                                  # subscribed: kept while a is a member
    cg.hb("a", -1)
    cg.tick(2 * 60000 + 20000)
    assert cg.group() is None and cg.co.offsets.has_offsets("g") is False
