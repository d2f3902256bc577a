"""The image, built and run with Docker: what the manual's "The image" section (docs/containers.md) shows, for real.

The image is built once per session with the manual's exact command; each test starts its own
containers (named ``samsa-test-*``, removed afterwards) and asserts what a user sees: clients on
the host through a published port, the HEALTHCHECK, KAFKA_* settings, data across restarts and
new containers, a clean stop, a read-only root filesystem, an unwritable volume.
Skipped with the reason when no Docker daemon answers.
"""
from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from broker.cli import healthcheck
from broker.testing import free_port
from tests.support.rawclient import RawClient
from tests.support.container_support import BUILD, read_all
from tests.support.dockerhelpers import (Resources, build_once, docker, health, inspect, logs, report, requires_docker, sh, wait_for)
from tests.support.doc_pages import page

pytestmark = [pytest.mark.container, requires_docker]

DOCS_PAGE = "containers.md"   # the page whose commands this module runs
# The page's commands, with the container name, host port and volume as placeholders
# (the page: samsa, 19092, samsa-data; the tests use fresh ones).
RUN = ("docker run -d --name {name} -p {port}:9092 -e KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:{port} "
       "-v {volume}:/var/lib/samsa/data samsa")
RUN_READ_ONLY = ("docker run -d --name {name} --read-only -p {port}:9092 "
                 "-e KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:{port} -v {volume}:/var/lib/samsa/data samsa")
PAGE_VALUES = {"name": "samsa", "port": 19092, "volume": "samsa-data"}
HEALTHY_WITHIN_S = 30


@pytest.fixture(scope="session")
def samsa_image(pytestconfig: pytest.Config) -> str:
    """`docker build` of the project's Dockerfile, once per session (the manual's command; other
    modules' fixtures call the same build_once, so one run builds once)."""
    return build_once(pytestconfig, BUILD, "samsa")


@pytest.fixture
def res() -> Iterator[Resources]:
    r = Resources()
    yield r
    r.cleanup()


def start(res: Resources, template: str = RUN, *extra_env: str, volume: str | None = None) -> tuple[str, int, str]:
    """Run a command of the page with a fresh name, a free host port and a (new or given) volume."""
    name, port = res.container(), free_port()
    volume = volume or res.volume()
    command = template.format(name=name, port=port, volume=volume)
    if extra_env:
        command = command.replace(" -v ", " " + " ".join(f"-e {e}" for e in extra_env) + " -v ", 1)
    sh(command, timeout=60)
    return name, port, volume


def wait_ready(name: str, port: int, timeout: float = 30) -> float:
    """Until the broker answers ApiVersions through the published port; returns the seconds."""
    def ready() -> bool:
        assert inspect(name, "{{.State.Running}}") == "true", f"{name} exited:\n{logs(name)[-3000:]}"
        return healthcheck(f"127.0.0.1:{port}", timeout=0.5)
    return wait_for(f"{name} answering on {port}", ready, timeout)


