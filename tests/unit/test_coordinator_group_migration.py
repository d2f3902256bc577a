"""Classic-protocol members inside KIP-848 consumer groups and the online upgrade/downgrade
between classic and consumer groups (group.consumer.migration.policy), on the pure coordinator
with a fake clock: Kafka's answers, epochs, records and replay."""
from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from coordinator.group import consumer_records as rec
from coordinator.group.consumer import ConsumerGroupDescribe, ConsumerGroupHeartbeat
from coordinator.group.coordinator import (GroupCoordinator, GroupCoordinatorConfig, GroupState, Heartbeat, JoinGroup, LeaveGroup, LeaveGroupMember, OffsetCommit, OffsetCommitPartition, OffsetCommitTopic, OffsetFetch, OffsetFetchGroup, SyncGroup)
from coordinator.group.offsets_records import GroupMetadataKey, decode_key

T1 = uuid.UUID(int=1)
TOPICS = {"t1": (T1, 6)}
REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID = 27, 22, 25
INCONSISTENT_GROUP_PROTOCOL, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED = 23, 69, 79


def subscription(topics: list[str], owned: dict[str, list[int]] | None = None, version: int = 1) -> bytes:
    tp = ConsumerProtocolSubscription.TopicPartition
    return bytes(ConsumerProtocolSubscription(
        version=version, topics=topics, user_data=None,
        owned_partitions=[tp(topic=t, partitions=ps) for t, ps in (owned or {}).items()],
        generation_id=-1, rack_id=None).encode(version=version))


def partitions_of(assignment: bytes) -> list[int]:
    a = ConsumerProtocolAssignment.decode(assignment)
    return sorted(p for t in a.assigned_partitions for p in t.partitions)


class Mixed:
    """One coordinator; consumer-protocol members by heartbeat, classic members by
    JoinGroup/SyncGroup/Heartbeat (v0 JoinGroup: no MEMBER_ID_REQUIRED round trip)."""

    def __init__(self, **config: Any) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", 0)
        self.co = GroupCoordinator(GroupCoordinatorConfig(**config), member_id_factory=iter(
            f"m{i}" for i in range(1000)).__next__)
        self.now = 0
        self.records: list = []

    def call(self, req: Any) -> Any:
        req.token = object()
        step = self.co.handle(req, self.now)
        self.records.extend(step.records)
        mine = [r for t, r in step.completions if t is req.token]
        assert len(mine) == 1, step.completions
        return mine[0]

    def maybe(self, req: Any) -> Any:
        """Like ``call`` but a request a classic group parks (a rebalance) answers None."""
        req.token = object()
        step = self.co.handle(req, self.now)
        self.records.extend(step.records)
        return next((r for t, r in step.completions if t is req.token), None)

    def hb(self, member: str, epoch: int, owned: dict[uuid.UUID, list[int]] | None = None, **kw: Any) -> Any:
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", 30000)
            kw.setdefault("subscribed_topic_names", ["t1"])
            owned = owned or {}
        return self.call(ConsumerGroupHeartbeat(
            group_id="g", member_id=member, member_epoch=epoch, topics=dict(TOPICS),
            topic_partitions=None if owned is None else list(owned.items()), **kw))

    def join(self, member: str = "", owned: dict[str, list[int]] | None = None, **kw: Any) -> Any:
        kw.setdefault("protocols", [("range", subscription(["t1"], owned))])
        kw.setdefault("session_timeout_ms", 10000)
        return self.call(JoinGroup(group_id="g", rebalance_timeout_ms=20000,
                                   member_id=member, protocol_type="consumer", topics=dict(TOPICS),
                                   api_version=kw.pop("api_version", 1), **kw))

    def sync(self, member: str, generation: int, **kw: Any) -> Any:
        return self.call(SyncGroup(group_id="g", generation_id=generation, member_id=member, **kw))

    def heartbeat(self, member: str, generation: int) -> Any:
        return self.call(Heartbeat(group_id="g", generation_id=generation, member_id=member))

    def tick(self, now: int) -> None:
        self.now = now
        self.records.extend(self.co.tick(now).records)

    def group(self) -> Any:
        return self.co._consumer_groups.get("g")


