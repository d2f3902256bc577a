"""``kafka-share-groups`` (broker/tools/kafka_share_groups.py) run as a script runs it, against a Samsa
broker with share groups enabled; its output compared line by line with Kafka's ShareGroupCommand
formats, filled with what the test knows: the share-group members are made with raw
ShareGroupHeartbeat requests (client id ``samsa-tests``, host ``/127.0.0.1``), so their ids and
assignments are exact."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from broker.testing import SamsaBroker
from tests.support.groups_support import unique
from tests.support.kafka_tools import tool
from tests.support.rawclient import RawClient

SHARE_PROPS = {"group.share.enable": "true", "group.initial.rebalance.delay.ms": "0",
               "samsa.share.auto.offset.reset": "earliest", "group.share.heartbeat.interval.ms": "500",
               "group.share.min.heartbeat.interval.ms": "100"}
HOST, CLIENT = "/127.0.0.1", "samsa-tests"


@pytest.fixture(scope="module")
def sbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    broker = SamsaBroker(tmp_path_factory.mktemp("share-tool") / "data", overrides=SHARE_PROPS).start()
    try:
        yield broker
    finally:
        broker.stop()


def create_topics(bootstrap: str, partitions: dict[str, int]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(t, n, 1) for t, n in partitions.items()])
    finally:
        admin.close()


def join(c: RawClient, group: str, member: str, topics: list[str]) -> int:
    hb = c.request(76, 1, group_id=group, member_id=member, member_epoch=0, rack_id=None,
                   subscribed_topic_names=topics)
    assert hb.error_code == 0, hb
    return int(hb.member_epoch)


def leave(c: RawClient, group: str, member: str) -> None:
    c.request(76, 1, group_id=group, member_id=member, member_epoch=-1, rack_id=None, subscribed_topic_names=None)


def share_tool(bootstrap: str, *args: str):
    return tool("kafka-share-groups.sh", "--bootstrap-server", bootstrap, *args)


def test_list_describe_members_and_state_and_delete(sbroker: SamsaBroker) -> None:
    b = sbroker.bootstrap_servers
    a_topic, b_topic = unique("sa"), unique("sb")
    create_topics(b, {a_topic: 2, b_topic: 1})
    group, member = unique("sg"), "member-1"
    with RawClient(b) as c:
        epoch = join(c, group, member, [b_topic, a_topic])

        r = share_tool(b, "--list")
        assert r.returncode == 0 and group in r.stdout.splitlines(), r
        # --list --state: Kafka's "%-Ns %s", N the longest group id (at least 15)
        r = share_tool(b, "--list", "--state", "Stable")
        lines = r.stdout.splitlines()
        width = max([15] + [len(x.split()[0]) for x in lines[1:]])
        assert lines[0] == f"{'GROUP':<{width}} STATE" and f"{group:<{width}} Stable" in lines, r
        r = share_tool(b, "--list", "--state", "Empty")
        assert group not in r.stdout, r
        r = share_tool(b, "--list", "--state", "Rebalancing")
        assert (r.returncode, r.stdout, r.stderr) == (
            1, "", "Invalid state list 'Rebalancing'. Valid states are: Empty, Stable, Dead\n")

        # --describe --members: one member, every partition of both topics, topics in string order
        wg = max(15, len(group))
        assignment = ";".join(sorted([f"{a_topic}:0,1", f"{b_topic}:0"]))
        r = share_tool(b, "--describe", "--group", group, "--members")
        fmt = f"{{:<{wg}}} {{:<15}} {{:<15}} {{:<15}} {{:<12}} {{}}"
        assert (r.returncode, r.stdout.split("\n")) == (0, [
            "", fmt.format("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"),
            fmt.format(group, member, HOST, CLIENT, 3, assignment), ""]), r
        r = share_tool(b, "--describe", "--group", group, "--members", "--verbose")
        fmt = f"{{:<{wg}}} {{:<15}} {{:<15}} {{:<15}} {{:<12}} {{:<13}} {{}}"
        assert r.stdout.split("\n") == [
            "", fmt.format("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"),
            fmt.format(group, member, HOST, CLIENT, 3, epoch, assignment), ""], r

        # --describe --state: the coordinator as host:port  (id)
        coordinator = f"{b}  (1)"
        wc = max(25, len(coordinator))
        r = share_tool(b, "--describe", "--group", group, "--state")
        fmt = f"{{:<{wg}}} {{:<{wc}}} {{:<15}} {{}}"
        assert (r.returncode, r.stdout.split("\n")) == (0, [
            "", fmt.format("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"),
            fmt.format(group, coordinator, "Stable", 1), ""]), r
        r = share_tool(b, "--describe", "--group", group, "--state", "--verbose")
        fmt = f"{{:<{wg}}} {{:<{wc}}} {{:<15}} {{:<12}} {{:<17}} {{}}"
        assert r.stdout.split("\n") == [
            "", fmt.format("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
            fmt.format(group, coordinator, "Stable", epoch, epoch, 1), ""], r

        # a group with a member is not deleted: Kafka's message, exit 0
        r = share_tool(b, "--delete", "--group", group)
        assert (r.returncode, r.stdout) == (0, (
            "\nError: Deletion of some share groups failed:\n"
            f"* Group '{group}' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: "
            f"Share group '{group}' is not EMPTY.\n")), r

        leave(c, group, member)
        r = share_tool(b, "--describe", "--group", group, "--members")
        assert (r.returncode, r.stdout, r.stderr) == (0, "", f"\nShare group '{group}' has no active members.\n")
        r = share_tool(b, "--describe", "--group", group, "--state")
        assert r.stdout.split("\n")[2].split() == [group, *coordinator.split(), "Empty", "0"], r
        assert r.stderr == f"\nShare group '{group}' has no active members.\n"

    r = share_tool(b, "--delete", "--group", group)
    assert (r.returncode, r.stdout) == (0, f"Deletion of requested share groups ('{group}') was successful.\n"), r
    r = share_tool(b, "--list")
    assert group not in r.stdout.splitlines(), r
    r = share_tool(b, "--delete", "--group", group)
    assert r.stdout == ("\nError: Deletion of some share groups failed:\n"
                        f"* Group '{group}' could not be deleted due to: "
                        f"org.apache.kafka.common.errors.GroupIdNotFoundException: Group '{group}' is not a share group.\n")


ck = pytest.importorskip("confluent_kafka")


def share_consume(bootstrap: str, group: str, topic: str, count: int,
                  ack: Callable[[int], Any] | None = None) -> list[tuple[int, int]]:
    """A confluent-kafka ShareConsumer (explicit acknowledgement) takes ``count`` records, acknowledges
    each with ``ack(offset)`` (ACCEPT without it), commits and leaves: its (offset, delivery count)s."""
    if not hasattr(ck, "ShareConsumer"):
        pytest.skip("confluent-kafka without ShareConsumer")
    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit"})
    got: list[Any] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            for m in c.poll(1.0):
                if m.error() is None:
                    got.append(m)
                    c.acknowledge(m, ack(m.offset()) if ack else ck.AcknowledgeType.ACCEPT)
        c.commit_sync(30)
    finally:
        c.close()
    return sorted((m.offset(), m.delivery_count()) for m in got)


def produce(bootstrap: str, topic: str, count: int) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    for i in range(count):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0


def wait_empty(bootstrap: str, group: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = share_tool(bootstrap, "--describe", "--group", group, "--state")
        if r.returncode == 0 and r.stdout.split("\n")[2].split()[-2:] == ["Empty", "0"]:
            return
        time.sleep(0.5)
    raise AssertionError(f"share group {group} never became Empty")


def offsets_table(group: str, topic: str, rows: list[tuple[int, str, str]], verbose: bool = False) -> str:
    """Kafka's ``printOffsets``: ``%-Gs %-Ts %-10s %-13s %s`` (verbose: LEADER-EPOCH before START-OFFSET)."""
    wg, wt = max(15, len(group)), max(15, len(topic))
    if verbose:
        fmt = f"\n{{:<{wg}}} {{:<{wt}}} {{:<10}} {{:<13}} {{:<13}} {{}}"
        return (fmt.format("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG")
                + "".join(fmt.format(group, topic, *r) for r in rows) + "\n")
    fmt = f"\n{{:<{wg}}} {{:<{wt}}} {{:<10}} {{:<13}} {{}}"
    return fmt.format("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG") + "".join(
        fmt.format(group, topic, *r) for r in rows) + "\n"


