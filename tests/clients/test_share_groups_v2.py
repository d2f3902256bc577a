"""Kafka 4.2's share groups with real clients against a default broker (share groups on without a
switch): confluent-kafka's ShareConsumer (implicit and explicit acknowledgement) and the Java
KafkaShareConsumer 4.3 (tests/support/java/ShareV2Client.java): work split across members,
release/reject, RENEW (KIP-1222), the record_limit acquire mode (KIP-1206), group configs set with
the Admin API (lock duration, isolation level), read_committed share groups skipping aborted
transactions, and a share group beside a consumer group; plus ShareFetch/ShareAcknowledge v2 on the
wire."""
from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testing import SamsaBroker
from tests.support.groups_support import unique
from tests.support.javaclient import of_type, requires_java, start_java_source
from tests.support.share_clients_support import produce_values as produce, topic_id_of, wait_for_members

SOURCE = Path(__file__).resolve().parents[1] / "support" / "java" / "ShareV2Client.java"
PROPS = {   # no share switch: Kafka 4.2's default
    "samsa.share.auto.offset.reset": "earliest",
    "group.share.min.record.lock.duration.ms": "1000",     # Kafka's bound (15000) allows no short lock
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "100",
    "num.partitions": "1",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    b = SamsaBroker(tmp_path_factory.mktemp("share-v2") / "data", overrides=PROPS).start()
    try:
        yield b
    finally:
        b.stop()


def alter_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """confluent-kafka's AdminClient.incremental_alter_configs on a GROUP resource."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    for fut in admin.incremental_alter_configs([res]).values():
        fut.result(timeout=30)


def share_consume(bootstrap: str, topic: str, group: str, *, explicit: bool, expect: int, max_s: float = 30,
                  decide: Any = None, idle_s: float = 4.0) -> list[tuple[str, int, str]]:
    """One confluent-kafka ShareConsumer: (value, delivery count, acknowledgement) per delivery.
    ``decide(value, delivery_count)`` names the acknowledgement (explicit mode; default accept)."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    types = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit" if explicit else "implicit"})
    out: list[tuple[str, int, str]] = []
    try:
        c.subscribe([topic])
        start = last = time.monotonic()
        while time.monotonic() - start < max_s and sum(1 for o in out if o[2] == "accept") < expect:
            batch = c.poll(0.5)
            for m in batch:
                if m.error():
                    continue
                value = m.value().decode()
                ack = decide(value, m.delivery_count()) if decide else "accept"
                if explicit:
                    c.acknowledge(m, types[ack])
                out.append((value, m.delivery_count(), ack))
            if len(batch):
                last = time.monotonic()
                c.commit_sync()
            elif out and time.monotonic() - last > idle_s:
                break
    finally:
        c.close()
    return out


# -- confluent-kafka ShareConsumer -------------------------------------------------------------------------
def test_two_python_share_consumers_split_the_work_release_and_reject(broker):
    bs = broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    values = [f"v{i}" for i in range(40)]
    produce(bs, topic, values[:1])      # the topic exists before the consumers subscribe

    def decide(value: str, dc: int) -> str:
        if value == "v7" and dc == 1:
            return "release"
        return "reject" if value == "v9" else "accept"

    results: list[list[tuple[str, int, str]]] = [[], []]

    def run(i: int) -> None:
        results[i] = share_consume(bs, topic, group, explicit=True, expect=38, max_s=25, decide=decide, idle_s=5)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    time.sleep(2)
    produce(bs, topic, values[1:], per_batch=2)
    for t in threads:
        t.join(timeout=60)
    deliveries = results[0] + results[1]
    accepted = Counter(v for v, _, ack in deliveries if ack == "accept")
    assert set(accepted) == set(values) - {"v9"} and set(accepted.values()) == {1}    # each accepted once
    assert sorted((dc, ack) for v, dc, ack in deliveries if v == "v7") == [(1, "release"), (2, "accept")]
    assert [(dc, ack) for v, dc, ack in deliveries if v == "v9"] == [(1, "reject")]      # never again
    assert all(len(r) > 0 for r in results), [len(r) for r in results]                  # both had work


def test_python_share_consumer_implicit_mode_accepts_on_the_next_poll(broker):
    bs = broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    values = [f"v{i}" for i in range(10)]
    produce(bs, topic, values, per_batch=5)
    got = share_consume(bs, topic, group, explicit=False, expect=10)
    assert sorted(v for v, *_ in got) == sorted(values) and {dc for _, dc, _ in got} == {1}
    again = share_consume(bs, topic, group, explicit=False, expect=1, max_s=4)
    assert again == []                                     # all accepted: nothing comes back


