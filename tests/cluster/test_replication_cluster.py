"""Replication on a real cluster: etcd and three Samsa broker processes (the samsa_cluster
fixture, broker/testing/local_cluster.py), stock clients. RF=3, min.insync.replicas=2, short replica lag
and broker session so failures are noticed within seconds."""
from __future__ import annotations

import time

import pytest

from broker.testing.local_cluster import LocalCluster
from tests.support.cluster_support import create_topic

OVERRIDES = {"replica.lag.time.max.ms": "1500", "min.insync.replicas": "2", "broker.session.timeout.ms": "3000",
             "replica.fetch.wait.max.ms": "200", "replica.fetch.backoff.ms": "100",
             "group.initial.rebalance.delay.ms": "0", "log.cleaner.enable": "false"}


pytestmark = pytest.mark.parametrize("samsa_cluster", [{"overrides": OVERRIDES}], indirect=True, ids=["rf3"])


@pytest.fixture
def cluster(samsa_cluster: LocalCluster) -> LocalCluster:
    return samsa_cluster


def isr(c: LocalCluster, topic: str, p: int = 0) -> tuple[int, ...]:
    reg = c.image().partition(topic, p)
    return tuple(sorted(reg.isr)) if reg else ()


def consume_all(c: LocalCluster, topic: str, expect: int, timeout: float = 30.0) -> list[bytes]:
    from kafka import KafkaConsumer

    # metadata_max_age_ms: kafka-python 3.0 (cluster.set_topics, "TODO: handle future when old
    # metadata request is currently in-flight") loses the subscription's metadata update when its
    # first, topic-less Metadata request is answered after subscribe(); with the default 300 s
    # age the consumer then knows no partition of the topic and reads nothing for 300 s (seen
    # on a loaded machine: "800 acknowledged records lost", read nothing in 30 s).
    consumer = KafkaConsumer(topic, bootstrap_servers=c.bootstrap_servers, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=3000, metadata_max_age_ms=1000)
    out: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expect and time.monotonic() < deadline:
            for m in consumer:
                out.append(m.value)
    finally:
        consumer.close()
    return out


def check_exactly_once_in_order(acked: list[bytes], got: list[bytes]) -> None:
    assert len(got) == len(set(got)), "a record appears twice"
    positions = {v: i for i, v in enumerate(got)}
    missing = [v for v in acked if v not in positions]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"
    order = [positions[v] for v in acked]
    assert order == sorted(order), "acknowledged records out of order"


