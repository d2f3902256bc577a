"""KIP-848 migration with real clients: a kafka-python (classic protocol) consumer and a Java 4.3
consumer with ``group.protocol=consumer`` in ONE group — the classic member is assigned by the
broker's assignor through JoinGroup/SyncGroup — and the online upgrade of a classic group that
has members and committed offsets when a consumer-protocol member joins."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from broker.testing import SamsaBroker
from tests.support.groups_support import produce, unique, wait_until
from tests.support.rawclient import RawClient
from tests.support.consumer_groups_support import JAVA, PARTITIONS, cg_view, group_args, java_ready

pytestmark = pytest.mark.java


def kafka_python_member(bs: str, topic: str, group: str) -> Any:
    from kafka import KafkaConsumer
    return KafkaConsumer(topic, bootstrap_servers=bs, group_id=group, client_id="kpy", auto_offset_reset="earliest",
                         enable_auto_commit=False, session_timeout_ms=10000, heartbeat_interval_ms=300)


def poll_until(kc: Any, what: str, done: Callable[[], Any], timeout: float = 40,
               sink: list[tuple[int, int]] | None = None) -> Any:
    """Drive the kafka-python member (its rejoins happen inside poll) until ``done()``."""
    deadline = time.monotonic() + timeout
    while True:
        for records in kc.poll(timeout_ms=200).values():
            if sink is None:
                raise AssertionError(f"records while waiting for {what}: {records[:3]}")
            sink.extend((r.partition, r.offset) for r in records)
        last = done()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last {last!r}")


def shared_and_stable(bs: str, group: str, topic: str, kc: Any) -> Callable[[], Any]:
    """Both members in the group, Stable, with a disjoint cover of the topic that kafka-python's
    own view agrees with; returns (kafka-python's partitions, Java's partitions)."""
    def check() -> Any:
        err, state, _, members = cg_view(bs, group)
        if err or state != "Stable" or len(members) != 2:
            return None
        by_client = {cid: set(a.get(topic, ())) for cid, _, _, a in members.values()}
        mine = by_client.get("kpy")
        other = [s for cid, s in by_client.items() if cid != "kpy"]
        if mine is None or not other or not mine or not other[0] or mine & other[0] or \
                sorted(mine | other[0]) != list(range(PARTITIONS)):
            return None
        if {tp.partition for tp in kc.assignment()} != mine:
            return None
        return mine, other[0]
    return check


def create_topic(bs: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


@pytest.mark.slow  # ~18 s in CI's run
def test_java_consumer_protocol_and_kafka_python_classic_member_share_one_group(cbroker: SamsaBroker) -> None:
    """Java joins first (a consumer group), kafka-python joins it as a classic member: the broker
    gives each a disjoint share and together they read every record exactly once; kafka-python
    commits and leaves, and Java takes its partitions over at the committed offsets."""
    from tests.support.javaclient import of_type, start_java
    java_ready()
    bs = cbroker.bootstrap_servers
    topic, group = unique("t"), unique("mixed")
    create_topic(bs, topic)
    java = start_java(JAVA, bs, *group_args(topic, group, "--timeout-ms", 15000))
    kc = None
    try:
        wait_until("the Java member in the group", lambda: len(cg_view(bs, group)[3]) == 1, 30, interval=0.2)
        kc = kafka_python_member(bs, topic, group)
        mine, javas = poll_until(kc, "a shared Stable group", shared_and_stable(bs, group, topic, kc))
        per = 25
        produce(bs, topic, PARTITIONS, per)
        got: list[tuple[int, int]] = []
        poll_until(kc, "kafka-python's share", lambda: len(got) >= per * len(mine), sink=got)
        kc.commit()
        with RawClient(bs) as c:
            listed = {g.group_id: (g.group_type, g.protocol_type)
                      for g in c.request(16, 5, states_filter=[], types_filter=[]).groups}
    finally:
        if kc is not None:
            kc.close()
    lines = java.result(timeout=60)
    java_got = [(r["partition"], r["offset"]) for r in of_type(lines, "record")]
    assert listed[group] == ("consumer", "consumer")
    assert sorted(got) == sorted((p, o) for p in mine for o in range(per))
    # Java read its own share, and nothing of kafka-python's after taking it over at the commit
    assert sorted(java_got) == sorted((p, o) for p in javas for o in range(per))
    assert len(set(got) | set(java_got)) == len(got) + len(java_got) == PARTITIONS * per
    held: set[int] = set()
    summary = of_type(lines, "summary")[-1]          # its assignment just before it closed
    assert sorted(tp["partition"] for tp in summary["assignment"]) == list(range(PARTITIONS))


@pytest.mark.slow
def test_online_upgrade_then_downgrade_with_a_classic_member_and_committed_offsets(cbroker: SamsaBroker) -> None:
    """kafka-python (classic) consumes, commits and stays; a Java 4.3 member with
    group.protocol=consumer joins the same group id: the group becomes a consumer group at once
    (KIP-848 online upgrade) with the kafka-python member inside as a classic member, and both go
    on from the committed offsets. When the Java member commits and leaves, the group is classic
    again (downgrade) and kafka-python takes everything over at the committed offsets."""
    from tests.support.javaclient import of_type, start_java
    java_ready()
    bs = cbroker.bootstrap_servers
    topic, group = unique("t"), unique("up")
    create_topic(bs, topic)
    produce(bs, topic, PARTITIONS, 4)
    kc = kafka_python_member(bs, topic, group)

    def group_type() -> tuple[str, str]:
        with RawClient(bs) as c:
            return {g.group_id: (g.group_type, g.group_state)
                    for g in c.request(16, 5, states_filter=[], types_filter=[]).groups}[group]
    try:
        before: list[tuple[int, int]] = []
        poll_until(kc, "the first records", lambda: len(before) >= PARTITIONS * 4, sink=before)
        kc.commit()
        assert group_type() == ("classic", "Stable")
        java = start_java(JAVA, bs, *group_args(topic, group, "--timeout-ms", 12000, "--commit"))
        mine, javas = poll_until(kc, "a shared Stable group", shared_and_stable(bs, group, topic, kc))
        with RawClient(bs) as c:
            fetched = c.request(9, 5, group_id=group, topics=None)
        committed = {(p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions}
        assert group_type()[0] == "consumer"
        assert committed == {(p, 4) for p in range(PARTITIONS)}
        produce(bs, topic, PARTITIONS, 2)
        after: list[tuple[int, int]] = []
        poll_until(kc, "kafka-python's new share", lambda: len(after) >= 2 * len(mine), sink=after)
        kc.commit()
        lines = java.result(timeout=60)                 # it commits and leaves
        java_got = [(r["partition"], r["offset"]) for r in of_type(lines, "record")]
        last: list[tuple[int, int]] = []
        poll_until(kc, "a classic group again, kafka-python holding everything",
                   lambda: group_type() == ("classic", "Stable") and len(kc.assignment()) == PARTITIONS,
                   sink=last)
        produce(bs, topic, PARTITIONS, 1)
        poll_until(kc, "the last records", lambda: len(last) >= PARTITIONS, sink=last)
    finally:
        kc.close()
    assert sorted(before) == sorted((p, o) for p in range(PARTITIONS) for o in range(4))
    assert sorted(after) == sorted((p, o) for p in mine for o in (4, 5))
    assert sorted(java_got) == sorted((p, o) for p in javas for o in (4, 5))
    assert sorted(last) == [(p, 6) for p in range(PARTITIONS)]


@pytest.mark.slow  # ~22 s in CI's run
def test_java_classic_cooperative_member_revokes_incrementally_after_an_upgrade(cbroker: SamsaBroker) -> None:
    """A Java 4.3 member with group.protocol=classic and the cooperative-sticky assignor holds
    every partition of a classic group; a consumer-protocol Java member joins (online upgrade).
    The classic member is told to rejoin, reports what it owns in its JoinGroup subscription,
    gives up half without stopping the rest (the UNREVOKED_PARTITIONS / rejoin cycle), and the
    two then read every record exactly once; both commit before leaving."""
    from tests.support.javaclient import of_type, start_java
    java_ready()
    bs = cbroker.bootstrap_servers
    topic, group = unique("t"), unique("coop")
    create_topic(bs, topic)
    classic = start_java(JAVA, bs, "consume-group", "--topic", topic, "--group", group, "--assignor",
                         "cooperative-sticky", "--timeout-ms", 20000, "--commit", "--prop", "client.id=java-classic",
                         "--prop", "group.protocol=classic")

    def classic_stable() -> bool:
        with RawClient(bs) as c:
            g = c.request(15, 5, groups=[group], include_authorized_operations=False).groups[0]
        return g.group_state == "Stable" and g.protocol_type == "consumer" and len(g.members) == 1
    consumer = None
    try:
        wait_until("the classic group Stable", classic_stable, 30, interval=0.2)
        consumer = start_java(JAVA, bs, *group_args(topic, group, "--timeout-ms", 12000, "--commit",
                                                    "--prop", "client.id=java-consumer"))

        def shared() -> Any:
            err, state, _, members = cg_view(bs, group)
            shares = {cid: set(a.get(topic, ())) for cid, _, _, a in members.values()}
            if err or state != "Stable" or set(shares) != {"java-consumer", "java-classic"}:
                return None
            a, b = shares["java-consumer"], shares["java-classic"]
            return (a, b) if a and b and not a & b and sorted(a | b) == list(range(PARTITIONS)) else None
        a, b = wait_until("both members Stable with a disjoint cover", shared, 30, interval=0.2)
        per = 20
        produce(bs, topic, PARTITIONS, per)
        lines_a, lines_b = consumer.result(timeout=60), classic.result(timeout=60)
    finally:
        if consumer is not None:
            consumer.kill()
        classic.kill()
    got_a = [(r["partition"], r["offset"]) for r in of_type(lines_a, "record")]
    got_b = [(r["partition"], r["offset"]) for r in of_type(lines_b, "record")]
    assert sorted(got_a + got_b) == sorted((p, o) for p in range(PARTITIONS) for o in range(per))
    assert {p for p, _ in got_a} == a and {p for p, _ in got_b} == b
    # cooperative: the classic member only ever revoked the partitions it handed over
    revoked = [{tp["partition"] for tp in ln["partitions"]} for ln in of_type(lines_b, "revoked")]
    assert revoked[0] == a and all(not r for r in revoked[1:-1]), revoked
    assert not of_type(lines_b, "error") and of_type(lines_b, "committed")


@pytest.mark.slow  # ~19 s in CI's run
def test_librdkafka_classic_member_shares_a_group_with_a_java_consumer_protocol_member(cbroker: SamsaBroker) -> None:
    """confluent-kafka with group.protocol=classic (librdkafka's JoinGroup/SyncGroup, its own
    subscription encoding) as a classic member of a Java 4.3 consumer group: disjoint shares,
    every record once."""
    from confluent_kafka import Consumer
    from tests.support.javaclient import of_type, start_java
    java_ready()
    bs = cbroker.bootstrap_servers
    topic, group = unique("t"), unique("rdk")
    create_topic(bs, topic)
    java = start_java(JAVA, bs, *group_args(topic, group, "--timeout-ms", 15000, "--commit",
                                            "--prop", "client.id=java-consumer"))
    wait_until("the Java member in the group", lambda: len(cg_view(bs, group)[3]) == 1, 30, interval=0.2)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "classic", "client.id": "rdk",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 10000,
                  "heartbeat.interval.ms": 300})
    c.subscribe([topic])
    got: list[tuple[int, int]] = []

    def shares() -> Any:
        msg = c.poll(0.2)
        if msg is not None and not msg.error():
            raise AssertionError(f"a record before producing: {msg.partition()}/{msg.offset()}")
        err, state, _, members = cg_view(bs, group)
        by = {cid: set(a.get(topic, ())) for cid, _, _, a in members.values()}
        if err or state != "Stable" or set(by) != {"rdk", "java-consumer"}:
            return None
        mine, other = by["rdk"], by["java-consumer"]
        ok = mine and other and not mine & other and sorted(mine | other) == list(range(PARTITIONS)) and \
            {tp.partition for tp in c.assignment()} == mine
        return (mine, other) if ok else None
    try:
        mine, javas = wait_until("a shared Stable group", shares, 40, interval=0)
        per = 20
        produce(bs, topic, PARTITIONS, per)

        def read() -> bool:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got.append((msg.partition(), msg.offset()))
            return len(got) >= per * len(mine)
        wait_until("librdkafka's share", read, 30, interval=0)
        c.commit(asynchronous=False)
    finally:
        c.close()
    lines = java.result(timeout=60)
    java_got = [(r["partition"], r["offset"]) for r in of_type(lines, "record")]
    assert sorted(got) == sorted((p, o) for p in mine for o in range(per))
    assert sorted(java_got) == sorted((p, o) for p in javas for o in range(per))
