"""The admin APIs web consoles call (kafbat UI, Redpanda Console, AKHQ): DescribeLogDirs with real
sizes, DescribeClientQuotas and ListPartitionReassignments (empty answers), DescribeConfigs with
``inter.broker.protocol.version``; through kafka-python's admin and the Java Admin client."""
from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.protocol.admin import DescribeClientQuotasRequest

from broker.testing import SamsaBroker
from protocol.errors import ErrorCode
from tests.support.javaclient import VERSIONS, compile, of_type, requires_java, run_java
from tests.support.rawclient import RawClient

DESCRIBE_CLIENT_QUOTAS = 48


def _fill(broker: SamsaBroker, partitions: int = 2, records: int = 20) -> str:
    topic = f"dirs-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        from kafka.admin import NewTopic
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0)
    for i in range(records):
        p.send(topic, value=b"x" * 100, partition=i % partitions).get(10)  # one batch per record
    p.close()
    return topic


def _disk_sizes(broker: SamsaBroker, topic: str, partitions: int) -> dict[int, int]:
    """What is on disk: the bytes of each partition's .log segment files."""
    out = {}
    for p in range(partitions):
        d = broker.data_dir / f"{topic}-{p}"
        out[p] = sum(f.stat().st_size for f in d.iterdir() if f.name.endswith(".log"))
    return out


def test_kafka_python_describe_log_dirs_real_sizes(samsa_broker: SamsaBroker) -> None:
    topic = _fill(samsa_broker)
    disk = _disk_sizes(samsa_broker, topic, 2)
    assert all(v > 0 for v in disk.values())
    admin = KafkaAdminClient(bootstrap_servers=samsa_broker.bootstrap_servers)
    try:
        everything = admin.describe_log_dirs()
        only = admin.describe_log_dirs({topic: [1, 7]})   # partition 7 does not exist: left out
    finally:
        admin.close()
    (node,) = everything
    (result,) = node["log_dirs"]
    assert result["error_code"] == 0
    assert result["log_dir"] == os.path.abspath(samsa_broker.data_dir)
    st = os.statvfs(samsa_broker.data_dir)
    assert result["total_bytes"] == st.f_blocks * st.f_frsize
    assert 0 < result["usable_bytes"] <= result["total_bytes"]
    by_topic = {t["name"]: t["partitions"] for t in result["topics"]}
    assert {p["partition_index"]: p["partition_size"] for p in by_topic[topic]} == disk
    assert all(p["offset_lag"] == 0 and p["is_future_key"] is False for p in by_topic[topic])
    (only_result,) = only[0]["log_dirs"]
    assert [(t["name"], [(p["partition_index"], p["partition_size"]) for p in t["partitions"]])
            for t in only_result["topics"]] == [(topic, [(1, disk[1])])]


def test_kafka_python_list_partition_reassignments_empty(samsa_broker: SamsaBroker) -> None:
    topic = _fill(samsa_broker, records=2)
    admin = KafkaAdminClient(bootstrap_servers=samsa_broker.bootstrap_servers)
    try:
        assert admin.list_partition_reassignments() == {}
        assert admin.list_partition_reassignments([TopicPartition(topic, 0), TopicPartition("nope", 0)]) == {}
    finally:
        admin.close()


def test_kafka_python_broker_config_inter_broker_protocol_version(samsa_broker: SamsaBroker) -> None:
    admin = KafkaAdminClient(bootstrap_servers=samsa_broker.bootstrap_servers)
    try:
        resp = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1",
                                                      configs=["inter.broker.protocol.version"])],
                                      config_filter="all")
    finally:
        admin.close()
    (entry,) = resp["broker"]["1"].values() if "inter.broker.protocol.version" not in resp["broker"]["1"] \
        else [resp["broker"]["1"]["inter.broker.protocol.version"]]
    value = entry["value"] if isinstance(entry, dict) else entry
    assert value == "3.9-IV0"


@pytest.mark.parametrize("version", [0, 1])
def test_describe_client_quotas_empty_and_validated(samsa_broker: SamsaBroker, version: int) -> None:
    C = DescribeClientQuotasRequest.ComponentData
    with RawClient(samsa_broker.bootstrap_servers) as c:
        ok = c.request(DESCRIBE_CLIENT_QUOTAS, version, components=[], strict=False)
        assert (ok.error_code, ok.error_message, ok.entries) == (0, None, [])
        user = c.request(DESCRIBE_CLIENT_QUOTAS, version, strict=True,
                         components=[C(entity_type="user", match_type=0, match="alice")])
        assert (user.error_code, user.entries) == (0, [])
        custom = c.request(DESCRIBE_CLIENT_QUOTAS, version, strict=False,
                           components=[C(entity_type="team", match_type=2, match=None)])
        assert custom.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert custom.error_message == "Custom entity type team not supported"
        dup = c.request(DESCRIBE_CLIENT_QUOTAS, version, strict=False,
                        components=[C(entity_type="user", match_type=2, match=None),
                                    C(entity_type="user", match_type=1, match=None)])
        assert dup.error_code == ErrorCode.INVALID_REQUEST
        mixed = c.request(DESCRIBE_CLIENT_QUOTAS, version, strict=False,
                          components=[C(entity_type="ip", match_type=2, match=None),
                                      C(entity_type="user", match_type=2, match=None)])
        assert mixed.error_code == ErrorCode.INVALID_REQUEST


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"kafka-clients-{v}" for v in VERSIONS])
def jv(request: pytest.FixtureRequest) -> str:
    compile(request.param)
    return request.param


@requires_java
def test_java_admin_console_apis(jv: str, samsa_broker: SamsaBroker) -> None:
    topic = _fill(samsa_broker)
    disk = _disk_sizes(samsa_broker, topic, 2)
    lines = run_java(jv, samsa_broker.bootstrap_servers, "admin-console-apis", "--broker", "1")
    (log_dir,) = of_type(lines, "log_dir")
    assert log_dir["path"] == os.path.abspath(samsa_broker.data_dir) and log_dir["error"] is None
    assert log_dir["total_bytes"] > 0 and 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    assert {k: v for k, v in log_dir["replicas"].items() if k.startswith(topic)} == {
        f"{topic}-{p}": [disk[p], 0, False] for p in range(2)}
    assert of_type(lines, "client_quotas") == [{"type": "client_quotas", "count": 0}]
    assert of_type(lines, "reassignments") == [{"type": "reassignments", "count": 0}]
    configs = of_type(run_java(jv, samsa_broker.bootstrap_servers, "admin-describe-configs", "--broker", "1"),
                      "config")
    ibp = [c for c in configs if c["name"] == "inter.broker.protocol.version"]
    assert [(c["value"], c["source"], c["read_only"]) for c in ibp] == [("3.9-IV0", "DEFAULT_CONFIG", True)]
