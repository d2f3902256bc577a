"""Consumer groups with real clients: kafka-python, confluent-kafka, aiokafka (each member its own
process, tests/support/group_member.py) and the Java client (tests/support/javaclient.py).

Every test compares what the clients report with what the coordinator recorded (DescribeGroups
and OffsetFetch through tests/support/rawclient.py), and asserts exact outcomes: each partition owned by
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

from broker.testing import SamsaBroker, running_broker
from tests.support.groups_support import (Member, committed, converge, decode_partitions, describe, produce, unique, wait_until)

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
    with running_broker(tmp_path_factory.mktemp("groups") / "data", overrides=FAST_GROUPS) as broker:
        yield broker


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    """A broker of the test's own, for tests that restart it."""
    with running_broker(tmp_path / "data", overrides=FAST_GROUPS) as broker:
        yield broker


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


# --------------------------------------------------------------------------- first member latency
FIRST_MEMBER_CASES = [("confluent", "cooperative-sticky"), ("confluent", "range"), ("kafka-python", "range"),
                      ("aiokafka", "range")]


@pytest.mark.parametrize("client,assignor", FIRST_MEMBER_CASES, ids=[f"{c}-{a}" for c, a in FIRST_MEMBER_CASES])
def test_first_member_is_stable_well_under_a_second(gbroker: SamsaBroker, members: list[Member],
                                                    client: str, assignor: str) -> None:
    """With group.initial.rebalance.delay.ms=0 a lone first member gets all partitions at once
    (librdkafka's own tests expect well under a second for cooperative-sticky)."""
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, 1)
    m = start(members, client, bs, group, topic, assignor=assignor)
    ready = m.wait_for("ready")
    got = wait_until("the first assignment", lambda: next(
        (a for a in m.of_type("assignment") if a["partitions"]), None), 10)
    assert got["partitions"] == list(range(PARTITIONS))
    assert got["_t"] - ready["_t"] < 1.0, got["_t"] - ready["_t"]
    view = describe(bs, group)
    assert (view.state, view.protocol, list(view.partitions().values())) == (
        "Stable", assignor, [tuple(range(PARTITIONS))])


# --------------------------------------------------------------------------- SIGKILL: session expiry
KILL_SESSION_MS = 2000
HEARTBEAT_S = 0.3  # tests/support/group_member.py's heartbeat interval


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
    still = describe(bs, group)
    assert set(still.members) == set(view.members), still
    if still.state == "Stable":
        assert still.partitions() == view.partitions()

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


LIVE_RESTART_CASES = [("kafka-python", "SIGKILL"), ("confluent", "SIGTERM")]


@pytest.mark.parametrize("client,how", LIVE_RESTART_CASES, ids=[f"{c}-{h}" for c, h in LIVE_RESTART_CASES])
def test_live_group_survives_a_broker_restart_without_a_rebalance(
        own_broker: SamsaBroker, members: list[Member], client: str, how: str) -> None:
    """The group's metadata is replayed from __consumer_offsets: after a restart the members
    keep heartbeating in their generation (sessions restart at load) and nothing moves, even
    well past the session timeout."""
    import signal
    bs = own_broker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, 1)
    pair = [start(members, client, bs, group, topic, assignor="range", session_timeout_ms=3000) for _ in range(2)]
    view, _ = converge(bs, group, pair, PARTITIONS)
    lines = [m.of_type("assignment") for m in pair]
    own_broker.restart(getattr(signal, how))
    assert describe(bs, group) == view
    time.sleep(5)  # > session timeout: only heartbeats in the replayed generation keep them
    assert describe(bs, group) == view
    assert [m.of_type("assignment") for m in pair] == lines and not any(m.errors() for m in pair)


# --------------------------------------------------------------------------- static membership
STATIC_ID = "static-b"


def assignment_lines(m: Member) -> list[tuple[Any, ...]]:
    return [(ln["member_id"], ln["generation"], tuple(ln["partitions"])) for ln in m.of_type("assignment")]


