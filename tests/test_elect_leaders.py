"""ElectLeaders: the controller's decision (pure) and a single node's answers (real broker)."""
from __future__ import annotations

from kafka.protocol.admin import CreateTopicsRequest, ElectLeadersRequest

from coordinator.metadata_controller import PREFERRED, UNCLEAN, Rejection, elect_leaders_decision
from coordinator.metadata_image import MetadataImage, replay_all
from coordinator.metadata_records import (BrokerEndpoint, FenceBrokerRecord, PartitionChangeRecord,
                                          RegisterBrokerRecord, TopicRecord, PartitionRecord)
from tests.rawclient import RawClient


def _image() -> MetadataImage:
    regs = [RegisterBrokerRecord(broker_id=i, incarnation_id="x", broker_epoch=1,
                                 end_points=(BrokerEndpoint("PLAINTEXT", "h", 1),), fenced=False) for i in (1, 2, 3)]
    img, _ = replay_all(MetadataImage(), [*regs, TopicRecord("t", "tid"),
                                          PartitionRecord(0, "tid", (1, 2, 3), (2, 3), leader=2)])
    return img


def test_preferred_and_unclean_decisions() -> None:
    img = _image()
    assert elect_leaders_decision(img, "t", 0, PREFERRED).code == 80       # 1 is not in the ISR
    back, _ = replay_all(img, [PartitionChangeRecord(0, "tid", isr=(2, 3, 1))])
    d = elect_leaders_decision(back, "t", 0, PREFERRED)
    assert isinstance(d, PartitionChangeRecord) and d.leader == 1
    after, _ = replay_all(back, [d])
    assert (after.partition("t", 0).leader, after.partition("t", 0).leader_epoch) == (1, 1)
    assert elect_leaders_decision(after, "t", 0, PREFERRED).code == 84     # already the preferred leader
    assert elect_leaders_decision(img, "t", 0, UNCLEAN).code == 84         # has a live leader
    # leader and ISR gone: unclean picks the first live replica, alone in the ISR
    dead, _ = replay_all(img, [FenceBrokerRecord(2, 1), FenceBrokerRecord(3, 1),
                               PartitionChangeRecord(0, "tid", leader=-1, isr=(2,))])
    u = elect_leaders_decision(dead, "t", 0, UNCLEAN)
    assert isinstance(u, PartitionChangeRecord) and (u.leader, u.isr) == (1, (1,))
    none, _ = replay_all(dead, [FenceBrokerRecord(1, 1)])
    assert isinstance(elect_leaders_decision(none, "t", 0, UNCLEAN), Rejection)
    assert elect_leaders_decision(none, "t", 0, UNCLEAN).code == 83
    assert elect_leaders_decision(img, "nope", 0, PREFERRED).code == 3


def test_single_node_elections_are_never_needed(samsa_broker) -> None:
    CT = CreateTopicsRequest.CreatableTopic
    TP = ElectLeadersRequest.TopicPartitions
    with RawClient(samsa_broker.bootstrap_servers) as c:
        assert c.request(19, 4, topics=[CT(name="el", num_partitions=2, replication_factor=1, assignments=[],
                                           configs=[])], timeout_ms=5000, validate_only=False).topics[0].error_code == 0
        r0 = c.request(43, 0, topic_partitions=[TP(topic="el", partitions=[0, 1, 2])], timeout_ms=5000)
        assert [(p.partition_id, p.error_code) for p in r0.replica_election_results[0].partition_result] == \
            [(0, 84), (1, 84), (2, 3)]
        everything = c.request(43, 2, election_type=1, topic_partitions=None, timeout_ms=5000)
        assert everything.error_code == 0 and everything.replica_election_results == []
        bad = c.request(43, 1, election_type=7, topic_partitions=None, timeout_ms=5000)
        assert bad.error_code == 42
