"""Dynamic broker configs (KIP-226) as Kafka has them, through kafka-python's admin, librdkafka's
AdminClient (confluent-kafka) and raw requests: the cluster-wide default (resource "") and this
broker's own (resource "1") are ConfigRecords in the metadata log, applied at once to every topic
without an override, reported by DescribeConfigs with Kafka's sources and synonym order, kept over
a restart; configs Kafka cannot change dynamically are refused with its error and message.
(The 3-broker cluster: tests/cluster/test_cluster_dynamic_configs.py.)"""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource as CKResource
from confluent_kafka.admin import ConfigSource, ResourceType
from kafka import KafkaProducer
from kafka.admin import AlterConfigOp, ConfigResource, KafkaAdminClient, NewTopic
from kafka.errors import MessageSizeTooLargeError
from kafka.protocol.admin import (AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest,
                                  DescribeConfigsResponse, IncrementalAlterConfigsRequest,
                                  IncrementalAlterConfigsResponse)

from broker.testing import SamsaBroker
from tests.support.rawclient import RawClient
from tests.support.wire import list_offset

BROKER = 4
INVALID_REQUEST, INVALID_CONFIG = 42, 40
DYNAMIC_BROKER, DYNAMIC_DEFAULT = "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG"
SET, DELETE, APPEND = 0, 1, 2
WEEK = "604800000"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    b = SamsaBroker(tmp_path / "data", overrides={"log.retention.check.interval.ms": "100"}).start()
    try:
        yield b
    finally:
        b.stop()


def name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def kp_admin(b: SamsaBroker) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=b.bootstrap_servers)