@pytest.mark.parametrize("client", PY_CLIENTS)
def test_static_member_rejoins_without_a_rebalance(gbroker: SamsaBroker, members: list[Member], client: str) -> None:
    """A static member (group.instance.id) that closes without LeaveGroup and comes back within
    its session timeout gets a new member id and its old assignment, and the group keeps its
    generation: the other member sees nothing."""
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, 1)
    dynamic = start(members, "kafka-python", bs, group, topic, assignor="range")
    converge(bs, group, [dynamic], PARTITIONS)
    static = start(members, client, bs, group, topic, assignor="range", instance_id=STATIC_ID)
    view, owned = converge(bs, group, [dynamic, static], PARTITIONS)
    old_id = static.assignment()[0]
    assert view.members[old_id].group_instance_id == STATIC_ID
    seen_by_dynamic = assignment_lines(dynamic)

    static.close()  # a static member does not send LeaveGroup
    assert describe(bs, group) == view

    again = start(members, client, bs, group, topic, assignor="range", instance_id=STATIC_ID)
    mine = wait_until("the static member to get its assignment back",
                      lambda: (a := again.assignment()) and a[1] and a, 20)
    new_id, parts = mine
    assert parts == owned[static] and new_id != old_id
    after = describe(bs, group)
    assert after.state == "Stable" and set(after.members) == {dynamic.assignment()[0], new_id}
    assert after.members[new_id].group_instance_id == STATIC_ID and after.members[new_id].partitions == parts
    if client != "confluent":  # librdkafka does not expose the generation
        assert again.of_type("assignment")[-1]["generation"] == seen_by_dynamic[-1][1]
    time.sleep(1.0)  # a rebalance would reach the dynamic member through its heartbeat (every 0.3 s)
    assert assignment_lines(dynamic) == seen_by_dynamic and describe(bs, group) == after


# --------------------------------------------------------------------------- admin APIs
ADMINS = ["kafka-python", "confluent", "aiokafka", "java"]


class GroupAdmin:
    """list / describe / offsets / delete through one client's admin API, normalised to
    (state, protocol, members) tuples so one test can assert the same outcomes for each."""

    def __init__(self, kind: str, bootstrap: str) -> None:
        self.kind, self.bs = kind, bootstrap
        if kind == "kafka-python":
            from kafka.admin import KafkaAdminClient
            self.admin: Any = KafkaAdminClient(bootstrap_servers=bootstrap)
        elif kind == "confluent":
            from confluent_kafka.admin import AdminClient
            self.admin = AdminClient({"bootstrap.servers": bootstrap})

    @property
    def can_delete(self) -> bool:
        return self.kind != "aiokafka"  # AIOKafkaAdminClient 0.14 has no delete_consumer_groups

    def close(self) -> None:
        if self.kind == "kafka-python":
            self.admin.close()

    def aio(self, call: Any) -> Any:
        """Run one AIOKafkaAdminClient call on a fresh client."""
        import asyncio

        from aiokafka.admin import AIOKafkaAdminClient

        async def run() -> Any:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bs)
            await admin.start()
            try:
                return await call(admin)
            finally:
                await admin.close()
        return asyncio.run(run())

    def java(self, *args: Any) -> list[dict[str, Any]]:
        from tests.support.javaclient import run_java
        return run_java(JAVA_ADMIN_VERSION, self.bs, *args, allow_errors=True)

    def list(self) -> dict[str, str]:
        """group id -> state"""
        if self.kind == "kafka-python":
            return {g["group_id"]: g["group_state"] for g in self.admin.list_groups()}
        if self.kind == "confluent":
            res = self.admin.list_consumer_groups().result()
            assert not res.errors
            return {g.group_id: g.state.name for g in res.valid}
        if self.kind == "aiokafka":  # ListGroups v0-v2 (no states): (group id, protocol type)
            return dict(self.aio(lambda a: a.list_consumer_groups()))
        return {g["group_id"]: g["state"] for g in self.java("admin-list-groups") if g["type"] == "group"}

    def describe(self, group: str) -> tuple[str, str, dict[str, tuple[str, str, tuple[int, ...]]]] | str:
        """(state, assignor, {member id: (client id, host, partitions)}) or the error's name."""
        if self.kind == "kafka-python":
            d = self.admin.describe_groups([group])[group]
            if d["error"]:
                return d["error"]
            return d["group_state"], d["protocol_data"], {
                m["member_id"]: (m["client_id"], m["client_host"],
                                 tuple(sorted(p for t in m["member_assignment"]["assigned_partitions"]
                                              for p in t["partitions"])) if m["member_assignment"] else ())
                for m in d["members"]}
        if self.kind == "confluent":
            from confluent_kafka import KafkaException
            try:
                d = self.admin.describe_consumer_groups([group])[group].result()
            except KafkaException as e:
                return e.args[0].name()
            return d.state.name, d.partition_assignor, {
                m.member_id: (m.client_id, m.host, tuple(sorted(tp.partition for tp in m.assignment.topic_partitions)))
                for m in d.members}
        if self.kind == "aiokafka":
            # one group per call: aiokafka 0.14 decodes DescribeGroups v3 answers with the v2
            # schema (no authorized_operations), which only works for a single group
            (resp,) = self.aio(lambda a: a.describe_consumer_groups([group]))
            ((err, _gid, state, _ptype, protocol, ms),) = resp.groups
            return state, protocol, {m[0]: (m[1], m[2], decode_partitions(m[4])) for m in ms}
        lines = self.java("admin-describe-groups", "--group", group)
        (d,) = lines
        if d["type"] == "error":
            return d["error"]
        return d["state"], d["assignor"], {
            m["member_id"]: (m["client_id"], m["host"], tuple(sorted(tp["partition"] for tp in m["assignment"])))
            for m in d["members"]}

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        if self.kind == "kafka-python":
            return {(tp.topic, tp.partition): o.offset for tp, o in self.admin.list_group_offsets(group)[group].items()}
        if self.kind == "confluent":
            from confluent_kafka import ConsumerGroupTopicPartitions
            res = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result()
            return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions}
        if self.kind == "aiokafka":
            return {(tp.topic, tp.partition): o.offset
                    for tp, o in self.aio(lambda a: a.list_consumer_group_offsets(group)).items()}
        return {(o["topic"], o["partition"]): o["offset"]
                for o in self.java("admin-list-group-offsets", "--group", group) if o["type"] == "group_offset"}

    def delete(self, group: str) -> str:
        """"OK" or the error's name."""
        if self.kind == "kafka-python":
            return self.admin.delete_groups([group])[group]
        if self.kind == "confluent":
            from confluent_kafka import KafkaException
            try:
                self.admin.delete_consumer_groups([group])[group].result()
                return "OK"
            except KafkaException as e:
                return e.args[0].name()
        (line,) = self.java("admin-delete-groups", "--group", group)
        return "OK" if line["type"] == "deleted_group" else line["error"]


