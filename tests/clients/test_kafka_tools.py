"""Kafka's command-line tools (broker/tools/) run as scripts run them, against one Samsa broker;
their output compared line by line with Kafka's formats, filled with values this test knows from
elsewhere (topic ids from kafka-python's Metadata, offsets from what the test produced and
committed)."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.testing import SamsaBroker, running_broker
from tests.support.kafka_tools import kafka_uuid, offsets_row, reset_row, tool


@pytest.fixture(scope="module")
def tbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("kafka-tools") / "data",
                        overrides={"group.initial.rebalance.delay.ms": "0"}) as broker:
        yield broker  # type: ignore[misc]


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def topic_id(bootstrap: str, topic: str) -> str:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (desc,) = admin.describe_topics([topic])
    finally:
        admin.close()
    return kafka_uuid(uuid.UUID(str(desc["topic_id"])).bytes)


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for partition, n in counts.items():
        for i in range(n):
            producer.send(topic, f"v{partition}-{i}".encode(), partition=partition)
    producer.flush()
    producer.close()


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})
    consumer.close()


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()}


# --- kafka-topics ---------------------------------------------------------------------------

def test_topics_create_exists_describe_alter_delete(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    t = name("orders")
    r = tool("kafka-topics.sh", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", "3")
    assert (r.returncode, r.stdout) == (0, f"Created topic {t}.\n"), r.stderr
    # a second --create: Kafka's message and exit code; --if-not-exists: silent success
    r = tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", "3")
    assert (r.returncode, r.stdout) == (1, f"Error while executing topic command : Topic '{t}' already exists.\n")
    r = tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--if-not-exists")
    assert (r.returncode, r.stdout) == (0, "")

    tid = topic_id(b, t)
    r = tool("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", t)
    assert r.returncode == 0, r
    expected = [f"Topic: {t}\tTopicId: {tid}\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: "]
    expected += [f"\tTopic: {t}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: " for p in range(3)]
    assert r.stdout.splitlines() == expected

    r = tool("kafka-topics", "--bootstrap-server", b, "--alter", "--topic", t, "--partitions", "5")
    assert (r.returncode, r.stdout) == (0, "")
    r = tool("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", t)
    assert r.stdout.splitlines()[0].startswith(f"Topic: {t}\tTopicId: {tid}\tPartitionCount: 5\t")
    assert len(r.stdout.splitlines()) == 6

    r = tool("kafka-topics", "--bootstrap-server", b, "--list")
    assert t in r.stdout.splitlines() and r.stdout.splitlines() == sorted(r.stdout.splitlines())

    r = tool("kafka-topics", "--bootstrap-server", b, "--delete", "--topic", t)
    assert (r.returncode, r.stdout) == (0, "")
    deadline = time.monotonic() + 20
    while t in tool("kafka-topics", "--bootstrap-server", b, "--list").stdout.splitlines():
        assert time.monotonic() < deadline
        time.sleep(0.2)
    r = tool("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", t)
    # Kafka 4.x formats the Optional it was given
    assert (r.returncode, r.stdout) == (1, f"Error while executing topic command : Topic 'Optional[{t}]' does not exist as expected\n")
    r = tool("kafka-topics", "--bootstrap-server", b, "--delete", "--topic", t, "--if-exists")
    assert (r.returncode, r.stdout) == (0, "")


def test_topics_configs_in_javas_hashmap_order_and_usage_errors(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    t = name("cfg")
    r = tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--replication-factor", "1",
             "--config", "retention.ms=60000", "--config", "cleanup.policy=compact", "--config", "segment.bytes=1048576")
    assert r.returncode == 0, r
    line = tool("kafka-topics", "--bootstrap-server", b, "--describe", "--topic", t).stdout.splitlines()[0]
    # Kafka keeps a topic's ~33 configs in a java.util.HashMap (64 buckets): this is the order a JVM iterates
    # them in (checked with OpenJDK 17), not the order given
    assert line.endswith("\tConfigs: cleanup.policy=compact,retention.ms=60000,segment.bytes=1048576"), line
    r = tool("kafka-topics", "--bootstrap-server", b, "--describe", "--topics-with-overrides")
    assert f"Topic: {t}\t" in r.stdout and "\tPartition: " not in r.stdout

    # usage errors: the message then the help on stderr, exit 1
    r = tool("kafka-topics", "--bootstrap-server", b, "--list", "--create")
    assert r.returncode == 1 and r.stderr.startswith(
        "Command must include exactly one action: --list, --describe, --create, --alter or --delete\n")
    r = tool("kafka-topics", "--bootstrap-server", b, "--create")
    assert r.returncode == 1 and r.stderr.startswith('Missing required argument "[topic]"\n')
    r = tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", name("x"), "--partitions", "0")
    assert (r.returncode, r.stdout) == (1, "Error while executing topic command : The partitions must be greater than 0\n")


# --- console producer and consumer ------------------------------------------------------------

def test_console_producer_and_consumer(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    t = name("console")
    assert tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", "1").returncode == 0
    r = tool("kafka-console-producer.sh", "--bootstrap-server", b, "--topic", t,
             "--property", "parse.key=true", "--property", "key.separator=:", stdin="k1:v1\nk2:v2\n")
    assert (r.returncode, r.stdout) == (0, ""), r.stderr
    r = tool("kafka-console-producer", "--bootstrap-server", b, "--topic", t, stdin="plain\n")
    assert r.returncode == 0, r.stderr
    r = tool("kafka-console-consumer.sh", "--bootstrap-server", b, "--topic", t, "--from-beginning",
             "--max-messages", "3", "--property", "print.key=true", "--property", "print.offset=true",
             "--property", "print.partition=true")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Partition:0\tOffset:0\tk1\tv1\nPartition:0\tOffset:1\tk2\tv2\nPartition:0\tOffset:2\tnull\tplain\n"
    assert r.stderr.endswith("Processed a total of 3 messages\n")
    # --partition/--offset, and --timeout-ms ends an idle consumer with Kafka's lines on stderr
    r = tool("kafka-console-consumer", "--bootstrap-server", b, "--topic", t, "--partition", "0", "--offset", "1",
             "--timeout-ms", "2000")
    assert (r.returncode, r.stdout) == (0, "v2\nplain\n")
    assert "org.apache.kafka.common.errors.TimeoutException" in r.stderr
    assert r.stderr.endswith("Processed a total of 2 messages\n")
    # a missing key separator: Kafka's message, exit 1
    r = tool("kafka-console-producer", "--bootstrap-server", b, "--topic", t, "--property", "parse.key=true",
             stdin="novalue\n")
    assert r.returncode == 1 and "No key separator found on line number 1: 'novalue'" in r.stderr


# --- kafka-consumer-groups ----------------------------------------------------------------------

def test_consumer_groups_describe_with_lag_and_list(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    t, g = name("lag"), name("grp")
    assert tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", "3").returncode == 0
    produce(b, t, {0: 5, 1: 3, 2: 7})
    commit(b, g, t, {0: 2, 1: 3})
    r = tool("kafka-consumer-groups.sh", "--bootstrap-server", b, "--describe", "--group", g)
    assert r.returncode == 0, r
    assert r.stderr == f"\nConsumer group '{g}' has no active members.\n"
    lines = r.stdout.split("\n")
    widths = (max(15, len(g)), max(15, len(t)), 15, 15)
    assert lines[0] == "" and lines[-1] == ""
    assert lines[1] == offsets_row(widths, "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                   "CONSUMER-ID", "HOST", "CLIENT-ID")
    assert sorted(lines[2:-1]) == [offsets_row(widths, g, t, 0, 2, 5, 3, "-", "-", "-"),
                                   offsets_row(widths, g, t, 1, 3, 3, 0, "-", "-", "-")]

    r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--list")
    assert g in r.stdout.splitlines()
    r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--list", "--state", "Empty")
    width = max(15, *(len(x.split()[0]) for x in r.stdout.splitlines()[1:])) + 10
    assert r.stdout.splitlines()[0] == f"{'GROUP':<{width}} {'STATE':<20}"
    assert f"{g:<{width}} {'Empty':<20}" in r.stdout.splitlines()

    # an active member: its partitions with its consumer id, host and client id
    consumer = KafkaConsumer(t, bootstrap_servers=b, group_id=g, client_id="tools-test", enable_auto_commit=False)
    deadline = time.monotonic() + 30
    while not consumer.assignment():
        consumer.poll(200)
        assert time.monotonic() < deadline
    try:
        r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", g)
        rows = [line.split() for line in r.stdout.split("\n")[2:-1]]
        assert sorted((row[2], row[3], row[4], row[5]) for row in rows) == [("0", "2", "5", "3"), ("1", "3", "3", "0"),
                                                                           ("2", "-", "7", "-")]
        assert {row[8] for row in rows} == {"tools-test"} and {row[7] for row in rows} == {"/127.0.0.1"}
        r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", g, "--state")
        assert r.stdout.split("\n")[2].split()[-2:] == ["Stable", "1"]
        # a stable group's offsets cannot be reset: Kafka's message, exit 0
        r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--group", g, "--topic", t,
                 "--to-earliest", "--execute")
        assert r.returncode == 0
        assert r.stdout.startswith(f"\nError: Assignments can only be reset if the group '{g}' is inactive, but the "
                                   "current state is Stable.\n")
    finally:
        consumer.close()

    r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", "no-such-group")
    assert (r.returncode, r.stdout.split("\n")[:2]) == (0, ["", "Error: Consumer group 'no-such-group' does not exist."])


def test_consumer_groups_reset_offsets(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    t, g = name("reset"), name("rgrp")
    assert tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", "2").returncode == 0
    before = int(time.time() * 1000)
    produce(b, t, {0: 10, 1: 4})
    commit(b, g, t, {0: 6, 1: 1})
    base = ["--bootstrap-server", b, "--reset-offsets", "--group", g]

    def table(r, rows: list[tuple[int, int]]) -> None:
        assert r.returncode == 0, r
        lines = r.stdout.split("\n")
        assert lines[0] == "" and lines[1] == reset_row("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET") and lines[-1] == ""
        assert sorted(lines[2:-1]) == [reset_row(g, t, p, o) for p, o in rows]

    # without --execute nothing changes (and Kafka's warning when neither flag is given)
    r = tool("kafka-consumer-groups", *base, "--topic", t, "--to-earliest")
    table(r, [(0, 0), (1, 0)])
    assert r.stderr.startswith("WARN: No action will be performed as the --execute option is missing.")
    table(tool("kafka-consumer-groups", *base, "--topic", t, "--to-latest", "--dry-run"), [(0, 10), (1, 4)])
    table(tool("kafka-consumer-groups", *base, "--all-topics", "--shift-by", "-2", "--dry-run"), [(0, 4), (1, 0)])
    # offsets out of range are clamped to the log's, as Kafka does
    table(tool("kafka-consumer-groups", *base, "--topic", f"{t}:0", "--to-offset", "99", "--dry-run"), [(0, 10)])
    assert committed(b, g) == {(t, 0): 6, (t, 1): 1}

    table(tool("kafka-consumer-groups", *base, "--topic", t, "--to-earliest", "--execute"), [(0, 0), (1, 0)])
    assert committed(b, g) == {(t, 0): 0, (t, 1): 0}
    table(tool("kafka-consumer-groups", *base, "--topic", t, "--shift-by", "3", "--execute"), [(0, 3), (1, 3)])
    assert committed(b, g) == {(t, 0): 3, (t, 1): 3}
    table(tool("kafka-consumer-groups", *base, "--topic", f"{t}:1", "--to-latest", "--execute"), [(1, 4)])
    assert committed(b, g) == {(t, 0): 3, (t, 1): 4}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(before / 1000 - 60)) + ".000"
    table(tool("kafka-consumer-groups", *base, "--topic", t, "--to-datetime", stamp, "--execute"), [(0, 0), (1, 0)])
    assert committed(b, g) == {(t, 0): 0, (t, 1): 0}
    r = tool("kafka-consumer-groups", *base, "--topic", t, "--to-offset", "5", "--export", "--dry-run")
    assert sorted(r.stdout.strip().split("\n")) == [f"{t},0,5", f"{t},1,4"]

    r = tool("kafka-consumer-groups", *base, "--topic", t, "--to-earliest", "--to-latest", "--dry-run")
    assert r.returncode == 1 and "can't be used with option" in r.stderr

    # --delete-offsets of one partition: Kafka's summary line and TOPIC PARTITION STATUS table
    r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--delete-offsets", "--group", g, "--topic", f"{t}:1")
    status = "\n{:<30} {:<15} {:<15}"
    assert (r.returncode, r.stdout) == (0, f"Request succeed for deleting offsets with topic {t}:1 group {g}\n"
                                        + status.format("TOPIC", "PARTITION", "STATUS")
                                        + status.format(t, 1, "Successful") + "\n")
    assert committed(b, g) == {(t, 0): 0}
    r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--delete-offsets", "--group", "no-such-group",
             "--topic", f"{t}:0")
    assert r.stdout.startswith("\nError: 'no-such-group' does not exist.\n")

    r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--delete", "--group", g)
    assert (r.returncode, r.stdout) == (0, f"Deletion of requested consumer groups ('{g}') was successful.\n")
    assert g not in tool("kafka-consumer-groups", "--bootstrap-server", b, "--list").stdout.splitlines()


# --- kafka-configs -----------------------------------------------------------------------------

def test_configs_topics_alter_and_describe(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    t = name("conf")
    assert tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t).returncode == 0
    r = tool("kafka-configs.sh", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", t, "--alter",
             "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]")
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for topic {t}.\n"), r.stderr
    r = tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "topics", "--entity-name", t, "--describe")
    lines = r.stdout.splitlines()
    assert lines[0] == f"Dynamic configs for topic {t} are:"
    assert lines[1].startswith("  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
                               "cleanup.policy=compact,delete")
    assert lines[2].startswith("  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000")
    assert len(lines) == 3
    r = tool("kafka-configs", "--bootstrap-server", b, "--topic", t, "--alter", "--delete-config", "retention.ms")
    assert r.returncode == 0
    r = tool("kafka-configs", "--bootstrap-server", b, "--topic", t, "--describe")
    assert [x.split("=")[0] for x in r.stdout.splitlines()[1:]] == ["  cleanup.policy"]
    r = tool("kafka-configs", "--bootstrap-server", b, "--topic", t, "--alter", "--delete-config", "nope")
    assert (r.returncode, r.stderr) == (1, "Invalid config(s): nope\n")
    r = tool("kafka-configs", "--bootstrap-server", b, "--topic", t, "--describe", "--all")
    assert r.stdout.splitlines()[0] == f"All configs for topic {t} are:"
    assert any(x.startswith("  min.insync.replicas=1 sensitive=false synonyms={") for x in r.stdout.splitlines())


def test_configs_user_scram_credentials(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    user = name("alice")
    r = tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "users", "--entity-name", user, "--alter",
             "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for user {user}.\n"), r.stderr
    r = tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "users", "--entity-name", user, "--describe")
    assert r.stdout == f"SCRAM credential configs for user-principal '{user}' are SCRAM-SHA-256=iterations=8192\n"


def test_configs_broker_default_alter_reaches_describe(tbroker: SamsaBroker) -> None:
    """Kafka's outcome: the cluster-wide default is set and reported with its source."""
    b = tbroker.bootstrap_servers
    r = tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "brokers", "--entity-default", "--alter",
             "--add-config", "log.retention.ms=60000")
    assert (r.returncode, r.stdout) == (0, "Completed updating default config for brokers in the cluster.\n"), r.stderr
    r = tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "brokers", "--entity-default", "--describe")
    assert r.stdout.splitlines()[0] == "Default configs for brokers in the cluster are:"
    assert ("  log.retention.ms=60000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=60000}"
            in r.stdout.splitlines())
    r = tool("kafka-configs", "--bootstrap-server", b, "--entity-type", "brokers", "--entity-name", "1", "--alter",
             "--add-config", "log.retention.ms=120000")
    assert (r.returncode, r.stdout) == (0, "Completed updating config for broker 1.\n"), r.stderr


