"""Classic group membership and rebalance, driven with a fake clock; every outcome is exact.

Error codes: 22 ILLEGAL_GENERATION, 23 INCONSISTENT_GROUP_PROTOCOL, 24 INVALID_GROUP_ID,
25 UNKNOWN_MEMBER_ID, 26 INVALID_SESSION_TIMEOUT, 27 REBALANCE_IN_PROGRESS, 79 MEMBER_ID_REQUIRED,
81 GROUP_MAX_SIZE_REACHED, 82 FENCED_INSTANCE_ID.
"""
from __future__ import annotations

from coordinator.group.coordinator import JoinGroupMember, JoinGroupResult, SyncGroupResult
from coordinator.group.offsets_records import GroupMetadataKey, GroupMetadataValue, MemberMetadataValue
from tests.support.coordinator_harness import RANGE, Harness, decode_records, subscription

META = RANGE[0][1]


def joined(member_id: str, generation: int, leader: str, members: list[str] | None = None,
           protocol: str = "range", metadata: dict[str, bytes] | None = None) -> JoinGroupResult:
    meta = metadata or {}
    return JoinGroupResult(0, member_id, generation, "consumer", protocol, leader, False,
                           [JoinGroupMember(m, None, meta.get(m, META)) for m in (members or [])])


# =========================================================================== JoinGroup basics

def test_member_id_required_then_join_waits_out_the_initial_delay() -> None:
    h = Harness()
    token, step = h.join()
    assert h.result(token, step) == JoinGroupResult(79, "client-m1")
    # a new group is persisted even though nobody is a member yet
    assert decode_records(step.records) == [(GroupMetadataKey("g"), GroupMetadataValue("", 0, None, None, (), 0))]
    assert h.state() == "Empty"
    h.at(100)
    token, step = h.join("g", "client-m1")
    assert step.completions == [] and step.records == []
    assert h.state() == "PreparingRebalance"
    assert h.co.next_deadline() == 3100                 # group.initial.rebalance.delay.ms = 3000
    assert h.tick(3099).completions == []
    step = h.tick(3100)
    assert step.completions == [(token, joined("client-m1", 1, "client-m1", ["client-m1"]))]
    assert step.records == []
    assert h.state() == "CompletingRebalance"


def test_join_below_v4_gets_a_member_id_without_a_round_trip() -> None:
    h = Harness()
    token, step = h.join(version=3)
    assert step.completions == []
    step = h.tick(3000)
    assert step.completions == [(token, joined("client-m1", 1, "client-m1", ["client-m1"]))]


def test_v0_join_uses_the_session_timeout_as_rebalance_timeout() -> None:
    h = Harness(group_initial_rebalance_delay_ms=0)
    h.join(version=0, session=7000, rebalance=99999)
    assert h.co.group("g").members["client-m1"].rebalance_timeout_ms == 7000


def test_static_member_needs_no_member_id_round_trip() -> None:
    h = Harness()
    token, step = h.join(instance="inst-1", client_id="c1")
    assert step.completions == []
    step = h.tick(3000)
    assert step.completions == [(token, JoinGroupResult(0, "inst-1-m1", 1, "consumer", "range", "inst-1-m1", False,
                                                        [JoinGroupMember("inst-1-m1", "inst-1", META)]))]


def test_initial_delay_extends_while_members_keep_arriving() -> None:
    h = Harness()
    ta, _ = h.join(version=3, client_id="a")
    h.at(1000)
    tb, _ = h.join(version=3, client_id="b")
    assert h.tick(3000).completions == []               # b arrived: wait another delay
    assert h.co.next_deadline() == 6000
    h.at(5000)
    tc, _ = h.join(version=3, client_id="c")
    assert h.tick(6000).completions == []
    assert h.co.next_deadline() == 9000
    assert h.tick(8999).completions == []
    step = h.tick(9000)
    ids = ["a-m1", "b-m2", "c-m3"]
    assert step.completions == [(ta, joined("a-m1", 1, "a-m1", ids)), (tb, joined("b-m2", 1, "a-m1")),
                                (tc, joined("c-m3", 1, "a-m1"))]


