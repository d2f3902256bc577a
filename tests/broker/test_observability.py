"""/metrics on samsa.http.listener (exact counts after real clients produced and consumed) and the
lifecycle log lines (groups, transactions), against a real broker process."""
from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from urllib.parse import quote
from typing import Any, Iterator

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from broker.testing import SamsaBroker, free_port, running_broker
from tests.support.clienthelpers import PARTITIONS, consume_and_commit, create_topic, produce


@pytest.fixture
def http_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides={
        "samsa.http.listener": f"http://127.0.0.1:{free_port()}", "group.initial.rebalance.delay.ms": "0",
        "num.partitions": str(PARTITIONS),
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}) as broker:
        yield broker


@pytest.fixture
def debug_http_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SamsaBroker]:
    """The same broker with SAMSA_LOG_LEVEL=DEBUG: ``transaction begun`` / ``committed`` are
    debug lines (as Kafka's TransactionMetadata logs its transitions)."""
    monkeypatch.setenv("SAMSA_LOG_LEVEL", "DEBUG")
    with running_broker(tmp_path / "data", overrides={
        "samsa.http.listener": f"http://127.0.0.1:{free_port()}", "num.partitions": str(PARTITIONS),
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500"}) as broker:
        yield broker


def http_url(broker: SamsaBroker) -> str:
    return broker.overrides["samsa.http.listener"]


def scrape(broker: SamsaBroker) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics keyed by (name, sorted labels)."""
    resp = httpx.get(http_url(broker) + "/metrics", timeout=10)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")
    out = {}
    for fam in text_string_to_metric_families(resp.text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def wait_for_log(broker: SamsaBroker, pattern: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = broker.read_log()
        m = re.search(pattern, log)
        if m:
            return m.group(0)
        time.sleep(0.1)
    raise AssertionError(f"no log line matching {pattern!r}; log:\n{broker.read_log()[-4000:]}")


def test_metrics_exact_counts(http_broker: SamsaBroker) -> None:
    bootstrap = http_broker.bootstrap_servers
    topic, group = f"obs-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 30)
    consumer = consume_and_commit(bootstrap, topic, group, 30)
    try:
        produce(bootstrap, topic, 12, start=30)      # 4 records more on each partition: lag 4 each
        m = scrape(http_broker)
    finally:
        consumer.close()
    t = (("topic", topic),)
    assert m[("kafka_server_brokertopicmetrics_messagesin_total", t)] == 42
    sizes = sum(m[("kafka_log_log_size", (("partition", str(p)), ("topic", topic)))] for p in range(PARTITIONS))
    # every produced byte is stored as sent (no compression): bytes in = the log's size
    assert m[("kafka_server_brokertopicmetrics_bytesin_total", t)] == sizes > 0
    assert m[("kafka_server_brokertopicmetrics_bytesout_total", t)] > 0
    for p in range(PARTITIONS):
        pl = (("partition", str(p)), ("topic", topic))
        assert m[("kafka_log_log_logendoffset", pl)] == 14
        assert m[("kafka_log_log_logstartoffset", pl)] == 0
        assert m[("kafka_topic_partition_current_offset", pl)] == 14
        gl = (("consumergroup", group), ("partition", str(p)), ("topic", topic))
        assert m[("kafka_consumergroup_current_offset", gl)] == 10
        assert m[("kafka_consumergroup_lag", gl)] == 4
    assert m[("kafka_consumergroup_lag_sum", (("consumergroup", group), ("topic", topic)))] == 12
    assert m[("kafka_consumergroup_members", (("consumergroup", group),))] == 1
    assert m[("kafka_topic_partitions", t)] == PARTITIONS
    assert m[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
    assert m[("kafka_controller_kafkacontroller_activecontrollercount", ())] == 1
    assert m[("kafka_server_socket_server_metrics_connection_count", (("listener", "PLAINTEXT"),))] >= 1
    produce_requests = sum(v for (name, labels), v in m.items()
                           if name == "kafka_network_requestmetrics_requests_total" and ("request", "Produce") in labels)
    assert produce_requests >= 2          # two producers, each at least one request
    assert m[("kafka_network_requestmetrics_totaltimems_count", (("request", "Produce"),))] == produce_requests
    assert any(name == "kafka_network_requestmetrics_requests_total" and ("request", "JoinGroup") in labels
               for name, labels in m)


def test_no_metrics_without_listener(samsa_broker: SamsaBroker) -> None:
    """Off by default: nothing listens and the log says nothing about HTTP."""
    assert "listener=samsa.http.listener" not in samsa_broker.read_log()


def test_bad_http_listener_is_a_clear_error(tmp_path: Path) -> None:
    broker = SamsaBroker(tmp_path / "data", overrides={"samsa.http.listener": "127.0.0.1:8090"})
    with pytest.raises(RuntimeError, match="exited with 2"):
        broker.start(timeout=10)
    assert "samsa.http.listener: expected http://host:port, got '127.0.0.1:8090'" in broker.read_log()


def test_group_lifecycle_logs(http_broker: SamsaBroker) -> None:
    bootstrap = http_broker.bootstrap_servers
    topic, group = f"obs-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 3)
    consumer = consume_and_commit(bootstrap, topic, group, 3)
    wait_for_log(http_broker, rf"member joined .*group={group}")
    line = wait_for_log(http_broker, rf"rebalance completed .*generation=1 group={group}[^\n]*")
    assert "members=1" in line and re.search(r"duration_ms=\d+", line)
    assert re.search(r"assignment=\{'[^']+': 3\}", line), line         # one member, all 3 partitions
    consumer.close()
    wait_for_log(http_broker, rf"member left [^\n]*group={group}")
    wait_for_log(http_broker, rf"rebalance completed .*generation=2 group={group}[^\n]*state=Empty")
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_groups([group])
    finally:
        admin.close()
    wait_for_log(http_broker, rf"group deleted [^\n]*group={group}")


def test_transaction_logs(debug_http_broker: SamsaBroker) -> None:
    http_broker = debug_http_broker
    bootstrap = http_broker.bootstrap_servers
    topic = f"obs-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    tid = f"tx-{uuid.uuid4().hex[:8]}"
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "transaction.timeout.ms": 2000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, value=b"committed", partition=0)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic, value=b"aborted", partition=0)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, value=b"left open", partition=0)
    p.flush(30)
    wait_for_log(http_broker, rf"\[debug\s*\] transaction begun [^\n]*transactional_id={tid}")
    wait_for_log(http_broker, rf"\[debug\s*\] transaction committed [^\n]*partitions=1 [^\n]*transactional_id={tid}")
    wait_for_log(http_broker, rf"\[info\s*\] transaction aborted [^\n]*transactional_id={tid}")
    wait_for_log(http_broker, rf"\[info\s*\] transaction timed out; aborting [^\n]*transactional_id={tid}", timeout=20)
    assert len(re.findall(rf"transaction aborted [^\n]*transactional_id={tid}", http_broker.read_log())) == 2
    # (the explicit abort and the timed-out one)
    # the console's recent records are what read_committed sees: the aborted ones are not there
    page = httpx.get(f"{http_url(http_broker)}/topics/{topic}", timeout=10).text
    assert "<code>committed</code>" in page
    assert "aborted" not in page and "left open" not in page
    del p


def test_deleted_topic_series_go(http_broker: SamsaBroker) -> None:
    from kafka.admin import KafkaAdminClient

    bootstrap = http_broker.bootstrap_servers
    topic = f"obs-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 6)
    assert scrape(http_broker)[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", topic),))] == 6
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_topics([topic])
    finally:
        admin.close()
    assert not [k for k in scrape(http_broker) if ("topic", topic) in k[1]]


def test_request_lines_at_debug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMSA_LOG_LEVEL", "DEBUG")
    broker = SamsaBroker(tmp_path / "data").start()
    try:
        topic = f"obs-{uuid.uuid4().hex[:8]}"
        create_topic(broker.bootstrap_servers, topic, 1)
        produce(broker.bootstrap_servers, topic, 1)
        line = wait_for_log(broker, r"\[debug\s*\] request [^\n]*api=Produce [^\n]*")
        assert re.search(r"client_id=rdkafka .*correlation_id=\d+ .*ms=[\d.]+ .*version=\d+", line), line
    finally:
        broker.stop()


def test_console_escapes_what_clients_send(http_broker: SamsaBroker) -> None:
    """Group ids and record contents are the clients' bytes: the console shows them as text."""
    bootstrap = http_broker.bootstrap_servers
    topic, group = f"obs-{uuid.uuid4().hex[:8]}", "<img src=x onerror=alert(1)>&"
    create_topic(bootstrap, topic, PARTITIONS)
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, key=b"<script>k</script>", value=b"<b>v</b>", headers=[("h<", b"\"'")], partition=0)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    c.close()
    base = http_url(http_broker)
    overview = httpx.get(base + "/", timeout=10).text
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;" in overview and "<img src=x" not in overview
    group_page = httpx.get(base + "/groups/" + quote(group, safe=""), timeout=10)
    assert group_page.status_code == 200 and "<img src=x" not in group_page.text
    assert f"<td>{topic}</td>" in group_page.text or f">{topic}</a>" in group_page.text
    records = httpx.get(f"{base}/topics/{topic}", timeout=10).text
    assert "&lt;script&gt;k&lt;/script&gt;" in records and "&lt;b&gt;v&lt;/b&gt;" in records
    assert "h&lt;: <code>&quot;&#x27;</code>" in records and "<script>k" not in records
    assert httpx.get(base + "/topics/nope", timeout=10).status_code == 404
    assert httpx.get(base + "/groups/nope", timeout=10).status_code == 404


def test_existing_member_rejoin_logs_rebalance_started_before_completed(http_broker: SamsaBroker) -> None:
    """A lone member's JoinGroup with its member id starts generation 2: the join phase completes
    within that request, and the log still says the rebalance started before it completed."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    from protocol.messages import REQUESTS
    from tests.support.rawclient import RawClient

    JOIN_GROUP, SYNC_GROUP = 11, 14
    bootstrap = http_broker.bootstrap_servers
    topic, group = f"obs-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, PARTITIONS)
    proto = REQUESTS[JOIN_GROUP].JoinGroupRequestProtocol(
        name="range", metadata=ConsumerProtocolSubscription(version=0, topics=[topic], user_data=None).encode())
    SyncAssignment = REQUESTS[SYNC_GROUP].SyncGroupRequestAssignment

    def join(c: RawClient, member_id: str) -> Any:
        return c.request(JOIN_GROUP, 9, group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                         member_id=member_id, group_instance_id=None, protocol_type="consumer", reason=None,
                         protocols=[proto])

    def sync(c: RawClient, generation: int, member_id: str) -> None:
        data = ConsumerProtocolAssignment(version=0, assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=list(range(PARTITIONS)))],
            user_data=None).encode()
        r = c.request(SYNC_GROUP, 5, group_id=group, generation_id=generation, member_id=member_id,
                      group_instance_id=None, protocol_type="consumer", protocol_name="range",
                      assignments=[SyncAssignment(member_id=member_id, assignment=data)])
        assert r.error_code == 0

    with RawClient(bootstrap) as c:
        member = join(c, "").member_id                       # MEMBER_ID_REQUIRED
        assert (join(c, member).generation_id) == 1
        sync(c, 1, member)
        wait_for_log(http_broker, rf"rebalance completed .*generation=1 group={group}")
        assert join(c, member).generation_id == 2            # the same member rejoins
        sync(c, 2, member)
        wait_for_log(http_broker, rf"rebalance completed .*generation=2 group={group}")
    lines = [ln for ln in http_broker.read_log().splitlines() if f"group={group}" in ln and "rebalance" in ln]
    events = [(re.search(r"rebalance (started|completed)", ln).group(1),             # type: ignore[union-attr]
               re.search(r"generation=(\d+)", ln).group(1)) for ln in lines]         # type: ignore[union-attr]
    # "started" names the generation the group leaves, "completed" the one it reaches
    assert events == [("started", "0"), ("completed", "1"), ("started", "1"), ("completed", "2")], lines
    assert "reasons=['member rejoined']" in [ln for ln in lines if "started" in ln][1]
