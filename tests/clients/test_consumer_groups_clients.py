"""KIP-848 consumer groups with real clients: the Java client 4.3 and confluent-kafka
(librdkafka >= 2.12) with ``group.protocol=consumer`` against a real broker process. The
coordinator's view is read with raw ConsumerGroupDescribe requests."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testing import SamsaBroker, running_broker
from tests.support.consumer_groups_support import (BROKER_PROPS, CONSUMER, JAVA, PARTITIONS, SESSION_MS, cg_view, group_args,
                                                  java_ready)
from tests.support.groups_support import produce, unique, wait_until
from tests.support.rawclient import RawClient

PER_PARTITION = 20


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides=BROKER_PROPS) as broker:
        yield broker


def stable(bs: str, group: str, n: int, topic: str, also: Any = lambda v: True, timeout: float = 40) -> Any:
    """Wait until Stable with ``n`` members whose assignments are a disjoint cover of ``topic``."""
    def check() -> Any:
        view = _stable_now(bs, group, n, topic)
        return view if view is not None and also(view[1]) else None
    return wait_until(f"{group} Stable with {n} members", check, timeout, interval=0.1)


def tps(lines: list[dict[str, Any]], kind: str) -> list[tuple[int, ...]]:
    return [tuple(sorted(tp["partition"] for tp in ln["partitions"])) for ln in lines if ln["type"] == kind]


def fresh_topic(broker: SamsaBroker, per_partition: int) -> tuple[str, str, str]:
    """(bootstrap servers, a new topic with ``per_partition`` records in each partition, a new group id)."""
    bs = broker.bootstrap_servers
    topic = unique("t")
    produce(bs, topic, PARTITIONS, per_partition)
    return bs, topic, unique("g")


def group_types(bs: str) -> dict[str, str]:
    """{group id: group type} as ListGroups v5 answers."""
    with RawClient(bs) as c:
        return {g.group_id: g.group_type for g in c.request(16, 5, states_filter=[], types_filter=[]).groups}


def java_member(bs: str, topic: str, group: str, client_id: str, timeout_ms: int, *extra: Any) -> Any:
    """A quiet Java consumer-group member running in the background."""
    from tests.support.javaclient import start_java
    return start_java(JAVA, bs, *group_args(topic, group, *extra, "--quiet", "--client-id", client_id,
                                            "--timeout-ms", timeout_ms))


@pytest.mark.java
@pytest.mark.slow  # ~19 s in CI's run
def test_java_three_members_disjoint_cover_then_a_leaver_is_absorbed_without_revocations(cbroker: SamsaBroker) -> None:
    from tests.support.javaclient import last
    java_ready()
    bs, topic, group = fresh_topic(cbroker, PER_PARTITION)
    procs = [java_member(bs, topic, group, f"java-{i}", ms) for i, ms in enumerate((16000, 16000, 8000))]
    try:
        _, three = stable(bs, group, 3, topic)
        leaver = next(mid for mid, m in three.items() if m[0] == "java-2")
        _, two = stable(bs, group, 2, topic, lambda ms: leaver not in ms)
        results = [p.result(timeout=60) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert sorted(len(m[3][topic]) for m in three.values()) == [2, 2, 2]
    assert sorted(len(m[3][topic]) for m in two.values()) == [3, 3]
    for i in (0, 1):
        s = last(results[i], "summary")
        before, after = set(three[s["member_id"]][3][topic]), set(two[s["member_id"]][3][topic])
        assert before < after                       # kept its own, took some of the leaver's
        revoked_before_close = tps(results[i], "revoked")[:-1]   # closing revokes everything at the end
        assert all(not (set(r) & before) for r in revoked_before_close), results[i]
        assert {int(p): o for p, o in s["last_offsets"].items() if int(p) in after} == {
            p: PER_PARTITION - 1 for p in after}


@pytest.mark.java
def test_java_member_sigkilled_its_partitions_move_after_the_session_timeout(cbroker: SamsaBroker) -> None:
    java_ready()
    bs, topic, group = fresh_topic(cbroker, 1)
    keep = java_member(bs, topic, group, "keep", 40000)
    victim = java_member(bs, topic, group, "victim", 60000)
    try:
        _, two = stable(bs, group, 2, topic)
        victim_id = next(mid for mid, m in two.items() if m[0] == "victim")
        victim.kill()
        killed = time.monotonic()
        time.sleep(SESSION_MS / 1000 - 1.0)
        assert victim_id in cg_view(bs, group)[3]              # not before its session ends
        _, one = stable(bs, group, 1, topic, lambda ms: victim_id not in ms, timeout=15)
        elapsed = time.monotonic() - killed
        assert SESSION_MS / 1000 - 1.0 <= elapsed <= SESSION_MS / 1000 + 3.0, elapsed
        assert [m[0] for m in one.values()] == ["keep"]
    finally:
        victim.kill()
        keep.kill()


@pytest.mark.java
def test_java_commit_stop_all_restart_resumes_at_committed_offsets(own_broker: SamsaBroker) -> None:
    from tests.support.javaclient import last, of_type, run_java
    java_ready()
    bs, topic, group = fresh_topic(own_broker, 5)
    first = run_java(JAVA, bs, *group_args(topic, group, "--max", PARTITIONS * 5, "--commit", "--quiet",
                                           "--timeout-ms", 20000))
    assert last(first, "summary")["count"] == PARTITIONS * 5
    assert last(first, "committed")["offsets"] == {str(p): 5 for p in range(PARTITIONS)}
    own_broker.restart()
    produce(bs, topic, PARTITIONS, 5)
    second = run_java(JAVA, bs, *group_args(topic, group, "--max", PARTITIONS * 5, "--timeout-ms", 20000))
    got = sorted((r["partition"], r["offset"]) for r in of_type(second, "record"))
    assert got == sorted((p, o) for p in range(PARTITIONS) for o in range(5, 10))


@pytest.mark.slow
@pytest.mark.java
def test_java_regex_subscription_picks_up_a_topic_created_later(cbroker: SamsaBroker) -> None:
    from tests.support.javaclient import of_type, start_java
    java_ready()
    bs = cbroker.bootstrap_servers
    prefix, group = unique("rx"), unique("g")
    produce(bs, f"{prefix}-a", PARTITIONS, 1)
    proc = start_java(JAVA, bs, "consume-group", "--topic-regex", f"{prefix}-.*", "--group", group, *CONSUMER,
                      "--timeout-ms", 20000, "--max", 2 * PARTITIONS)
    try:
        stable(bs, group, 1, f"{prefix}-a")
        produce(bs, f"{prefix}-b", PARTITIONS, 1)
        produce(bs, f"other-{prefix}", PARTITIONS, 1)
        lines = proc.result(timeout=60)
    finally:
        proc.kill()
    got = sorted((r["topic"], r["partition"]) for r in of_type(lines, "record"))
    assert got == sorted((f"{prefix}-{t}", p) for t in "ab" for p in range(PARTITIONS))


@pytest.mark.java
@pytest.mark.slow  # ~30 s in CI's run
def test_java_static_member_restart_keeps_its_partitions_without_reassignment(cbroker: SamsaBroker) -> None:
    from tests.support.javaclient import last, run_java, start_java
    java_ready()
    bs, topic, group = fresh_topic(cbroker, 1)
    other = java_member(bs, topic, group, "other", 25000)
    static = ("--group-instance-id", "static-1", "--quiet", "--client-id", "static")
    first = start_java(JAVA, bs, *group_args(topic, group, *static, "--timeout-ms", 6000))
    try:
        epoch, two = stable(bs, group, 2, topic)
        s1 = last(first.result(timeout=60), "summary")
        share = two[s1["member_id"]][3][topic]
        other_id = next(mid for mid, m in two.items() if m[0] == "other")
        second = run_java(JAVA, bs, *group_args(topic, group, *static, "--timeout-ms", 3000))
        s2 = last(second, "summary")
        after = cg_view(bs, group)
        other_lines = other.result(timeout=60)
    finally:
        other.kill()
        first.kill()
    assert s2["member_id"] != s1["member_id"]
    assert tuple(sorted(tp["partition"] for tp in s2["assignment"])) == share
    assert tps(second, "assigned")[:1] == [share]
    assert after[3][other_id][3][topic] == two[other_id][3][topic]     # the other member never moved
    # the other member gave up the static member's share at most once (when it first joined), never
    # again on its restart (its last revocation is its own close)
    revoked = tps(other_lines, "revoked")[:-1]
    assert len(revoked) <= 1 and all(set(r) <= set(share) for r in revoked), other_lines


@pytest.mark.java
def test_java_admin_describes_a_consumer_group_through_consumer_group_describe(cbroker: SamsaBroker) -> None:
    from tests.support.javaclient import last, run_java
    java_ready()
    bs, topic, group = fresh_topic(cbroker, 1)
    proc = java_member(bs, topic, group, "described", 15000)
    try:
        epoch, members = stable(bs, group, 1, topic)
        d = last(run_java(JAVA, bs, "admin-describe-groups", "--group", group), "group")
        listed = [g for g in run_java(JAVA, bs, "admin-list-groups") if g.get("group_id") == group]
    finally:
        proc.kill()
    assert (d["state"].lower(), d["assignor"], d["group_epoch"]) == ("stable", "uniform", epoch)
    [m] = d["members"]
    assert m["client_id"] == "described" and m["member_id"] in members
    assert sorted(tp["partition"] for tp in m["assignment"]) == list(range(PARTITIONS))
    assert [(g["state"].lower(), g["group_type"].lower()) for g in listed] == [("stable", "consumer")]


@pytest.mark.java
def test_classic_kafka_python_group_beside_a_java_consumer_group(cbroker: SamsaBroker) -> None:
    from kafka import KafkaConsumer
    from tests.support.javaclient import last, start_java
    java_ready()
    bs = cbroker.bootstrap_servers
    topic, cgroup, classic = unique("t"), unique("cg"), unique("classic")
    produce(bs, topic, PARTITIONS, 3)
    proc = start_java(JAVA, bs, *group_args(topic, cgroup, "--max", PARTITIONS * 3, "--quiet", "--timeout-ms", 20000))
    kc = KafkaConsumer(topic, bootstrap_servers=bs, group_id=classic, auto_offset_reset="earliest",
                       consumer_timeout_ms=8000, enable_auto_commit=False)
    try:
        got = sorted((m.partition, m.offset) for m in kc)
        with RawClient(bs) as c:
            listed = {g.group_id: (g.group_type, g.protocol_type)
                      for g in c.request(16, 5, states_filter=[], types_filter=[]).groups}
        summary = last(proc.result(timeout=60), "summary")
    finally:
        kc.close()
        proc.kill()
    assert got == sorted((p, o) for p in range(PARTITIONS) for o in range(3))
    assert summary["count"] == PARTITIONS * 3 and summary["distinct"] == PARTITIONS * 3
    assert listed[classic] == ("classic", "consumer") and listed[cgroup] == ("consumer", "consumer")


# --------------------------------------------------------------------------- confluent-kafka (librdkafka)

def confluent_member(bs: str, group: str, topic: str, name: str, events: list[tuple[str, str, tuple[int, ...]]],
                     **extra: Any) -> Any:
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False, **extra})

    def on_assign(consumer: Any, partitions: list[Any]) -> None:
        events.append((name, "assigned", tuple(sorted(p.partition for p in partitions))))

    def on_revoke(consumer: Any, partitions: list[Any]) -> None:
        events.append((name, "revoked", tuple(sorted(p.partition for p in partitions))))

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    return c


def test_confluent_version_supports_the_consumer_protocol() -> None:
    import confluent_kafka
    assert confluent_kafka.libversion()[1] >= 0x020c0000, confluent_kafka.libversion()


def test_confluent_three_members_disjoint_cover_then_a_leaver_is_absorbed(cbroker: SamsaBroker) -> None:
    bs, topic, group = fresh_topic(cbroker, PER_PARTITION)
    events: list[tuple[str, str, tuple[int, ...]]] = []
    members = {n: confluent_member(bs, group, topic, n, events) for n in ("c0", "c1", "c2")}
    seen: dict[str, list[tuple[int, int]]] = {n: [] for n in members}

    def poll_all() -> None:
        for n, c in members.items():
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                seen[n].append((m.partition(), m.offset()))

    try:
        def three() -> Any:
            poll_all()
            return stable(bs, group, 3, topic, timeout=0.0001) if _stable_now(bs, group, 3, topic) else None
        _, view3 = wait_until("3 librdkafka members Stable", three, 40)
        owner = {m[0]: set(m[3][topic]) for m in view3.values()}
        members.pop("c2").close()
        def two() -> Any:
            poll_all()
            return _stable_now(bs, group, 2, topic)
        _, view2 = wait_until("2 librdkafka members Stable", two, 40)
    finally:
        for c in members.values():
            c.close()
    assert sorted(len(p) for p in owner.values()) == [2, 2, 2]
    after = {m[0]: set(m[3][topic]) for m in view2.values()}
    assert sorted(len(p) for p in after.values()) == [3, 3]
    for n in ("c0", "c1"):
        assert owner[n] < after[n]
        revoked_while_member = [e for e in events if e[0] == n and e[1] == "revoked"]
        assert all(not (set(r) & owner[n]) for _, _, r in revoked_while_member[:-1]), events


def _stable_now(bs: str, group: str, n: int, topic: str) -> Any:
    """(group epoch, members) if Stable now with ``n`` members covering ``topic`` disjointly, else None."""
    err, state, epoch, members = cg_view(bs, group)
    held = [p for (_, _, _, a) in members.values() for p in a.get(topic, ())]
    if err == 0 and state == "Stable" and len(members) == n and sorted(held) == list(range(PARTITIONS)):
        return epoch, members
    return None


def test_confluent_commit_close_restart_resumes_at_committed_offsets(own_broker: SamsaBroker) -> None:
    bs, topic, group = fresh_topic(own_broker, 5)

    def consume(count: int) -> list[tuple[int, int]]:
        events: list[Any] = []
        c = confluent_member(bs, group, topic, "c", events)
        got: list[tuple[int, int]] = []
        try:
            deadline = time.monotonic() + 30
            while len(got) < count and time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is not None and m.error() is None:
                    got.append((m.partition(), m.offset()))
            c.commit(asynchronous=False)
        finally:
            c.close()
        return sorted(got)

    assert consume(PARTITIONS * 5) == sorted((p, o) for p in range(PARTITIONS) for o in range(5))
    own_broker.restart()
    produce(bs, topic, PARTITIONS, 5)
    assert consume(PARTITIONS * 5) == sorted((p, o) for p in range(PARTITIONS) for o in range(5, 10))


def test_confluent_regex_subscription_picks_up_a_topic_created_later(cbroker: SamsaBroker) -> None:
    from confluent_kafka import Consumer
    bs = cbroker.bootstrap_servers
    prefix, group = unique("crx"), unique("g")
    produce(bs, f"{prefix}-a", PARTITIONS, 1)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 1000})
    c.subscribe([f"^{prefix}-.*"])
    got: set[tuple[str, int]] = set()
    try:
        deadline = time.monotonic() + 40
        created = False
        while time.monotonic() < deadline and len(got) < 2 * PARTITIONS:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.add((m.topic(), m.partition()))
            if not created and len(got) == PARTITIONS:
                produce(bs, f"{prefix}-b", PARTITIONS, 1)
                produce(bs, f"other-{prefix}", PARTITIONS, 1)
                created = True
    finally:
        c.close()
    assert got == {(f"{prefix}-{t}", p) for t in "ab" for p in range(PARTITIONS)}


def test_confluent_static_member_restart_keeps_its_partitions(cbroker: SamsaBroker) -> None:
    bs, topic, group = fresh_topic(cbroker, 1)
    events: list[tuple[str, str, tuple[int, ...]]] = []
    other = confluent_member(bs, group, topic, "other", events)
    static = confluent_member(bs, group, topic, "static", events, **{"group.instance.id": "inst-1"})
    try:
        def both() -> Any:
            other.poll(0.05)
            static.poll(0.05)
            return _stable_now(bs, group, 2, topic)
        _, view = wait_until("2 members Stable", both, 40)
        share = next(m[3][topic] for m in view.values() if m[1] == "inst-1")
        other_share = next(m[3][topic] for m in view.values() if m[1] is None)
        static.close()                                   # a static member leaves with epoch -2
        left = [m for m in cg_view(bs, group)[3].values() if m[1] == "inst-1"]
        assert [(m[2], m[3][topic]) for m in left] == [(-2, share)]     # still holding its partitions
        back = confluent_member(bs, group, topic, "static2", events, **{"group.instance.id": "inst-1"})
        try:
            def again() -> Any:
                other.poll(0.05)
                back.poll(0.05)
                v = _stable_now(bs, group, 2, topic)
                return v if v and any(m[0] == "static2" for m in v[1].values()) else None
            _, view2 = wait_until("static member back", again, 40)
        finally:
            back.close()
    finally:
        other.close()
    assert next(m[3][topic] for m in view2.values() if m[1] == "inst-1") == share
    assert next(m[3][topic] for m in view2.values() if m[1] is None) == other_share
    revoked_other = [e[2] for e in events if e[0] == "other" and e[1] == "revoked"][:-1]
    assert all(set(r) <= set(share) for r in revoked_other) and len(revoked_other) <= 1, events


@pytest.mark.java
def test_online_upgrade_of_an_empty_classic_group_keeps_its_offsets(cbroker: SamsaBroker) -> None:
    """A kafka-python (classic) group commits and leaves; Java 4.3 members with
    group.protocol=consumer then join the same group id: it becomes a consumer group and they
    resume at the committed offsets."""
    from kafka import KafkaConsumer
    from tests.support.javaclient import of_type, run_java
    java_ready()
    bs, topic, group = fresh_topic(cbroker, 4)
    kc = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                       enable_auto_commit=False, consumer_timeout_ms=8000)
    try:
        seen = 0
        for _ in kc:
            seen += 1
            if seen == PARTITIONS * 4:
                break
        kc.commit()
    finally:
        kc.close()
    assert group_types(bs)[group] == "classic"
    produce(bs, topic, PARTITIONS, 2)
    lines = run_java(JAVA, bs, *group_args(topic, group, "--max", PARTITIONS * 2, "--timeout-ms", 20000))
    got = sorted((r["partition"], r["offset"]) for r in of_type(lines, "record"))
    assert got == sorted((p, o) for p in range(PARTITIONS) for o in (4, 5))
    assert group_types(bs)[group] == "consumer"


def test_confluent_regex_and_literal_topic_get_kafkas_two_assignments(cbroker: SamsaBroker) -> None:
    """librdkafka (group.protocol=consumer) subscribed to a literal topic and a regex: as against
    Kafka 4, whose coordinator resolves regexes after the heartbeat that brought them, the first
    assignment is the literal topic's partitions and a later one adds the matched topic's."""
    from confluent_kafka import Consumer
    bs = cbroker.bootstrap_servers
    prefix, literal, group = unique("crx2"), unique("lit"), unique("g")
    produce(bs, f"{prefix}-a", PARTITIONS, 1)
    produce(bs, literal, PARTITIONS, 1)
    assigned: list[set[tuple[str, int]]] = []
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest"})
    c.subscribe([literal, f"^{prefix}-.*"],
                on_assign=lambda consumer, parts: assigned.append({(p.topic, p.partition) for p in parts}))
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and sum(len(a) for a in assigned) < 2 * PARTITIONS:
            c.poll(0.2)
    finally:
        c.close()
    assert assigned[0] == {(literal, p) for p in range(PARTITIONS)}
    assert set().union(*assigned[1:]) == {(f"{prefix}-a", p) for p in range(PARTITIONS)}