def test_initial_delay_never_exceeds_the_rebalance_timeout() -> None:
    h = Harness()
    h.join(version=3, client_id="a", rebalance=5000)
    h.at(1000)
    h.join(version=3, client_id="b", rebalance=5000)
    assert h.tick(3000).completions == []
    assert h.co.next_deadline() == 5000                 # only 2000 ms of the 5000 ms timeout were left
    h.at(4000)
    h.join(version=3, client_id="c", rebalance=5000)
    step = h.tick(5000)                                 # no time left: complete despite the newcomer
    assert [r.generation_id for _, r in step.completions] == [1, 1, 1]


def test_zero_initial_delay_makes_a_single_member_stable_in_one_step() -> None:
    h = Harness(group_initial_rebalance_delay_ms=0)
    mid, token, step = h.new_member()
    assert step.completions == [(token, joined(mid, 1, mid, [mid]))]
    token, step = h.sync(mid, 1, [(mid, b"x")])
    assert step.completions == [(token, SyncGroupResult(0, "consumer", "range", b"x"))]
    assert h.state() == "Stable"


def test_protocol_is_elected_by_votes_among_protocols_every_member_supports() -> None:
    h = Harness()
    h.join(version=3, client_id="a", protocols=[("range", b"ra"), ("roundrobin", b"rra")])
    h.join(version=3, client_id="b", protocols=[("roundrobin", b"rrb"), ("range", b"rb")])
    h.join(version=3, client_id="c", protocols=[("roundrobin", b"rrc"), ("range", b"rc")])
    step = h.tick(6000)
    leader = step.completions[0][1]
    assert leader.protocol_name == "roundrobin"
    assert leader.members == [JoinGroupMember("a-m1", None, b"rra"), JoinGroupMember("b-m2", None, b"rrb"),
                              JoinGroupMember("c-m3", None, b"rrc")]


def test_votes_only_count_protocols_supported_by_all() -> None:
    h = Harness()
    h.join(version=3, client_id="a", protocols=[("sticky", b"s"), ("range", b"ra")])
    h.join(version=3, client_id="b", protocols=[("range", b"rb"), ("roundrobin", b"x")])
    step = h.tick(6000)
    assert [r.protocol_name for _, r in step.completions] == ["range", "range"]


# =========================================================================== JoinGroup errors

def test_invalid_group_id() -> None:
    h = Harness()
    assert h.result(*h.join("")) == JoinGroupResult(24, "")
    assert h.result(*h.join(None, "m")) == JoinGroupResult(24, "m")


def test_invalid_session_timeout() -> None:
    h = Harness()
    assert h.result(*h.join(session=5999)) == JoinGroupResult(26, "")
    assert h.result(*h.join("g", "x", session=1800001)) == JoinGroupResult(26, "x")
    assert h.state() is None                            # nothing was created
    assert h.result(*h.join(session=6000)).error_code == 79
    assert h.result(*h.join(session=1800000)).error_code == 79


def test_unknown_member_id() -> None:
    h = Harness()
    token, step = h.join("g", "ghost")
    assert h.result(token, step) == JoinGroupResult(25, "ghost")
    assert step.records == [] and h.state() is None     # a member id for a missing group creates nothing
    h.stable_group(1)
    assert h.result(*h.join("g", "ghost")) == JoinGroupResult(25, "ghost")


def test_inconsistent_group_protocol() -> None:
    h = Harness()
    members, _ = h.stable_group(1)
    assert h.result(*h.join(protocol_type="connect")) == JoinGroupResult(23, "")
    assert h.result(*h.join(protocols=[("roundrobin", b"")])) == JoinGroupResult(23, "")
    assert h.result(*h.join("g", members[0], protocol_type="connect")) == JoinGroupResult(23, members[0])
    assert h.state() == "Stable"
    # an Empty group needs a protocol type and at least one protocol
    assert h.result(*h.join("other", protocols=[])) == JoinGroupResult(23, "")
    assert h.result(*h.join("other", protocol_type="")) == JoinGroupResult(23, "")