def test_a_classic_member_joins_a_consumer_group_and_gets_a_server_side_share() -> None:
    mx = Mixed()
    a = mx.hb("a", 0)
    assert sorted(a.assignment[T1]) == [0, 1, 2, 3, 4, 5]
    j = mx.join(api_version=5)
    assert j.error_code == MEMBER_ID_REQUIRED and j.member_id == "m0"
    j = mx.join("m0", api_version=5)
    assert j.error_code == 0 and j.member_id == "m0" and j.leader == "" and j.members == []
    assert j.protocol_type == "consumer" and j.protocol_name == "range"
    g = mx.group()
    assert j.generation_id == g.group_epoch == g.members["m0"].member_epoch == 2
    # a still owns everything: the classic member waits for its share
    assert partitions_of(mx.sync("m0", 2).assignment) == []
    a = mx.hb("a", 1, {T1: [0, 1, 2, 3, 4, 5]})
    assert sorted(a.assignment[T1]) == [0, 1, 2]               # revoke 3-5 first
    a = mx.hb("a", 1, {T1: [0, 1, 2]})
    assert a.member_epoch == 2
    # its partitions are free now: the classic member is told to rejoin, and gets them
    assert mx.heartbeat("m0", 2).error_code == REBALANCE_IN_PROGRESS
    j = mx.join("m0", api_version=5)
    assert j.generation_id == 2
    s = mx.sync("m0", 2, protocol_type="consumer", protocol_name="range")
    assert s.error_code == 0 and partitions_of(s.assignment) == [3, 4, 5]
    assert mx.heartbeat("m0", 2).error_code == 0
    assert mx.group().state == "Stable"
    described = mx.call(ConsumerGroupDescribe(groups=["g"])).groups[0]
    assert {m.member_id: m.member_type for m in described.members} == {"a": 1, "m0": 0}    # KIP-1099
    # the member metadata record carries the classic metadata (session timeout, protocols)
    metas = [rec.decode_value(rec.MEMBER_METADATA, v) for k, v in mx.records
             if rec.key_type(k) == rec.MEMBER_METADATA and rec.decode_key(k).member_id == "m0" and v]
    assert metas[-1].classic_member_metadata.session_timeout_ms == 10000
    assert [p.name for p in metas[-1].classic_member_metadata.supported_protocols] == ["range"]


def test_classic_member_errors_as_kafka_gives_them() -> None:
    mx = Mixed()
    mx.hb("a", 0)
    assert mx.join(protocols=[("range", b"\x00")]).error_code == INCONSISTENT_GROUP_PROTOCOL
    assert mx.join(session_timeout_ms=1000).error_code == 26               # INVALID_SESSION_TIMEOUT
    j = mx.join()
    gen = j.generation_id
    assert mx.heartbeat(j.member_id, gen + 5).error_code == ILLEGAL_GENERATION
    assert mx.sync(j.member_id, gen + 5).error_code == ILLEGAL_GENERATION
    assert mx.heartbeat("nobody", gen).error_code == UNKNOWN_MEMBER_ID
    assert mx.heartbeat("a", 1).error_code == UNKNOWN_MEMBER_ID     # a consumer-protocol member
    assert mx.sync(j.member_id, gen, protocol_name="roundrobin").error_code == INCONSISTENT_GROUP_PROTOCOL
    # a second classic member must share a protocol with the classic members already in
    other = mx.join(protocols=[("roundrobin", subscription(["t1"]))])
    assert other.error_code == INCONSISTENT_GROUP_PROTOCOL
    # the classic member's offsets: generation = member epoch, else ILLEGAL_GENERATION (v8 allowed)
    commit = OffsetCommit(group_id="g", generation_id=gen, member_id=j.member_id, api_version=8,
                          topics=[OffsetCommitTopic("t1", [OffsetCommitPartition(0, 7)])])
    assert mx.call(commit).topics[0].partitions[0].error_code == 0
    commit.generation_id = gen + 1
    assert mx.call(commit).topics[0].partitions[0].error_code == ILLEGAL_GENERATION


