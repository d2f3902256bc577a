"""Dynamic group configs for consumer groups on the wire (KIP-848, Kafka 4.x's GroupConfig): raw
IncrementalAlterConfigs / AlterConfigs / DescribeConfigs / DeleteGroups / ConsumerGroupHeartbeat
against a real broker process. ``consumer.heartbeat.interval.ms`` is what the group's next heartbeat
answers; ``consumer.session.timeout.ms`` is the time a silent member keeps its place; values outside
the broker's bounds answer INVALID_CONFIG with Kafka's messages; legacy AlterConfigs takes GROUP
resources as Kafka's controller does; DeleteGroups leaves the group's configs (as Kafka)."""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.protocol.admin import (AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest,
                                  DescribeConfigsResponse, IncrementalAlterConfigsRequest,
                                  IncrementalAlterConfigsResponse)

from broker.testing import SamsaBroker, running_broker
from protocol.messages import REQUESTS
from tests.support.rawclient import RawClient

GROUP = 32
HB, METADATA, DELETE_GROUPS, CG_DESCRIBE = 68, 3, 42, 69
SET, DELETE = 0, 1
NONE, INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_MEMBER_ID = 0, 40, 42, 25
DYNAMIC_GROUP_CONFIG = 8            # DescribeConfigs' config source
PROPS = {"num.partitions": "2",
         "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "20000",
         "group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("group-configs") / "data", overrides=PROPS) as b:
        yield b


@pytest.fixture
def client(broker: SamsaBroker) -> Iterator[RawClient]:
    with RawClient(broker.bootstrap_servers) as c:
        yield c


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def incremental(c: RawClient, group: str, ops: dict[str, str | None], validate_only: bool = False) -> tuple[int, str | None]:
    """IncrementalAlterConfigs on a GROUP resource; a None value deletes."""
    I = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[I(resource_type=GROUP, resource_name=group, configs=[
        I.AlterableConfig(name=k, config_operation=SET if v is not None else DELETE, value=v)
        for k, v in ops.items()])], validate_only=validate_only)
    (r,) = c.call(req, IncrementalAlterConfigsResponse, 1).responses
    return r.error_code, r.error_message


def legacy(c: RawClient, group: str, configs: dict[str, str | None], validate_only: bool = False) -> tuple[int, str | None]:
    """AlterConfigs (API 33): the configs replace all of the group's."""
    R = AlterConfigsRequest.AlterConfigsResource
    req = AlterConfigsRequest(resources=[R(resource_type=GROUP, resource_name=group, configs=[
        R.AlterableConfig(name=k, value=v) for k, v in configs.items()])], validate_only=validate_only)
    (r,) = c.call(req, AlterConfigsResponse, 2).responses
    return r.error_code, r.error_message


def dynamic(c: RawClient, group: str) -> dict[str, str]:
    """The group's dynamic configs as DescribeConfigs lists them (source DYNAMIC_GROUP_CONFIG)."""
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=GROUP, resource_name=group, configuration_keys=None)],
                                 include_synonyms=False, include_documentation=False)
    (r,) = c.call(req, DescribeConfigsResponse, 4).results
    assert r.error_code == NONE
    return {e.name: e.value for e in r.configs if e.config_source == DYNAMIC_GROUP_CONFIG}


def described(c: RawClient, group: str) -> dict[str, str]:
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=GROUP, resource_name=group, configuration_keys=None)],
                                 include_synonyms=False, include_documentation=False)
    (r,) = c.call(req, DescribeConfigsResponse, 4).results
    return {e.name: e.value for e in r.configs}