# --- kafka-get-offsets, kafka-features, kafka-transactions ---------------------------------------

def test_get_offsets(tbroker: SamsaBroker) -> None:
    b = tbroker.bootstrap_servers
    t = name("offs")
    assert tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", "12").returncode == 0
    produce(b, t, {0: 3, 2: 1, 11: 4})
    r = tool("kafka-get-offsets.sh", "--bootstrap-server", b, "--topic", t)
    # sorted as text "topic-partition", as Kafka's GetOffsetShell sorts: 10 and 11 before 2
    order = sorted(range(12), key=lambda p: f"{t}-{p}")
    ends = {0: 3, 2: 1, 11: 4}
    assert (r.returncode, r.stdout) == (0, "".join(f"{t}:{p}:{ends.get(p, 0)}\n" for p in order))
    r = tool("kafka-get-offsets", "--bootstrap-server", b, "--topic-partitions", f"{t}:0,{t}:10-12", "--time", "-2")
    assert r.stdout == f"{t}:0:0\n{t}:10:0\n{t}:11:0\n"
    r = tool("kafka-get-offsets", "--bootstrap-server", b, "--topic", t, "--partitions", "0,11", "--time", "latest")
    assert r.stdout == f"{t}:0:3\n{t}:11:4\n"
    r = tool("kafka-get-offsets", "--bootstrap-server", b, "--topic", "no-such-topic-.*")
    assert (r.returncode, r.stderr) == (1, "Error occurred: Could not match any topic-partitions with the specified filters\n")
    r = tool("kafka-get-offsets", "--bootstrap-server", b, "--topic", t, "--time", "yesterday")
    assert r.returncode == 1 and r.stderr.startswith("Error occurred: Malformed time argument yesterday. Please use -1 or latest")


