"""KIP-932 share groups with the real Java client 4.3 (KafkaShareConsumer, tests/java/ShareConsumerClient.java)
against a real broker with share groups enabled, plus the gate: the default broker advertises none
of the share-group APIs."""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker
from tests.clienthelpers import advertised_apis
from tests.groups_support import unique
from tests.javaclient import of_type, requires_java, start_java_source

SOURCE = Path(__file__).resolve().parent / "java" / "ShareConsumerClient.java"
LOCK_MS = 3000
SHARE_PROPS = {
    "group.share.enable": "true",
    "samsa.share.auto.offset.reset": "earliest",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.heartbeat.interval.ms": "500",
    "num.partitions": "1",
}
SHARE_APIS = {76, 77, 78, 79}


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    broker = SamsaBroker(tmp_path_factory.mktemp("share") / "data", overrides=SHARE_PROPS).start()
    try:
        yield broker
    finally:
        broker.stop()


def produce_one_by_one(bootstrap: str, topic: str, count: int, first: int = 0) -> list[str]:
    """``count`` records, one batch each (so two consumers can split them), values v<first>...."""
    from kafka import KafkaProducer

    values = [f"v{i}" for i in range(first, first + count)]
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, max_in_flight_requests_per_connection=1)
    try:
        for v in values:
            p.send(topic, value=v.encode(), partition=0).get(timeout=20)
    finally:
        p.close(timeout=5)
    return values


def test_default_broker_advertises_no_share_group_api(samsa_broker):
    apis = advertised_apis(samsa_broker.bootstrap_servers)
    assert not SHARE_APIS & set(apis)


def test_enabled_broker_advertises_share_group_apis(share_broker):
    apis = advertised_apis(share_broker.bootstrap_servers)
    assert {k: apis[k] for k in SHARE_APIS} == {76: (1, 1), 77: (1, 1), 78: (1, 1), 79: (1, 1)}


@requires_java
def test_two_share_consumers_split_a_partition_accept_and_release(share_broker):
    bs = share_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_one_by_one(bs, topic, 1)           # creates the topic; the consumers start before the rest
    common = ["--bootstrap", bs, "--topic", topic, "--group", group, "--release", "v7", "--idle-ms", "6000",
              "--max-ms", "60000", "--sleep-ms", "100", "--max-poll-records", "5"]
    consumers = [start_java_source("4.3.0", SOURCE, *common, "--client-id", f"c{i}") for i in range(2)]
    try:
        time.sleep(3)
        values = ["v0"] + produce_one_by_one(bs, topic, 59, first=1)
        results = [c.result(timeout=90) for c in consumers]
    finally:
        for c in consumers:
            c.kill()
    records = [r for lines in results for r in of_type(lines, "record")]
    accepted = Counter(r["value"] for r in records if r["ack"] == "accept")
    assert set(accepted) == set(values)                      # every record consumed
    assert set(accepted.values()) == {1}                     # accepted ones never came back
    v7 = sorted((r["delivery_count"], r["ack"]) for r in records if r["value"] == "v7")
    assert v7 == [(1, "release"), (2, "accept")]             # the released one came back, delivery count 2
    others = [r["delivery_count"] for r in records if r["value"] != "v7"]
    assert set(others) == {1}
    per_consumer = [len(of_type(lines, "record")) for lines in results]
    assert all(n > 0 for n in per_consumer), per_consumer     # both members of the group got records


@requires_java
def test_records_of_a_dead_consumer_are_redelivered_after_the_lock(share_broker):
    bs = share_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    values = produce_one_by_one(bs, topic, 12)
    dying = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                              "--die-after", "1", "--max-poll-records", "4")
    died = dying.result(timeout=60)
    held = [r["value"] for r in of_type(died, "record")]
    assert of_type(died, "died") and held
    survivor = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                                 "--expect", str(len(values)), "--max-ms", "40000")
    lines = survivor.result(timeout=60)
    records = of_type(lines, "record")
    assert sorted({r["value"] for r in records}) == sorted(values)
    redelivered = {r["value"]: r["delivery_count"] for r in records if r["value"] in held}
    assert redelivered == {v: 2 for v in held}                # after the dead member's lock expired
    assert all(r["delivery_count"] == 1 for r in records if r["value"] not in held)
