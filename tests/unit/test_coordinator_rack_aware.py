"""Rack-aware server-side assignment (KIP-881's rule for the uniform and range assignors of
KIP-848 groups) on the pure assignors and the coordinator: members' RackId and partitions'
replica racks, balance first, racks second, inert unless racks make a difference."""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from coordinator.group import consumer_records as rec
from coordinator.group.consumer import ConsumerGroupHeartbeat
from coordinator.group.assignors import range_, uniform
from coordinator.group.coordinator import GroupCoordinator, GroupCoordinatorConfig

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
# 6 partitions with RF=1 on brokers in racks a, b, c, a, b, c
RACKS_6 = {T1: tuple(frozenset({r}) for r in "abcabc")}


def parts(a: dict[str, Any], mid: str, tid: uuid.UUID = T1) -> list[int]:
    return sorted(a[mid].get(tid, ()))


@pytest.mark.parametrize("assignor", [uniform, range_])
def test_members_get_the_partitions_on_their_rack(assignor: Any) -> None:
    members = [("m1", frozenset({T1})), ("m2", frozenset({T1})), ("m3", frozenset({T1}))]
    out = assignor(members, {T1: 6}, {}, {"m1": "c", "m2": "a", "m3": "b"}, RACKS_6)
    assert [parts(out, m) for m in ("m1", "m2", "m3")] == [[2, 5], [0, 3], [1, 4]]


@pytest.mark.parametrize("assignor", [uniform, range_])
def test_balance_wins_over_racks(assignor: Any) -> None:
    members = [("m1", frozenset({T1})), ("m2", frozenset({T1}))]
    # every partition lives in rack a: m2 (rack b) still gets its half
    racks = {T1: tuple(frozenset({"a"}) for _ in range(6))}
    out = assignor(members, {T1: 6}, {}, {"m1": "a", "m2": "b"}, racks)
    assert len(parts(out, "m1")) == len(parts(out, "m2")) == 3
    assert sorted(parts(out, "m1") + parts(out, "m2")) == list(range(6))


@pytest.mark.parametrize("assignor", [uniform, range_])
def test_without_racks_or_when_every_partition_is_on_every_rack_nothing_changes(assignor: Any) -> None:
    members = [("m1", frozenset({T1})), ("m2", frozenset({T1})), ("m3", frozenset({T1}))]
    plain = assignor(members, {T1: 6}, {})
    assert assignor(members, {T1: 6}, {}, {"m1": "c", "m2": "a", "m3": "b"}, {}) == plain
    everywhere = {T1: tuple(frozenset("abc") for _ in range(6))}
    assert assignor(members, {T1: 6}, {}, {"m1": "c", "m2": "a", "m3": "b"}, everywhere) == plain
    assert assignor(members, {T1: 6}, {}, {}, RACKS_6) == plain


def test_uniform_stays_sticky_where_racks_match_and_moves_what_does_not() -> None:
    members = [("m1", frozenset({T1})), ("m2", frozenset({T1}))]
    previous = {"m1": {T1: frozenset({0, 1, 2})}, "m2": {T1: frozenset({3, 4, 5})}}
    racks = {T1: tuple(frozenset({r}) for r in "aabbab")}
    out = uniform(members, {T1: 6}, previous, {"m1": "a", "m2": "b"}, racks)
    assert parts(out, "m1") == [0, 1, 4] and parts(out, "m2") == [2, 3, 5]


class Racked:
    def __init__(self, **config: Any) -> None:
        config.setdefault("consumer_group_rack_aware_assignment", True)   # opt-in, as Kafka 4.x has none
        self.co = GroupCoordinator(GroupCoordinatorConfig(**config))
        self.records: list = []
        self.racks = dict(RACKS_6)

    def hb(self, member: str, epoch: int, rack: str | None = None, **kw: Any) -> Any:
        if epoch == 0:
            kw.update(rebalance_timeout_ms=30000, subscribed_topic_names=["t1"], topic_partitions=[])
        req = ConsumerGroupHeartbeat(group_id="g", member_id=member, member_epoch=epoch, rack_id=rack,
                                     topics={"t1": (T1, 6)}, partition_racks=dict(self.racks), token=1, **kw)
        step = self.co.handle(req, 0)
        self.records.extend(step.records)
        return step.completions[0][1]