def test_features_describe(tbroker: SamsaBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=tbroker.bootstrap_servers)
    try:
        features = admin.describe_features()
    finally:
        admin.close()
    r = tool("kafka-features.sh", "--bootstrap-server", tbroker.bootstrap_servers, "describe")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == [f"Feature: {f}" for f in sorted(features)]
    tv = features["transaction.version"]
    assert (f"Feature: transaction.version\tSupportedMinVersion: {tv['supported'][0]}\tSupportedMaxVersion: "
            f"{tv['supported'][1]}\tFinalizedVersionLevel: {tv['finalized'][1]}\tEpoch: {tv['finalized_epoch']}") in lines
    mv = next(line for line in lines if line.startswith("Feature: metadata.version\t"))
    # metadata.version levels are printed as Kafka's release names (level 7 = 3.3-IV3, 25 = 4.0-IV3)
    names = {7: "3.3-IV3", 21: "3.9-IV0", 25: "4.0-IV3"}
    low, high = features["metadata.version"]["supported"]
    if low in names:
        assert f"\tSupportedMinVersion: {names[low]}\t" in mv
    if high in names:
        assert f"\tSupportedMaxVersion: {names[high]}\t" in mv


def test_transactions_list_and_describe(tbroker: SamsaBroker) -> None:
    from confluent_kafka import Producer

    b = tbroker.bootstrap_servers
    t, txn = name("txt"), name("txn")
    assert tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t).returncode == 0
    producer = Producer({"bootstrap.servers": b, "transactional.id": txn, "transaction.timeout.ms": 60000})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce(t, b"in-flight")
    producer.flush(20)
    try:
        r = tool("kafka-transactions.sh", "--bootstrap-server", b, "list")
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert [c.strip() for c in lines[0].split("\t")] == ["TransactionalId", "Coordinator", "ProducerId",
                                                             "TransactionState", ""]
        assert len({len(line) for line in lines}) == 1     # Kafka's prettyPrintTable pads every column
        mine = [[c.strip() for c in line.split("\t")] for line in lines[1:] if line.startswith(txn)]
        assert len(mine) == 1 and mine[0][1] == "1" and mine[0][3] == "Ongoing"
        r = tool("kafka-transactions", "--bootstrap-server", b, "describe", "--transactional-id", txn)
        header, row = r.stdout.splitlines()
        cells = [c.strip() for c in row.split("\t")]
        assert [c.strip() for c in header.split("\t")][:9] == [
            "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState", "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"]
        assert cells[0] == "1" and cells[1] == txn and cells[4] == "Ongoing" and cells[5] == "60000"
        assert cells[8] == f"{t}-0" and int(cells[7]) >= 0
        # every cell is padded to its column's width and followed by a tab (Kafka's prettyPrintTable)
        assert header.endswith("\t") and row.endswith("\t") and len(header) == len(row)
    finally:
        producer.abort_transaction(20)
    r = tool("kafka-transactions", "--bootstrap-server", b, "describe", "--transactional-id", "no-such-txn")
    assert r.returncode == 1
    assert r.stderr.startswith("Failed to describe transaction state of transactional-id `no-such-txn`: ")