def test_session_sync_and_join_timeouts_fence_a_classic_member() -> None:
    mx = Mixed()
    mx.hb("a", 0)
    j = mx.join()                           # session 10 s, rebalance timeout 20 s
    for now in (9000, 18000):
        mx.tick(now)
        assert mx.heartbeat(j.member_id, j.generation_id).error_code in (0, REBALANCE_IN_PROGRESS)
    mx.tick(19999)
    assert j.member_id in mx.group().members
    mx.tick(20000)                          # never synced within the rebalance timeout
    assert j.member_id not in mx.group().members
    j = mx.join()
    mx.sync(j.member_id, j.generation_id)
    mx.tick(mx.now + 9999)
    assert j.member_id in mx.group().members
    mx.tick(mx.now + 1)                     # no heartbeat within its own session timeout
    assert j.member_id not in mx.group().members
    # told to rejoin (REBALANCE_IN_PROGRESS) but never does: fenced after the rebalance timeout
    j = mx.join()
    mx.sync(j.member_id, j.generation_id)
    mx.hb("c", 0)
    start = mx.now
    for t in range(5000, 25001, 5000):          # rejoin deadline: 20 s after the first 27
        mx.tick(start + t)
        if j.member_id in mx.group().members:
            assert mx.heartbeat(j.member_id, j.generation_id).error_code == REBALANCE_IN_PROGRESS
    assert j.member_id not in mx.group().members


def test_classic_leave_group_removes_the_member_and_the_others_take_its_partitions() -> None:
    mx = Mixed()
    mx.hb("a", 0)
    j = mx.join()
    r = mx.call(LeaveGroup(group_id="g", members=[LeaveGroupMember(j.member_id), LeaveGroupMember("a")]))
    assert [(m.member_id, m.error_code) for m in r.members] == [(j.member_id, 0), ("a", UNKNOWN_MEMBER_ID)]
    assert list(mx.group().members) == ["a"]
    a = mx.hb("a", 1, {T1: [0, 1, 2, 3, 4, 5]})
    assert a.member_epoch == mx.group().group_epoch and sorted(mx.group().members["a"].assigned[T1]) == list(range(6))