def test_describe_reset_and_delete_offsets_with_a_share_consumer(sbroker: SamsaBroker) -> None:
    """A ShareConsumer accepts offsets 0-5 of 10 and releases 6-9: --describe shows start offset 6 and
    lag 4 (high watermark 10 - 6 - nothing delivery-complete after it); --reset-offsets --to-earliest
    --dry-run prints the plan and changes nothing, --execute resets (AlterShareGroupOffsets) and a new
    consumer gets all ten from offset 0 again; --delete-offsets leaves no offset information."""
    b = sbroker.bootstrap_servers
    topic, group = unique("sr"), unique("sg")
    create_topics(b, {topic: 1})
    produce(b, topic, 10)

    got = share_consume(b, group, topic, 10,
                        lambda o: ck.AcknowledgeType.ACCEPT if o < 6 else ck.AcknowledgeType.RELEASE)
    assert got == [(o, 1) for o in range(10)]
    wait_empty(b, group)

    r = share_tool(b, "--describe", "--group", group)
    assert (r.returncode, r.stdout) == (0, offsets_table(group, topic, [(0, "6", "4")])), r
    r = share_tool(b, "--describe", "--group", group, "--offsets", "--verbose")
    assert (r.returncode, r.stdout) == (0, offsets_table(group, topic, [(0, "0", "6", "4")], verbose=True)), r

    # a reset needs --dry-run or --execute, a scope and a scenario (Kafka's usage errors, exit 1)
    r = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert r.returncode == 1 and r.stderr.startswith("Option [reset-offsets] takes the option: [execute] or [dry-run]"), r
    r = share_tool(b, "--reset-offsets", "--group", group, "--to-earliest", "--dry-run")
    assert r.returncode == 1 and r.stderr.startswith("Option [reset-offsets] takes one of these options: "), r

    wg, wt = max(15, len(group)), max(15, len(topic))
    plan = f"\n{{:<{wg}}} {{:<{wt}}} {{:<10}} {{}}"
    expected = plan.format("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET") + plan.format(group, topic, 0, 0) + "\n"
    r = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--dry-run")
    assert (r.returncode, r.stdout) == (0, expected), r
    assert share_tool(b, "--describe", "--group", group).stdout == offsets_table(group, topic, [(0, "6", "4")])
    r = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "8", "--dry-run")
    assert r.stdout == plan.format("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET") + plan.format(group, topic, 0, 8) + "\n"
    r = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "99", "--dry-run")
    assert r.stdout.split("\n")[2].split() == [group, topic, "0", "10"], r      # clamped to the log end
    r = share_tool(b, "--reset-offsets", "--group", group, "--all-topics", "--to-latest", "--dry-run")
    assert r.stdout.split("\n")[2].split() == [group, topic, "0", "10"], r

    r = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert (r.returncode, r.stdout) == (0, expected), r
    r = share_tool(b, "--describe", "--group", group)
    assert r.returncode == 0 and r.stdout.split("\n")[2].split()[:4] == [group, topic, "0", "0"], r
    # consumption starts again at offset 0: all ten, as first deliveries of the new state
    again = share_consume(b, group, topic, 10)
    assert again == [(o, 1) for o in range(10)], again
    wait_empty(b, group)
    r = share_tool(b, "--describe", "--group", group)
    assert (r.returncode, r.stdout) == (0, offsets_table(group, topic, [(0, "10", "0")])), r

    # a group with a member cannot be reset (Kafka's IllegalArgumentException: stderr, exit 1)
    with RawClient(b) as c:
        join(c, group, "m", [topic])
        r = share_tool(b, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
        assert (r.returncode, r.stdout, r.stderr) == (1, "", f"Share group '{group}' is not empty.\n"), r
        r = share_tool(b, "--delete-offsets", "--group", group, "--topic", topic)
        assert r.returncode == 0 and r.stdout.startswith("\nError: "), r
        leave(c, group, "m")

    r = share_tool(b, "--delete-offsets", "--group", group, "--topic", topic)
    status = f"\n{{:<{wt}}} {{}}"
    assert (r.returncode, r.stdout) == (0, status.format("TOPIC", "STATUS") + status.format(topic, "Successful")
                                        + "\n"), r
    r = share_tool(b, "--describe", "--group", group)
    assert (r.returncode, r.stdout) == (0, f"\nShare group '{group}' has no offset information.\n"), r


def test_usage_errors(sbroker: SamsaBroker) -> None:
    b = sbroker.bootstrap_servers
    r = tool("kafka-share-groups", "--list")
    assert r.returncode == 1 and r.stderr.startswith('Missing required argument "[bootstrap-server]"\n'), r
    r = share_tool(b, "--describe")
    assert r.returncode == 1 and r.stderr.startswith("Option [describe] takes one of these options: "), r
    r = share_tool(b, "--describe", "--group", "g", "--members", "--state")
    assert r.returncode == 1 and r.stderr.startswith("Option [describe] takes at most one of these options"), r
    r = share_tool(b, "--delete", "--group", "g", "--all-groups")
    assert r.returncode == 1 and r.stderr.startswith("Option [delete] takes either [group] or [all-groups], not both."), r
    r = share_tool(b)
    assert r.returncode == 1 and r.stderr.startswith("Command must include exactly one action: --list, --describe, "
                                                     "--delete, --reset-offsets, --delete-offsets."), r
    r = share_tool(b, "--describe", "--group", "no-such-group", "--state")
    assert (r.returncode, r.stdout) == (1, "\nError: Executing share group command failed due to "
                                           "org.apache.kafka.common.errors.GroupIdNotFoundException: "
                                           "Group no-such-group not found.\n"), r


@pytest.mark.parametrize("samsa_cluster", [{"overrides": SHARE_PROPS}], indirect=True)
def test_on_a_cluster_the_coordinator_answers(samsa_cluster) -> None:
    """Three brokers: the tool finds the group's coordinator (FindCoordinator) and describes the
    group there; --state names that broker. (The member joins at the coordinator, found the same way:
    Samsa's other brokers do not answer NOT_COORDINATOR to a share heartbeat yet.)"""
    b = samsa_cluster.bootstrap_servers
    topic, group = unique("sc"), unique("sg")
    create_topics(b, {topic: 3})
    admin = KafkaAdminClient(bootstrap_servers=b)
    try:
        node = admin._manager.run(admin._find_coordinator_id, group)
        broker = admin._manager.cluster.broker_metadata(node)
        coordinator = f"{broker.host}:{broker.port}"
    finally:
        admin.close()
    with RawClient(coordinator) as c:
        join(c, group, "m1", [topic])
        r = share_tool(b, "--describe", "--group", group, "--state")
        assert r.returncode == 0, r
        assert r.stdout.split("\n")[2].split() == [group, coordinator, f"({node})", "Stable", "1"], r
        r = share_tool(b, "--describe", "--group", group, "--members")
        assert r.stdout.split("\n")[2].split() == [group, "m1", HOST, CLIENT, "3", f"{topic}:0,1,2"], r
        assert group in share_tool(b, "--list").stdout.splitlines()
        leave(c, group, "m1")
    r = share_tool(b, "--delete", "--group", group)
    assert (r.returncode, r.stdout) == (0, f"Deletion of requested share groups ('{group}') was successful.\n"), r


@pytest.mark.samsa_broker(overrides={"samsa.share.version": "0"})
def test_a_broker_without_share_groups(samsa_broker: SamsaBroker, tmp_path) -> None:
    """Share groups off (share.version 0; Kafka's default before 4.2): nothing listed; describe fails with the
    UnsupportedVersionException Kafka's admin client raises; --command-config is read."""
    b = samsa_broker.bootstrap_servers
    config = tmp_path / "client.properties"
    config.write_text("# a Kafka client properties file\nsecurity.protocol=PLAINTEXT\nclient.id=share-tool\n")
    r = share_tool(b, "--command-config", str(config), "--list")
    assert (r.returncode, r.stdout) == (0, ""), r
    r = share_tool(b, "--command-config", str(config), "--describe", "--group", "g", "--state")
    assert (r.returncode, r.stdout) == (1, "\nError: Executing share group command failed due to "
                                           "org.apache.kafka.common.errors.UnsupportedVersionException: "
                                           "The node does not support SHARE_GROUP_DESCRIBE\n"), r
    r = share_tool(b, "--describe", "--all-groups")          # no share group: nothing to describe
    assert (r.returncode, r.stdout) == (0, ""), r
    r = share_tool(b, "--command-config", str(tmp_path / "missing.properties"), "--list")
    assert r.returncode == 1 and "missing.properties" in r.stdout + r.stderr, r