def produce_kafka_python(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i, v in enumerate(values):
            producer.send(topic, key=f"k{i}".encode(), value=v, partition=0)
        producer.flush(timeout=20)
    finally:
        producer.close(timeout=5)


def committed(bootstrap: str, group: str, topic: str) -> int | None:
    """The group's committed offset for partition 0 (OffsetFetch through kafka-python)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return consumer.committed(TopicPartition(topic, 0))
    finally:
        consumer.close()


def commit_offset(bootstrap: str, group: str, topic: str, offset: int) -> None:
    from kafka.structs import OffsetAndMetadata
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)})
    finally:
        consumer.close()


# ---------------------------------------------------------------- the image itself
def test_docs_show_what_these_tests_run():
    text = page(DOCS_PAGE)
    for command in (BUILD, RUN.format(**PAGE_VALUES), RUN_READ_ONLY.format(**PAGE_VALUES),
                    f"docker stop {PAGE_VALUES['name']}"):
        assert command in text, f"docs/{DOCS_PAGE} does not show: {command}"


def test_image_runs_as_non_root_without_a_source_tree(samsa_image: str):
    config = inspect(samsa_image)["Config"]
    assert config["User"] == "samsa" and config["ExposedPorts"] == {"9092/tcp": {}, "8090/tcp": {}}
    assert config["Healthcheck"]["Test"] == ["CMD", "samsa", "healthcheck"]
    probe = ("id -u; id -g; "
             # Samsa's code exists once, installed; no pyproject.toml, egg-info or second copy.
             "find / -xdev \\( -name pyproject.toml -o -name 'samsa_broker.egg-info' -o -path '*/broker/cli.py' \\)"
             " -print 2>/dev/null; "
             "ls /opt; samsa healthcheck --help >/dev/null && echo cli-ok; "
             # Kafka's tools where Kafka's image has them, and on PATH (issue 22)
             "/opt/kafka/bin/kafka-topics.sh --version >/dev/null && kafka-topics.sh --version >/dev/null && echo tools-ok; "
             "python -m pip --version >/dev/null 2>&1 && echo pip-present || echo no-pip")
    out = docker("run", "--rm", "--entrypoint", "sh", samsa_image, "-c", probe).stdout.split()
    assert out == ["10001", "10001", "/opt/samsa/lib/python3.11/site-packages/broker/cli.py", "kafka", "samsa",
                   "cli-ok", "tools-ok", "no-pip"]


def test_kafka_quick_start_habit_docker_exec_kafka_topics(samsa_image: str, res: Resources):
    """Kafka's docker quick start, unchanged: `docker exec <broker> /opt/kafka/bin/kafka-topics.sh
    --bootstrap-server localhost:9092 --create ...` creates the topic, and --describe shows it."""
    name, port = res.container(), free_port()
    docker("run", "-d", "--name", name, "-p", f"{port}:9092", samsa_image)   # advertises localhost:9092, as Kafka's
    wait_ready(name, port)
    tool = "/opt/kafka/bin/kafka-topics.sh"
    created = docker("exec", name, tool, "--bootstrap-server", "localhost:9092", "--create", "--topic", "orders",
                     "--partitions", "3")
    assert created.stdout.strip() == "Created topic orders."
    again = docker("exec", name, tool, "--bootstrap-server", "localhost:9092", "--create", "--topic", "orders",
                   check=False)
    assert again.returncode == 1 and "Topic 'orders' already exists." in again.stdout + again.stderr
    described = docker("exec", name, tool, "--bootstrap-server", "localhost:9092", "--describe", "--topic", "orders")
    lines = described.stdout.strip().splitlines()
    assert lines[0].startswith("Topic: orders\tTopicId: ") and "\tPartitionCount: 3\tReplicationFactor: 1\t" in lines[0]
    assert [line.split("\t")[1:3] for line in lines[1:]] == [["Topic: orders", f"Partition: {p}"] for p in range(3)]


# ---------------------------------------------------------------- running it
def test_published_port_clients_healthcheck_and_kafka_env(samsa_image: str, res: Resources,
                                                         pytestconfig: pytest.Config):
    name, port, _ = start(res, RUN, "KAFKA_NUM_PARTITIONS=3")
    t0 = time.monotonic()
    ready = wait_ready(name, port)
    bootstrap = f"localhost:{port}"
    # kafka-python: produce and read back exact records through the advertised localhost:PORT.
    values = [f"value-{i}".encode() for i in range(20)]
    produce_kafka_python(bootstrap, "from-kafka-python", values)
    assert read_all(bootstrap, "from-kafka-python") == [(i, f"k{i}".encode(), v) for i, v in enumerate(values)]
    # confluent-kafka (librdkafka), the same way.
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce("from-librdkafka", key=f"c{i}".encode(), value=f"cv-{i}".encode(), partition=1)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe(["from-librdkafka"])
        got: list[tuple[int, int, bytes, bytes]] = []
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    assert got == [(1, i, f"c{i}".encode(), f"cv-{i}".encode()) for i in range(10)]
    # KAFKA_NUM_PARTITIONS=3 applies to auto-created topics.
    for topic in ("from-kafka-python", "from-librdkafka"):
        meta = KafkaProducer(bootstrap_servers=bootstrap)
        try:
            assert meta.partitions_for(topic) == {0, 1, 2}
        finally:
            meta.close(timeout=5)
    # The image's HEALTHCHECK turns healthy, and its log says what it asked.
    healthy = wait_for(f"{name} healthy", lambda: health(name) == "healthy", HEALTHY_WITHIN_S, 0.2)
    to_healthy = time.monotonic() - t0
    last = inspect(name)["State"]["Health"]["Log"][-1]
    assert (last["ExitCode"], last["Output"].strip()) == (0, "samsa healthcheck: 127.0.0.1:9092 answered ApiVersions and Metadata")
    first_start = logs(name)
    assert "new_log_dir=True" in first_start and "not clean" not in first_start and "clean_shutdown" not in first_start
    report(pytestconfig, [f"container answering on the published port {ready:.1f} s after `docker run -d` "
                          f"returned; HEALTHCHECK healthy after {to_healthy:.1f} s (waited {healthy:.1f} s more)"])


def test_data_survives_restart_and_a_new_container_and_stops_cleanly(samsa_image: str, res: Resources,
                                                                     pytestconfig: pytest.Config):
    name, port, volume = start(res)
    wait_ready(name, port)
    bootstrap = f"localhost:{port}"
    values = [f"kept-{i}".encode() for i in range(30)]
    produce_kafka_python(bootstrap, "kept", values)
    commit_offset(bootstrap, "keeper", "kept", 17)
    want_records = [(i, f"k{i}".encode(), v) for i, v in enumerate(values)]
    assert committed(bootstrap, "keeper", "kept") == 17

    docker("restart", name, timeout=60)
    wait_ready(name, port)
    assert read_all(bootstrap, "kept") == want_records
    assert committed(bootstrap, "keeper", "kept") == 17
    assert "clean_shutdown=True" in logs(name)

    t0 = time.monotonic()
    docker("stop", name, timeout=60)
    stop_s = time.monotonic() - t0
    state = inspect(name)["State"]
    assert (state["Status"], state["ExitCode"], state["OOMKilled"]) == ("exited", 0, False)
    assert stop_s < 2, f"docker stop took {stop_s:.2f} s"
    assert logs(name).count("log manager shut down cleanly") == 2  # the restart and the stop

    # A new container on the same named volume: the same records and offsets, a clean start.
    second, port2, _ = start(res, volume=volume)
    wait_ready(second, port2)
    bootstrap2 = f"localhost:{port2}"
    assert read_all(bootstrap2, "kept") == want_records
    assert committed(bootstrap2, "keeper", "kept") == 17
    started = logs(second)
    assert "clean_shutdown=True" in started and "not clean" not in started
    report(pytestconfig, [f"docker stop (SIGTERM to exit 0): {stop_s:.2f} s"])


def test_without_advertised_listeners_clients_are_sent_to_9092(samsa_image: str, res: Resources):
    """What the manual warns about: `-p PORT:9092` alone bootstraps, then points clients at 9092."""
    name, port = res.container(), free_port()
    docker("run", "-d", "--name", name, "-p", f"{port}:9092", samsa_image)
    wait_ready(name, port)
    with RawClient(f"127.0.0.1:{port}") as client:
        resp = client.request(3, 12, topics=[], allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(1, "localhost", 9092)]


def test_read_only_root_filesystem(samsa_image: str, res: Resources):
    name, port, _ = start(res, RUN_READ_ONLY)
    wait_ready(name, port)
    bootstrap = f"localhost:{port}"
    values = [f"ro-{i}".encode() for i in range(5)]
    produce_kafka_python(bootstrap, "read-only-root", values)
    assert read_all(bootstrap, "read-only-root") == [(i, f"k{i}".encode(), v) for i, v in enumerate(values)]
    assert inspect(name, "{{.HostConfig.ReadonlyRootfs}}") == "true"
    docker("stop", name, timeout=60)
    assert inspect(name, "{{.State.ExitCode}}") == "0"
    assert "log manager shut down cleanly" in logs(name)


def test_unwritable_volume_gives_the_entrypoints_error(samsa_image: str, tmp_path: Path):
    folder = tmp_path / "root-owned"
    folder.mkdir(mode=0o755)  # the test runs as root here, or as a user the container's uid is not
    proc = docker("run", "--rm", "-v", f"{folder}:/var/lib/samsa/data", samsa_image, check=False, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == ("samsa: data folder /var/lib/samsa/data is not writable by "
                                                    "uid 10001; fix the volume's owner or set KAFKA_LOG_DIRS")
    assert list(folder.iterdir()) == []


def test_failing_healthcheck_says_what_it_tried(samsa_image: str, res: Resources):
    name = res.container()
    docker("run", "-d", "--name", name, "--health-interval=1s", "--health-retries=1",
           "-e", "SAMSA_BOOTSTRAP=127.0.0.1:9999", samsa_image)
    wait_for(f"{name} unhealthy", lambda: health(name) == "unhealthy", 30)
    last = inspect(name)["State"]["Health"]["Log"][-1]
    assert last["ExitCode"] == 1
    assert last["Output"].strip() == ("samsa healthcheck: no ApiVersions answer from 127.0.0.1:9999: "
                                      "connect failed: Connection refused")
    assert re.search(r"logs loaded", logs(name))  # the broker itself runs; only the probe's target is wrong