def test_group_max_size_reached() -> None:
    h = Harness(group_max_size=2)
    members, gen = h.stable_group(2)
    assert h.result(*h.join()) == JoinGroupResult(81, "")          # Stable and full
    # During a rebalance new members are accepted while fewer than max have (re)joined...
    h.join("g", members[0])                                           # leader rejoins: PreparingRebalance
    m3, t3, step = h.new_member()
    assert step.completions == []
    # ...and the last existing member to rejoin is the one turned away (and removed).
    assert h.result(*h.join("g", members[1])) == JoinGroupResult(81, "")
    assert list(h.co.group("g").members) == [members[0], m3]
    step = h.tick(h.now + 30000)                                      # join completes at the timeout
    assert [(r.member_id, r.generation_id) for _, r in step.completions] == [(members[0], 2), (m3, 2)]


# =========================================================================== rebalance flow

def test_leader_is_the_first_joiner_and_stays_leader_across_rebalances() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    assert gen == 1
    c, tc, _ = h.new_member()                  # new member: rebalance
    assert h.state() == "PreparingRebalance"
    tb, _ = h.join("g", b)
    ta, step = h.join("g", a)                  # last one in completes the join at once
    assert {t: r.leader for t, r in step.completions} == {ta: a, tb: a, tc: a}
    assert {t: r.generation_id for t, r in step.completions} == {ta: 2, tb: 2, tc: 2}
    assert h.result(ta, step).members == [JoinGroupMember(m, None, META) for m in (a, b, c)]
    assert h.result(tb, step).members == []


def test_follower_rejoin_with_same_metadata_in_stable_returns_current_generation() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    assert h.result(*h.join("g", b)) == joined(b, 1, a)
    assert h.state() == "Stable"
    token, step = h.join("g", b, protocols=[("range", subscription("t1", "t2"))])
    assert step.completions == []
    assert h.state() == "PreparingRebalance"


def test_leader_rejoin_in_stable_always_rebalances() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ta, step = h.join("g", a)
    assert step.completions == [] and h.state() == "PreparingRebalance"
    assert h.heartbeat(b, 1) == 27
    tb, step = h.join("g", b)
    assert step.completions == [(ta, joined(a, 2, a, [a, b])), (tb, joined(b, 2, a))]


def test_missing_members_are_removed_at_the_rebalance_timeout() -> None:
    h = Harness()
    (a, b, c), gen = h.stable_group(3)
    t0 = h.now
    ta, _ = h.join("g", a)
    tb, _ = h.join("g", b)
    for t in range(t0 + 5000, t0 + 30000, 5000):
        assert h.at(t).heartbeat(c, 1) == 27   # c stays alive and is told to rejoin, but does not
    step = h.tick(t0 + 30000)
    assert step.completions == [(ta, joined(a, 2, a, [a, b])), (tb, joined(b, 2, a))]
    assert list(h.co.group("g").members) == [a, b]
    assert h.heartbeat(c, 1) == 25


def test_leader_that_does_not_rejoin_is_replaced_by_the_first_member_that_did() -> None:
    h = Harness()
    (a, b, c), _ = h.stable_group(3)
    t0 = h.now
    tc, _ = h.join("g", c, protocols=[("range", b"new")])   # metadata change triggers the rebalance
    tb, _ = h.join("g", b)
    for t in range(t0 + 5000, t0 + 30000, 5000):
        assert h.at(t).heartbeat(a, 1) == 27   # the leader is alive but never rejoins
    step = h.tick(t0 + 30000)
    results = dict(step.completions)
    assert list(results) == [tb, tc]
    assert results[tb] == joined(b, 2, b, [b, c], metadata={c: b"new"})
    assert results[tc] == joined(c, 2, b)


