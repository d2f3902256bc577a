"""Dynamic group configs with real clients (KIP-848): ``kafka-configs --entity-type groups`` sets
``consumer.heartbeat.interval.ms`` on a group, and the Java 4.3 consumer (``group.protocol=consumer``)
heartbeats at that pace, then at the new one after a change. The heartbeats are counted at the
broker (/metrics, ``kafka_network_requestmetrics_requests{request="ConsumerGroupHeartbeat"}``);
the broker's own interval is 500 ms, so the group's 3000 ms shows as a sixth of the requests."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.testing import SamsaBroker, free_port, running_broker
from tests.support.consumer_groups_support import BROKER_PROPS, JAVA, cg_view, group_args, java_ready
from tests.support.kafka_tools import tool


@pytest.fixture
def http_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides={
            **BROKER_PROPS, "samsa.http.listener": f"http://127.0.0.1:{free_port()}"}) as broker:
        yield broker


def heartbeats(broker: SamsaBroker) -> float:
    """ConsumerGroupHeartbeat requests the broker has answered (all versions)."""
    resp = httpx.get(broker.overrides["samsa.http.listener"] + "/metrics", timeout=10)
    assert resp.status_code == 200
    return sum(s.value for fam in text_string_to_metric_families(resp.text) for s in fam.samples
               if s.name == "kafka_network_requestmetrics_requests_total"
               and s.labels.get("request") == "ConsumerGroupHeartbeat")


def set_group_config(bootstrap: str, group: str, config: str) -> None:
    r = tool("kafka-configs", "--bootstrap-server", bootstrap, "--entity-type", "groups", "--entity-name", group,
             "--alter", "--add-config", config)
    assert r.returncode == 0 and f"Completed updating config for group {group}." in r.stdout, r


@pytest.mark.slow
@pytest.mark.java
def test_java_consumer_heartbeats_at_the_groups_interval(http_broker: SamsaBroker) -> None:
    from tests.support.javaclient import start_java
    java_ready()
    bs = http_broker.bootstrap_servers
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    assert tool("kafka-topics", "--bootstrap-server", bs, "--create", "--topic", topic,
                "--partitions", "2").returncode == 0
    set_group_config(bs, group, "consumer.heartbeat.interval.ms=3000")
    described = tool("kafka-configs", "--bootstrap-server", bs, "--entity-type", "groups", "--entity-name", group,
                     "--describe")
    assert "consumer.heartbeat.interval.ms=3000" in described.stdout, described
    proc = start_java(JAVA, bs, *group_args(topic, group, "--quiet", "--timeout-ms", 40000))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            code, state, _, members = cg_view(bs, group)
            if code == 0 and state == "Stable" and len(members) == 1:
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the Java member did not join: {cg_view(bs, group)}")
        time.sleep(1.0)                     # the join's own quick heartbeats (assignment acknowledged)
        before = heartbeats(http_broker)
        time.sleep(9.0)
        slow = heartbeats(http_broker) - before
        assert 2 <= slow <= 5, slow         # every 3 s (the broker's 500 ms would be ~18)

        set_group_config(bs, group, "consumer.heartbeat.interval.ms=300")
        time.sleep(4.0)                     # the next heartbeat (≤ 3 s) brings the new interval
        before = heartbeats(http_broker)
        time.sleep(5.0)
        fast = heartbeats(http_broker) - before
        assert fast >= 10, fast             # every 300 ms: ~16
    finally:
        proc.kill()
