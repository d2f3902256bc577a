"""Dynamic broker configs through Kafka's own Java Admin (kafka-clients 4.3.0 and 3.9.0), the
client kafka-configs.sh is built on: ConfigResource(BROKER, "") is the cluster-wide default
(--entity-default), ConfigResource(BROKER, "1") this broker; DescribeConfigs with synonyms shows
Kafka's sources and order; a static config is refused with Kafka's exception and message."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker
from tests.support.javaclient import VERSIONS, of_type, requires_java, run_java

pytestmark = requires_java


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    b = SamsaBroker(Path(tmp_path_factory.mktemp("dyn-java")) / "data").start()
    try:
        yield b
    finally:
        b.stop()


def config(lines: list[dict], name: str) -> tuple[str, str, list[list[str]]]:
    (e,) = [ln for ln in of_type(lines, "config") if ln["name"] == name]
    return e["value"], e["source"], e["synonyms"]


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_java_admin_sets_describes_and_deletes_broker_configs(broker: SamsaBroker, version: str) -> None:
    bs = broker.bootstrap_servers
    topic = broker.create_topic(f"dyn-{uuid.uuid4().hex[:8]}", 1)
    run_java(version, bs, "admin-alter-configs", "--broker=", "--set", "log.retention.ms=60000")
    lines = run_java(version, bs, "admin-describe-configs", "--topic", topic, "--synonyms", "--name", "retention.ms")
    assert config(lines, "retention.ms") == ("60000", "DYNAMIC_DEFAULT_BROKER_CONFIG", [
        ["log.retention.ms", "60000", "DYNAMIC_DEFAULT_BROKER_CONFIG"], ["log.retention.hours", "168", "DEFAULT_CONFIG"]])
    lines = run_java(version, bs, "admin-describe-configs", "--broker=", "--synonyms")
    assert [(ln["name"], ln["value"], ln["source"], ln["read_only"]) for ln in of_type(lines, "config")] == [
        ("log.retention.ms", "60000", "DYNAMIC_DEFAULT_BROKER_CONFIG", False)]

    run_java(version, bs, "admin-alter-configs", "--broker", "1", "--set", "log.retention.ms=120000")
    lines = run_java(version, bs, "admin-describe-configs", "--broker", "1", "--synonyms", "--name", "log.retention.ms")
    assert config(lines, "log.retention.ms") == ("120000", "DYNAMIC_BROKER_CONFIG", [
        ["log.retention.ms", "120000", "DYNAMIC_BROKER_CONFIG"], ["log.retention.ms", "60000", "DYNAMIC_DEFAULT_BROKER_CONFIG"],
        ["log.retention.hours", "168", "DEFAULT_CONFIG"]])

    (err,) = of_type(run_java(version, bs, "admin-alter-configs", "--broker", "1", "--set", "num.partitions=3",
                              allow_errors=True), "error")
    assert (err["error"], err["message"]) == (
        "InvalidRequestException", "Cannot update these configs dynamically: Set(num.partitions)")

    run_java(version, bs, "admin-alter-configs", "--broker", "1", "--delete", "log.retention.ms")
    run_java(version, bs, "admin-alter-configs", "--broker=", "--delete", "log.retention.ms")
    lines = run_java(version, bs, "admin-describe-configs", "--topic", topic, "--synonyms", "--name", "retention.ms")
    assert config(lines, "retention.ms") == ("604800000", "DEFAULT_CONFIG", [])