def test_completing_rebalance_rejoin_with_same_metadata_repeats_the_answer() -> None:
    h = Harness()
    a, ta, _ = h.new_member()
    b, tb, _ = h.new_member()
    h.tick(6000)
    assert h.state() == "CompletingRebalance"
    assert h.result(*h.join("g", a)) == joined(a, 1, a, [a, b])
    assert h.result(*h.join("g", b)) == joined(b, 1, a)
    assert h.state() == "CompletingRebalance"


def test_completing_rebalance_rejoin_with_new_metadata_restarts_and_releases_parked_syncs() -> None:
    h = Harness()
    a, _, _ = h.new_member()
    b, _, _ = h.new_member()
    h.tick(6000)
    ts, step = h.sync(b, 1)
    assert step.completions == []
    tb, step = h.join("g", b, protocols=[("range", b"changed")])
    assert step.completions == [(ts, SyncGroupResult(27))]
    assert h.state() == "PreparingRebalance"


def test_a_new_member_dropped_if_the_rebalance_outlasts_the_new_member_timeout() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1, session=1800000, rebalance=600000)
    t0 = h.now
    b, tb, step = h.new_member()               # rebalance timeout of the group: 600000
    assert step.completions == []
    step = h.tick(t0 + 300000)                 # new members expire after 5 minutes
    assert step.completions == [(tb, JoinGroupResult(25, ""))]
    assert list(h.co.group("g").members) == [a] and h.state() == "PreparingRebalance"
    step = h.tick(t0 + 600000)                 # a never rejoined: removed, the group is empty
    assert h.state() == "Empty"
    assert decode_records(step.records) == [
        (GroupMetadataKey("g"), GroupMetadataValue("consumer", 2, None, None, (), t0 + 600000))]


def test_pending_member_expires_after_its_session_timeout() -> None:
    h = Harness()
    first = h.result(*h.join())
    assert h.co.next_deadline() == 10000
    h.tick(10000)
    assert h.co.group("g").pending_members == {}
    assert h.result(*h.at(10001).join("g", first.member_id)) == JoinGroupResult(25, first.member_id)


def test_pending_member_holds_the_join_phase_until_it_joins() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)
    first = h.result(*h.join())                # c got its member id but has not joined yet
    ta, _ = h.join("g", a)
    tb, step = h.join("g", b)
    assert step.completions == []              # waits for the pending member
    tc, step = h.join("g", first.member_id)
    assert [t for t, _ in step.completions] == [ta, tb, tc]
    assert h.result(ta, step).members == [JoinGroupMember(m, None, META) for m in (a, b, first.member_id)]


# =========================================================================== SyncGroup

def test_followers_wait_for_the_leader_and_assignment_is_persisted_first() -> None:
    h = Harness()
    a, _, _ = h.new_member(client_host="/10.0.0.1")
    b, _, _ = h.new_member(client_host="/10.0.0.2")
    h.tick(6000)
    tb, step = h.sync(b, 1)
    assert step.completions == [] and step.records == []
    ta, step = h.sync(a, 1, [(a, b"asg-a"), ("stranger", b"zzz")])   # b missing: gets an empty assignment
    assert step.completions == [(ta, SyncGroupResult(0, "consumer", "range", b"asg-a")),
                                (tb, SyncGroupResult(0, "consumer", "range", b""))]
    assert decode_records(step.records) == [(GroupMetadataKey("g"), GroupMetadataValue(
        "consumer", 1, "range", a,
        (MemberMetadataValue(a, "client", "/10.0.0.1", 10000, META, b"asg-a", 30000, None),
         MemberMetadataValue(b, "client", "/10.0.0.2", 10000, META, b"", 30000, None)), 6000))]
    assert h.state() == "Stable"
    # in Stable a SyncGroup simply returns the current assignment
    assert h.result(*h.sync(a, 1)) == SyncGroupResult(0, "consumer", "range", b"asg-a")