# --- kafka-acls, and --command-config with SASL/PLAIN --------------------------------------------

@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory):
    from tests.support.acl_support import JAAS
    from tests.support.security_support import SecureBroker

    b = SecureBroker(tmp_path_factory.mktemp("tools-acl") / "data", ["SASL_PLAINTEXT"], {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS}).start()
    try:
        yield b
    finally:
        b.stop()


def client_properties(tmp_path, user: str) -> str:
    path = tmp_path / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
                    f'    username="{user}" password="{user}-secret";\n')
    return str(path)


def test_acls_through_command_config(sasl_broker, tmp_path) -> None:
    b = sasl_broker.bootstrap("SASL_PLAINTEXT")
    admin_props, alice_props = client_properties(tmp_path, "admin"), client_properties(tmp_path, "alice")
    t = name("acl")
    r = tool("kafka-topics", "--bootstrap-server", b, "--command-config", admin_props, "--create", "--topic", t)
    assert (r.returncode, r.stdout) == (0, f"Created topic {t}.\n"), r
    r = tool("kafka-acls.sh", "--bootstrap-server", b, "--command-config", admin_props, "--add",
             "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", t)
    resource = f"ResourcePattern(resourceType=TOPIC, name={t}, patternType=LITERAL)"
    entries = [f"(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)" for op in ("READ", "DESCRIBE")]
    assert (r.returncode, r.stdout) == (0, f"Adding ACLs for resource `{resource}`: \n " + "\n".join(f"\t{e}" for e in entries)
                                        + " \n\n"), r
    r = tool("kafka-acls", "--bootstrap-server", b, "--command-config", admin_props, "--list", "--topic", t)
    assert r.stdout.startswith(f"Current ACLs for resource `{resource}`: \n ")
    assert sorted(line.strip() for line in r.stdout.splitlines()[1:] if line.strip()) == sorted(entries)
    # alice may describe the topic now, not delete it
    r = tool("kafka-topics", "--bootstrap-server", b, "--command-config", alice_props, "--list")
    assert r.stdout.splitlines() == [t]
    r = tool("kafka-topics", "--bootstrap-server", b, "--command-config", alice_props, "--delete", "--topic", t)
    assert r.returncode == 1 and r.stdout.startswith("Error while executing topic command : ")
    r = tool("kafka-acls", "--bootstrap-server", b, "--command-config", admin_props, "--remove", "--force",
             "--allow-principal", "User:alice", "--operation", "Read", "--topic", t)
    assert (r.returncode, r.stdout) == (0, "")
    r = tool("kafka-acls", "--bootstrap-server", b, "--command-config", admin_props, "--list", "--topic", t)
    assert [line.strip() for line in r.stdout.splitlines()[1:] if line.strip()] == [entries[1]]
    # a wrong password: the tool fails instead of hanging
    bad = tmp_path / "bad.properties"
    bad.write_text(open(alice_props).read().replace("alice-secret", "wrong"))
    r = tool("kafka-topics", "--bootstrap-server", b, "--command-config", str(bad), "--list")
    assert r.returncode == 1