@pytest.mark.slow  # ~16 s in CI's run
def test_kafka_python_idempotent_acks_all_across_leader_kills(cluster: LocalCluster) -> None:
    """The producer's every acknowledged record is there once, in order; a consumer group reading
    all along keeps going across the failovers and never reads a record that later disappears."""
    import threading

    from coordinator.hashing import partition_for_group
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError

    c = cluster
    create_topic(c, "kp")
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all", enable_idempotence=True,
                             retries=2147483647, request_timeout_ms=5000, delivery_timeout_ms=120000,
                             max_in_flight_requests_per_connection=5, linger_ms=5, metadata_max_age_ms=1000,
                             retry_backoff_ms=100)
    seen: list[bytes] = []
    stop = threading.Event()
    errors: list[BaseException] = []
    retried: list[KafkaError] = []
    position: dict[str, object] = {}      # the watcher's view, for the failure message

    def watch() -> None:
        try:
            consumer = KafkaConsumer("kp", group_id="watchers", bootstrap_servers=c.bootstrap_servers,
                                     auto_offset_reset="earliest", enable_auto_commit=True,
                                     auto_commit_interval_ms=200, metadata_max_age_ms=1000,
                                     request_timeout_ms=10000, session_timeout_ms=6000,
                                     heartbeat_interval_ms=1000)
            while not stop.is_set():
                try:
                    batches = consumer.poll(timeout_ms=200)
                except KafkaError as exc:
                    # kafka-python 3.0 lets a retriable error escape poll(): ensure_coordinator_ready
                    # catches KafkaTimeoutError only around the metadata refresh it starts, so an
                    # ECONNREFUSED from a killed broker ends poll() (seen on a loaded machine). An
                    # application polls again, as the Java consumer never throws these.
                    if not exc.retriable:
                        raise
                    retried.append(exc)
                    continue
                for records in batches.values():
                    seen.extend(r.value for r in records)
                    position["last offset read"] = records[-1].offset
                position["assignment"] = sorted(tp.partition for tp in consumer.assignment())
                position["polls"] = int(position.get("polls", 0)) + 1   # type: ignore[call-overload]
            consumer.close()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    acked: list[bytes] = []
    n = 0

    def send(count: int) -> None:
        nonlocal n
        futures = []
        for _ in range(count):
            v = b"kp-%06d" % n
            n += 1
            futures.append((v, producer.send("kp", v)))
        for v, f in futures:
            f.get(timeout=120)
            acked.append(v)

    # The group's coordinator runs on the leader of its __consumer_offsets partition. Each kill
    # must be one fault, for that partition as for kp: under load an idle follower that does not
    # fetch within replica.lag.time.max.ms leaves the ISR, and killing the ISR's last member takes
    # the coordinator offline (no unclean election) until that broker is back, while kafka-python
    # does not fetch at all without a coordinator (seen on a loaded machine: FindCoordinator
    # answered COORDINATOR_NOT_AVAILABLE for 30 s, the group reading nothing meanwhile).
    offsets_partition = partition_for_group("watchers", 50)

    def fully_replicated() -> bool:
        return isr(c, "kp") == (1, 2, 3) and isr(c, "__consumer_offsets", offsets_partition) == (1, 2, 3)

    send(200)
    for round_ in range(3):
        # 120 s: on an overloaded machine (load average 15-25 on 2 cores) the brokers' 3 s leases
        # expire and the ISRs shrink and grow for a while before both are full at once
        c.wait_for(fully_replicated, timeout=120, what="kp and the group's offsets partition fully in sync")
        leader = c.leader("kp", 0)
        c.kill(leader)
        send(200)                       # answered by the new leader once the controller moved it
        assert c.leader("kp", 0) != leader
        c.start_broker(leader)
        c.wait_for(lambda: isr(c, "kp") == (1, 2, 3), timeout=120, what="killed broker back in the ISR")
    producer.flush()
    producer.close()
    got = consume_all(c, "kp", len(acked))
    check_exactly_once_in_order(acked, got)
    assert len(got) == len(acked)
    try:
        c.wait_for(lambda: set(acked) <= set(seen) or errors, timeout=60, what="the group to read everything")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; {_group_diagnostics(c, 'watchers', acked, seen, position, retried)}") from None
    stop.set()
    watcher.join(30)
    assert not errors
    assert set(seen) <= set(got), "a consumer read a record that is not in the log"


def _group_diagnostics(c: LocalCluster, group: str, acked: list[bytes], seen: list[bytes],
                       position: dict[str, object], retried: list[BaseException]) -> str:
    """Where the group's coordinator is and what the consumer holds, for a failure message."""
    from coordinator.hashing import partition_for_group
    from kafka.admin import KafkaAdminClient

    missing = sorted(set(acked) - set(seen))
    p = partition_for_group(group, 50)
    out = [f"group read {len(set(seen))}/{len(set(acked))} acknowledged records, first missing "
           f"{missing[:3]}", f"consumer: {position}", f"{len(retried)} retriable errors from poll() "
           f"(last: {retried[-1:]!r})", f"__consumer_offsets-{p} leader: {c.leader('__consumer_offsets', p)}",
           f"kp-0 leader: {c.leader('kp', 0)}"]
    try:
        admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=5000)
        try:
            out.append(f"DescribeGroups: {str(admin.describe_groups([group]))[:600]}")
        finally:
            admin.close()
    except Exception as e:  # the diagnosis must not hide the failure
        out.append(f"DescribeGroups failed: {e!r}")
    return "; ".join(out)


