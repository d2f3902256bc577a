"""Consumer groups with real clients: kafka-python, confluent-kafka, aiokafka (each member its own
process, tests/group_member.py) and the Java client (tests/javaclient.py).

Every test compares what the clients report with what the coordinator recorded (DescribeGroups
and OffsetFetch through tests/rawclient.py), and asserts exact outcomes: each partition owned by
exactly one member, assignor-specific layouts, stickiness, reassignment only after the session
timeout of a SIGKILLed member, resumption at the committed offsets after a broker restart,
static-member rejoin without a rebalance, and the admin APIs' answers.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testing import SamsaBroker
from tests.groups_support import (
    Member,
    committed,
    converge,
    describe,
    produce,
    unique,
    wait_until,
)

PARTITIONS = 6
PER_PARTITION = 10
FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
               "num.partitions": str(PARTITIONS)}

# (client, assignor): each client with every assignor it implements
ASSIGNOR_CASES = [
    ("kafka-python", "range"), ("kafka-python", "roundrobin"), ("kafka-python", "sticky"),
    ("kafka-python", "cooperative-sticky"),
    ("confluent", "range"), ("confluent", "roundrobin"), ("confluent", "cooperative-sticky"),
    ("aiokafka", "range"), ("aiokafka", "roundrobin"), ("aiokafka", "sticky"),
]
PY_CLIENTS = ["kafka-python", "confluent", "aiokafka"]


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    """One broker for the module: no initial delay, 1 s minimum session, 6-partition auto-created topics."""
    broker = SamsaBroker(tmp_path_factory.mktemp("groups") / "data", overrides=FAST_GROUPS).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    """A broker of the test's own, for tests that restart it."""
    broker = SamsaBroker(tmp_path / "data", overrides=FAST_GROUPS).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    """Started members are registered here and stopped at the end whatever happens."""
    started: list[Member] = []
    yield started
    for m in started:
        m.stop()


def start(started: list[Member], *args: Any, **kwargs: Any) -> Member:
    m = Member(*args, **kwargs)
    started.append(m)
    return m


def all_partitions_read(m: Member, parts: tuple[int, ...], per_partition: int = PER_PARTITION,
                        since_assignment: bool = False) -> bool:
    got = m.received(since_assignment)
    return all((p, o) in got for p in parts for o in range(per_partition))


def wait_read(m: Member, parts: tuple[int, ...], per_partition: int = PER_PARTITION,
              since_assignment: bool = False, timeout: float = 20) -> None:
    """Wait until ``m`` has read offsets 0..per_partition-1 of ``parts``."""
    try:
        wait_until(f"{m.client} member to read {parts}",
                   lambda: all_partitions_read(m, parts, per_partition, since_assignment), timeout)
    except AssertionError as e:
        summary = [ln if ln["type"] != "record" else (ln["partition"], ln["offset"]) for ln in m.lines]
        raise AssertionError(f"{e}\nmember lines: {summary}") from None


