"""Fault injection, the movable clock and version emulation, driven by real clients
(confluent-kafka/librdkafka, kafka-python, the Java client) against real brokers: a child process
reached through its control endpoint (``samsa_broker``) and the in-process broker
(``samsa_broker_in_process``).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from broker.control.client import ControlUnavailable
from broker.testing import SamsaBroker, SamsaControl
from protocol.api_versions import SUPPORTED
from protocol.emulation import emulated_table
from tests.support.clienthelpers import advertised_apis
from tests.support.groups_support import Member, describe as describe_group, wait_until
from tests.support.javaclient import last, requires_java, run_java
from tests.support.rawclient import RawClient
from tests.support.transactions_support import describe_txn, read_all, txn_producer, watermarks

REPO = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]
NO_DELAY = {"group.initial.rebalance.delay.ms": "0", "num.partitions": "3"}


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def values(bootstrap: str, topic: str, partition: int = 0, expect: int = 1, timeout: float = 10) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of a partition, read from offset 0 until ``expect`` and a quiet pause."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": name("check"), "enable.auto.commit": False})
    c.assign([TopicPartition(topic, partition, 0)])
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.3)
            if m is None:
                if len(out) >= expect:
                    break
                continue
            assert m.error() is None, m.error()
            out.append((m.offset(), m.value()))
    finally:
        c.close()
    return out


# ================================================================ fail: a retriable error, retried

@pytest.mark.samsa_broker(topics={"orders": 1})
@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_two_not_leader_errors_then_the_idempotent_producer_stores_the_record_once(samsa_broker, client):
    bs = samsa_broker.bootstrap_servers
    samsa_broker.faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic="orders")
    if client == "confluent-kafka":
        p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "retry.backoff.ms": 50})
        p.produce("orders", b"exactly-once", partition=0)
        assert p.flush(20) == 0
    else:
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=bs, enable_idempotence=True, retry_backoff_ms=50)
        p.send("orders", b"exactly-once", partition=0).get(timeout=20)
        p.close()
    fired = samsa_broker.faults.log()
    assert [(f["kind"], f["api"], f["topics"]) for f in fired] == [("fail", "Produce", ["orders"])] * 2
    assert values(bs, "orders") == [(0, b"exactly-once")]
    assert samsa_broker.faults.armed() == []               # count used up


@requires_java
def test_java_idempotent_producer_retries_not_leader_and_stores_each_record_once(samsa_broker):
    bs, topic = samsa_broker.bootstrap_servers, name("java")
    samsa_broker.create_topic(topic, 1)
    samsa_broker.faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic=topic)
    out = last(run_java("3.9.0", bs, "produce", "--topic", topic, "--count", "5", "--idempotent", "true",
                        "--acks", "all"), "produce")
    assert (out["acked"], out["errors"]) == (5, 0)
    assert len(samsa_broker.faults.log()) == 2
    assert [o for o, _ in values(bs, topic, expect=5)] == [0, 1, 2, 3, 4]


def test_a_failed_produce_applies_nothing_and_other_topics_are_untouched(samsa_broker_in_process):
    b = samsa_broker_in_process
    b.create_topic("a", 1), b.create_topic("b", 1)
    b.faults.fail("Produce", "TOPIC_AUTHORIZATION_FAILED", count=1, topic="a")   # not retriable
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0})
    errors: list = []
    p.produce("a", b"lost", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    p.produce("b", b"kept", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(10)
    assert [e and e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED, None]
    assert values(b.bootstrap_servers, "a", expect=0, timeout=2) == []
    assert values(b.bootstrap_servers, "b") == [(0, b"kept")]


def test_a_failed_acks_zero_produce_closes_the_connection(samsa_broker_in_process):
    """A fault failing an acks=0 Produce answers as Kafka would: no response, a closed connection."""
    from tests.support.wire import list_offset, produce, batch
    b = samsa_broker_in_process
    b.create_topic("z", 1)
    b.faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=1, topic="z")
    with RawClient(b.bootstrap_servers) as c:
        produce(c, "z", batch(1), acks=0)
        assert c.is_closed()
    with RawClient(b.bootstrap_servers) as c:
        produce(c, "z", batch(2), acks=0)      # the fault is spent: written, no answer, still open
        assert list_offset(c, "z", -1).offset == 2


# ================================================================ hold: a SyncGroup waits

@pytest.mark.samsa_broker(overrides=NO_DELAY)
def test_a_held_sync_group_keeps_the_member_without_partitions_until_released(samsa_broker):
    bs, topic, group = samsa_broker.bootstrap_servers, name("held"), name("g")
    samsa_broker.create_topic(topic, 2)
    hold = samsa_broker.faults.hold("SyncGroup", group=group)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                  "heartbeat.interval.ms": 200})
    c.subscribe([topic])
    try:
        wait_until("the SyncGroup held", lambda: c.poll(0.1) is None and samsa_broker.faults.log(), timeout=10)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            assert c.poll(0.2) is None
            assert c.assignment() == []                  # joined, but its SyncGroup is held
        assert [f["api"] for f in samsa_broker.faults.log()] == ["SyncGroup"]
        assert hold.release() is True
        wait_until("the assignment after release", lambda: (c.poll(0.1), len(c.assignment()) == 2)[1], timeout=10)
    finally:
        c.close()
    assert samsa_broker.faults.armed() == []


# ================================================================ clock: session timeout

def test_clock_advance_past_the_session_timeout_expires_the_silent_member(tmp_path):
    b = SamsaBroker(tmp_path / "d", overrides=NO_DELAY).start()
    silent = survivor = None
    try:
        bs, topic, group = b.bootstrap_servers, name("clk"), name("g")
        b.create_topic(topic, 4)
        silent = Member("confluent", bs, group, topic, session_timeout_ms=6000)
        survivor = Member("confluent", bs, group, topic, session_timeout_ms=25000)
        wait_until("both members assigned", lambda: len(describe_group(bs, group).members) == 2
                   and describe_group(bs, group).state == "Stable", timeout=30)
        gone_id = next(m.member_id for m in describe_group(bs, group).members.values()
                       if m.client_id == silent.client_id)
        os.kill(silent.proc.pid, signal.SIGSTOP)          # it stops heartbeating, as a hung process would
        time.sleep(0.5)
        assert gone_id in describe_group(bs, group).members
        t0 = time.monotonic()
        b.clock.advance(6_500)                             # past its 6 s session, not the survivor's 25 s

        def survivor_alone() -> object:
            v = describe_group(bs, group)
            ok = v.state == "Stable" and len(v.members) == 1 and \
                [sorted(p) for p in v.partitions().values()] == [[0, 1, 2, 3]]
            return v if ok else None
        view = wait_until("the survivor alone holds every partition", survivor_alone, timeout=10)
        assert time.monotonic() - t0 < 5                   # well before 6 s of real time
        assert [m.client_id for m in view.members.values()] == [survivor.client_id]
        assert gone_id not in view.members
    finally:
        for m in (silent, survivor):
            if m is not None:
                m.kill()
        b.stop()


# ================================================================ clock: transaction timeout

def test_clock_advance_past_transaction_timeout_aborts_the_transaction(tmp_path):
    b = SamsaBroker(tmp_path / "d", overrides=NO_DELAY).start()
    try:
        bs, topic, tid = b.bootstrap_servers, name("txn"), name("tx")
        b.create_topic(topic, 3)
        p = txn_producer(bs, tid, **{"transaction.timeout.ms": 60000})
        p.begin_transaction()
        for i in range(6):
            p.produce(topic, value=b"late-%d" % i, partition=i % 3)
        assert p.flush(10) == 0
        with RawClient(bs) as c:
            assert describe_txn(c, tid).transaction_state == "Ongoing"
            b.clock.advance(60_001)
            wait_until("the coordinator aborts", lambda: describe_txn(c, tid).transaction_state == "CompleteAbort",
                       timeout=5)
            assert describe_txn(c, tid).producer_epoch == 1
        assert watermarks(bs, topic) == [3, 3, 3]                     # 2 records + the ABORT marker each
        assert read_all(bs, topic, "read_committed", timeout=2) == []
        with pytest.raises(KafkaException) as info:
            p.commit_transaction(10)
        assert info.value.args[0].code() == KafkaError._FENCED
    finally:
        b.stop()


# ================================================================ delay and drop

def test_delay_holds_answers_back_and_keeps_them_in_order(samsa_broker_in_process):
    b = samsa_broker_in_process
    b.faults.delay("Metadata", 400, count=1)
    from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
    with RawClient(b.bootstrap_servers) as c:
        t0 = time.monotonic()
        first = c.send(3, 12, topics=[], allow_auto_topic_creation=False)       # delayed
        second = c.send(18, 3, client_software_name="t", client_software_version="1")  # pipelined behind it
        answers = [int.from_bytes(c.recv_frame()[:4], "big") for _ in range(2)]
        elapsed = time.monotonic() - t0
    assert answers == [first, second]                    # same order as sent
    assert elapsed >= 0.4
    assert [f["kind"] for f in b.faults.log()] == ["delay"]


def test_drop_closes_the_connection_and_the_producer_retries_on_a_new_one(samsa_broker_in_process):
    b = samsa_broker_in_process
    b.create_topic("dropped", 1)
    b.faults.drop("Produce", count=1, topic="dropped")
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "enable.idempotence": True, "retry.backoff.ms": 50})
    p.produce("dropped", b"once", partition=0)
    assert p.flush(20) == 0
    assert [f["kind"] for f in b.faults.log()] == ["drop"]
    assert values(b.bootstrap_servers, "dropped") == [(0, b"once")]


def test_drop_is_seen_as_a_closed_connection(samsa_broker_in_process):
    b = samsa_broker_in_process
    b.faults.drop("Metadata", count=1, client_id="victim")
    with RawClient(b.bootstrap_servers) as c:           # another client id: not matched
        assert c.request(3, 12, topics=[], allow_auto_topic_creation=False).brokers
    from kafka.protocol.metadata import MetadataRequest
    req = MetadataRequest(version=12, topics=[], allow_auto_topic_creation=False)
    req.with_header(correlation_id=7, client_id="victim")
    with RawClient(b.bootstrap_servers) as c:
        c.send_raw(req.encode(header=True, framed=True))
        assert c.is_closed()
    assert [(f["kind"], f["client_id"]) for f in b.faults.log()] == [("drop", "victim")]


# ================================================================ version emulation

@pytest.mark.samsa_broker(overrides={"samsa.emulate.kafka.version": "2.8"}, topics={"old": 1})
def test_emulated_kafka_2_8_advertises_its_versions_and_clients_fall_back(samsa_broker):
    bs = samsa_broker.bootstrap_servers
    apis = advertised_apis(bs)
    assert apis == emulated_table("2.8")
    assert apis[0] == (3, 9) and apis[1] == (4, 12) and apis[18] == (0, 3)   # Produce, Fetch, ApiVersions
    assert 65 not in apis                                                    # DescribeTransactions: 3.0+
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=bs)
    assert (2, 8) <= admin._client.check_version() < (3, 0)                 # kafka-python infers the release
    admin.close()
    kp = KafkaProducer(bootstrap_servers=bs)
    kp.send("old", b"from kafka-python", partition=0).get(timeout=10)
    kp.close()
    p = Producer({"bootstrap.servers": bs})
    p.produce("old", b"from librdkafka", partition=0)
    assert p.flush(10) == 0
    c = KafkaConsumer(bootstrap_servers=bs, group_id=name("g"), auto_offset_reset="earliest", consumer_timeout_ms=5000)
    c.subscribe(["old"])
    assert sorted(m.value for m in c) == [b"from kafka-python", b"from librdkafka"]
    c.close()
    with RawClient(bs) as raw:                  # a version 2.8 did not have is refused as Kafka refuses it
        raw.send(0, 11, transactional_id=None, acks=1, timeout_ms=1000, topic_data=[])
        assert raw.is_closed()


@requires_java
def test_java_client_works_against_emulated_kafka_3_6(tmp_path):
    b = SamsaBroker(tmp_path / "d", overrides={"samsa.emulate.kafka.version": "3.6"}).start()
    try:
        topic = name("j36")
        b.create_topic(topic, 1)
        assert advertised_apis(b.bootstrap_servers)[1] == (4, 15)
        out = last(run_java("4.3.0", b.bootstrap_servers, "produce", "--topic", topic, "--count", "3"), "produce")
        assert out["acked"] == 3
        assert [o for o, _ in values(b.bootstrap_servers, topic, expect=3)] == [0, 1, 2]
    finally:
        b.stop()


def test_an_unknown_emulated_release_stops_the_broker_with_a_clear_error(tmp_path):
    with pytest.raises(RuntimeError, match="not a Kafka release Samsa knows"):
        SamsaBroker(tmp_path / "d", overrides={"samsa.emulate.kafka.version": "9.9"}).start(timeout=10)


# ================================================================ bad input, the endpoint, samsa ctl

BAD = [
    (lambda f: f.fail("Produc", "NOT_LEADER_OR_FOLLOWER"), "unknown Kafka API name 'Produc'"),
    (lambda f: f.fail("Produce", "NOT_A_LEADER"), "unknown Kafka error name 'NOT_A_LEADER'"),
    (lambda f: f.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=-1), "count must be a positive integer"),
    (lambda f: f.drop("Fetch", count=0), "count must be a positive integer"),
    (lambda f: f.delay("Fetch", -5), "ms must be a non-negative integer"),
]


def test_bad_input_is_a_clear_value_error_in_process_and_over_http(samsa_broker, samsa_broker_in_process):
    for broker in (samsa_broker, samsa_broker_in_process):
        for arm, message in BAD:
            with pytest.raises(ValueError, match=message):
                arm(broker.faults)
        with pytest.raises(ValueError, match="non-negative integer"):
            broker.clock.advance(-1)
        assert broker.faults.armed() == []
    r = httpx.post(samsa_broker.control_url + "/faults/fail", json={"api": "Nope", "error": "X"})
    assert r.status_code == 400 and "unknown Kafka API name" in r.json()["error"]
    r = httpx.post(samsa_broker.control_url + "/faults/fail", content=b"{not json")
    assert r.status_code == 400


def test_a_broker_without_the_control_endpoint_refuses_faults_clearly(tmp_path):
    b = SamsaBroker(tmp_path / "d", control=False).start()
    try:
        with pytest.raises(ControlUnavailable, match="without samsa.control.listener"):
            b.faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER")
        with pytest.raises(ControlUnavailable, match="no Samsa control endpoint"):
            SamsaControl(f"http://127.0.0.1:{b.port + 0}").faults.log()  # the Kafka port speaks no HTTP
    finally:
        b.stop()


def test_the_control_endpoint_binds_loopback_only_unless_allowed(tmp_path):
    with pytest.raises(RuntimeError, match="non-loopback"):
        SamsaBroker(tmp_path / "d", overrides={"samsa.control.listener": "http://0.0.0.0:0"}).start(timeout=10)


def test_samsa_ctl_arms_lists_and_clears_faults_and_moves_the_clock(samsa_broker):
    def ctl(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "broker", "ctl", "--url", samsa_broker.control_url, *args],
                              capture_output=True, text=True, cwd=REPO, timeout=30)

    r = ctl("fail", "Produce", "NOT_LEADER_OR_FOLLOWER", "--count", "2", "--topic", "orders")
    assert r.returncode == 0 and json.loads(r.stdout)["kind"] == "fail"
    held = json.loads(ctl("hold", "JoinGroup", "--group", "g1").stdout)
    assert [f["api"] for f in json.loads(ctl("faults").stdout)] == ["Produce", "JoinGroup"]
    assert json.loads(ctl("release", str(held["id"])).stdout) == {"released": True}
    before = samsa_broker.clock.now_ms()
    assert json.loads(ctl("advance", "60000").stdout)["offset_ms"] == 60000
    assert samsa_broker.clock.now_ms() >= before + 60000
    assert json.loads(ctl("clear").stdout) == {"cleared": 1}
    bad = ctl("fail", "Produce", "NOPE")
    assert bad.returncode == 2 and "unknown Kafka error name 'NOPE'" in bad.stderr
    assert ctl("log").returncode == 0
    off = subprocess.run([sys.executable, "-m", "broker", "ctl", "--url", "http://127.0.0.1:1", "log"],
                         capture_output=True, text=True, cwd=REPO, timeout=30)
    assert off.returncode == 1 and "no Samsa control endpoint" in off.stderr


# ================================================================ the in-process broker and fixtures

@pytest.mark.samsa_broker(in_process=True, topics={"orders": 3})
def test_in_process_broker_with_topics_declared_up_front_and_samsa_topic(samsa_broker, samsa_topic):
    from broker.testing.inprocess import InProcessBroker
    assert isinstance(samsa_broker, InProcessBroker)
    other = samsa_topic(partitions=2)
    c = Consumer({"bootstrap.servers": samsa_broker.bootstrap_servers, "group.id": name("g")})
    md = c.list_topics(timeout=10)
    c.close()
    assert len(md.topics["orders"].partitions) == 3 and len(md.topics[other].partitions) == 2


def test_in_process_broker_restarts_with_its_data(tmp_path):
    from broker.testing.inprocess import InProcessBroker
    b = InProcessBroker(tmp_path / "d", topics={"keep": 1}).start()
    try:
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        p.produce("keep", b"survives", partition=0)
        assert p.flush(10) == 0
        b.restart()
        assert values(b.bootstrap_servers, "keep") == [(0, b"survives")]
    finally:
        b.stop()


def test_in_process_clock_expires_delayed_deletes(samsa_broker_in_process):
    """file.delete.delay.ms runs on the broker clock: advancing it removes *.deleted files now."""
    b = samsa_broker_in_process
    b.create_topic("old", 1, {"segment.bytes": "1024", "retention.ms": "1000"})
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0})
    for i in range(20):
        p.produce("old", b"x" * 200, partition=0)
        p.flush(10)
    part = b.data_dir / "old-0"
    b.clock.advance(2_000)                                  # past retention.ms
    b.clock.advance(300_000)                                # past log.retention.check.interval.ms: check runs
    wait_until("segments renamed *.deleted", lambda: any(f.suffix == ".deleted" for f in part.iterdir()), timeout=5)
    b.clock.advance(60_001)                                 # past log.segment.delete.delay.ms
    wait_until("*.deleted removed", lambda: not any(f.suffix == ".deleted" for f in part.iterdir()), timeout=5)


def test_clock_advance_expires_committed_offsets_after_offsets_retention(samsa_broker_in_process):
    from tests.support.groups_support import committed
    b = samsa_broker_in_process
    b.create_topic("kept", 1)
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "retained", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("kept", 0, 5)], asynchronous=False)
    c.close()
    assert committed(b.bootstrap_servers, "retained") == {("kept", 0): (5, "", 0)}
    b.clock.advance(7 * 24 * 3600 * 1000 + 600_000 + 1)     # offsets.retention.minutes + one check interval
    wait_until("the offsets expired", lambda: committed(b.bootstrap_servers, "retained") == {}, timeout=5)


def test_links_endpoint_sets_reads_and_heals_and_refuses_bad_input(samsa_broker, samsa_broker_in_process):
    """One broker's cut links through the control operations (broker/common/link_cuts.py), the
    same in process and over HTTP; a partition of a cluster is tests/cluster/test_cluster_partitions.py."""
    for broker in (samsa_broker, samsa_broker_in_process):
        assert broker.links.describe() == {"node_id": 1, "peers": [], "etcd": False, "swallowed": 0, "lost": 0}
        assert broker.links.cut([2, 3], etcd=True)["peers"] == [2, 3]
        assert broker.links.describe()["etcd"] is True
        for peers, message in (([1], "cannot be cut from itself"), (["2"], "node ids"), ([True], "node ids")):
            with pytest.raises(ValueError, match=message):
                broker.links.cut(peers)
        assert broker.links.heal() == {"node_id": 1, "peers": [], "etcd": False, "swallowed": 0, "lost": 0}
    r = httpx.post(samsa_broker.control_url + "/links", json={"peers": [2], "etcd": "yes"})
    assert r.status_code == 400 and "etcd must be true or false" in r.json()["error"]
    r = httpx.post(samsa_broker.control_url + "/links", json={"peers": 2})
    assert r.status_code == 400 and "a list of broker node ids" in r.json()["error"]
    assert httpx.get(samsa_broker.control_url + "/links").json()["peers"] == []
