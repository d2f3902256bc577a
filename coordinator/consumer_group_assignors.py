"""The server-side assignors of KIP-848 consumer groups: ``uniform`` (Kafka's default) and
``range``, pure functions of the members' subscriptions, the topics' partition counts and the
previous target assignment.

``uniform`` gives every member as even a share of the partitions it subscribes to as possible
while keeping each member's previous partitions where it can (sticky), as Kafka's UniformAssignor
does; the exact placement can differ from Kafka's (its heterogeneous algorithm is heuristic too),
the properties (balance within one partition for equal subscriptions, stickiness) are the same.
``range`` gives each member subscribed to a topic a contiguous range of its partitions, members in
member-id order, like Kafka's RangeAssignor without its rack and stickiness refinements.
Deterministic: ties go to the member that comes first in the given order.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

Assignment = dict[uuid.UUID, frozenset[int]]
TopicPartition = tuple[uuid.UUID, int]

UNIFORM, RANGE = "uniform", "range"
ASSIGNORS = (UNIFORM, RANGE)


def _to_assignment(tps: set[TopicPartition]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for tid, p in tps:
        out.setdefault(tid, set()).add(p)
    return {tid: frozenset(ps) for tid, ps in out.items()}


def uniform(members: Sequence[tuple[str, frozenset[uuid.UUID]]], topics: Mapping[uuid.UUID, int],
            previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """Sticky, balanced: keep what each member had (if still subscribed and existing), hand out
    the rest to the least-loaded eligible member, then move partitions from members holding two
    or more than an eligible peer until no such move exists."""
    subs = {mid: frozenset(t for t in ts if t in topics) for mid, ts in members}
    order = {mid: i for i, (mid, _) in enumerate(members)}
    owned: dict[str, set[TopicPartition]] = {mid: set() for mid in subs}
    taken: set[TopicPartition] = set()
    for mid in subs:
        for tid, ps in previous.get(mid, {}).items():
            if tid in subs[mid]:
                for p in ps:
                    if p < topics[tid] and (tid, p) not in taken:
                        owned[mid].add((tid, p))
                        taken.add((tid, p))
    eligible: dict[uuid.UUID, list[str]] = {}
    for mid, ts in subs.items():
        for tid in ts:
            eligible.setdefault(tid, []).append(mid)
    # Cap sticky holdings at the fair share first when subscriptions are all equal (common case).
    homogeneous = len(set(subs.values())) <= 1
    if homogeneous and subs:
        total = sum(topics[t] for t in next(iter(subs.values())))
        base, extra = divmod(total, len(subs))
        for i, mid in enumerate(sorted(subs, key=lambda m: (-len(owned[m]), order[m]))):
            quota = base + (1 if i < extra else 0)
            for tp in sorted(owned[mid])[quota:]:
                owned[mid].discard(tp)
                taken.discard(tp)
    for tid in sorted(eligible, key=str):
        for p in range(topics[tid]):
            if (tid, p) not in taken:
                mid = min(eligible[tid], key=lambda m: (len(owned[m]), order[m]))
                owned[mid].add((tid, p))
                taken.add((tid, p))
    moved = True
    while moved:          # balance heterogeneous subscriptions: move one partition at a time
        moved = False
        for mid in sorted(owned, key=lambda m: (-len(owned[m]), order[m])):
            for tp in sorted(owned[mid]):
                target = min(eligible[tp[0]], key=lambda m: (len(owned[m]), order[m]))
                if len(owned[target]) + 1 < len(owned[mid]):
                    owned[mid].discard(tp)
                    owned[target].add(tp)
                    moved = True
                    break
            if moved:
                break
    return {mid: _to_assignment(tps) for mid, tps in owned.items()}


def range_(members: Sequence[tuple[str, frozenset[uuid.UUID]]], topics: Mapping[uuid.UUID, int],
           previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    out: dict[str, set[TopicPartition]] = {mid: set() for mid, _ in members}
    for tid, n in topics.items():
        subscribers = sorted(mid for mid, ts in members if tid in ts)
        if not subscribers:
            continue
        base, extra = divmod(n, len(subscribers))
        start = 0
        for i, mid in enumerate(subscribers):
            count = base + (1 if i < extra else 0)
            out[mid].update((tid, p) for p in range(start, start + count))
            start += count
    return {mid: _to_assignment(tps) for mid, tps in out.items()}


def assign(name: str, members: Sequence[tuple[str, frozenset[uuid.UUID]]], topics: Mapping[uuid.UUID, int],
           previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    return (range_ if name == RANGE else uniform)(members, topics, previous)