def by_member_id(view_parts: dict[str, tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Assignments ordered by member id: range and roundrobin assign in that order."""
    return [view_parts[m] for m in sorted(view_parts)]


# --------------------------------------------------------------------------- three members, one leaves
@pytest.mark.parametrize("client,assignor", ASSIGNOR_CASES, ids=[f"{c}-{a}" for c, a in ASSIGNOR_CASES])
def test_three_members_share_six_partitions_then_two_take_over(
        gbroker: SamsaBroker, members: list[Member], client: str, assignor: str) -> None:
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, PER_PARTITION)
    trio = [start(members, client, bs, group, topic, assignor=assignor) for _ in range(3)]

    view, owned = converge(bs, group, trio, PARTITIONS)
    assert view.protocol_type == "consumer" and view.protocol == assignor
    assert sorted(len(p) for p in owned.values()) == [2, 2, 2]
    assert sorted(p for ps in owned.values() for p in ps) == list(range(PARTITIONS))  # each exactly once
    if assignor == "range":
        assert by_member_id(view.partitions()) == [(0, 1), (2, 3), (4, 5)]
    elif assignor == "roundrobin":
        assert by_member_id(view.partitions()) == [(0, 3), (1, 4), (2, 5)]
    for m in trio:  # each member reads its partitions from the start (nothing committed)
        wait_read(m, owned[m])

    leaver, *stay = trio
    before = {m: owned[m] for m in stay}
    marks = {m: len(m.of_type("assignment")) for m in stay}
    leaver.close()
    view2, owned2 = converge(bs, group, stay, PARTITIONS)
    assert sorted(len(p) for p in owned2.values()) == [3, 3]
    if assignor == "range":
        assert by_member_id(view2.partitions()) == [(0, 1, 2), (3, 4, 5)]
    elif assignor == "roundrobin":
        assert by_member_id(view2.partitions()) == [(0, 2, 4), (1, 3, 5)]
    else:  # sticky: each survivor keeps its two partitions and takes one of the leaver's
        for m in stay:
            assert set(before[m]) < set(owned2[m]), (before[m], owned2[m])
            assert len(set(owned2[m]) & set(owned[leaver])) == 1
    if assignor == "cooperative-sticky":  # incremental: a survivor never gives up what it keeps
        for m in stay:
            for line in m.of_type("assignment")[marks[m]:]:
                assert set(before[m]) <= set(line["partitions"]), m.of_type("assignment")
    for m in stay:
        wait_read(m, owned2[m])
    assert all(not m.errors() for m in trio)


# --------------------------------------------------------------------------- SIGKILL: session expiry
KILL_SESSION_MS = 2000
HEARTBEAT_S = 0.3  # tests/group_member.py's heartbeat interval


@pytest.mark.parametrize("client", PY_CLIENTS)
def test_sigkilled_member_partitions_move_after_the_session_timeout(
        gbroker: SamsaBroker, members: list[Member], client: str) -> None:
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, PER_PARTITION)
    keep, victim = (start(members, client, bs, group, topic, assignor="range", session_timeout_ms=KILL_SESSION_MS)
                    for _ in range(2))
    view, owned = converge(bs, group, [keep, victim], PARTITIONS)
    victim_id = victim.assignment()[0]

    victim.kill()
    killed_at = time.monotonic()
    # Kafka does not act on the dropped connection: the member stays until its session expires
    # (its last heartbeat was at most one interval before the kill).
    time.sleep(KILL_SESSION_MS / 1000 - HEARTBEAT_S - 0.7)
    assert describe(bs, group).partitions() == view.partitions()

    view2, owned2 = converge(bs, group, [keep], PARTITIONS, timeout=15)
    elapsed = time.monotonic() - killed_at
    assert KILL_SESSION_MS / 1000 - HEARTBEAT_S - 0.2 <= elapsed <= KILL_SESSION_MS / 1000 + 2.5, elapsed
    assert owned2[keep] == tuple(range(PARTITIONS)) and victim_id not in view2.members
    wait_read(keep, owned[victim])
    assert not keep.errors()


# --------------------------------------------------------------------------- resume after a broker restart
FIRST = 5  # records per partition before the restart; as many again after it

RESUME_CASES = [("kafka-python", "SIGTERM"), ("kafka-python", "SIGKILL"), ("confluent", "SIGTERM"),
                ("aiokafka", "SIGTERM")]


@pytest.mark.parametrize("client,how", RESUME_CASES, ids=[f"{c}-{h}" for c, h in RESUME_CASES])
def test_member_resumes_from_committed_offsets_after_broker_restart(
        own_broker: SamsaBroker, members: list[Member], client: str, how: str) -> None:
    bs = own_broker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, FIRST)
    pair = [start(members, client, bs, group, topic, assignor="range") for _ in range(2)]
    _, owned = converge(bs, group, pair, PARTITIONS)
    for m in pair:
        # caught up: after an eager rebalance some clients re-read, others keep their positions
        wait_until(f"{client} member to reach offset {FIRST}", lambda m=m: m.positions() == {
            p: FIRST for p in owned[m]}, 20, interval=0.1)
        assert m.commit() == {p: FIRST for p in owned[m]}
    want = {(topic, p): FIRST for p in range(PARTITIONS)}
    assert {k: v[0] for k, v in committed(bs, group).items()} == want
    for m in pair:
        m.close()
    assert describe(bs, group).state == "Empty"

    own_broker.restart(getattr(__import__("signal"), how))
    after = committed(bs, group)
    assert {k: v[0] for k, v in after.items()} == want and all(v[2] == 0 for v in after.values())
    view = describe(bs, group)
    assert (view.state, view.protocol_type, view.members) == ("Empty", "consumer", {})

    produce(bs, topic, PARTITIONS, FIRST)  # offsets FIRST..2*FIRST-1
    solo = start(members, client, bs, group, topic, assignor="range")
    converge(bs, group, [solo], PARTITIONS)
    expected = {(p, o) for p in range(PARTITIONS) for o in range(FIRST, 2 * FIRST)}
    wait_until("the restarted member to read the new records", lambda: expected <= solo.received(), 20)
    time.sleep(0.5)  # anything re-delivered would arrive first, but give stragglers a chance
    assert solo.received() == expected  # nothing skipped, nothing before the commit re-delivered
    assert len(solo.of_type("record")) == len(expected)