def test_upgrade_of_a_non_empty_classic_group_keeps_assignments_and_offsets() -> None:
    mx = Mixed()
    j = mx.join()                                   # a classic group: one kafka-python-like member
    classic = mx.co.group("g")
    assert classic is not None and classic.state == GroupState.COMPLETING_REBALANCE
    assignment = bytes(ConsumerProtocolAssignment(version=0, assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic="t1", partitions=[0, 1, 2, 3, 4, 5])],
        user_data=None).encode(version=0))
    gen = classic.generation_id
    assert mx.sync(j.member_id, gen, assignments=[(j.member_id, assignment)]).error_code == 0
    commit = OffsetCommit(group_id="g", generation_id=gen, member_id=j.member_id, api_version=8,
                          topics=[OffsetCommitTopic("t1", [OffsetCommitPartition(2, 42)])])
    assert mx.call(commit).topics[0].partitions[0].error_code == 0
    b = mx.hb("b", 0)                               # a consumer-protocol member: upgrade
    g = mx.group()
    assert g is not None and mx.co.group("g") is None
    assert b.error_code == 0 and b.member_epoch == gen + 1 and not b.assignment    # everything is owned
    assert g.members[j.member_id].classic is not None and g.members[j.member_id].member_epoch == gen
    fetched = mx.call(OffsetFetch(groups=[OffsetFetchGroup("g", None)])).groups[0]
    assert [(t.name, p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions] == \
        [("t1", 2, 42)]
    # the classic member learns of the rebalance, revokes (eager) and rejoins with half
    assert mx.heartbeat(j.member_id, gen).error_code == REBALANCE_IN_PROGRESS
    r = mx.join(j.member_id)
    assert r.generation_id == gen + 1
    assert partitions_of(mx.sync(j.member_id, gen + 1).assignment) == [0, 1, 2]
    b = mx.hb("b", b.member_epoch, {})
    assert sorted(b.assignment[T1]) == [3, 4, 5]
    tombstones = [k for k, v in mx.records if v is None and isinstance(decode_key(k), GroupMetadataKey)]
    assert tombstones, "the classic group's record is tombstoned"


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_upgrade_is_refused_when_the_policy_forbids_it(policy: str) -> None:
    mx = Mixed(consumer_group_migration_policy=policy)
    j = mx.join()
    assert mx.co.group("g").members
    assert mx.hb("b", 0).error_code == GROUP_ID_NOT_FOUND
    assert mx.co.group("g") is not None and mx.group() is None and j.member_id in mx.co.group("g").members


def test_downgrade_when_the_last_consumer_protocol_member_leaves() -> None:
    mx = Mixed()
    mx.hb("a", 0)
    j = mx.join()
    mx.hb("a", 1, {T1: [0, 1, 2, 3, 4, 5]})
    epoch = mx.group().group_epoch
    mx.hb("a", -1)
    assert mx.group() is None
    classic = mx.co.group("g")
    assert classic is not None and classic.state == GroupState.PREPARING_REBALANCE
    assert classic.generation_id == epoch and list(classic.members) == [j.member_id]
    assert classic.protocol_name == "range"
    # the member is told to rejoin, and the classic group completes the rebalance with it
    assert mx.heartbeat(j.member_id, epoch).error_code == REBALANCE_IN_PROGRESS
    r = mx.join(j.member_id)
    assert r.error_code == 0 and r.generation_id == epoch + 1 and r.leader == j.member_id
    # replay of everything written gives the same classic group and no consumer group
    co = GroupCoordinator(GroupCoordinatorConfig())
    for k, v in mx.records:
        co.replay(k, v)
    assert co._consumer_groups == {} and co.group("g") is not None


def test_no_downgrade_with_policy_upgrade_and_the_group_stays_a_consumer_group() -> None:
    mx = Mixed(consumer_group_migration_policy="upgrade")
    mx.hb("a", 0)
    j = mx.join()
    mx.hb("a", -1)
    assert mx.co.group("g") is None and list(mx.group().members) == [j.member_id]


def test_replay_restores_classic_members_of_a_consumer_group() -> None:
    mx = Mixed()
    mx.hb("a", 0)
    j = mx.join()
    co = GroupCoordinator(GroupCoordinatorConfig())
    for k, v in mx.records:
        co.replay(k, v)
    old, new = mx.group(), co._consumer_groups["g"]
    assert new.members[j.member_id].classic == old.members[j.member_id].classic
    assert new.members[j.member_id].current() == old.members[j.member_id].current()
    assert new.members["a"].classic is None


def test_static_classic_member_restart_takes_over_its_old_incarnation() -> None:
    mx = Mixed()
    mx.hb("a", 0)
    j = mx.join(group_instance_id="i1", api_version=5)           # static: no MEMBER_ID_REQUIRED
    assert j.error_code == 0
    mx.hb("a", 1, {T1: [0, 1, 2, 3, 4, 5]})
    mx.hb("a", 1, {T1: [0, 1, 2]})
    r = mx.join(j.member_id, group_instance_id="i1", api_version=5)
    assert partitions_of(mx.sync(j.member_id, r.generation_id, group_instance_id="i1").assignment) == [3, 4, 5]
    # a restart (no member id): the new incarnation replaces the old one and keeps its partitions
    r2 = mx.join(group_instance_id="i1", api_version=5)
    assert r2.error_code == 0 and r2.member_id != j.member_id
    assert j.member_id not in mx.group().members
    assert sorted(mx.group().members[r2.member_id].assigned[T1]) == [3, 4, 5]
    # the old incarnation is fenced
    assert mx.call(Heartbeat(group_id="g", generation_id=r.generation_id, member_id=j.member_id,
                             group_instance_id="i1")).error_code == 82     # FENCED_INSTANCE_ID


def test_upgrade_during_a_classic_rebalance_answers_parked_joins_rebalance_in_progress() -> None:
    mx = Mixed()
    j1 = mx.join()
    assert mx.sync(j1.member_id, j1.generation_id, assignments=[(j1.member_id, b"")]).error_code == 0
    req = JoinGroup(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=20000, member_id="",
                    protocol_type="consumer", protocols=[("range", subscription(["t1"]))], topics=dict(TOPICS),
                    api_version=1, token=object())
    step = mx.co.handle(req, mx.now)            # parks: the group waits for j1 to rejoin
    assert not step.completions and mx.co.group("g").state == GroupState.PREPARING_REBALANCE
    hb = ConsumerGroupHeartbeat(group_id="g", member_id="b", member_epoch=0, topics=dict(TOPICS), topic_partitions=[],
                                rebalance_timeout_ms=30000, subscribed_topic_names=["t1"], token=object())
    step = mx.co.handle(hb, mx.now)
    answers = {id(t): r for t, r in step.completions}
    assert answers[id(req.token)].error_code == REBALANCE_IN_PROGRESS      # the parked JoinGroup
    assert answers[id(hb.token)].error_code == 0
    g = mx.group()
    assert g is not None and mx.co.group("g") is None and len(g.members) == 3
    # the parked member rejoins with its id as a classic member of the consumer group
    new_id = next(m for m in g.members if m not in ("b", j1.member_id))
    assert mx.join(new_id).error_code == 0


@pytest.mark.parametrize("seed", [*range(12), 83, 95, 154, 165])
def test_random_mixed_protocol_histories_never_give_a_partition_to_two_members_and_replay_exactly(seed: int) -> None:
    """Random interleavings of consumer-protocol heartbeats (joins, reconciling, leaves) and classic
    members' JoinGroup/SyncGroup/Heartbeat/LeaveGroup, with time passing (session, sync, join
    timeouts; upgrades and downgrades happen along the way): no partition is ever held by two
    members of a consumer group, and replaying everything written rebuilds the same state."""
    import random
    rnd = random.Random(seed)
    mx = Mixed(group_min_session_timeout_ms=1000, consumer_group_min_session_timeout_ms=1000,
               consumer_group_session_timeout_ms=8000, consumer_group_min_heartbeat_interval_ms=100,
               consumer_group_heartbeat_interval_ms=1000)
    consumers: dict[str, Any] = {}          # member id -> last heartbeat answer
    classics: dict[str, Any] = {}           # member id -> last JoinGroup answer
    for _ in range(300):
        op = rnd.random()
        g = mx.group()
        if op < 0.35:
            name = rnd.choice(["c1", "c2", "c3"])
            last = consumers.get(name)
            if last is None or last.error_code or rnd.random() < 0.05:
                r = mx.hb(name, 0)
            elif rnd.random() < 0.25:
                r = mx.hb(name, -1)
                consumers.pop(name, None)
                continue
            else:
                m = g.members.get(name) if g is not None else None
                held = {} if m is None else {t: sorted(ps) for t, ps in m.assigned.items()}
                r = mx.hb(name, last.member_epoch, held)
            consumers[name] = r
        elif op < 0.75:
            mid = rnd.choice(list(classics) + [""]) if classics else ""
            r = mx.maybe(JoinGroup(group_id="g", session_timeout_ms=rnd.choice([3000, 6000]),
                                   rebalance_timeout_ms=5000, member_id=mid, protocol_type="consumer",
                                   protocols=[("range", subscription(["t1"]))], topics=dict(TOPICS), api_version=1))
            if r is not None and r.error_code == 0:
                classics[r.member_id] = r
                if rnd.random() < 0.8:
                    mx.maybe(SyncGroup(group_id="g", generation_id=r.generation_id, member_id=r.member_id,
                                       assignments=[(r.member_id, b"")] if r.leader == r.member_id else []))
            elif r is not None and mid:
                classics.pop(mid, None)
        elif op < 0.85 and classics:
            mid = rnd.choice(list(classics))
            mx.maybe(Heartbeat(group_id="g", generation_id=classics[mid].generation_id, member_id=mid))
        elif op < 0.9 and classics:
            mid = rnd.choice(list(classics))
            mx.maybe(LeaveGroup(group_id="g", members=[LeaveGroupMember(mid)]))
            classics.pop(mid)
        else:
            mx.tick(mx.now + rnd.choice([500, 2000, 7000]))
        g = mx.group()
        if g is not None:
            held: dict[tuple[uuid.UUID, int], str] = {}
            for mid, m in g.members.items():
                for a in (m.assigned, m.pending_revocation):
                    for tid, ps in a.items():
                        for p in ps:
                            assert held.setdefault((tid, p), mid) == mid, (seed, tid, p, held[(tid, p)], mid)
    co = GroupCoordinator(GroupCoordinatorConfig())
    for k, v in mx.records:
        co.replay(k, v)
    old, new = mx.group(), co._consumer_groups.get("g")
    assert (old is None) == (new is None)
    if old is not None:
        assert (new.group_epoch, new.assignment_epoch, new.target) == (old.group_epoch, old.assignment_epoch, old.target)
        assert {m: (v.current(), v.classic) for m, v in new.members.items()} == \
            {m: (v.current(), v.classic) for m, v in old.members.items()}
    elif (live := mx.co.group("g")) is not None and live.state in (GroupState.STABLE, GroupState.EMPTY):
        # a classic group persists its membership per completed generation
        assert set(co.group("g").members) == set(live.members)