def test_read_committed_share_group_skips_aborted_transactions(broker):
    from confluent_kafka import Producer

    bs = broker.bootstrap_servers
    topic = unique("txq")
    committed, uncommitted = unique("rc"), unique("ru")
    alter_group_configs(bs, committed, {"share.isolation.level": "read_committed"})
    p = Producer({"bootstrap.servers": bs, "transactional.id": unique("tx")})
    p.init_transactions(30)
    for values, commit in ((["c0", "c1"], True), (["x0", "x1"], False), (["c2"], True)):
        p.begin_transaction()
        for v in values:
            p.produce(topic, value=v.encode(), partition=0)
        p.flush(20)                    # the aborted records reach the log before the ABORT marker
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    produce(bs, topic, ["n0"])
    rc = share_consume(bs, topic, committed, explicit=True, expect=4)
    assert sorted(v for v, *_ in rc) == ["c0", "c1", "c2", "n0"]                # aborted ones never delivered
    ru = share_consume(bs, topic, uncommitted, explicit=True, expect=6)
    assert sorted(v for v, *_ in ru) == ["c0", "c1", "c2", "n0", "x0", "x1"]    # read_uncommitted: all


def test_a_share_group_and_a_consumer_group_side_by_side(broker):
    from confluent_kafka import Consumer

    bs = broker.bootstrap_servers
    topic = unique("q")
    values = [f"v{i}" for i in range(12)]
    produce(bs, topic, values, per_batch=3)
    shared = share_consume(bs, topic, unique("sg"), explicit=True, expect=12)
    c = Consumer({"bootstrap.servers": bs, "group.id": unique("cg"), "auto.offset.reset": "earliest",
                  "group.protocol": "consumer"})
    got: list[str] = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(got) < 12 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value().decode())
    finally:
        c.close()
    assert sorted(v for v, *_ in shared) == sorted(values) and sorted(got) == sorted(values)   # each all of it


def test_group_configs_through_the_admin_api(broker):
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    bs = broker.bootstrap_servers
    group = unique("sg")
    alter_group_configs(bs, group, {"share.record.lock.duration.ms": "2000", "share.isolation.level": "read_committed"})
    admin = AdminClient({"bootstrap.servers": bs})
    res = ConfigResource(ResourceType.GROUP, group)
    entries = list(admin.describe_configs([res]).values())[0].result(timeout=30)
    assert entries["share.record.lock.duration.ms"].value == "2000"
    assert entries["share.isolation.level"].value == "read_committed"
    assert entries["share.session.timeout.ms"].value == "45000"         # the broker's, not overridden
    with pytest.raises(Exception, match="share.record.lock.duration.ms: Value must be at least 1000"):
        alter_group_configs(bs, group, {"share.record.lock.duration.ms": "100"})    # below GroupConfig's atLeast
    with pytest.raises(Exception, match="Unknown group config name"):
        alter_group_configs(bs, group, {"share.no.such": "1"})


# -- the Java KafkaShareConsumer 4.3 -------------------------------------------------------------------------
@requires_java
@pytest.mark.slow  # ~19 s in CI's run
def test_java_renew_keeps_a_record_past_the_lock_duration(broker):
    bs = broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    values = [f"v{i}" for i in range(6)]
    produce(bs, topic, values, per_batch=6)
    configs = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--group", group,
                                "--set", "share.record.lock.duration.ms=2000").result(timeout=60)
    assert of_type(configs, "altered")
    holder = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                               "--renew", "v3", "--hold-ms", "5000", "--expect", "6", "--max-ms", "30000")
    wait_for_members(bs, group, 1)           # the holder has the records before the other one joins
    other = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                              "--idle-ms", "8000", "--max-ms", "12000")
    held, seen = holder.result(timeout=60), other.result(timeout=60)
    v3 = [r for r in of_type(held, "record") if r["value"] == "v3"]
    assert [r["ack"] for r in v3][-1] == "accept" and len(v3) >= 5      # renewed each time the client gave it back
    assert v3[-1]["at"] - v3[0]["at"] > 4000                            # held twice the lock duration
    assert {r["delivery_count"] for r in v3} == {1}                     # never delivered again
    assert not of_type(held, "commit_error")
    assert [r["value"] for r in of_type(seen, "record")] == []          # never handed to the other member
    accepted = Counter(r["value"] for r in of_type(held, "record") if r["ack"] == "accept")
    assert accepted == Counter(values)


