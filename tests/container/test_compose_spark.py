"""docker-compose.yml for real: Samsa next to a Spark cluster (master + worker), the sample events
and the streaming job run on the cluster, exactly as the manual's compose section (docs/containers.md) shows it.

The Spark services' image `apache/spark:4.0.0-python3` is built locally from tests/support/spark-image/
(no image registry here; users pull the real one). Maven Central is out of reach too, so the
connector comes from jars on the host through docker-compose.jars.yml (the manual's offline
variant): Spark's two connector jars, kafka-clients 3.9.0 and commons-pool2, found by
tests/support/sparkconnector.py. The stack runs under its own project name (COMPOSE_PROJECT_NAME) and is
removed with its volumes afterwards; the host ports are the compose file's own (29092, 7077, 8080,
8081, 4040), so they must be free. Skipped with the reason when no Docker daemon answers or the
connector jars are not there.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from kafka import KafkaProducer

from spark_jobs.sample_events import make_event
from tests.support import sparkconnector
from tests.support.container_support import read_all
from tests.support.dockerhelpers import PREFIX, image_size_mb, report, requires_docker, sh, wait_for
from tests.support.doc_pages import page

NO_CONNECTOR = sparkconnector.unavailable()
pytestmark = [pytest.mark.container, requires_docker]
requires_connector = pytest.mark.skipif(NO_CONNECTOR is not None, reason=NO_CONNECTOR or "")

DOCS_PAGE = "containers.md"   # the page whose commands this module runs
SPARK_IMAGE = "apache/spark:4.0.0-python3"
SPARK_IMAGE_BUILD = f"docker build --network=host -t {SPARK_IMAGE} tests/support/spark-image"
OFFLINE = "export COMPOSE_FILE=docker-compose.yml:docker-compose.jars.yml SAMSA_SPARK_KAFKA_JARS_DIR="
UP_CLUSTER = "docker compose up --build -d samsa spark-master spark-worker"
EVENTS = "docker compose run --rm events"
UP_JOB = "docker compose up -d streaming-job"
RESTART_JOB = "docker compose restart streaming-job"
DOWN = "docker compose down -v"
HOST_PORTS = (29092, 7077, 8080, 8081, 4040)
EXTERNAL = "localhost:29092"
START = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
START_MS = int(START.timestamp() * 1000)
STEP_MS = 500            # sample_events' defaults: 600 events, one every 500 ms from 12:00:00
COUNT = 600
ACTIONS = ("cart", "purchase", "view")
WAIT_S = 420


def expected_windows(extra: list[tuple[int, str, int]] = ()) -> dict[tuple[int, str], tuple[int, int, int]]:
    """(minute, action) -> (events, total cents, max cents) of the sample events (+ extra ones as
    (ms since 12:00, action, cents))."""
    out: dict[tuple[int, str], list[int]] = {}
    events = []
    for i in range(COUNT):
        _, value, ts = make_event(i, START_MS, STEP_MS)
        e = json.loads(value)
        events.append((ts - START_MS, e["action"], e["amount_cents"]))
    for offset_ms, action, cents in [*events, *extra]:
        agg = out.setdefault((offset_ms // 60_000, action), [0, 0, 0])
        agg[0] += 1
        agg[1] += cents
        agg[2] = max(agg[2], cents)
    return {k: tuple(v) for k, v in out.items()}  # type: ignore[misc]


def iso(minute: int) -> str:
    return (START + dt.timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")


def topic_records(windows: dict[tuple[int, str], tuple[int, int, int]], minutes: range) -> list[tuple[str, dict]]:
    return sorted((f"{action}@{iso(m)}", {"window_start": iso(m), "window_end": iso(m + 1), "action": action,
                                         "events": n, "total_cents": total, "max_cents": top})
                  for (m, action), (n, total, top) in windows.items() if m in minutes)


def parquet_rows(windows: dict[tuple[int, str], tuple[int, int, int]], minutes: range) -> list[tuple]:
    naive = START.replace(tzinfo=None)
    return sorted((naive + dt.timedelta(minutes=m), naive + dt.timedelta(minutes=m + 1), action, n, total, top)
                  for (m, action), (n, total, top) in windows.items() if m in minutes)


@pytest.fixture(scope="module")
def spark_image(pytestconfig: pytest.Config) -> str:
    t0 = time.monotonic()
    sh(SPARK_IMAGE_BUILD, timeout=1500)
    report(pytestconfig, [f"{SPARK_IMAGE_BUILD}: {time.monotonic() - t0:.1f} s; "
                          f"image size {image_size_mb(SPARK_IMAGE):.0f} MB"])
    return SPARK_IMAGE


@pytest.fixture(scope="module")
def jars_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host folder with the connector's four jars, readable by the containers' spark user."""
    folder = tmp_path_factory.mktemp("connector-jars")
    for jar in sparkconnector.kafka_jar_paths():
        shutil.copyfile(jar, folder / jar.name)
        (folder / jar.name).chmod(0o644)
    folder.chmod(0o755)
    return folder