JAVA_ADMIN_VERSION = "4.3.0"
# what each admin API calls Kafka's states and errors
# (DescribeGroups v6+ answers GROUP_ID_NOT_FOUND for a group that does not exist, older versions
# state Dead with no error: librdkafka asks in v5 and shows DEAD.)
NAMES = {
    "kafka-python": {"Stable": "Stable", "Empty": "Empty", "NON_EMPTY_GROUP": "NonEmptyGroupError",
                     "GROUP_ID_NOT_FOUND": "GroupIdNotFoundError",
                     "gone": "[Error 69] GroupIdNotFoundError: Group {} not found."},
    "confluent": {"Stable": "STABLE", "Empty": "EMPTY", "NON_EMPTY_GROUP": "NON_EMPTY_GROUP",
                  "GROUP_ID_NOT_FOUND": "GROUP_ID_NOT_FOUND", "gone": ("DEAD", "", {})},
    "java": {"Stable": "Stable", "Empty": "Empty", "NON_EMPTY_GROUP": "GroupNotEmptyException",
             "GROUP_ID_NOT_FOUND": "GroupIdNotFoundException", "gone": "GroupIdNotFoundException"},
    # ListGroups without states: the protocol type is what aiokafka lists
    "aiokafka": {"Stable": "Stable", "Empty": "Empty", "listed Stable": "consumer", "listed Empty": "consumer",
                 "gone": ("Dead", "", {})},
}