def described(b: SamsaBroker, rtype: str, rname: str, key: str) -> tuple[str | None, str, list[tuple[str, str, str]]]:
    """(value, source, synonyms) of one config as kafka-python's admin describes it."""
    admin = kp_admin(b)
    try:
        res = admin.describe_configs([ConfigResource(rtype, rname, {key: None})], include_synonyms=True,
                                     config_filter="all")
    finally:
        admin.close()
    entry = res[rtype.lower()][rname][key]
    return entry["value"], entry["config_source"], [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


def default_resource(b: SamsaBroker) -> dict[str, tuple[str, str, list[tuple[str, str, str]]]]:
    """The cluster-wide default resource (""), with synonyms: name -> (value, source, synonyms).
    Raw DescribeConfigs: kafka-python's admin and confluent-kafka refuse a broker resource
    without a number (Kafka's Java Admin has ConfigResource(BROKER, ""); see the Java test)."""
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=BROKER, resource_name="", configuration_keys=None)],
                                 include_synonyms=True, include_documentation=False)
    with RawClient(b.bootstrap_servers) as c:
        (r,) = c.call(req, DescribeConfigsResponse, 4).results
    assert r.error_code == 0
    src = {2: DYNAMIC_BROKER, 3: DYNAMIC_DEFAULT, 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG"}
    return {e.name: (e.value, src[e.config_source], [(s.name, s.value, src[s.source]) for s in e.synonyms])
            for e in r.configs}


def set_default(b: SamsaBroker, ops: dict[str, str | None]) -> None:
    """IncrementalAlterConfigs on the cluster-wide default (kafka-configs --entity-default); None deletes."""
    assert raw_incremental(b, "", [(k, SET if v is not None else DELETE, v) for k, v in ops.items()]) == (0, None)


def set_broker_librdkafka(b: SamsaBroker, ops: dict[str, str | None]) -> None:
    """IncrementalAlterConfigs on broker 1 as librdkafka sends it (to that broker)."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET if v is not None else
                           AlterConfigOpType.DELETE) for k, v in ops.items()]
    res = CKResource(ResourceType.BROKER, "1", incremental_configs=entries)
    admin.incremental_alter_configs([res])[res].result(15)


def described_librdkafka(b: SamsaBroker, topic: str, key: str) -> tuple[str, str]:
    admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
    res = CKResource(ResourceType.TOPIC, topic)
    e = admin.describe_configs([res])[res].result(15)[key]
    return e.value, ConfigSource(e.source).name


def set_broker(b: SamsaBroker, ops: dict[str, Any]) -> dict:
    admin = kp_admin(b)
    try:
        return admin.alter_configs([ConfigResource("BROKER", "1", ops)])
    finally:
        admin.close()


def raw_incremental(b: SamsaBroker, rname: str, ops: list[tuple[str, int, str | None]],
                    validate_only: bool = False) -> tuple[int, str | None]:
    I = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[I(resource_type=BROKER, resource_name=rname, configs=[
        I.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])], validate_only=validate_only)
    with RawClient(b.bootstrap_servers) as c:
        (r,) = c.call(req, IncrementalAlterConfigsResponse, 1).responses
    return r.error_code, r.error_message


def raw_alter(b: SamsaBroker, rname: str, configs: dict[str, str | None], validate_only: bool = False) -> tuple[int, str | None]:
    R = AlterConfigsRequest.AlterConfigsResource
    req = AlterConfigsRequest(resources=[R(resource_type=BROKER, resource_name=rname, configs=[
        R.AlterableConfig(name=k, value=v) for k, v in configs.items()])], validate_only=validate_only)
    with RawClient(b.bootstrap_servers) as c:
        (r,) = c.call(req, AlterConfigsResponse, 2).responses
    return r.error_code, r.error_message


def earliest(b: SamsaBroker, topic: str) -> int:
    with RawClient(b.bootstrap_servers) as c:
        return list_offset(c, topic, -2).offset


def produce_at(b: SamsaBroker, topic: str, values: list[bytes], timestamp_ms: int) -> None:
    p = KafkaProducer(bootstrap_servers=b.bootstrap_servers, acks="all", linger_ms=0, batch_size=512)
    try:
        for v in values:
            p.send(topic, v, partition=0, timestamp_ms=timestamp_ms)
        p.flush(30)
    finally:
        p.close()


def test_cluster_default_reaches_every_topic_per_broker_wins_delete_restores_restart_keeps(broker: SamsaBroker) -> None:
    rolled, plain, own = name("rolled"), name("plain"), name("own")
    admin = kp_admin(broker)
    try:
        admin.create_topics([NewTopic(rolled, 1, 1, topic_configs={"segment.bytes": "2048"}),
                             NewTopic(plain, 1, 1), NewTopic(own, 1, 1, topic_configs={"retention.ms": "3600000"})])
    finally:
        admin.close()
    now = int(time.time() * 1000)
    produce_at(broker, rolled, [b"old-%d" % i + b"." * 100 for i in range(60)], now - 120_000)   # 2 minutes old
    produce_at(broker, rolled, [b"new-%d" % i for i in range(5)], now)
    time.sleep(0.5)
    assert earliest(broker, rolled) == 0           # a week's retention keeps everything

    set_default(broker, {"log.retention.ms": "60000"})
    # every topic without an override reports it, with Kafka's synonym order
    for topic in (rolled, plain):
        assert described(broker, "TOPIC", topic, "retention.ms") == ("60000", DYNAMIC_DEFAULT, [
            ("log.retention.ms", "60000", DYNAMIC_DEFAULT), ("log.retention.hours", "168", "DEFAULT_CONFIG")])
    assert described(broker, "TOPIC", own, "retention.ms") == ("3600000", "DYNAMIC_TOPIC_CONFIG", [
        ("retention.ms", "3600000", "DYNAMIC_TOPIC_CONFIG"), ("log.retention.ms", "60000", DYNAMIC_DEFAULT),
        ("log.retention.hours", "168", "DEFAULT_CONFIG")])
    assert described_librdkafka(broker, plain, "retention.ms") == ("60000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    assert default_resource(broker) == {"log.retention.ms": ("60000", DYNAMIC_DEFAULT, [
        ("log.retention.ms", "60000", DYNAMIC_DEFAULT)])}
    # ... and retention acts on it: the 2-minute-old segments go
    deadline = time.monotonic() + 15
    while earliest(broker, rolled) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert 0 < earliest(broker, rolled) <= 60

    # this broker's own value wins over the cluster default
    set_broker_librdkafka(broker, {"log.retention.ms": "120000"})
    chain = [("log.retention.ms", "120000", DYNAMIC_BROKER), ("log.retention.ms", "60000", DYNAMIC_DEFAULT),
             ("log.retention.hours", "168", "DEFAULT_CONFIG")]
    assert described(broker, "TOPIC", plain, "retention.ms") == ("120000", DYNAMIC_BROKER, chain)
    assert described(broker, "BROKER", "1", "log.retention.ms") == ("120000", DYNAMIC_BROKER, chain)

    broker.restart()                                # ConfigRecords in the metadata log
    assert described(broker, "TOPIC", plain, "retention.ms") == ("120000", DYNAMIC_BROKER, chain)
    assert default_resource(broker)["log.retention.ms"][:2] == ("60000", DYNAMIC_DEFAULT)

    # deleting restores: first the default again, then Kafka's own default
    assert set_broker(broker, {"log.retention.ms": (AlterConfigOp.DELETE, None)}) == {"broker": {"1": "OK"}}
    assert described(broker, "TOPIC", plain, "retention.ms")[:2] == ("60000", DYNAMIC_DEFAULT)
    set_default(broker, {"log.retention.ms": None})
    # Kafka's quirk: with log.retention.ms unset anywhere the topic config has no synonyms
    assert described(broker, "TOPIC", plain, "retention.ms") == (WEEK, "DEFAULT_CONFIG", [])
    assert default_resource(broker) == {}


def test_message_max_bytes_default_applies_to_the_next_produce(broker: SamsaBroker) -> None:
    topic = broker.create_topic(name("big"), 1)
    set_default(broker, {"message.max.bytes": "1000"})
    assert described(broker, "TOPIC", topic, "max.message.bytes")[:2] == ("1000", DYNAMIC_DEFAULT)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", retries=0)
    try:
        with pytest.raises(MessageSizeTooLargeError):
            p.send(topic, b"x" * 3000).get(10)
        assert p.send(topic, b"small").get(10).offset == 0
        set_default(broker, {"message.max.bytes": None})
        assert p.send(topic, b"x" * 3000).get(10).offset == 1
    finally:
        p.close()


def test_segment_bytes_default_rolls_segments_of_topics_without_an_override(broker: SamsaBroker) -> None:
    topic = broker.create_topic(name("seg"), 1)
    raw_incremental(broker, "1", [("log.segment.bytes", SET, "2048")])
    produce_at(broker, topic, [b"v%d" % i + b"." * 200 for i in range(40)], int(time.time() * 1000))
    partition_dir = broker.data_dir / f"{topic}-0"
    assert len(list(partition_dir.glob("*.log"))) > 1


def test_refusals_and_messages_as_kafka(broker: SamsaBroker) -> None:
    # configs Kafka cannot change dynamically, either API
    assert raw_incremental(broker, "1", [("num.partitions", SET, "3")]) == (
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(num.partitions)")
    assert raw_alter(broker, "", {"log.retention.hours": "1", "log.dirs": "/tmp/x"}) == (
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.retention.hours, log.dirs)")
    assert raw_incremental(broker, "1", [("ssl.keystore.location", SET, "/k.jks")]) == (
        INVALID_REQUEST, "These security configs can be dynamically updated only per-listener using the "
                         "listener prefix: Set(ssl.keystore.location)")
    assert raw_incremental(broker, "", [("listeners", SET, "PLAINTEXT://:9093")]) == (
        INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id must be specified: "
                         "Set(listeners)")
    assert raw_incremental(broker, "7", [("log.retention.ms", SET, "1")]) == (
        INVALID_REQUEST, "Unexpected broker id, expected 1, but received 7")
    assert raw_incremental(broker, "x", [("log.retention.ms", SET, "1")]) == (
        INVALID_REQUEST, "Node id must be an integer, but it is: x")
    assert raw_incremental(broker, "", [("log.retention.ms", SET, "soon")]) == (
        INVALID_REQUEST, "Invalid value soon for configuration log.retention.ms: Not a number of type LONG")
    assert raw_incremental(broker, "", [("log.retention.ms", APPEND, "5")]) == (
        INVALID_CONFIG, "Config value append is not allowed for config key: log.retention.ms")
    assert raw_alter(broker, "1", {"log.retention.ms": None}) == (
        INVALID_REQUEST, "Null value not supported for : log.retention.ms")
    # validate_only stores nothing
    assert raw_incremental(broker, "", [("log.retention.ms", SET, "60000")], validate_only=True) == (0, None)
    assert raw_alter(broker, "1", {"log.segment.bytes": "4096"}, validate_only=True) == (0, None)
    assert default_resource(broker) == {}
    assert described(broker, "BROKER", "1", "log.segment.bytes")[:2] == ("1073741824", "DEFAULT_CONFIG")
    assert not (broker.data_dir / "__samsa_metadata.log").exists() or \
        b"ConfigRecord" not in (broker.data_dir / "__samsa_metadata.log").read_bytes()


def test_dynamic_configs_without_meaning_in_samsa_are_accepted_and_reported(broker: SamsaBroker) -> None:
    """Thread counts are Kafka's dynamic configs: stored and described, and they change nothing here."""
    assert raw_incremental(broker, "1", [("num.io.threads", SET, "16")]) == (0, None)
    assert raw_incremental(broker, "", [("log.cleaner.threads", SET, "2")]) == (0, None)
    assert described(broker, "BROKER", "1", "num.io.threads") == ("16", DYNAMIC_BROKER, [
        ("num.io.threads", "16", DYNAMIC_BROKER), ("num.io.threads", "8", "DEFAULT_CONFIG")])
    assert default_resource(broker) == {"log.cleaner.threads": ("2", DYNAMIC_DEFAULT, [
        ("log.cleaner.threads", "2", DYNAMIC_DEFAULT)])}
    assert raw_incremental(broker, "1", [("num.io.threads", SET, "0")]) == (
        INVALID_REQUEST, "Dynamic thread count update validation failed for num.io.threads=0, value should be at least 1")
    # legacy AlterConfigs replaces the resource's whole set
    assert raw_alter(broker, "1", {"log.retention.bytes": "1000000"}) == (0, None)
    assert described(broker, "BROKER", "1", "log.retention.bytes")[:2] == ("1000000", DYNAMIC_BROKER)
    assert described(broker, "BROKER", "1", "num.io.threads") == ("8", "DEFAULT_CONFIG", [
        ("num.io.threads", "8", "DEFAULT_CONFIG")])