def test_coordinator_assigns_by_member_rack_and_a_rack_change_bumps_the_group_epoch() -> None:
    r = Racked()
    r.hb("m1", 0, "a")
    r.hb("m2", 0, "b")
    g = r.co._consumer_groups["g"]
    assert {0, 3} <= set(g.target["m1"][T1]) and {1, 4} <= set(g.target["m2"][T1])
    epoch = g.group_epoch
    r.racks = {T1: tuple(frozenset({x}) for x in "bbbaaa")}      # reassigned replicas
    r.hb("m1", g.members["m1"].member_epoch, topic_partitions=None)
    assert g.group_epoch == epoch + 1
    assert set(g.target["m1"][T1]) == {3, 4, 5} and set(g.target["m2"][T1]) == {0, 1, 2}
    # the racks are in record 4 and come back on replay
    co = GroupCoordinator(GroupCoordinatorConfig())
    for k, v in r.records:
        co.replay(k, v)
    assert co._consumer_groups["g"].partition_racks == g.partition_racks
    last4 = [v for k, v in r.records if rec.key_type(k) == rec.PARTITION_METADATA][-1]
    pm = rec.decode_value(rec.PARTITION_METADATA, last4).topics[0].partition_metadata
    assert [(p.partition, p.racks) for p in pm] == [(0, ["b"]), (1, ["b"]), (2, ["b"]), (3, ["a"]), (4, ["a"]),
                                                    (5, ["a"])]


def test_rack_awareness_is_off_by_default_as_in_kafka_4() -> None:
    cfg = GroupCoordinatorConfig.from_properties({"samsa.group.consumer.rack.aware.assignment": "true"})
    assert cfg.consumer_group_rack_aware_assignment is True
    r = Racked(consumer_group_rack_aware_assignment=False)
    r.hb("m1", 0, "a")
    r.hb("m2", 0, "b")
    g = r.co._consumer_groups["g"]
    plain = uniform([("m1", frozenset({T1})), ("m2", frozenset({T1}))], {T1: 6}, {"m1": {T1: frozenset(range(6))}})
    assert {m: set(a[T1]) for m, a in g.target.items()} == {m: set(a[T1]) for m, a in plain.items()}
    assert GroupCoordinatorConfig.from_properties({}).consumer_group_rack_aware_assignment is False


@pytest.mark.parametrize("seed", range(30))
def test_random_racks_keep_a_disjoint_balanced_cover(seed: int) -> None:
    """Whatever the racks and the previous assignment, equal subscriptions give a disjoint cover
    with shares within one partition of each other (balance before racks)."""
    import random
    rnd = random.Random(seed)
    n_members, n_parts = rnd.randint(1, 7), rnd.randint(1, 30)
    racks = "abcd"[:rnd.randint(1, 4)]
    members = [(f"m{i}", frozenset({T1, T2})) for i in range(n_members)]
    topics = {T1: n_parts, T2: rnd.randint(1, 10)}
    member_racks = {m: rnd.choice(racks + " ").strip() or None for m, _ in members}
    partition_racks = {t: tuple(frozenset(rnd.sample(racks, rnd.randint(0, len(racks)))) for _ in range(n))
                       for t, n in topics.items()}
    previous = {m: {T1: frozenset(p for p in range(n_parts) if rnd.random() < 0.3)} for m, _ in members}
    for assignor in (uniform, range_):
        out = assignor(members, topics, previous if assignor is uniform else {}, member_racks, partition_racks)
        held = [(t, p) for a in out.values() for t, ps in a.items() for p in ps]
        assert sorted(held) == sorted((t, p) for t, n in topics.items() for p in range(n)), assignor
        if assignor is uniform:
            sizes = [sum(len(ps) for ps in a.values()) for a in out.values()]
            assert max(sizes) - min(sizes) <= 1, (assignor, sizes)
        else:       # range balances per topic
            for t in topics:
                sizes = [len(a.get(t, ())) for a in out.values()]
                assert max(sizes) - min(sizes) <= 1, (assignor, t, sizes)