def test_sync_group_errors() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    assert h.result(*h.sync(a, 1, group_id="")) == SyncGroupResult(24)
    assert h.result(*h.sync(a, 1, group_id="nope")) == SyncGroupResult(25)
    assert h.result(*h.sync("ghost", 1)) == SyncGroupResult(25)
    assert h.result(*h.sync(a, 2)) == SyncGroupResult(22)
    assert h.result(*h.sync(a, 1, protocol_type="connect")) == SyncGroupResult(23)
    assert h.result(*h.sync(a, 1, protocol_name="roundrobin")) == SyncGroupResult(23)
    assert h.result(*h.sync(a, 1, protocol_type="consumer", protocol_name="range")).error_code == 0
    assert h.result(*h.sync(a, 1, instance="i")) == SyncGroupResult(25)
    h.join("g", a)
    assert h.result(*h.sync(b, 1)) == SyncGroupResult(27)                 # PreparingRebalance


def test_member_that_never_syncs_is_removed_after_the_rebalance_timeout() -> None:
    h = Harness()
    a, _, _ = h.new_member()
    b, _, _ = h.new_member()
    h.tick(6000)
    h.sync(a, 1, [(a, b"x"), (b, b"y")])
    assert h.state() == "Stable"
    assert h.co.next_deadline() == 16000       # session timers restart at the join answer (6000 + 10000)
    for t in range(10000, 36000, 5000):
        h.at(t)
        assert (h.heartbeat(a, 1), h.heartbeat(b, 1)) == (0, 0)
    step = h.tick(36000)                       # b heartbeats but never sent SyncGroup
    assert step.completions == []
    assert list(h.co.group("g").members) == [a]
    assert h.state() == "PreparingRebalance"


# =========================================================================== Heartbeat

def test_heartbeat_in_each_state() -> None:
    h = Harness()
    assert h.heartbeat("m", 0, group_id="") == 24
    assert h.heartbeat("m", 0, group_id="nope") == 25
    a, _, _ = h.new_member()
    assert h.heartbeat(a, 0) == 27             # PreparingRebalance (initial join parked)
    h.tick(3000)
    assert h.heartbeat(a, 1) == 0              # CompletingRebalance
    assert h.heartbeat(a, 0) == 22
    h.sync(a, 1, [(a, b"")])
    assert h.heartbeat(a, 1) == 0              # Stable
    assert h.heartbeat("ghost", 1) == 25
    h.leave(a)
    assert h.state() == "Empty"
    assert h.heartbeat(a, 2) == 25             # Empty


def test_session_expiry_removes_the_member_and_rebalances() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)             # stable at 6000; sessions run to 16000
    h.at(12000)
    assert h.heartbeat(a, 1) == 0             # a's session now runs to 22000
    assert h.tick(15999).completions == []
    h.tick(16000)
    assert list(h.co.group("g").members) == [a]
    assert h.state() == "PreparingRebalance"
    h.at(17000)
    assert h.heartbeat(a, 1) == 27
    token, step = h.at(18000).join("g", a)
    assert step.completions == [(token, joined(a, 2, a, [a]))]


def test_last_member_expiring_empties_the_group() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1)               # stable at 3000
    step = h.tick(13000)
    assert h.state() == "Empty"
    assert decode_records(step.records) == [
        (GroupMetadataKey("g"), GroupMetadataValue("consumer", 2, None, None, (), 13000))]
    assert h.describe("g")[0].group_state == "Empty"


def test_heartbeats_keep_a_member_alive() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1)
    for t in range(7000, 60000, 4000):
        h.at(t)
        assert h.heartbeat(a, 1) == 0
    assert h.state() == "Stable"


# =========================================================================== LeaveGroup

def test_batched_leave_triggers_one_rebalance() -> None:
    h = Harness()
    (a, b, c), _ = h.stable_group(3)
    token, step = h.leave(b, c, "ghost")
    res = h.result(token, step)
    assert res.error_code == 0
    assert [(m.member_id, m.error_code) for m in res.members] == [(b, 0), (c, 0), ("ghost", 25)]
    assert h.state() == "PreparingRebalance"
    token, step = h.join("g", a)
    assert step.completions == [(token, joined(a, 2, a, [a]))]