@requires_java
@pytest.mark.parametrize("mode", ["record_limit", "batch_optimized"])
def test_java_acquire_modes(broker, mode):
    bs = broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    values = [f"v{i}" for i in range(20)]
    produce(bs, topic, values, per_batch=20)         # one stored batch of 20
    lines = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                              "--acquire-mode", mode, "--max-poll-records", "3", "--expect", "20",
                              "--max-ms", "40000").result(timeout=60)
    polls = [p["count"] for p in of_type(lines, "poll")]
    records = of_type(lines, "record")
    assert Counter(r["value"] for r in records) == Counter(values)           # each once
    if mode == "record_limit":
        assert max(polls) <= 3, polls          # KIP-1206: never more than max.poll.records
    else:
        assert polls == [20], polls            # the whole stored batch is acquired, past max.poll.records


@pytest.mark.slow
@requires_java
def test_java_admin_sets_and_validates_group_configs(broker):
    bs = broker.bootstrap_servers
    group = unique("sg")
    lines = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--group", group, "--set",
                              "share.auto.offset.reset=latest,share.heartbeat.interval.ms=1000").result(timeout=60)
    configs = {c["name"]: (c["value"], c["source"]) for c in of_type(lines, "config")}
    assert configs["share.auto.offset.reset"] == ("latest", "DYNAMIC_GROUP_CONFIG")
    assert configs["share.heartbeat.interval.ms"] == ("1000", "DYNAMIC_GROUP_CONFIG")
    assert configs["share.record.lock.duration.ms"][0] == "30000"
    bad = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--group", group, "--set",
                            "share.isolation.level=serializable").result(timeout=60)
    assert of_type(bad, "alter_error")[0]["error"] == "InvalidConfigurationException"
    gone = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--group", group, "--delete",
                             "share.auto.offset.reset").result(timeout=60)
    after = {c["name"]: (c["value"], c["source"]) for c in of_type(gone, "config")}
    assert after["share.auto.offset.reset"] == ("earliest", "STATIC_BROKER_CONFIG")   # samsa.share.auto.offset.reset


# -- on the wire: ShareFetch / ShareAcknowledge v2 --------------------------------------------------------------
def test_share_fetch_v2_record_limit_and_renew_on_the_wire(broker):
    from protocol.schema_messages import ShareAcknowledgeRequest as A, ShareFetchRequest as Q
    from tests.support.rawclient import RawClient

    bs = broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce(bs, topic, [f"v{i}" for i in range(10)], per_batch=10)
    tid = topic_id_of(bs, topic)
    AB = Q.FetchTopic.FetchPartition.AcknowledgementBatch

    def fetch(c: RawClient, epoch: int, mode: int, max_records: int, acks=(), renew: bool = False,
              version: int = 2) -> Any:
        parts = [Q.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=[
            AB(first_offset=f, last_offset=l, acknowledge_types=list(t)) for f, l, t in acks])]
        return c.request(78, version, group_id=group, member_id="m", share_session_epoch=epoch, max_wait_ms=0,
                         min_bytes=1, max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
                         share_acquire_mode=mode, is_renew_ack=renew,
                         topics=[Q.FetchTopic(topic_id=tid, partitions=parts)], forgotten_topics_data=[])

    def ranges(resp: Any) -> list[tuple[int, int, int]]:
        return [(a.first_offset, a.last_offset, a.delivery_count)
                for t in resp.responses for p in t.partitions for a in p.acquired_records]

    with RawClient(bs) as c:
        r = fetch(c, 0, 1, 3)
        assert r.error_code == 0 and ranges(r) == [(0, 2, 1)]        # record_limit: 3 of the batch of 10
        assert r.acquisition_lock_timeout_ms == 30000
        r = fetch(c, 1, 0, 3)
        assert ranges(r) == [(3, 9, 1)]                                # batch_optimized: the rest of the batch
        r = fetch(c, 2, 0, 3, acks=[(0, 0, [4])], renew=True)          # a renew-only request acquires nothing
        [p] = r.responses[0].partitions
        assert p.acknowledge_error_code == 0 and ranges(r) == []
        P = A.AcknowledgeTopic.AcknowledgePartition
        r = c.request(79, 2, group_id=group, member_id="m", share_session_epoch=3, is_renew_ack=True, topics=[
            A.AcknowledgeTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
                P.AcknowledgementBatch(first_offset=1, last_offset=2, acknowledge_types=[4])])])])
        assert r.error_code == 0 and r.responses[0].partitions[0].error_code == 0
        assert r.acquisition_lock_timeout_ms == 30000
        r = fetch(c, 4, 0, 3, acks=[(3, 3, [4])], version=1)          # no RENEW before v2
        assert r.responses[0].partitions[0].acknowledge_error_code == 42     # INVALID_REQUEST