@pytest.fixture
def stack(jars_dir: Path) -> Iterator[dict[str, str]]:
    """The environment the manual's offline commands set, plus a project name of our own."""
    busy = [p for p in HOST_PORTS if _listening(p)]
    assert not busy, f"the compose file's host ports {busy} are in use on this machine"
    env = {**os.environ, "COMPOSE_PROJECT_NAME": f"{PREFIX}-compose",
           "COMPOSE_FILE": "docker-compose.yml:docker-compose.jars.yml", "SAMSA_SPARK_KAFKA_JARS_DIR": str(jars_dir)}
    try:
        yield env
    finally:
        shown = sh("docker compose logs --no-color --tail 60 streaming-job spark-worker", env=env, check=False,
                   timeout=60)
        print(shown.stdout[-8000:])
        sh(DOWN, env=env, check=False, timeout=180)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def aggregates_in_topic() -> list[tuple[str, dict[str, Any]]]:
    try:
        return sorted((k.decode(), json.loads(v)) for part in (0, 1)  # KAFKA_NUM_PARTITIONS: 2
                      for _, k, v in read_all(EXTERNAL, "event-aggregates", part))
    except (AssertionError, Exception):  # the topic does not exist yet
        return []


def job_running(env: dict[str, str]) -> bool:
    out = sh("docker compose ps --status running --services", env=env, check=False, timeout=60).stdout.split()
    return "streaming-job" in out


def wait_for_aggregates(env: dict[str, str], count: int) -> list[tuple[str, dict[str, Any]]]:
    got: list[tuple[str, dict[str, Any]]] = []

    def enough() -> bool:
        nonlocal got
        assert job_running(env), "the streaming job exited:\n" + sh(
            "docker compose logs --no-color --tail 80 streaming-job", env=env, check=False).stdout[-6000:]
        got = aggregates_in_topic()
        return len(got) >= count
    wait_for(f"{count} aggregates in event-aggregates", enough, WAIT_S, interval=3)
    return got


@pytest.fixture(scope="module")
def local_spark() -> Iterator[Any]:
    """A local SparkSession on the host that reads the job's Parquet output."""
    pytest.importorskip("pyspark", reason="pyspark is not installed: the Parquet output is read with it")
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").appName("compose-parquet")
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()


def read_parquet(spark: Any, env: dict[str, str], target: Path) -> list[tuple]:
    """The job's Parquet table, copied out of the spark-work volume: exactly the files the sink's
    _spark_metadata log has committed (it names them with their paths in the containers)."""
    if target.exists():
        shutil.rmtree(target)
    copied = sh(f"docker compose cp streaming-job:/opt/spark/work-dir/aggregates {target}", env=env, timeout=120,
                check=False)
    if copied.returncode != 0 or not (target / "_spark_metadata").is_dir():
        return []  # the sink has not written yet
    files = []
    logs = [f for f in (target / "_spark_metadata").iterdir() if f.name.split(".")[0].isdigit()]  # not .crc
    for entry in sorted(logs, key=lambda f: int(f.name.split(".")[0])):
        for line in entry.read_text().splitlines()[1:]:
            item = json.loads(line)
            if item["action"] == "add":
                files.append(str(target / item["path"].rsplit("/", 1)[1]))
    if not files:
        return []
    cols = ["window_start", "window_end", "action", "events", "total_cents", "max_cents"]
    return sorted(tuple(r) for r in spark.read.parquet(*files).select(*cols).collect())


def wait_for_parquet(spark: Any, env: dict[str, str], target: Path, want: list[tuple]) -> None:
    """The Parquet sink is a query of its own and may commit a little after the Kafka sink."""
    got: list[tuple] = []

    def done() -> bool:
        nonlocal got
        got = read_parquet(spark, env, target)
        return len(got) >= len(want)
    try:
        wait_for(f"{len(want)} rows in the Parquet table", done, 120, interval=3)
    except AssertionError:
        pass  # the comparison below shows what is there
    assert got == want


def test_docs_show_the_compose_commands_these_tests_run():
    text = page(DOCS_PAGE)
    for command in (UP_CLUSTER, EVENTS, UP_JOB, RESTART_JOB, DOWN, OFFLINE, SPARK_IMAGE_BUILD):
        assert command in text, f"docs/{DOCS_PAGE} does not show: {command}"