def test_isr_shrinks_on_a_hung_follower_and_min_insync(cluster: LocalCluster) -> None:
    from tests.support.rawclient import RawClient
    from tests.support.wire import value_batch
    from kafka.protocol.producer import ProduceRequest
    from protocol.errors import ErrorCode

    c = cluster
    create_topic(c, "h")
    leader = c.leader("h", 0)
    followers = [b for b in (1, 2, 3) if b != leader]

    def produce(values: list[bytes], acks: int = -1) -> int:
        td = ProduceRequest.TopicProduceData(name="h", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(value_batch(values)))])
        with RawClient(c.brokers[leader].bootstrap_servers, timeout=30) as client:
            resp = client.request(0, 9, transactional_id=None, acks=acks, timeout_ms=15000, topic_data=[td])
        return resp.responses[0].partition_responses[0].error_code

    assert produce([b"a"]) == 0
    c.pause(followers[0])
    try:
        start = time.monotonic()
        assert produce([b"b"]) == 0          # waits for the ISR to drop the hung follower
        assert time.monotonic() - start >= 1.0
        assert followers[0] not in isr(c, "h")
        c.pause(followers[1])
        try:
            assert produce([b"c"], acks=1) == 0
            c.wait_for(lambda: isr(c, "h") == (leader,), timeout=20, what="ISR = the leader alone")
            assert produce([b"d"]) == ErrorCode.NOT_ENOUGH_REPLICAS
        finally:
            c.resume(followers[1])
    finally:
        c.resume(followers[0])
    c.wait_for(lambda: isr(c, "h") == (1, 2, 3), timeout=30, what="both back in the ISR")
    assert produce([b"e"]) == 0
    assert consume_all(c, "h", 4) == [b"a", b"b", b"c", b"e"]


@pytest.mark.slow
def test_hung_leader_truncates_its_uncommitted_tail(cluster: LocalCluster) -> None:
    from tests.support.rawclient import RawClient
    from tests.support.wire import value_batch
    from kafka.protocol.producer import ProduceRequest

    c = cluster
    create_topic(c, "d")
    old = c.leader("d", 0)

    def produce(node: int, values: list[bytes], acks: int = -1):
        td = ProduceRequest.TopicProduceData(name="d", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(value_batch(values)))])
        with RawClient(c.brokers[node].bootstrap_servers, timeout=30) as client:
            resp = client.request(0, 9, transactional_id=None, acks=acks, timeout_ms=15000, topic_data=[td])
        return resp.responses[0].partition_responses[0]

    assert produce(old, [b"a", b"b"]).error_code == 0
    followers = [b for b in (1, 2, 3) if b != old]
    for f in followers:
        c.pause(f)
    time.sleep(0.5)     # their long-poll fetches in flight (replica.fetch.wait.max.ms) are answered empty
    assert produce(old, [b"lost"], acks=1).error_code == 0       # only the old leader has it
    c.pause(old)
    for f in followers:
        c.resume(f)
    new = c.wait_for(lambda: c.leader("d", 0) if c.leader("d", 0) not in (old, -1) else None, timeout=30,
                     what="a new leader")
    r = produce(new, [b"c"])
    assert (r.error_code, r.base_offset) == (0, 2)
    c.resume(old)
    c.wait_for(lambda: isr(c, "d") == (1, 2, 3), timeout=30, what="old leader back in the ISR")
    log = (c.data_dir / f"broker-{old}" / "d-0" / "00000000000000000000.log").read_bytes()
    assert b"lost" not in log
    checkpoint = (c.data_dir / f"broker-{old}" / "d-0" / "leader-epoch-checkpoint").read_text().split("\n")
    assert checkpoint[0] == "0" and checkpoint[2] == "0 0"
    assert consume_all(c, "d", 3) == [b"a", b"b", b"c"]


def _kill_restart_rounds(c: LocalCluster, topic: str, rounds: int, during) -> None:
    """``rounds`` times: ``during(kill)`` produces while the partition's leader is SIGKILLed, then
    the killed broker restarts and rejoins the ISR."""
    for _ in range(rounds):
        leader = c.leader(topic, 0)
        during(lambda: c.kill(leader))
        c.wait_for(lambda: c.leader(topic, 0) not in (leader, -1), timeout=30, what="a new leader")
        c.start_broker(leader)
        c.wait_for(lambda: isr(c, topic) == (1, 2, 3), timeout=60, what="killed broker back in the ISR")


