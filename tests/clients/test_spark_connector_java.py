"""What Spark 4.0's Kafka connector does, done with the Java client it is built with
(kafka-clients 3.9.0), against Samsa, with exact results.

One streaming query's life, step by step: the sink's idempotent producer writes; the driver's Admin
describes the topic and lists earliest/latest/by-timestamp/read_committed offsets; executors read
each planned range with an assigned consumer (assign + seek + poll, no group membership, no
commits, auto.offset.reset=none, byte-array deserializers); a second micro-batch reads exactly
what was written since; a start by timestamp and a range past the end behave as Spark relies on.
"""
from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from broker.testing import SamsaBroker
from tests.support.javaclient import compile, last, of_type, requires_java, run_java

pytestmark = [pytest.mark.java, requires_java]

SPARK_KAFKA_CLIENTS = "3.9.0"  # what spark-sql-kafka-0-10_2.13:4.0.x is built against
BASE_TS = 1_714_564_800_000
PARTITIONS = 2


@pytest.fixture(scope="module")
def jv() -> str:
    compile(SPARK_KAFKA_CLIENTS)
    return SPARK_KAFKA_CLIENTS


def java(jv: str, broker: SamsaBroker, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    return run_java(jv, broker.bootstrap_servers, *args, **kwargs)


def record(topic: str, i: int) -> dict[str, Any]:
    """Record i as the harness's producer writes it (partition i % 2) and a consumer reads it."""
    return {"type": "record", "topic": topic, "partition": i % PARTITIONS, "offset": i // PARTITIONS,
            "key": f"k-{i}", "value": f"v-{i}", "timestamp": BASE_TS + 1000 * i, "timestamp_type": "CreateTime",
            "headers": [["idx", str(i)], ["src", "java"]], "leader_epoch": 0}


def listed(lines: list[dict[str, Any]]) -> dict[str, dict[int, tuple[int, int, int | None]]]:
    """spec -> partition -> (offset, timestamp, leader epoch), from admin-list-offsets lines."""
    out: dict[str, dict[int, tuple[int, int, int | None]]] = {}
    for o in of_type(lines, "offset"):
        out.setdefault(o["spec"], {})[o["partition"]] = (o["offset"], o["timestamp"], o["leader_epoch"])
    return out


def executor_read(jv: str, broker: SamsaBroker, topic: str, start: dict[int, int], until: int,
                  *extra: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """An executor's task: assign the partitions, seek to the planned start, poll up to `until`."""
    lines = java(jv, broker, "consume-assign", "--topic", topic,
                 "--partitions", ",".join(str(p) for p in sorted(start)),
                 "--from", "offsets:" + ",".join(f"{p}={o}" for p, o in sorted(start.items())),
                 "--to", f"offset:{until}", "--timeout-ms", 30_000, *extra)
    records = sorted(of_type(lines, "record"), key=lambda r: (r["partition"], r["offset"]))
    return records, last(lines, "summary")


def test_spark_connector_flow_with_kafka_clients_3_9(jv: str, samsa_broker: SamsaBroker) -> None:
    topic = f"spark-{uuid.uuid4().hex[:8]}"
    created = last(java(jv, samsa_broker, "admin-create-topic", "--topic", topic, "--partitions", PARTITIONS),
                   "created")
    assert created["num_partitions"] == PARTITIONS

    # The sink: a KafkaProducer with default settings (idempotent, acks=all); records lingered
    # into multi-record batches, with headers and explicit CreateTime timestamps.
    produced = last(java(jv, samsa_broker, "produce", "--topic", topic, "--count", 40, "--partitions", PARTITIONS,
                         "--with-headers", "--timestamp", BASE_TS, "--timestamp-step", 1000, "--linger-ms", 50),
                    "produce")
    assert (produced["acked"], produced["errors"]) == (40, 0)
    assert produced["partitions"] == {str(p): {"count": 20, "min_offset": 0, "max_offset": 19}
                                      for p in range(PARTITIONS)}

    # The driver: describeTopics, then listOffsets for the query's start and end.
    node = last(java(jv, samsa_broker, "admin-describe-cluster"), "cluster")["controller"]["id"]
    described = last(java(jv, samsa_broker, "admin-describe-topics", "--topic", topic), "topic")
    assert described == {"type": "topic", "name": topic, "topic_id": created["topic_id"], "internal": False,
                         "partitions": [{"partition": p, "leader": node, "replicas": [node], "isr": [node]}
                                        for p in range(PARTITIONS)]}
    lines = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, "--spec", "earliest", "--spec", "latest",
                 "--spec", f"timestamp:{BASE_TS + 10_500}", "--spec", f"timestamp:{BASE_TS}",
                 "--spec", f"timestamp:{BASE_TS + 39_001}")
    assert listed(lines) == {
        "earliest": {0: (0, -1, 0), 1: (0, -1, 0)},
        "latest": {0: (20, -1, 0), 1: (20, -1, 0)},
        # First record at or after the timestamp, exact inside batches: i=12 on 0, i=11 on 1.
        f"timestamp:{BASE_TS + 10_500}": {0: (6, BASE_TS + 12_000, 0), 1: (5, BASE_TS + 11_000, 0)},
        f"timestamp:{BASE_TS}": {0: (0, BASE_TS, 0), 1: (0, BASE_TS + 1000, 0)},
        f"timestamp:{BASE_TS + 39_001}": {0: (-1, -1, None), 1: (-1, -1, None)},
    }
    committed = java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, "--spec", "latest",
                     "--isolation", "read_committed")
    assert listed(committed) == {"latest": {0: (20, -1, 0), 1: (20, -1, 0)}}

    # Micro-batch 1, executors: [earliest, latest) exactly, with the driver-derived group id.
    records, summary = executor_read(jv, samsa_broker, topic, {0: 0, 1: 0}, 20)
    assert records == sorted((record(topic, i) for i in range(40)), key=lambda r: (r["partition"], r["offset"]))
    driver_group = summary["group_id"]
    assert re.fullmatch(r"spark-kafka-source-[0-9a-f-]{36}-driver-0", driver_group)
    assert summary["positions"] == {"0": 20, "1": 20}

    # Micro-batch 2: the sink writes 10 more (lz4 batches), the driver's new latest, the
    # executors read exactly the new range, with an executor-style group id.
    produced = last(java(jv, samsa_broker, "produce", "--topic", topic, "--count", 10, "--start", 40,
                         "--partitions", PARTITIONS, "--with-headers", "--timestamp", BASE_TS,
                         "--timestamp-step", 1000, "--linger-ms", 50, "--compression", "lz4"), "produce")
    assert produced["partitions"] == {str(p): {"count": 5, "min_offset": 20, "max_offset": 24}
                                      for p in range(PARTITIONS)}
    latest = listed(java(jv, samsa_broker, "admin-list-offsets", "--topic", topic, "--spec", "latest"))
    assert latest == {"latest": {0: (25, -1, 0), 1: (25, -1, 0)}}
    group = f"spark-kafka-source-{uuid.uuid4()}--1480932744-executor"
    records, summary = executor_read(jv, samsa_broker, topic, {0: 20, 1: 20}, 25, "--group", group)
    assert records == sorted((record(topic, i) for i in range(40, 50)), key=lambda r: (r["partition"], r["offset"]))
    assert summary["group_id"] == group

    # startingOffsetsByTimestamp: executors seek to the driver's by-timestamp offsets (inside batches).
    records, _ = executor_read(jv, samsa_broker, topic, {0: 6, 1: 5}, 20)
    want = [i for i in range(40) if (i % 2 == 0 and i >= 12) or (i % 2 == 1 and i >= 11)]
    assert records == sorted((record(topic, i) for i in want), key=lambda r: (r["partition"], r["offset"]))

    # Nothing was committed for the source's group ids: Spark keeps offsets in its checkpoint.
    for g in (driver_group, group):
        assert java(jv, samsa_broker, "admin-list-group-offsets", "--group", g) == []

    # A planned range past the log end (data loss for Spark): OFFSET_OUT_OF_RANGE surfaces, no reset.
    lines = java(jv, samsa_broker, "consume-assign", "--topic", topic, "--partitions", "0", "--from", "offset:30",
                 "--max", 1, "--timeout-ms", 15_000, allow_errors=True)
    assert [e["error"] for e in of_type(lines, "error")] == ["OffsetOutOfRangeException"]