def test_leave_errors() -> None:
    h = Harness()
    assert h.result(*h.leave("m", group_id="")).error_code == 24
    res = h.result(*h.leave("m", ("", "inst"), group_id="nope"))
    assert res.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in res.members] == \
        [("m", None, 25), ("", "inst", 25)]
    assert res.legacy_error_code == 25
    (a,), _ = h.stable_group(1)
    assert h.result(*h.leave(a)).legacy_error_code == 0


def test_pending_member_can_leave() -> None:
    h = Harness()
    first = h.result(*h.join())
    res = h.result(*h.leave(first.member_id))
    assert [(m.member_id, m.error_code) for m in res.members] == [(first.member_id, 0)]
    assert h.co.group("g").pending_members == {}


def test_leave_while_own_join_is_parked_does_not_wedge_the_group() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)
    ta, _ = h.join("g", a)                     # a's JoinGroup is parked...
    tl, step = h.leave(a)                      # ...then a leaves (e.g. the consumer closes)
    assert (ta, JoinGroupResult(25, "")) in step.completions
    assert h.result(tl, step).members[0].error_code == 0
    tb, step = h.join("g", b)                  # the remaining member completes the rebalance
    assert step.completions == [(tb, joined(b, 2, b, [b]))]


def test_last_members_leaving_during_a_rebalance_empty_the_group_at_once() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)
    ta, _ = h.join("g", a)
    tl, step = h.leave(a)
    assert (ta, JoinGroupResult(25, "")) in step.completions
    assert h.state() == "PreparingRebalance"
    h.at(7000)
    tl, step = h.leave(b)                      # nobody left to wait for: no rebalance timeout
    assert h.state() == "Empty"
    assert decode_records(step.records) == [
        (GroupMetadataKey("g"), GroupMetadataValue("consumer", 2, None, None, (), 7000))]


def test_member_leaving_during_the_initial_delay_leaves_an_empty_generation() -> None:
    h = Harness()
    a, ta, _ = h.new_member()
    tl, step = h.leave(a)
    assert (ta, JoinGroupResult(25, "")) in step.completions
    assert h.state() == "PreparingRebalance"
    step = h.tick(3000)
    assert h.state() == "Empty"
    assert decode_records(step.records) == [
        (GroupMetadataKey("g"), GroupMetadataValue("consumer", 1, None, None, (), 3000))]
    b, tb, _ = h.new_member()                  # the group is usable again
    step = h.tick(6000)
    assert step.completions == [(tb, joined(b, 2, b, [b]))]


# =========================================================================== static membership

def static_group(h: Harness, *instances: str, version: int = 9,
                 protocols: dict[str, list[tuple[str, bytes]]] | None = None) -> dict[str, str]:
    tokens = [h.join(instance=i, client_id=f"c-{i}", version=version,
                     protocols=(protocols or {}).get(i))[0] for i in instances]
    step = h.tick(h.co.next_deadline())
    while not step.completions:
        step = h.tick(h.co.next_deadline())
    ids = {i: h.result(t, step).member_id for i, t in zip(instances, tokens)}
    leader = h.result(tokens[0], step).leader
    for i, mid in ids.items():
        if mid != leader:
            h.sync(mid, 1, instance=i)
    h.sync(leader, 1, [(m, b"a-" + i.encode()) for i, m in ids.items()], instance=instances[0])
    assert h.state() == "Stable"
    return ids