@pytest.mark.slow
def test_confluent_idempotent_acks_all_across_leader_kills(cluster: LocalCluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    c = cluster
    create_topic(c, "ck")
    producer = confluent_kafka.Producer({"bootstrap.servers": c.bootstrap_servers, "enable.idempotence": True,
                                         "acks": "all", "linger.ms": 5, "message.timeout.ms": 120000,
                                         "topic.metadata.refresh.interval.ms": 1000})
    acked: list[bytes] = []
    failed: list[str] = []
    n = [0]

    def report(err, msg) -> None:
        if err is None:
            acked.append(msg.value())
        else:
            failed.append(str(err))

    def send(count: int) -> None:
        for _ in range(count):
            producer.produce("ck", b"ck-%06d" % n[0], on_delivery=report)
            n[0] += 1
            producer.poll(0)

    def during(kill) -> None:
        send(300)
        producer.poll(0.05)
        kill()
        send(300)
        assert producer.flush(120) == 0

    send(200)
    producer.flush(60)
    _kill_restart_rounds(c, "ck", 2, during)
    assert failed == []
    got = consume_all(c, "ck", len(acked))
    check_exactly_once_in_order(acked, got)
    assert len(acked) == n[0] == len(got)


@pytest.mark.slow  # ~21 s in CI's run
def test_java_idempotent_acks_all_across_leader_kills(cluster: LocalCluster) -> None:
    from tests.support.javaclient import java_available, of_type, start_java

    if not java_available():
        pytest.skip("java/javac not available")
    c = cluster
    create_topic(c, "jv")
    acked: list[bytes] = []
    start = [0]

    def during(kill) -> None:
        proc = start_java("4.3.0", c.bootstrap_servers, "produce", "--topic", "jv", "--count", 2000,
                          "--start", start[0], "--acks", "all", "--idempotent", "true", "--linger-ms", 5,
                          "--print-records", "--prop", "delivery.timeout.ms=120000",
                          "--prop", "metadata.max.age.ms=1000")
        time.sleep(2.5)                  # the JVM is up and producing
        kill()
        lines = proc.result(timeout=180)
        acks = [ln for ln in of_type(lines, "ack")]
        assert all(ln["ok"] for ln in acks), [ln for ln in acks if not ln["ok"]][:3]
        acked.extend(b"v-%d" % ln["i"] for ln in sorted(acks, key=lambda ln: ln["i"]))   # in send order
        start[0] += 2000

    _kill_restart_rounds(c, "jv", 2, during)
    got = consume_all(c, "jv", len(acked))
    check_exactly_once_in_order(acked, got)
    assert len(got) == len(acked) == 4000
    # the Java consumer reads the same log; each record carries the leader epoch that wrote it
    from tests.support.javaclient import run_java

    lines = run_java("4.3.0", c.bootstrap_servers, "consume-group", "--topic", "jv", "--group", "jv-readers",
                     "--max", 4000, "--timeout-ms", 60000, timeout=120)
    records = of_type(lines, "record")
    assert [r["value"].encode() for r in records] == got
    epochs = [r["leader_epoch"] for r in records]
    assert epochs == sorted(epochs) and epochs[-1] >= 1      # written across at least one failover


@pytest.mark.slow
def test_consumer_group_keeps_its_offsets_across_coordinator_failover(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    from coordinator.hashing import partition_for_group

    c = cluster
    create_topic(c, "g")
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all")
    for i in range(100):
        producer.send("g", b"v%d" % i)
    producer.flush()
    producer.close()

    def consumer() -> KafkaConsumer:
        return KafkaConsumer("g", group_id="grp", bootstrap_servers=c.bootstrap_servers, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=8000, max_poll_records=50)

    first = consumer()
    got = []
    for m in first:
        got.append(m.value)
        if len(got) == 50:
            first.commit()
            break
    assert first.committed(TopicPartition("g", 0)) == 50
    first.close()
    partitions = len(c.image().topics["__consumer_offsets"].partitions)
    gp = partition_for_group("grp", partitions)
    old = c.leader("__consumer_offsets", gp)
    c.kill(old)                                  # the group coordinator's broker
    c.wait_for(lambda: c.leader("__consumer_offsets", gp) not in (old, -1), timeout=30, what="a new coordinator")
    second = consumer()
    rest = [m.value for m in second]
    assert rest == [b"v%d" % i for i in range(50, 100)]     # from the committed offset, nothing again
    second.commit()
    assert second.committed(TopicPartition("g", 0)) == 100
    second.close()


def test_transactions_across_a_coordinator_kill(cluster: LocalCluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from coordinator.hashing import partition_for_group

    c = cluster
    create_topic(c, "tx", partitions=3)
    producer = confluent_kafka.Producer({"bootstrap.servers": c.bootstrap_servers, "transactional.id": "t1",
                                         "transaction.timeout.ms": 60000})
    producer.init_transactions(60)

    def transaction(tag: bytes, commit: bool = True) -> None:
        producer.begin_transaction()
        for i in range(30):
            producer.produce("tx", b"%s-%d" % (tag, i), partition=i % 3)
        if commit:
            producer.commit_transaction(60)
        else:
            producer.abort_transaction(60)

    transaction(b"c0")
    transaction(b"a0", commit=False)
    partitions = len(c.image().topics["__transaction_state"].partitions)
    tp = partition_for_group("t1", partitions)
    old = c.leader("__transaction_state", tp)
    c.kill(old)                                  # the transaction coordinator's broker
    c.wait_for(lambda: c.leader("__transaction_state", tp) not in (old, -1), timeout=30, what="a new coordinator")
    transaction(b"c1")
    transaction(b"a1", commit=False)
    transaction(b"c2")
    from kafka import KafkaConsumer

    consumer = KafkaConsumer("tx", bootstrap_servers=c.bootstrap_servers, auto_offset_reset="earliest",
                             isolation_level="read_committed", consumer_timeout_ms=5000)
    values = sorted(m.value for m in consumer)
    consumer.close()
    assert values == sorted(b"%s-%d" % (t, i) for t in (b"c0", b"c1", b"c2") for i in range(30))


def test_deleted_topic_logs_go_from_every_replica(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient

    c = cluster
    create_topic(c, "gone", partitions=2)
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all")
    for i in range(10):
        producer.send("gone", b"old-%d" % i, partition=i % 2)
    producer.flush()
    dirs = [c.data_dir / f"broker-{n}" / f"gone-{p}" for n in (1, 2, 3) for p in (0, 1)]
    c.wait_for(lambda: all(d.exists() for d in dirs), what="every replica's log")
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    admin.delete_topics(["gone"])
    c.wait_for(lambda: not any(d.exists() for d in dirs), timeout=30, what="the logs to be deleted")
    admin.close()
    create_topic(c, "gone", partitions=2)
    producer.send("gone", b"new", partition=0)
    producer.flush()
    producer.close()
    assert consume_all(c, "gone", 1) == [b"new"]


def test_offset_commit_is_answered_once_replicated(cluster: LocalCluster) -> None:
    """A coordinator answers a write only once the HW passed it: with a follower of the group's
    __consumer_offsets partition hung, a commit waits until the ISR drops it
    (replica.lag.time.max.ms; two replicas stay, min.insync.replicas=2), then it is readable."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from coordinator.hashing import partition_for_group

    c = cluster
    create_topic(c, "oc")
    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap_servers, group_id="oc-group", enable_auto_commit=False,
                             request_timeout_ms=30000)
    tp = TopicPartition("oc", 0)
    consumer.commit({tp: OffsetAndMetadata(1, "", -1)})      # creates __consumer_offsets, finds the coordinator
    partitions = len(c.image().topics["__consumer_offsets"].partitions)
    gp = partition_for_group("oc-group", partitions)
    coordinator = c.leader("__consumer_offsets", gp)
    followers = [b for b in (1, 2, 3) if b != coordinator][:1]
    c.wait_for(lambda: isr(c, "__consumer_offsets", gp) == (1, 2, 3), what="a full ISR")
    time.sleep(0.5)          # the follower's fetch in flight is answered before it hangs
    for f in followers:
        c.pause(f)
    try:
        start = time.monotonic()
        consumer.commit({tp: OffsetAndMetadata(7, "", -1)})
        waited = time.monotonic() - start
        assert waited >= 1.0, f"answered after {waited:.2f}s, before the ISR could have shrunk"
        assert followers[0] not in isr(c, "__consumer_offsets", gp)
        assert consumer.committed(tp) == 7
    finally:
        for f in followers:
            c.resume(f)
        consumer.close()


def test_topic_config_changes_reach_every_replica(cluster: LocalCluster) -> None:
    """Topic configs live in the metadata image in a cluster; each replica's log follows them
    (here min.insync.replicas, which the leader's acks=all check reads)."""
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    from protocol.errors import ErrorCode
    from tests.support.rawclient import RawClient
    from tests.support.wire import value_batch
    from kafka.protocol.producer import ProduceRequest

    c = cluster
    create_topic(c, "cfg")
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "cfg", configs={"min.insync.replicas": "4"})])
    admin.close()
    c.wait_for(lambda: all((c.data_dir / f"broker-{n}" / "samsa-topics.json").read_text().count('"min.insync.replicas": "4"')
                           for n in (1, 2, 3)), timeout=20, what="every broker's local topic config")
    td = ProduceRequest.TopicProduceData(name="cfg", partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(value_batch([b"x"])))])
    with RawClient(c.brokers[c.leader("cfg", 0)].bootstrap_servers) as client:
        resp = client.request(0, 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[td])
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NOT_ENOUGH_REPLICAS
