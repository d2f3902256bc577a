"""Random request sequences (fixed seeds) against the coordinator: internal invariants hold after
every step, every request is answered exactly once, and nothing is left waiting once sessions run
out. Catches wedged groups and lost or doubled answers that scripted scenarios may miss."""
from __future__ import annotations

import random

import pytest

from coordinator.group.coordinator import (GroupState, Heartbeat, JoinGroupResult, OffsetFetch, OffsetFetchGroup)
from tests.support.coordinator_harness import Harness, subscription

GROUPS = ["g1", "g2"]
CLIENTS = ["c1", "c2", "c3", "c4"]
INSTANCES = [None, None, "s1", "s2"]


def check_invariants(h: Harness) -> None:
    for gid in h.co.group_ids():
        g = h.co.group(gid)
        assert g.num_awaiting_join == sum(m.awaiting_join for m in g.members.values()), gid
        assert set(g.static_members.values()) <= set(g.members), gid
        assert all(g.members[mid].group_instance_id == i for i, mid in g.static_members.items()), gid
        assert not (set(g.pending_members) & set(g.members)), gid
        assert g.pending_sync_members <= set(g.members), gid
        if g.state == GroupState.EMPTY:
            assert not g.members, gid
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            assert g.members and g.leader_id in g.members, gid
        if g.state != GroupState.COMPLETING_REBALANCE:
            assert not any(m.awaiting_sync for m in g.members.values()), gid
        if g.state != GroupState.PREPARING_REBALANCE:
            assert g.num_awaiting_join == 0, gid
        if g.members:
            assert g.leader_id in g.members, gid
        assert g.state != GroupState.DEAD


def _continue_after(token: int):
    """Token counter that hands out ``token`` first, then the numbers after it."""
    yield token
    n = token + 1
    while True:
        yield n
        n += 1


@pytest.mark.parametrize("seed", range(40))
def test_random_sequences_keep_invariants_and_answer_everything(seed: int) -> None:
    rng = random.Random(seed)
    h = Harness(group_initial_rebalance_delay_ms=rng.choice([0, 3000]))
    sent: set = set()
    answered: dict = {}
    known: dict[tuple[str, str], tuple[str, int]] = {}     # (group, client) -> (member id, generation)
    owner: dict = {}                                        # request token -> (group, client)

    def record(step) -> None:
        for token, result in step.completions:
            assert token not in answered, f"token {token} answered twice"
            answered[token] = result
            if token not in owner:
                continue
            code = getattr(result, "error_code", None)
            if isinstance(result, JoinGroupResult) and code in (0, 79):
                known[owner[token]] = (result.member_id, result.generation_id)
            elif code in (25, 82):                          # like a client: forget the member id
                known.pop(owner[token], None)
        check_invariants(h)

    def send(req_fn, *args, **kw):
        token = next(h.tokens)                              # learn the token before the step is recorded
        owner[token] = (gid, client)
        h.tokens = _continue_after(token)
        token, step = req_fn(*args, **kw)
        sent.add(token)
        record(step)
        return token, step

    for _ in range(400):
        h.at(h.now + rng.choice([0, 0, 0, 10, 100, 500, 1000, 2000, 3000, 4000, 11000]))
        gid = rng.choice(GROUPS)
        i = rng.randrange(len(CLIENTS))
        client, instance = CLIENTS[i], INSTANCES[i]
        mine = known.get((gid, client))
        group = h.co.group(gid)
        op = rng.random()
        if op < 0.35:
            member_id = mine[0] if mine and rng.random() < 0.8 else ""
            topics = rng.choice([("t1",), ("t1", "t2")])
            send(h.join, gid, member_id, client_id=client, instance=instance,
                 version=rng.choice([3, 5, 9]), protocols=[("range", subscription(*topics))])
        elif op < 0.55 and mine and group is not None:
            member_id, _ = mine
            gen = group.generation_id if rng.random() < 0.9 else group.generation_id - 1
            assignments = [(m, b"x") for m in group.members] if group.is_leader(member_id) else []
            send(h.sync, member_id, gen, assignments, gid, instance=instance)
        elif op < 0.7 and mine and group is not None:
            send(h.send, Heartbeat(api_version=4, group_id=gid, generation_id=group.generation_id,
                                   member_id=mine[0], group_instance_id=instance))
        elif op < 0.78 and mine:
            send(h.leave, (mine[0], instance), group_id=gid)
            known.pop((gid, client), None)
        elif op < 0.88:
            gen = group.generation_id if (group is not None and mine) else -1
            send(h.commit, {("t1", rng.randrange(3)): rng.randrange(1000)}, gid,
                 generation=gen, member_id=mine[0] if (mine and gen >= 0) else "", instance=instance if gen >= 0 else None)
        elif op < 0.93:
            send(h.send, OffsetFetch(api_version=8, groups=[OffsetFetchGroup(gid)]))
        elif op < 0.94:
            send(h.delete_groups, gid)
        else:
            record(h.tick())

    # Let every session and rebalance run out: all parked requests must have been answered.
    for _ in range(10):
        h.at(h.now + 2_000_000)
        record(h.tick())
    assert sent == set(answered), f"unanswered: {sorted(sent - set(answered))}"
    for gid in h.co.group_ids():
        assert h.co.group(gid).state == GroupState.EMPTY