def create_topic(c: RawClient, topic: str) -> None:
    md = c.request(METADATA, 12, topics=[REQUESTS[METADATA].MetadataRequestTopic(name=topic, topic_id=None)],
                   allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    assert md.topics[0].error_code == NONE


def hb(c: RawClient, group: str, member: str, epoch: int, topic: str | None = None) -> Any:
    kw: dict[str, Any] = {"rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "topic_partitions": []} \
        if epoch == 0 else {}
    return c.request(HB, 1, group_id=group, member_id=member, member_epoch=epoch, **kw)


def members(c: RawClient, group: str) -> set[str]:
    g = c.request(CG_DESCRIBE, 0, group_ids=[group], include_authorized_operations=False).groups[0]
    return {m.member_id for m in g.members}


def test_heartbeat_interval_is_the_groups_from_the_next_heartbeat(client: RawClient) -> None:
    topic, group = unique("t"), unique("g")
    create_topic(client, topic)
    joined = hb(client, group, "m1", 0, topic)
    assert (joined.error_code, joined.heartbeat_interval_ms) == (NONE, 500)          # the broker's
    assert incremental(client, group, {"consumer.heartbeat.interval.ms": "1500"}) == (NONE, None)
    again = hb(client, group, "m1", joined.member_epoch)
    assert (again.error_code, again.heartbeat_interval_ms) == (NONE, 1500)
    other = hb(client, unique("g"), "x", 0, topic)
    assert other.heartbeat_interval_ms == 500                                         # only that group
    assert incremental(client, group, {"consumer.heartbeat.interval.ms": None}) == (NONE, None)
    assert hb(client, group, "m1", joined.member_epoch).heartbeat_interval_ms == 500


def test_session_timeout_override_expires_a_silent_member_in_that_time(client: RawClient) -> None:
    topic, group, control = unique("t"), unique("g"), unique("g")
    create_topic(client, topic)
    assert incremental(client, group, {"consumer.session.timeout.ms": "1500",
                                       "consumer.heartbeat.interval.ms": "200"}) == (NONE, None)
    hb(client, control, "b", 0, topic)                       # the broker's 20 s
    a = hb(client, group, "a", 0, topic)
    t0 = time.monotonic()
    assert a.error_code == NONE and members(client, group) == {"a"}
    while members(client, group) and time.monotonic() < t0 + 10:
        time.sleep(0.05)
    silent = time.monotonic() - t0
    assert members(client, group) == set() and 1.4 <= silent < 10, silent   # fenced after 1.5 s of silence
    assert members(client, control) == {"b"}
    assert hb(client, group, "a", a.member_epoch).error_code == UNKNOWN_MEMBER_ID


def test_out_of_range_values_answer_invalid_config_with_kafkas_messages(client: RawClient) -> None:
    group = unique("g")
    assert incremental(client, group, {"consumer.heartbeat.interval.ms": "50"}) == (
        INVALID_CONFIG,
        "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms")
    assert incremental(client, group, {"consumer.heartbeat.interval.ms": "15001"}) == (
        INVALID_CONFIG,
        "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms")
    assert incremental(client, group, {"consumer.session.timeout.ms": "999"}) == (
        INVALID_CONFIG,
        "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms")
    assert incremental(client, group, {"consumer.session.timeout.ms": "60001"}) == (
        INVALID_CONFIG,
        "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms")
    assert incremental(client, group, {"consumer.session.timeout.ms": "0"}) == (
        INVALID_CONFIG, "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1")
    assert incremental(client, group, {"consumer.session.timeout.ms": "2000",
                                       "consumer.heartbeat.interval.ms": "2000"}) == (
        INVALID_CONFIG, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
    assert incremental(client, group, {"consumer.session.timeout.ms": "2000"}, validate_only=True) == (NONE, None)
    assert dynamic(client, group) == {}                                               # nothing stored
    assert incremental(client, "", {"consumer.session.timeout.ms": "2000"}) == (
        INVALID_REQUEST, "Default group resources are not allowed.")


def test_legacy_alter_configs_replaces_a_groups_configs(client: RawClient) -> None:
    group = unique("g")
    assert incremental(client, group, {"consumer.heartbeat.interval.ms": "1000",
                                       "share.record.lock.duration.ms": "20000"}) == (NONE, None)
    assert legacy(client, group, {"consumer.session.timeout.ms": "5000"}) == (NONE, None)
    assert dynamic(client, group) == {"consumer.session.timeout.ms": "5000"}          # the rest deleted
    assert legacy(client, group, {"consumer.session.timeout.ms": "70000"}) == (
        INVALID_CONFIG,
        "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms")
    assert legacy(client, group, {"no.such.config": "1"}) == (INVALID_CONFIG, "Unknown group config name: no.such.config")
    assert legacy(client, group, {"consumer.session.timeout.ms": None}) == (
        INVALID_REQUEST, "Null value not supported for : consumer.session.timeout.ms")
    assert legacy(client, group, {"consumer.session.timeout.ms": "9000"}, validate_only=True) == (NONE, None)
    assert dynamic(client, group) == {"consumer.session.timeout.ms": "5000"}
    assert legacy(client, group, {}) == (NONE, None)
    assert dynamic(client, group) == {}
    assert legacy(client, "", {"consumer.session.timeout.ms": "5000"}) == (
        INVALID_REQUEST, "Default group resources are not allowed.")


def test_delete_groups_leaves_the_groups_configs_as_kafka(client: RawClient) -> None:
    """Kafka keeps group configs in the controller's metadata, apart from the group: DeleteGroups
    (kafka-consumer-groups --delete) removes the group and its offsets, not its configs."""
    topic, group = unique("t"), unique("g")
    create_topic(client, topic)
    assert incremental(client, group, {"consumer.heartbeat.interval.ms": "1500"}) == (NONE, None)
    a = hb(client, group, "a", 0, topic)
    assert a.heartbeat_interval_ms == 1500
    assert c_leave(client, group, "a") == NONE
    r = client.request(DELETE_GROUPS, 2, groups_names=[group])
    assert [(x.group_id, x.error_code) for x in r.results] == [(group, NONE)]
    assert dynamic(client, group) == {"consumer.heartbeat.interval.ms": "1500"}
    assert described(client, group)["consumer.session.timeout.ms"] == "20000"
    assert hb(client, group, "b", 0, topic).heartbeat_interval_ms == 1500             # a new group of that id


def c_leave(c: RawClient, group: str, member: str) -> int:
    return c.request(HB, 1, group_id=group, member_id=member, member_epoch=-1).error_code
