"""Dynamic broker configs on the 3-broker cluster: ConfigRecords in etcd reach every broker. The
cluster-wide default set through broker 1 is reported by all three (their own BROKER resource and
every topic's DescribeConfigs, DYNAMIC_DEFAULT_BROKER_CONFIG); a per-broker value set for broker 2
(kafka-python's admin sends it to broker 2) is broker 2's alone."""
from __future__ import annotations

import time
import uuid

import pytest
from kafka.admin import ConfigResource, KafkaAdminClient
from kafka.protocol.admin import (DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
                                  IncrementalAlterConfigsResponse)

from broker.testing.local_cluster import find_etcd
from tests.support.cluster_support import FAST_REPLICATION, create_topic
from tests.support.rawclient import RawClient

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

BROKER, TOPIC = 4, 2
SOURCES = {1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
           4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG"}


def describe_at(bootstrap: str, rtype: int, rname: str, key: str) -> tuple[str | None, str]:
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=rtype, resource_name=rname, configuration_keys=[key])],
                                 include_synonyms=True, include_documentation=False)
    with RawClient(bootstrap) as c:
        (r,) = c.call(req, DescribeConfigsResponse, 4).results
    assert r.error_code == 0, r.error_message
    (e,) = r.configs
    return e.value, SOURCES[e.config_source]


@pytest.mark.parametrize("samsa_cluster", [{"overrides": FAST_REPLICATION}], indirect=True)
def test_default_reaches_every_broker_and_a_per_broker_value_only_its_broker(samsa_cluster) -> None:
    c = samsa_cluster
    boots = c.bootstrap_servers.split(",")
    topic = f"dyn-{uuid.uuid4().hex[:8]}"
    create_topic(c, topic, partitions=1, rf=3)

    I = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[I(resource_type=BROKER, resource_name="", configs=[
        I.AlterableConfig(name="log.retention.ms", config_operation=0, value="60000")])], validate_only=False)
    with RawClient(boots[0]) as rc:
        (r,) = rc.call(req, IncrementalAlterConfigsResponse, 1).responses
    assert (r.error_code, r.error_message) == (0, None)

    default = ("60000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    for node, bootstrap in enumerate(boots, start=1):
        c.wait_for(lambda b=bootstrap, n=node: describe_at(b, BROKER, str(n), "log.retention.ms") == default,
                   what=f"the default on broker {node}")
        assert describe_at(bootstrap, TOPIC, topic, "retention.ms") == default

    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        assert admin.alter_configs([ConfigResource("BROKER", "2", {"log.retention.ms": "120000"})]) == {
            "broker": {"2": "OK"}}
    finally:
        admin.close()
    assert describe_at(boots[1], BROKER, "2", "log.retention.ms") == ("120000", "DYNAMIC_BROKER_CONFIG")
    assert describe_at(boots[1], TOPIC, topic, "retention.ms") == ("120000", "DYNAMIC_BROKER_CONFIG")
    time.sleep(1.0)                     # time for a wrong propagation to show on the other brokers
    for node in (1, 3):
        assert describe_at(boots[node - 1], BROKER, str(node), "log.retention.ms") == default
        assert describe_at(boots[node - 1], TOPIC, topic, "retention.ms") == default