@pytest.mark.parametrize("admin_kind", [pytest.param(a, marks=pytest.mark.slow) if a == "java" else a for a in ADMINS])
def test_admin_list_describe_offsets_and_delete_groups(gbroker: SamsaBroker, members: list[Member],
                                                       admin_kind: str) -> None:
    if admin_kind == "java":
        from tests.support.javaclient import compile, java_available
        if not java_available():
            pytest.skip("java and javac are not on PATH")
        compile(JAVA_ADMIN_VERSION)
    names = NAMES[admin_kind]
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, 2)
    pair = [start(members, "kafka-python", bs, group, topic, assignor="range") for _ in range(2)]
    view, owned = converge(bs, group, pair, PARTITIONS)
    for m in pair:
        wait_until("members to catch up", lambda m=m: m.positions() == {p: 2 for p in owned[m]}, 20, 0.1)
        m.commit()
    want_offsets = {(topic, p): 2 for p in range(PARTITIONS)}
    want_members = {mid: (v.client_id, "/127.0.0.1", v.partitions) for mid, v in view.members.items()}
    assert {v.client_id for v in view.members.values()} == {m.client_id for m in pair}

    adm = GroupAdmin(admin_kind, bs)
    try:
        assert adm.list()[group] == names.get("listed Stable", names["Stable"])
        assert adm.describe(group) == (names["Stable"], "range", want_members)
        assert adm.offsets(group) == want_offsets
        if adm.can_delete:
            assert adm.delete(group) == names["NON_EMPTY_GROUP"]
        assert describe(bs, group) == view and committed(bs, group).keys() == want_offsets.keys()

        for m in pair:
            m.close()
        assert adm.list()[group] == names.get("listed Empty", names["Empty"])
        assert adm.describe(group) == (names["Empty"], "", {})
        assert adm.offsets(group) == want_offsets
        if not adm.can_delete:
            return
        assert adm.delete(group) == "OK"
        assert group not in adm.list()
        raw = describe(bs, group)
        assert (raw.error_code, raw.state, raw.protocol_type, raw.members) == (0, "Dead", "", {})
        assert committed(bs, group) == {}
        assert adm.offsets(group) == {}
        gone = names["gone"]
        assert adm.describe(group) == (gone.format(group) if isinstance(gone, str) else gone)
        assert adm.delete(group) == names["GROUP_ID_NOT_FOUND"]
    finally:
        adm.close()


# --------------------------------------------------------------------------- the Java client
JAVA_LATEST = "4.3.0"


def java_ready(version: str) -> None:
    from tests.support.javaclient import compile, java_available
    if not java_available():
        pytest.skip("java and javac (a JDK) are not on PATH")
    compile(version)


def java_group_args(topic: str, group: str, *extra: Any) -> list[Any]:
    return ["consume-group", "--topic", topic, "--group", group, *extra]


def tp_partitions(tps: list[dict[str, Any]]) -> tuple[int, ...]:
    return tuple(sorted(tp["partition"] for tp in tps))


def stable_view(bs: str, group: str, n: int, also: Any = lambda v: True, timeout: float = 30) -> Any:
    """The coordinator's view once Stable with ``n`` members that own all partitions."""
    def check() -> Any:
        v = describe(bs, group)
        ok = (v.state == "Stable" and len(v.members) == n
              and sorted(p for ps in v.partitions().values() for p in ps) == list(range(PARTITIONS)))
        return v if ok and also(v) else None
    return wait_until(f"{group} to be Stable with {n} members", check, timeout)


def held_in_order(lines: list[dict[str, Any]], shares: list[tuple[int, ...]]) -> bool:
    """The member's assignment (from its assigned/revoked callbacks) was each of ``shares`` in turn."""
    owned: set[int] = set()
    want = list(shares)
    for ln in lines:
        if ln["type"] in ("assigned", "revoked"):
            parts = set(tp_partitions(ln["partitions"]))
            owned = owned | parts if ln["type"] == "assigned" else owned - parts
            if want and owned == set(want[0]):
                want.pop(0)
    return not want


def never_revoked_after_holding(lines: list[dict[str, Any]], share: tuple[int, ...]) -> bool:
    """Cooperative rebalancing: once the member held ``share``, no revocation touched it
    (until its summary: closing revokes everything)."""
    owned: set[int] = set()
    holding = False
    for ln in lines:
        if ln["type"] == "summary":
            break
        if ln["type"] not in ("assigned", "revoked"):
            continue
        parts = set(tp_partitions(ln["partitions"]))
        if ln["type"] == "revoked" and holding and parts & set(share):
            return False
        owned = owned | parts if ln["type"] == "assigned" else owned - parts
        holding = holding or set(share) <= owned
    return holding