def test_static_member_restart_in_stable_rejoins_without_rebalance() -> None:
    h = Harness()
    ids = static_group(h, "i1", "i2")
    assert ids == {"i1": "i1-m1", "i2": "i2-m2"}
    h.at(7000)
    token, step = h.join(instance="i2", client_id="c-i2")       # i2 restarted: no member id
    assert step.completions == [(token, joined("i2-m3", 1, "i1-m1"))]
    assert h.state() == "Stable"
    assert decode_records(step.records) == [(GroupMetadataKey("g"), GroupMetadataValue(
        "consumer", 1, "range", "i1-m1",
        (MemberMetadataValue("i1-m1", "c-i1", "/127.0.0.1", 10000, META, b"a-i1", 30000, "i1"),
         MemberMetadataValue("i2-m3", "c-i2", "/127.0.0.1", 10000, META, b"a-i2", 30000, "i2")), 6000))]
    assert h.result(*h.sync("i2-m3", 1, instance="i2")) == SyncGroupResult(0, "consumer", "range", b"a-i2")
    assert h.heartbeat("i2-m2", 1, instance="i2") == 82            # the old incarnation is fenced
    assert h.heartbeat("i2-m2", 1) == 25
    assert h.heartbeat("i2-m3", 1, instance="i2") == 0


def test_static_leader_restart_v9_is_told_to_skip_assignment() -> None:
    h = Harness()
    static_group(h, "i1", "i2")
    token, step = h.at(7000).join(instance="i1", client_id="c-i1")
    res = h.result(token, step)
    assert res == JoinGroupResult(0, "i1-m3", 1, "consumer", "range", "i1-m3", True,
                                  [JoinGroupMember("i1-m3", "i1", META), JoinGroupMember("i2-m2", "i2", META)])
    assert h.state() == "Stable"


def test_static_leader_restart_before_v9_gets_the_old_leader_id() -> None:
    h = Harness()
    static_group(h, "i1", "i2", version=5)
    res = h.result(*h.at(7000).join(instance="i1", client_id="c-i1", version=5))
    assert res == JoinGroupResult(0, "i1-m3", 1, "consumer", "range", "i1-m1", False, [])
    assert h.co.group("g").leader_id == "i1-m3"


def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    h = Harness()
    both = [("range", b"r"), ("roundrobin", b"rr")]
    flipped = [("roundrobin", b"rr"), ("range", b"r")]
    static_group(h, "i1", "i2", "i3", protocols={"i1": both, "i2": flipped, "i3": both})
    assert h.co.group("g").protocol_name == "range"
    token, step = h.join(instance="i3", client_id="c-i3", protocols=flipped)
    assert step.completions == []
    assert h.state() == "PreparingRebalance"


def test_static_rejoin_during_completing_rebalance_restarts_the_rebalance() -> None:
    h = Harness()
    t1, _ = h.join(instance="i1")
    t2, _ = h.join(instance="i2")
    h.tick(6000)
    ts, _ = h.sync("i2-m2", 1, instance="i2")           # parked: the leader has not synced
    token, step = h.join(instance="i2")                 # i2 restarts meanwhile
    assert step.completions == [(ts, SyncGroupResult(82))]
    assert h.state() == "PreparingRebalance"
    t1, step = h.join("g", "i1-m1", instance="i1")
    assert [(t, r.member_id, r.generation_id) for t, r in step.completions] == \
        [(t1, "i1-m1", 2), (token, "i2-m3", 2)]


def test_static_restart_fences_a_parked_join_of_the_old_incarnation() -> None:
    h = Harness()
    static_group(h, "i1", "i2")
    told, _ = h.join("g", "i1-m1", instance="i1")         # leader rejoin: PreparingRebalance
    tnew, step = h.join(instance="i1")
    assert step.completions == [(told, JoinGroupResult(82, "i1-m1"))]
    t2, step = h.join("g", "i2-m2", instance="i2")
    assert [(t, r.member_id, r.leader) for t, r in step.completions] == \
        [(tnew, "i1-m3", "i1-m3"), (t2, "i2-m2", "i1-m3")]


def test_static_member_errors() -> None:
    h = Harness()
    static_group(h, "i1")
    assert h.result(*h.join("g", "i1-bogus", instance="i1")) == JoinGroupResult(82, "i1-bogus")
    assert h.result(*h.join("g", "i1-m1", instance="nobody")) == JoinGroupResult(25, "i1-m1")
    res = h.result(*h.leave(("i1-bogus", "i1")))
    assert [(m.member_id, m.error_code) for m in res.members] == [("i1-bogus", 82)]


