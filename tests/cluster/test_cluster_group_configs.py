"""Consumer-group configs on the 3-broker cluster: ``consumer.heartbeat.interval.ms`` set through a
broker that does not coordinate the group is a GROUP ConfigRecord in etcd, and the coordinating
broker answers the group's heartbeats with it (its coordinators read the metadata image, as Kafka's
GroupConfigManager is fed by the metadata log)."""
from __future__ import annotations

import uuid

import pytest
from kafka.protocol.admin import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from broker.testing.local_cluster import find_etcd
from tests.support.cluster_support import FAST_GROUPS, coordinator_of, create_topic
from tests.support.rawclient import RawClient

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

GROUP = 32


@pytest.mark.parametrize("samsa_cluster", [{"overrides": FAST_GROUPS}], indirect=True)
def test_a_group_config_set_anywhere_applies_at_the_coordinator(samsa_cluster) -> None:
    c = samsa_cluster
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    create_topic(c, topic, partitions=2, rf=3)
    coordinator = coordinator_of(c, group)
    elsewhere = next(n for n in sorted(c.brokers) if n != coordinator)

    def beat(member: str, epoch: int) -> tuple[int, int, int]:
        with RawClient(c.brokers[coordinator].bootstrap_servers) as rc:
            r = rc.request(68, 1, group_id=group, member_id=member, member_epoch=epoch,
                           **({"rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic],
                               "topic_partitions": []} if epoch == 0 else {}))
        return r.error_code, r.member_epoch, r.heartbeat_interval_ms

    code, epoch, interval = beat("m1", 0)
    assert (code, interval) == (0, 500)                                       # the broker's

    I = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[I(resource_type=GROUP, resource_name=group, configs=[
        I.AlterableConfig(name="consumer.heartbeat.interval.ms", config_operation=0, value="1500")])],
        validate_only=False)
    with RawClient(c.brokers[elsewhere].bootstrap_servers) as rc:
        (r,) = rc.call(req, IncrementalAlterConfigsResponse, 1).responses
    assert (r.error_code, r.error_message) == (0, None)
    c.wait_for(lambda: beat("m1", epoch) == (0, epoch, 1500), what="the group's interval at its coordinator")