JAVA_ASSIGNOR_CASES = [(JAVA_LATEST, "cooperative-sticky"), ("3.9.0", "range")]


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.parametrize("jv,assignor", JAVA_ASSIGNOR_CASES, ids=[f"{v}-{a}" for v, a in JAVA_ASSIGNOR_CASES])
def test_java_three_members_share_six_partitions_then_two_take_over(
        gbroker: SamsaBroker, jv: str, assignor: str) -> None:
    from tests.support.javaclient import last, start_java
    java_ready(jv)
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, PER_PARTITION)
    # members poll for 12 s, 12 s and 6 s from their start: the third leaves (LeaveGroup) midway
    procs = [start_java(jv, bs, *java_group_args(topic, group, "--assignor", assignor, "--quiet",
                                                 "--client-id", f"java-{i}", "--timeout-ms", ms))
             for i, ms in enumerate((12000, 12000, 6000))]
    try:
        view3 = stable_view(bs, group, 3)
        by_client = {v.client_id: mid for mid, v in view3.members.items()}
        leaver = by_client["java-2"]
        view2 = stable_view(bs, group, 2, lambda v: leaver not in v.members)
        results = [p.result(timeout=60) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert view3.protocol == view2.protocol == assignor
    assert sorted(len(p) for p in view3.partitions().values()) == [2, 2, 2]
    assert sorted(len(p) for p in view2.partitions().values()) == [3, 3]
    if assignor == "range":
        assert by_member_id(view3.partitions()) == [(0, 1), (2, 3), (4, 5)]
        assert by_member_id(view2.partitions()) == [(0, 1, 2), (3, 4, 5)]
    summaries = [last(r, "summary") for r in results]
    assert tp_partitions(summaries[2]["assignment"]) == view3.partitions()[leaver]
    for i in (0, 1):  # (the first survivor to finish leaves too: the other may rebalance once more)
        s = summaries[i]
        share3, share2 = view3.partitions()[s["member_id"]], view2.partitions()[s["member_id"]]
        assert held_in_order(results[i], [share3, share2]), results[i]
        assert {int(p): o for p, o in s["last_offsets"].items() if int(p) in share2} == {
            p: PER_PARTITION - 1 for p in share2}
        if assignor == "cooperative-sticky":
            assert set(share3) < set(share2)
            assert never_revoked_after_holding(results[i], share3), results[i]


@pytest.mark.java
def test_java_member_sigkilled_partitions_move_after_the_session_timeout(
        gbroker: SamsaBroker, members: list[Member]) -> None:
    from tests.support.javaclient import start_java
    java_ready(JAVA_LATEST)
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, PER_PARTITION)
    keep = start(members, "kafka-python", bs, group, topic, assignor="range", session_timeout_ms=KILL_SESSION_MS)
    converge(bs, group, [keep], PARTITIONS)
    victim = start_java(JAVA_LATEST, bs, *java_group_args(
        topic, group, "--assignor", "range", "--quiet", "--client-id", "java-victim", "--timeout-ms", 60000,
        "--session-timeout-ms", KILL_SESSION_MS, "--prop", f"heartbeat.interval.ms={int(HEARTBEAT_S * 1000)}"))
    try:
        view = stable_view(bs, group, 2, lambda v: (a := keep.assignment()) is not None
                           and a[0] in v.members and v.members[a[0]].partitions == a[1])
        victim_id = next(mid for mid, v in view.members.items() if v.client_id == "java-victim")
        victim.kill()
        killed_at = time.monotonic()
    finally:
        victim.kill()
    time.sleep(KILL_SESSION_MS / 1000 - HEARTBEAT_S - 0.7)
    assert set(describe(bs, group).members) == set(view.members)
    view2, owned2 = converge(bs, group, [keep], PARTITIONS, timeout=15)
    elapsed = time.monotonic() - killed_at
    assert KILL_SESSION_MS / 1000 - HEARTBEAT_S - 0.2 <= elapsed <= KILL_SESSION_MS / 1000 + 2.5, elapsed
    assert owned2[keep] == tuple(range(PARTITIONS)) and victim_id not in view2.members
    wait_read(keep, view.members[victim_id].partitions)