def test_consumer_groups_describe_a_kip848_consumer_group(tbroker: SamsaBroker) -> None:
    """A ``group.protocol=consumer`` member (ConsumerGroupDescribe underneath): its assignment,
    KIP-848's ``uniform`` assignor in --state, and the Consumer type in --list --type."""
    from confluent_kafka import Consumer

    b = tbroker.bootstrap_servers
    t, g = name("k848"), name("g848")
    assert tool("kafka-topics", "--bootstrap-server", b, "--create", "--topic", t, "--partitions", "2").returncode == 0
    produce(b, t, {0: 2, 1: 5})
    consumer = Consumer({"bootstrap.servers": b, "group.id": g, "group.protocol": "consumer", "client.id": "c848",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([t])
    got, deadline = 0, time.monotonic() + 30
    while got < 7 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
    assert got == 7
    consumer.commit(asynchronous=False)
    try:
        r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", g)
        rows = [line.split() for line in r.stdout.split("\n")[2:-1]]
        assert sorted(row[2:6] for row in rows) == [["0", "2", "2", "0"], ["1", "5", "5", "0"]]
        member = consumer.memberid()
        assert {(row[6], row[7], row[8]) for row in rows} == {(member, "/127.0.0.1", "c848")}
        r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", g, "--members", "--verbose")
        head, row = r.stdout.split("\n")[1:3]
        assert head.split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        assert row.split() == [g, member, "/127.0.0.1", "c848", "2", "(0,1)"]
        r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--describe", "--group", g, "--state")
        assert r.stdout.split("\n")[2].split()[-3:] == ["uniform", "Stable", "1"]
        r = tool("kafka-consumer-groups", "--bootstrap-server", b, "--list", "--type", "consumer")
        assert [line.split() for line in r.stdout.splitlines() if line.startswith(g)] == [[g, "Consumer"]]
    finally:
        consumer.close()


# --- --command-config with TLS: PEM and PKCS12 trust stores ---------------------------------------

@pytest.fixture(scope="module")
def tls_broker(pki, tmp_path_factory: pytest.TempPathFactory):
    from tests.support.security_support import SecureBroker, tls_overrides

    b = SecureBroker(tmp_path_factory.mktemp("tools-tls") / "data", ["SSL"], tls_overrides(pki)).start()
    try:
        yield b
    finally:
        b.stop()


def test_tls_trust_stores_in_command_config(tls_broker, pki, tmp_path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

    b = tls_broker.bootstrap("SSL")
    pem = tmp_path / "pem.properties"
    pem.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={pki.ca}\n")
    t = name("tls")
    r = tool("kafka-topics", "--bootstrap-server", b, "--command-config", str(pem), "--create", "--topic", t)
    assert (r.returncode, r.stdout) == (0, f"Created topic {t}.\n"), r
    # a PKCS12 trust store (as keytool -importkeystore writes one) is converted for librdkafka
    store = tmp_path / "truststore.p12"
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    store.write_bytes(pkcs12.serialize_key_and_certificates(b"ca", None, None, [ca], BestAvailableEncryption(b"changeit")))
    p12 = tmp_path / "p12.properties"
    p12.write_text(f"security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location={store}\n"
                   "ssl.truststore.password=changeit\n")
    r = tool("kafka-topics", "--bootstrap-server", b, "--command-config", str(p12), "--list")
    assert (r.returncode, r.stdout) == (0, f"{t}\n"), r
    # kafka-python's side of the mapping (kafka-features)
    r = tool("kafka-features", "--bootstrap-server", b, "--command-config", str(pem), "describe")
    assert r.returncode == 0 and "Feature: metadata.version\t" in r.stdout, r
    # a CA that did not sign the broker's certificate: the tool stops at once with exit 1
    bad = tmp_path / "bad.properties"
    bad.write_text(f"security.protocol=SSL\nssl.truststore.location={pki.other_ca}\n")
    started = time.monotonic()
    r = tool("kafka-topics", "--bootstrap-server", b, "--command-config", str(bad), "--list")
    assert r.returncode == 1 and time.monotonic() - started < 30, r