def test_static_members_are_kept_when_they_miss_a_rebalance() -> None:
    h = Harness()
    static_group(h, "i1", "i2")
    t0 = h.now
    t1, _ = h.join("g", "i1-m1", instance="i1")
    for t in range(t0 + 5000, t0 + 30000, 5000):
        assert h.at(t).heartbeat("i2-m2", 1, instance="i2") == 27
    step = h.tick(t0 + 30000)
    assert step.completions == [(t1, JoinGroupResult(0, "i1-m1", 2, "consumer", "range", "i1-m1", False,
                                                     [JoinGroupMember("i1-m1", "i1", META),
                                                      JoinGroupMember("i2-m2", "i2", META)]))]
    assert list(h.co.group("g").members) == ["i1-m1", "i2-m2"]
    assert h.heartbeat("i2-m2", 1, instance="i2") == 22


def test_leave_by_group_instance_id() -> None:
    h = Harness()
    static_group(h, "i1", "i2")
    res = h.result(*h.leave(("", "i2")))
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in res.members] == [("", "i2", 0)]
    assert list(h.co.group("g").members) == ["i1-m1"]
    assert h.state() == "PreparingRebalance"


# =========================================================================== generations

def test_generation_increments_on_every_completed_join() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    assert gen == 1
    ta, _ = h.join("g", a)
    tb, step = h.join("g", b)
    assert h.result(tb, step).generation_id == 2
    h.sync(b, 2)
    h.sync(a, 2, [(a, b""), (b, b"")])
    h.leave(a, b)
    assert h.state() == "Empty"
    assert h.co.group("g").generation_id == 3


# =========================================================================== oversized metadata

def test_assignment_record_too_large_fails_the_sync_and_restarts_the_rebalance() -> None:
    # Kafka cannot append a GroupMetadata record over message.max.bytes (here a member joined with a
    # 1 MB subscription): every waiting SyncGroup gets UNKNOWN_SERVER_ERROR and nothing is stored.
    h = Harness()
    (a,), _ = h.stable_group(1)
    h.commit({("t", 0): 42}, generation=1, member_id=a)
    big = [("range", b"\x00\x01" + b"x" * (1024 * 1024))]
    b, tb, _ = h.new_member(protocols=big)
    ta, step = h.join("g", a)
    assert [r.generation_id for _, r in step.completions] == [2, 2]
    tsb, _ = h.sync(b, 2)
    log_size = len(h.log)
    tsa, step = h.sync(a, 2, [(a, b"x"), (b, b"y")])
    assert step.completions == [(tsa, SyncGroupResult(-1)), (tsb, SyncGroupResult(-1))]
    assert step.records == [] and len(h.log) == log_size
    assert h.state() == "PreparingRebalance"
    assert h.fetched() == {("t", 0): (42, -1, "", 0)}


def test_batch_size_estimate_matches_a_real_record_batch() -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from coordinator.group.coordinator import batch_size_of
    for key, value in [(b"k", b"v"), (b"k", None), (b"k" * 64, b""), (b"k" * 10, b"v" * 100000)]:
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                            producer_epoch=-1, base_sequence=-1, batch_size=2**30)
        builder.append(0, timestamp=0, key=key, value=value, headers=[])
        assert batch_size_of((key, value)) == len(builder.build())


def test_static_rejoin_that_cannot_be_stored_keeps_the_old_member() -> None:
    h = Harness(max_message_bytes=2000)
    static_group(h, "i1", "i2")
    token, step = h.join(instance="i2", protocols=[("range", b"\x00\x01" + b"x" * 3000)])
    assert step.completions == [(token, JoinGroupResult(-1, "", 1, "consumer", "range", "i1-m1"))]
    assert step.records == []
    assert list(h.co.group("g").members) == ["i1-m1", "i2-m2"]
    assert h.heartbeat("i2-m2", 1, instance="i2") == 0
    assert h.co.group("g").members["i2-m2"].protocols == RANGE
    assert h.state() == "Stable"
