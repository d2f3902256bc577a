"""Kafka's command-line tools (broker/tools/) against three brokers (etcd-backed): kafka-topics
creates a replicated topic and describes its leaders, replicas and ISR as Kafka prints them;
kafka-consumer-groups describes a group whose coordinator is another broker, with lag, and resets
its offsets, all through one bootstrap address."""
from __future__ import annotations

import time
import uuid

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.cluster_support import FAST_GROUPS
from tests.support.kafka_tools import kafka_uuid, offsets_row, reset_row, tool

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

CLUSTER = pytest.mark.parametrize("samsa_cluster", [{"overrides": FAST_GROUPS}], indirect=True, ids=["fast"])


def metadata(bootstrap: str, topic: str) -> dict:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (desc,) = admin.describe_topics([topic])
    finally:
        admin.close()
    return desc


@pytest.mark.slow
@CLUSTER
def test_kafka_topics_and_consumer_groups_on_three_brokers(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    first = c.brokers[1].bootstrap_servers
    t, g = f"orders-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    r = tool("kafka-topics.sh", "--bootstrap-server", first, "--create", "--topic", t, "--partitions", "3",
             "--replication-factor", "3")
    assert (r.returncode, r.stdout) == (0, f"Created topic {t}.\n"), r.stderr
    c.wait_for(lambda: all(len(p["isr_nodes"]) == 3 for p in metadata(first, t)["partitions"]), what="ISR of 3")
    desc = metadata(first, t)
    tid = kafka_uuid(uuid.UUID(str(desc["topic_id"])).bytes)
    r = tool("kafka-topics", "--bootstrap-server", c.bootstrap_servers, "--describe", "--topic", t)
    assert r.returncode == 0, r
    expected = [f"Topic: {t}\tTopicId: {tid}\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: "]
    for p in sorted(desc["partitions"], key=lambda p: p["partition_index"]):
        expected.append(f"\tTopic: {t}\tPartition: {p['partition_index']}\tLeader: {p['leader_id']}"
                        f"\tReplicas: {','.join(map(str, p['replica_nodes']))}\tIsr: {','.join(map(str, p['isr_nodes']))}"
                        "\tElr: \tLastKnownElr: ")
    assert r.stdout.splitlines() == expected
    r = tool("kafka-topics", "--bootstrap-server", first, "--describe", "--topic", t, "--under-replicated-partitions")
    assert (r.returncode, r.stdout) == (0, "")
    r = tool("kafka-topics", "--bootstrap-server", first, "--create", "--topic", t)
    assert (r.returncode, r.stdout) == (1, f"Error while executing topic command : Topic '{t}' already exists.\n")

    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all")
    for partition, n in {0: 4, 1: 6, 2: 2}.items():
        for i in range(n):
            producer.send(t, b"x%d" % i, partition=partition)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap_servers, group_id=g, enable_auto_commit=False)
    consumer.commit({TopicPartition(t, 0): OffsetAndMetadata(1, "", -1), TopicPartition(t, 1): OffsetAndMetadata(6, "", -1)})
    consumer.close()

    r = tool("kafka-consumer-groups.sh", "--bootstrap-server", first, "--describe", "--group", g)
    assert r.returncode == 0, r
    widths = (max(15, len(g)), max(15, len(t)), 15, 15)
    lines = r.stdout.split("\n")
    assert lines[1] == offsets_row(widths, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                   "CONSUMER-ID", "HOST", "CLIENT-ID")
    assert sorted(lines[2:-1]) == [offsets_row(widths, g, t, 0, 1, 4, 3, "-", "-", "-"),
                                   offsets_row(widths, g, t, 1, 6, 6, 0, "-", "-", "-")]

    r = tool("kafka-consumer-groups", "--bootstrap-server", first, "--reset-offsets", "--group", g, "--all-topics",
             "--to-latest", "--execute")
    assert r.returncode == 0, r
    assert sorted(r.stdout.split("\n")[2:-1]) == [reset_row(g, t, 0, 4), reset_row(g, t, 1, 6)]
    deadline = time.monotonic() + 10
    while True:
        r = tool("kafka-consumer-groups", "--bootstrap-server", first, "--describe", "--group", g)
        lags = sorted(line.split()[5] for line in r.stdout.split("\n")[2:-1])
        if lags == ["0", "0"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert lags == ["0", "0"]
    r = tool("kafka-consumer-groups", "--bootstrap-server", first, "--describe", "--group", g, "--state")
    state_line = r.stdout.split("\n")[2]
    assert state_line.split()[0] == g and state_line.split()[-2:] == ["Empty", "0"]

    # a broker down: its partitions are under-replicated, none unavailable (leaders moved), as Kafka reports
    c.kill(3)
    deadline = time.monotonic() + 45
    while True:
        r = tool("kafka-topics", "--bootstrap-server", first, "--describe", "--topic", t, "--under-replicated-partitions")
        lines = r.stdout.splitlines()
        if len(lines) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(lines) == 3, r
    for line in lines:
        cells = dict(cell.split(": ", 1) for cell in line.strip("\t").split("\t") if ": " in cell)
        assert cells["Topic"] == t and cells["Leader"] in ("1", "2")
        assert sorted(cells["Replicas"].split(",")) == ["1", "2", "3"] and "3" not in cells["Isr"].split(",")
    r = tool("kafka-topics", "--bootstrap-server", first, "--describe", "--topic", t, "--unavailable-partitions")
    assert (r.returncode, r.stdout) == (0, "")