@pytest.mark.java
def test_java_member_resumes_from_committed_offsets_after_broker_restart(own_broker: SamsaBroker) -> None:
    from tests.support.javaclient import last, of_type, run_java
    java_ready(JAVA_LATEST)
    bs = own_broker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, FIRST)
    total = PARTITIONS * FIRST
    first = run_java(JAVA_LATEST, bs, *java_group_args(topic, group, "--max", total, "--commit", "--quiet",
                                                       "--timeout-ms", 20000))
    assert last(first, "summary")["count"] == total
    assert last(first, "committed")["offsets"] == {str(p): FIRST for p in range(PARTITIONS)}
    want = {(topic, p): FIRST for p in range(PARTITIONS)}
    assert {k: v[0] for k, v in committed(bs, group).items()} == want

    own_broker.restart()
    assert {k: v[0] for k, v in committed(bs, group).items()} == want
    produce(bs, topic, PARTITIONS, FIRST)
    second = run_java(JAVA_LATEST, bs, *java_group_args(topic, group, "--timeout-ms", 5000))
    got = [(r["partition"], r["offset"]) for r in of_type(second, "record")]
    assert sorted(got) == sorted((p, o) for p in range(PARTITIONS) for o in range(FIRST, 2 * FIRST))


@pytest.mark.java
def test_java_static_member_rejoins_without_a_rebalance(gbroker: SamsaBroker, members: list[Member]) -> None:
    """Kafka's static membership with the Java client: a member with group.instance.id that
    exits (no LeaveGroup) and restarts within its session timeout gets a new member id, the
    same generation and the same partitions; the other member sees no rebalance."""
    from tests.support.javaclient import last, of_type, run_java, start_java
    java_ready(JAVA_LATEST)
    bs = gbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, 1)
    dynamic = start(members, "kafka-python", bs, group, topic, assignor="range")
    converge(bs, group, [dynamic], PARTITIONS)
    args = java_group_args(topic, group, "--assignor", "range", "--quiet", "--group-instance-id", STATIC_ID,
                           "--session-timeout-ms", 10000)
    first = start_java(JAVA_LATEST, bs, *args, "--timeout-ms", 4000)
    try:
        view = stable_view(bs, group, 2, lambda v: (a := dynamic.assignment()) is not None
                           and a[0] in v.members and v.members[a[0]].partitions == a[1])
        s1 = last(first.result(timeout=60), "summary")
    finally:
        first.kill()
    seen_by_dynamic = assignment_lines(dynamic)
    assert s1["group_instance_id"] == STATIC_ID and view.members[s1["member_id"]].group_instance_id == STATIC_ID
    assert tp_partitions(s1["assignment"]) == view.members[s1["member_id"]].partitions
    assert s1["generation_id"] == seen_by_dynamic[-1][1]
    assert describe(bs, group) == view  # gone without LeaveGroup: still a member until its session ends

    second = run_java(JAVA_LATEST, bs, *args, "--timeout-ms", 3000)
    s2 = last(second, "summary")
    assert s2["member_id"] != s1["member_id"]
    assert (s2["generation_id"], s2["assignment"]) == (s1["generation_id"], s1["assignment"])
    assert [tp_partitions(a["partitions"]) for a in of_type(second, "assigned")] == [tp_partitions(s1["assignment"])]
    after = describe(bs, group)
    assert after.state == "Stable" and set(after.members) == {dynamic.assignment()[0], s2["member_id"]}
    assert after.partitions() == {**{k: v for k, v in view.partitions().items() if k != s1["member_id"]},
                                  s2["member_id"]: tp_partitions(s1["assignment"])}
    assert assignment_lines(dynamic) == seen_by_dynamic


def test_deleting_a_topic_drops_its_committed_offsets_even_after_recreation_and_restart(own_broker: SamsaBroker) -> None:
    """Kafka removes a deleted topic's offsets from every group: a topic created again under the
    same name starts without them, and the tombstones keep it so across a restart."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = own_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    gone, kept, group = unique("gone"), unique("kept"), unique("g")
    for fut in admin.create_topics([NewTopic(gone, 2, 1), NewTopic(kept, 1, 1)]).values():
        fut.result(timeout=15)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(gone, 0, 7), TopicPartition(gone, 1, 8), TopicPartition(kept, 0, 9)],
                 asynchronous=False)
    finally:
        c.close()
    assert committed(bootstrap, group) == {(gone, 0): (7, "", 0), (gone, 1): (8, "", 0), (kept, 0): (9, "", 0)}
    admin.delete_topics([gone])[gone].result(timeout=15)
    assert committed(bootstrap, group) == {(kept, 0): (9, "", 0)}
    for fut in admin.create_topics([NewTopic(gone, 2, 1)]).values():
        fut.result(timeout=15)
    own_broker.restart()
    assert committed(own_broker.bootstrap_servers, group) == {(kept, 0): (9, "", 0)}
