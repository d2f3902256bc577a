"""The server-side assignors of KIP-848 consumer groups: ``uniform`` (Kafka's default) and
``range``, pure functions of the members' subscriptions, the topics' partition counts and the
previous target assignment.

``uniform`` gives every member as even a share of the partitions it subscribes to as possible
while keeping each member's previous partitions where it can (sticky), as Kafka's UniformAssignor
does; the exact placement can differ from Kafka's (its heterogeneous algorithm is heuristic too),
the properties (balance within one partition for equal subscriptions, stickiness) are the same.
``range`` gives each member subscribed to a topic a contiguous range of its partitions, members in
member-id order, like Kafka's RangeAssignor without its stickiness refinement.
Deterministic: ties go to the member that comes first in the given order.

Rack awareness (KIP-881's rule, as the client-side assignors apply it and Kafka's server-side ones
did before 3.8): used only when members have racks, partitions have replica racks, and some
partition is not on every member rack. Then ``range`` first gives each member, within its range
quota, the partitions of the topic that have a replica on its rack (in partition order), and fills
the quotas with the rest in order; ``uniform`` keeps a member's previous partitions only where
its rack matches (or no subscribed member's rack does), hands each free partition to the
least-loaded member on one of its replicas' racks while that member is below its fair share (equal
subscriptions), the rest to the least-loaded member, and moves off-rack partitions first when
balancing. Balance always wins over rack locality.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

Assignment = dict[uuid.UUID, frozenset[int]]
TopicPartition = tuple[uuid.UUID, int]

UNIFORM, RANGE = "uniform", "range"
ASSIGNORS = (UNIFORM, RANGE)

PartitionRacks = Mapping[uuid.UUID, Sequence[frozenset[str]]]


class _Racks:
    """The rack view of one assignment: member racks and partition replica racks, or inert."""

    def __init__(self, topics: Mapping[uuid.UUID, int], member_racks: Mapping[str, str | None] | None, partition_racks: PartitionRacks | None) -> None:
        self.member = {mid: r for mid, r in (member_racks or {}).items() if r}
        self.partition = partition_racks or {}
        racks = set(self.member.values())
        self.active = bool(racks) and any(
            not racks <= set(pr) for tid in topics for pr in self.partition.get(tid, ()))

    def racks_of(self, tid: uuid.UUID, p: int) -> frozenset[str]:
        pr = self.partition.get(tid, ())
        return pr[p] if p < len(pr) else frozenset()

    def match(self, mid: str, tid: uuid.UUID, p: int) -> bool:
        return self.active and self.member.get(mid) in self.racks_of(tid, p)


def _to_assignment(tps: set[TopicPartition]) -> Assignment:
    out: dict[uuid.UUID, set[int]] = {}
    for tid, p in tps:
        out.setdefault(tid, set()).add(p)
    return {tid: frozenset(ps) for tid, ps in out.items()}


def uniform(members: Sequence[tuple[str, frozenset[uuid.UUID]]], topics: Mapping[uuid.UUID, int],
            previous: Mapping[str, Assignment], member_racks: Mapping[str, str | None] | None = None,
            partition_racks: PartitionRacks | None = None) -> dict[str, Assignment]:
    """Sticky, balanced: keep what each member had (if still subscribed and existing), hand out
    the rest to the least-loaded eligible member, then move partitions from members holding two
    or more than an eligible peer until no such move exists (racks: see the module doc)."""
    subs = {mid: frozenset(t for t in ts if t in topics) for mid, ts in members}
    order = {mid: i for i, (mid, _) in enumerate(members)}
    racks = _Racks(topics, member_racks, partition_racks)
    owned: dict[str, set[TopicPartition]] = {mid: set() for mid in subs}
    taken: set[TopicPartition] = set()
    eligible: dict[uuid.UUID, list[str]] = {}
    for mid, ts in subs.items():
        for tid in ts:
            eligible.setdefault(tid, []).append(mid)

    def local_somewhere(tid: uuid.UUID, p: int) -> bool:
        return any(racks.match(m, tid, p) for m in eligible.get(tid, ()))

    for mid in subs:
        for tid, ps in previous.get(mid, {}).items():
            if tid in subs[mid]:
                for p in ps:
                    if p < topics[tid] and (tid, p) not in taken and (
                            not racks.active or racks.match(mid, tid, p) or not local_somewhere(tid, p)):
                        owned[mid].add((tid, p))
                        taken.add((tid, p))
    # Cap sticky holdings at the fair share first when subscriptions are all equal (common case).
    homogeneous = len(set(subs.values())) <= 1
    if homogeneous and subs:
        total = sum(topics[t] for t in next(iter(subs.values())))
        base, extra = divmod(total, len(subs))
        for i, mid in enumerate(sorted(subs, key=lambda m: (-len(owned[m]), order[m]))):
            quota = base + (1 if i < extra else 0)
            for tp in sorted(owned[mid], key=lambda tp: (not racks.match(mid, *tp), tp))[quota:]:
                owned[mid].discard(tp)
                taken.discard(tp)
    if racks.active:
        # rack-local first: each partition with a replica on some member's rack goes to the
        # least-loaded such member below the fair cap (equal subscriptions) ...
        cap = None
        if homogeneous and subs:
            cap = -(-sum(topics[t] for t in next(iter(subs.values()))) // len(subs))
        for tid in sorted(eligible, key=str):
            for p in range(topics[tid]):
                local = [m for m in eligible[tid] if racks.match(m, tid, p)]
                if (tid, p) in taken or not local:
                    continue
                best = min(local, key=lambda m: (len(owned[m]), order[m]))
                if cap is None or len(owned[best]) < cap:
                    owned[best].add((tid, p))
                    taken.add((tid, p))
    for tid in sorted(eligible, key=str):       # ... then the rest to the least-loaded
        for p in range(topics[tid]):
            if (tid, p) not in taken:
                mid = min(eligible[tid], key=lambda m: (len(owned[m]), order[m]))
                owned[mid].add((tid, p))
                taken.add((tid, p))
    moved = True
    while moved:          # balance heterogeneous subscriptions: move one partition at a time
        moved = False
        for mid in sorted(owned, key=lambda m: (-len(owned[m]), order[m])):
            # partitions off the member's rack move first; a rack-local receiver is preferred
            for tp in sorted(owned[mid], key=lambda tp: (racks.match(mid, *tp), tp)):
                target = min(eligible[tp[0]], key=lambda m: (len(owned[m]), not racks.match(m, *tp), order[m]))
                if len(owned[target]) + 1 < len(owned[mid]):
                    owned[mid].discard(tp)
                    owned[target].add(tp)
                    moved = True
                    break
            if moved:
                break
    return {mid: _to_assignment(tps) for mid, tps in owned.items()}


def range_(members: Sequence[tuple[str, frozenset[uuid.UUID]]], topics: Mapping[uuid.UUID, int],
           previous: Mapping[str, Assignment], member_racks: Mapping[str, str | None] | None = None,
           partition_racks: PartitionRacks | None = None) -> dict[str, Assignment]:
    racks = _Racks(topics, member_racks, partition_racks)
    out: dict[str, set[TopicPartition]] = {mid: set() for mid, _ in members}
    for tid, n in topics.items():
        subscribers = sorted(mid for mid, ts in members if tid in ts)
        if not subscribers:
            continue
        base, extra = divmod(n, len(subscribers))
        if not racks.active:
            start = 0
            for i, mid in enumerate(subscribers):
                count = base + (1 if i < extra else 0)
                out[mid].update((tid, p) for p in range(start, start + count))
                start += count
            continue
        # KIP-881's rack-aware range: rack-local partitions first within each member's quota
        # (a member takes the extra partition while extras remain), then the rest in order.
        unassigned = list(range(n))
        got: dict[str, list[int]] = {mid: [] for mid in subscribers}
        extras = extra
        for mid in subscribers:
            quota = base + (1 if extras > 0 else 0)
            for p in [p for p in unassigned if racks.match(mid, tid, p)][:quota]:
                got[mid].append(p)
                unassigned.remove(p)
            if len(got[mid]) > base:
                extras -= 1
        for mid in subscribers:
            while len(got[mid]) < base and unassigned:
                got[mid].append(unassigned.pop(0))
        for mid in subscribers:
            if extras > 0 and len(got[mid]) == base and unassigned:
                got[mid].append(unassigned.pop(0))
                extras -= 1
        for mid in subscribers:
            out[mid].update((tid, p) for p in got[mid])
    return {mid: _to_assignment(tps) for mid, tps in out.items()}


def assign(name: str, members: Sequence[tuple[str, frozenset[uuid.UUID]]], topics: Mapping[uuid.UUID, int],
           previous: Mapping[str, Assignment], member_racks: Mapping[str, str | None] | None = None,
           partition_racks: PartitionRacks | None = None) -> dict[str, Assignment]:
    return (range_ if name == RANGE else uniform)(members, topics, previous, member_racks, partition_racks)
