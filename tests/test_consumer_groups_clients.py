"""KIP-848 consumer groups with real clients: the Java client 4.3 and confluent-kafka
(librdkafka >= 2.12) with ``group.protocol=consumer`` against a real broker process. The
coordinator's view is read with raw ConsumerGroupDescribe requests."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testing import SamsaBroker
from tests.groups_support import produce, unique, wait_until
from tests.rawclient import RawClient

PARTITIONS = 6
PER_PARTITION = 20
SESSION_MS = 4000
JAVA = "4.3.0"
CONSUMER = ("--prop", "group.protocol=consumer")
BROKER_PROPS = {
    "num.partitions": str(PARTITIONS),
    # fast tests: Kafka's bounds lowered, then the values set inside them
    "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
}


@pytest.fixture(scope="module")
def cbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    broker = SamsaBroker(tmp_path_factory.mktemp("cg-clients") / "data", overrides=BROKER_PROPS).start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    broker = SamsaBroker(tmp_path / "data", overrides=BROKER_PROPS).start()
    try:
        yield broker
    finally:
        broker.stop()


def java_ready() -> None:
    from tests.javaclient import compile, java_available
    if not java_available():
        pytest.skip("java and javac (a JDK) are not on PATH")
    compile(JAVA)


def cg_view(bs: str, group: str) -> Any:
    """(state, group epoch, {member_id: (client_id, instance_id, epoch, {topic: partitions})})."""
    with RawClient(bs) as c:
        g = c.request(69, 0, group_ids=[group], include_authorized_operations=False).groups[0]
    members = {m.member_id: (m.client_id, m.instance_id, m.member_epoch,
                             {tp.topic_name: tuple(sorted(tp.partitions)) for tp in m.assignment.topic_partitions})
               for m in g.members}
    return g.error_code, g.group_state, g.group_epoch, members


def stable(bs: str, group: str, n: int, topic: str, also: Any = lambda v: True, timeout: float = 40) -> Any:
    """Wait until Stable with ``n`` members whose assignments are a disjoint cover of ``topic``."""
    def check() -> Any:
        err, state, epoch, members = cg_view(bs, group)
        held = [p for (_, _, _, a) in members.values() for p in a.get(topic, ())]
        ok = (err == 0 and state == "Stable" and len(members) == n and sorted(held) == list(range(PARTITIONS)))
        return (epoch, members) if ok and also(members) else None
    return wait_until(f"{group} Stable with {n} members", check, timeout, interval=0.1)


def tps(lines: list[dict[str, Any]], kind: str) -> list[tuple[int, ...]]:
    return [tuple(sorted(tp["partition"] for tp in ln["partitions"])) for ln in lines if ln["type"] == kind]


def group_args(topic: str, group: str, *extra: Any) -> list[Any]:
    return ["consume-group", "--topic", topic, "--group", group, *CONSUMER, *extra]


@pytest.mark.java
def test_java_three_members_disjoint_cover_then_a_leaver_is_absorbed_without_revocations(cbroker: SamsaBroker) -> None:
    from tests.javaclient import last, start_java
    java_ready()
    bs = cbroker.bootstrap_servers
    topic, group = unique("t"), unique("g")
    produce(bs, topic, PARTITIONS, PER_PARTITION)
    procs = [start_java(JAVA, bs, *group_args(topic, group, "--quiet", "--client-id", f"java-{i}", "--timeout-ms", ms))
             for i, ms in enumerate((16000, 16000, 8000))]
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
