"""/metrics for share groups (issue 21): after a scripted ShareFetch and ShareAcknowledge over the
wire (raw requests, so every count is known), the share partition's start offset, in-flight and
acquired counts and lag, and the share coordinator's writes, exactly. A real broker process with
``samsa.http.listener``."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.testing import SamsaBroker, free_port, running_broker
from protocol import schema_messages as m
from tests.support.rawclient import RawClient
from tests.support.share_state_support import share_heartbeat

ACCEPT, RELEASE, REJECT = 1, 2, 3
GROUP, TOPIC = "metrics-sg", "metrics-q"


@pytest.fixture
def http_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides={
            "samsa.http.listener": f"http://127.0.0.1:{free_port()}", "group.share.enable": "true",
            "samsa.share.auto.offset.reset": "earliest", "share.coordinator.state.topic.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1"}) as broker:
        yield broker


def scrape(broker: SamsaBroker) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    resp = httpx.get(broker.overrides["samsa.http.listener"] + "/metrics", timeout=10)
    assert resp.status_code == 200
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(resp.text) for s in fam.samples}


PARTITION_GAUGES = ("kafka_server_sharepartitionmetrics_inflightmessagecount", "samsa_share_partition_start_offset",
                    "samsa_share_partition_acquired_records", "samsa_share_partition_lag")


def share_values(broker: SamsaBroker) -> dict[str, float]:
    labels = (("group", GROUP), ("partition", "0"), ("topic", TOPIC))
    samples = scrape(broker)
    out = {n: samples[(n, labels)] for n in PARTITION_GAUGES if (n, labels) in samples}
    out["writes"] = samples[("kafka_server_share_coordinator_metrics_write_total", ())]
    for kind in ("ShareSnapshot", "ShareUpdate"):
        out[kind] = samples[("samsa_share_coordinator_records_written_total", (("type", kind),))]
    return out


def share_fetch(c: RawClient, tid: uuid.UUID, member: str, epoch: int) -> Any:
    Q = m.ShareFetchRequest
    P = Q.FetchTopic.FetchPartition
    return c.call(Q(group_id=GROUP, member_id=member, share_session_epoch=epoch, max_wait_ms=2000, min_bytes=1,
                    max_bytes=1 << 20, max_records=100, batch_size=100,
                    topics=[Q.FetchTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[])])],
                    forgotten_topics_data=[]), m.ShareFetchResponse, 1)


def share_acknowledge(c: RawClient, tid: uuid.UUID, member: str, epoch: int, acks: list[tuple[int, int, int]]) -> Any:
    Q = m.ShareAcknowledgeRequest
    P = Q.AcknowledgeTopic.AcknowledgePartition
    return c.call(Q(group_id=GROUP, member_id=member, share_session_epoch=epoch,
                    topics=[Q.AcknowledgeTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
                        P.AcknowledgementBatch(first_offset=f, last_offset=last, acknowledge_types=[t])
                        for f, last, t in acks])])]), m.ShareAcknowledgeResponse, 1)


def partition_gauges(values: dict[str, float]) -> dict[str, float]:
    """The share partition's gauges among ``share_values``."""
    return {k: values[k] for k in PARTITION_GAUGES}


def test_share_partition_and_share_coordinator_metrics(http_broker: SamsaBroker) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    b = http_broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=b)
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        (described,) = admin.describe_topics([TOPIC])
        tid = uuid.UUID(str(described["topic_id"]))
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=b, linger_ms=100)
    for i in range(10):
        producer.send(TOPIC, value=b"v%d" % i, partition=0)
    producer.flush(timeout=20)
    producer.close(timeout=5)

    before = share_values(http_broker)
    assert "samsa_share_partition_start_offset" not in before      # no share partition loaded yet
    member = uuid.uuid4().hex
    with RawClient(b) as c:
        hb = share_heartbeat(c, GROUP, member, 0, [TOPIC])
        assert hb.error_code == 0, hb
        acquired: list[int] = []
        epoch = 0
        for _ in range(10):          # the assignment may need a heartbeat round first
            resp = share_fetch(c, tid, member, epoch)
            epoch += 1
            acquired = [o for t in resp.responses for p in t.partitions for a in p.acquired_records
                        for o in range(a.first_offset, a.last_offset + 1)]
            if acquired:
                break
            share_heartbeat(c, GROUP, member, hb.member_epoch, [TOPIC])
        assert acquired == list(range(10))
        # acquired, nothing acknowledged: the share partition was initialized (one ShareSnapshot) and
        # acquiring writes nothing
        after_fetch = share_values(http_broker)
        assert partition_gauges(after_fetch) == {
            "kafka_server_sharepartitionmetrics_inflightmessagecount": 10, "samsa_share_partition_start_offset": 0,
            "samsa_share_partition_acquired_records": 10, "samsa_share_partition_lag": 10}
        assert after_fetch["writes"] == before["writes"]
        assert after_fetch["ShareSnapshot"] == before["ShareSnapshot"] + 1

        # accept 0-3, release 4-5, reject 8; 6, 7, 9 stay acquired: one WriteShareGroupState
        ack = share_acknowledge(c, tid, member, epoch, [(0, 3, ACCEPT), (4, 5, RELEASE), (8, 8, REJECT)])
        assert ack.error_code == 0 and all(p.error_code == 0 for t in ack.responses for p in t.partitions), ack
        after_ack = share_values(http_broker)
    # start 4 (0-3 delivery complete); in flight 4-9; acquired 6, 7, 9; lag 10 - 4 - 1 (8 archived)
    assert partition_gauges(after_ack) == {
        "kafka_server_sharepartitionmetrics_inflightmessagecount": 6, "samsa_share_partition_start_offset": 4,
        "samsa_share_partition_acquired_records": 3, "samsa_share_partition_lag": 5}
    assert after_ack["writes"] == after_fetch["writes"] + 1
    assert after_ack["ShareUpdate"] == after_fetch["ShareUpdate"] + 1
    assert after_ack["ShareSnapshot"] == after_fetch["ShareSnapshot"]
