"""Kafka's quick-start settings: ``samsa serve`` without a properties file (./scripts/serve.sh, the
image) starts with ``group.initial.rebalance.delay.ms=0``, as Kafka's shipped server.properties
and its docker image do, so a first consumer in a group gets records at once; a broker started
with a properties file keeps Kafka's code default (3000)."""
from __future__ import annotations

from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, KafkaAdminClient

from broker.common.config import BrokerConfig
from broker.testing import SamsaBroker



def _delay_entry(bootstrap: str) -> tuple[str, str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        res = admin.describe_configs([ConfigResource("BROKER", "1", {"group.initial.rebalance.delay.ms": None})],
                                     config_filter="all")
    finally:
        admin.close()
    entry = res["broker"]["1"]["group.initial.rebalance.delay.ms"]
    return entry["value"], entry["config_source"]


def test_serve_without_properties_file_has_no_initial_rebalance_delay(tmp_path: Path) -> None:
    broker = SamsaBroker(tmp_path / "data", properties=None).start()
    try:
        assert _delay_entry(broker.bootstrap_servers) == ("0", "STATIC_BROKER_CONFIG")
        broker.create_topic("orders", 1)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        for i in range(3):
            producer.send("orders", f"v{i}".encode())
        producer.flush()
        producer.close()
        consumer = KafkaConsumer("orders", bootstrap_servers=broker.bootstrap_servers, group_id="quick",
                                 auto_offset_reset="earliest", consumer_timeout_ms=3000)
        try:
            assert [m.value for m in consumer] == [b"v0", b"v1", b"v2"]
        finally:
            consumer.close()
    finally:
        broker.stop()


def test_properties_file_without_the_key_keeps_kafkas_code_default(tmp_path: Path) -> None:
    broker = SamsaBroker(tmp_path / "data", properties="num.partitions=1\n").start()
    try:
        assert _delay_entry(broker.bootstrap_servers) == ("3000", "DEFAULT_CONFIG")
    finally:
        broker.stop()


def test_quick_start_settings_lie_under_environment_and_overrides(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\n")
    assert BrokerConfig.load(None, environ={}, quick_start=True)["group.initial.rebalance.delay.ms"] == 0
    assert BrokerConfig.load(str(props), environ={})["group.initial.rebalance.delay.ms"] == 3000
    env = {"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "500"}
    assert BrokerConfig.load(None, environ=env, quick_start=True)["group.initial.rebalance.delay.ms"] == 500
    assert BrokerConfig.load(None, environ={}, extra={"group.initial.rebalance.delay.ms": "7"},
                             quick_start=True)["group.initial.rebalance.delay.ms"] == 7