def test_compose_files_with_and_without_the_jars_override(tmp_path: Path):
    """Without the override the job uses spark.jars.packages (as users pulling the real images do);
    with it, the host folder is mounted and named, and a missing folder is a clear error."""
    env = {k: v for k, v in os.environ.items() if k not in ("COMPOSE_FILE", "SAMSA_SPARK_KAFKA_JARS_DIR")}
    env["COMPOSE_PROJECT_NAME"] = f"{PREFIX}-config"
    plain = json.loads(sh("docker compose config --format json", env=env, timeout=60).stdout)
    job = plain["services"]["streaming-job"]
    assert "SAMSA_SPARK_KAFKA_JARS" not in (job.get("environment") or {})
    assert [v["target"] for v in job["volumes"]] == ["/opt/samsa/spark_jobs", "/opt/spark/work-dir"]
    offline = {**env, "COMPOSE_FILE": "docker-compose.yml:docker-compose.jars.yml",
               "SAMSA_SPARK_KAFKA_JARS_DIR": str(tmp_path)}
    job = json.loads(sh("docker compose config --format json", env=offline, timeout=60).stdout)["services"]["streaming-job"]
    assert job["environment"]["SAMSA_SPARK_KAFKA_JARS"] == "/opt/spark-kafka-jars"
    mount = next(v for v in job["volumes"] if v["target"] == "/opt/spark-kafka-jars")
    assert (mount["type"], mount["source"], mount.get("read_only")) == ("bind", str(tmp_path), True)
    del offline["SAMSA_SPARK_KAFKA_JARS_DIR"]
    missing = sh("docker compose config", env=offline, timeout=60, check=False)
    assert missing.returncode != 0
    assert "set SAMSA_SPARK_KAFKA_JARS_DIR to a host folder holding the connector's four jars" in missing.stderr


@requires_connector
def test_compose_stack_runs_the_streaming_job_on_the_spark_cluster(spark_image: str, stack: dict[str, str],
                                                                   local_spark: Any, tmp_path: Path,
                                                                   pytestconfig: pytest.Config):
    env = stack
    t0 = time.monotonic()
    sh(UP_CLUSTER, env=env, timeout=900)
    t_up = time.monotonic() - t0
    sh(EVENTS, env=env, timeout=300)
    assert len(read_all(EXTERNAL, "events", 0)) + len(read_all(EXTERNAL, "events", 1)) == COUNT
    sh(UP_JOB, env=env, timeout=300)
    windows = expected_windows()
    # 600 events, 12:00:00-12:04:59.5: the watermark (max event time - 30 s) closes 12:00-12:04.
    first = wait_for_aggregates(env, len(topic_records(windows, range(4))))
    t_first = time.monotonic() - t0
    assert first == topic_records(windows, range(4))
    assert len(first) == 12
    # The executors ran on the worker: it holds the application's work folder.
    apps = sh("docker compose exec -T spark-worker ls /opt/spark/work", env=env, timeout=60).stdout.split()
    assert any(a.startswith("app-") for a in apps), apps
    wait_for_parquet(local_spark, env, tmp_path / "parquet-1", parquet_rows(windows, range(4)))

    # Restart the job: it resumes from its checkpoints. One late event at 12:06:00 moves the
    # watermark past 12:05:00, so exactly the 12:04 window (counted partly before the restart,
    # from the state in the checkpoint) is added; nothing already written comes again.
    t1 = time.monotonic()
    sh(RESTART_JOB, env=env, timeout=300)
    producer = KafkaProducer(bootstrap_servers=EXTERNAL, acks="all")
    try:
        late = {"event_id": "e-late", "user": "u-9", "action": "view", "amount_cents": 0,
                "event_time": "2024-05-01T12:06:00.000Z"}
        producer.send("events", key=b"u-9", value=json.dumps(late).encode(), partition=0,
                      timestamp_ms=START_MS + 360_000).get(timeout=20)
    finally:
        producer.close(timeout=5)
    windows = expected_windows([(360_000, "view", 0)])
    second = wait_for_aggregates(env, len(topic_records(windows, range(5))))
    t_restart = time.monotonic() - t1
    assert second == topic_records(windows, range(5))
    assert len(second) == 15 and len({k for k, _ in second}) == 15
    time.sleep(15)  # one more trigger interval: still nothing twice
    assert aggregates_in_topic() == second
    wait_for_parquet(local_spark, env, tmp_path / "parquet-2", parquet_rows(windows, range(5)))
    report(pytestconfig, [f"compose: `up --build -d` of samsa + spark-master + spark-worker {t_up:.1f} s; "
                          f"first aggregates {t_first:.1f} s after it started; after the job's restart the next "
                          f"window in {t_restart:.1f} s"])
