"""Authorization of the APIs that arrived beside the authorizer (consoles, KIP-848 groups, cluster
administration): a principal without ACLs (PLAINTEXT's User:ANONYMOUS, no
allow.everyone.if.no.acl.found) gets Kafka's exact codes, nothing is applied or leaked."""
from __future__ import annotations

import pytest

from protocol.messages import REQUESTS
from tests.support.rawclient import RawClient

CLUSTER_DENIED, GROUP_DENIED, TOPIC_DENIED = 31, 30, 29
AUTHZ = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "auto.create.topics.enable": "false"}


@pytest.mark.samsa_broker(overrides=AUTHZ)
def test_denied_without_acls(samsa_broker) -> None:
    with RawClient(samsa_broker.bootstrap_servers) as c:
        logdirs = c.request(35, 4, topics=None)
        assert logdirs.error_code == CLUSTER_DENIED and logdirs.results == []
        quotas = c.request(48, 1, components=[], strict=False)
        assert quotas.error_code == CLUSTER_DENIED
        assert c.request(46, 0, timeout_ms=1000, topics=None).error_code == CLUSTER_DENIED
        elect = c.request(43, 2, election_type=0, topic_partitions=[REQUESTS[43].TopicPartitions(topic="t", partitions=[0])],
                          timeout_ms=1000)
        assert elect.error_code == CLUSTER_DENIED
        hb = c.request(68, 0, group_id="g", member_id="", member_epoch=0, instance_id=None, rack_id=None,
                       rebalance_timeout_ms=30000, subscribed_topic_names=["t"], server_assignor=None,
                       topic_partitions=[])
        assert (hb.error_code, hb.member_epoch, hb.assignment) == (GROUP_DENIED, 0, None)
        described = c.request(69, 0, group_ids=["g"], include_authorized_operations=False)
        assert [(g.group_id, g.error_code, g.members) for g in described.groups] == [("g", GROUP_DENIED, [])]
        dtp = c.request(75, 0, topics=[REQUESTS[75].TopicRequest(name="__consumer_offsets")], response_partition_limit=10, cursor=None)
        assert [(t.name, t.error_code, t.partitions) for t in dtp.topics] == [("__consumer_offsets", TOPIC_DENIED, [])]
        assert c.request(75, 0, topics=[], response_partition_limit=10, cursor=None).topics == []


@pytest.mark.samsa_broker(overrides={**AUTHZ, "allow.everyone.if.no.acl.found": "true"})
def test_allowed_when_no_acl_is_found(samsa_broker) -> None:
    with RawClient(samsa_broker.bootstrap_servers) as c:
        assert c.request(35, 4, topics=None).error_code == 0
        assert c.request(48, 1, components=[], strict=False).error_code == 0
        assert c.request(46, 0, timeout_ms=1000, topics=None).error_code == 0
        hb = c.request(68, 0, group_id="g", member_id="", member_epoch=0, instance_id=None, rack_id=None,
                       rebalance_timeout_ms=30000, subscribed_topic_names=["t"], server_assignor=None,
                       topic_partitions=[])
        assert (hb.error_code, hb.member_epoch) == (0, 1)
        described = c.request(69, 0, group_ids=["g"], include_authorized_operations=False)
        assert [(g.group_id, g.error_code, len(g.members)) for g in described.groups] == [("g", 0, 1)]