def test_kafka_configs_tool_on_groups(broker):
    """``kafka-configs --entity-type groups`` (broker/tools/kafka_configs.py) sets, lists and deletes
    group configs, and a group's lock duration then applies to its share fetches."""
    from tests.support.kafka_tools import tool
    from tests.support.rawclient import RawClient

    bs = broker.bootstrap_servers
    group = unique("sg")
    r = tool("kafka-configs", "--bootstrap-server", bs, "--entity-type", "groups", "--entity-name", group, "--alter",
             "--add-config", "share.record.lock.duration.ms=5000,share.isolation.level=read_committed")
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for group {group}.\n"), r.stderr
    r = tool("kafka-configs", "--bootstrap-server", bs, "--entity-type", "groups", "--entity-name", group, "--describe")
    lines = r.stdout.splitlines()
    assert lines[0] == f"Dynamic configs for group {group} are:"
    assert [x.split(" sensitive")[0] for x in lines[1:]] == ["  share.isolation.level=read_committed",
                                                    "  share.record.lock.duration.ms=5000"]
    topic = unique("q")
    produce(bs, topic, ["v0"])
    with RawClient(bs) as c:
        resp = c.request(78, 2, group_id=group, member_id="m", share_session_epoch=0, max_wait_ms=0, min_bytes=1,
                         max_bytes=1 << 20, max_records=10, batch_size=10, share_acquire_mode=0, is_renew_ack=False,
                         topics=[_fetch_topic(topic_id_of(bs, topic))], forgotten_topics_data=[])
        assert resp.acquisition_lock_timeout_ms == 5000
    r = tool("kafka-configs", "--bootstrap-server", bs, "--entity-type", "groups", "--entity-name", group, "--alter",
             "--delete-config", "share.record.lock.duration.ms")
    assert r.returncode == 0, r.stderr
    r = tool("kafka-configs", "--bootstrap-server", bs, "--entity-type", "groups", "--entity-name", group, "--describe")
    assert [x.split(" sensitive")[0] for x in r.stdout.splitlines()[1:]] == ["  share.isolation.level=read_committed"]


def _fetch_topic(tid: Any) -> Any:
    from protocol.schema_messages import ShareFetchRequest as Q

    return Q.FetchTopic(topic_id=tid, partitions=[Q.FetchTopic.FetchPartition(partition_index=0,
                                                                              acknowledgement_batches=[])])


def test_group_configs_reach_every_broker_of_a_cluster(samsa_cluster):
    """A group config set through one broker is a GROUP ConfigRecord in the cluster's metadata log:
    every broker describes it, and a restarted broker still has it."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    from tests.support.cluster_support import wait_for

    boots = samsa_cluster.bootstrap_servers.split(",")
    group = unique("sg")
    alter_group_configs(boots[0], group, {"share.record.lock.duration.ms": "20000"})

    def value_at(bootstrap: str) -> str:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        res = ConfigResource(ResourceType.GROUP, group)
        try:
            entries = list(admin.describe_configs([res]).values())[0].result(timeout=10)
        except Exception:           # the broker is restarting: not yet
            return ""
        return entries["share.record.lock.duration.ms"].value

    wait_for(lambda: all(value_at(b) == "20000" for b in boots), what="the group config on every broker")
    samsa_cluster.restart(3)
    wait_for(lambda: value_at(boots[2]) == "20000", what="the group config after a restart")


def test_share_heartbeat_follows_the_group_configs(broker):
    """share.heartbeat.interval.ms is what ShareGroupHeartbeat answers from the next heartbeat on;
    share.session.timeout.ms keeps the broker's bounds."""
    from tests.support.rawclient import RawClient

    bs = broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce(bs, topic, ["v0"])
    with RawClient(bs) as c:
        def beat(member: str, epoch: int) -> Any:
            return c.request(76, 1, group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                             subscribed_topic_names=[topic] if epoch == 0 else None)

        joined = beat("m1", 0)
        assert joined.heartbeat_interval_ms == 500                            # the broker's
        alter_group_configs(bs, group, {"share.heartbeat.interval.ms": "1500"})
        hb = beat("m1", joined.member_epoch)
        assert (hb.error_code, hb.heartbeat_interval_ms) == (0, 1500)
        with pytest.raises(Exception, match="share.session.timeout.ms must be"):
            alter_group_configs(bs, group, {"share.session.timeout.ms": "1000"})   # below the broker's min
    assert share_consume(bs, topic, group, explicit=False, expect=1, max_s=15) == [("v0", 1, "accept")]
