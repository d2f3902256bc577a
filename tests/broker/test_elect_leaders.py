"""ElectLeaders: the controller's decision (pure) and a single node's answers (real broker)."""
from __future__ import annotations

from kafka.protocol.admin import CreateTopicsRequest, ElectLeadersRequest

from coordinator.metadata.controller import PREFERRED, UNCLEAN, Rejection, elect_leaders_decision
from coordinator.metadata.image import MetadataImage, replay_all
from coordinator.metadata.records import (BrokerEndpoint, FenceBrokerRecord, PartitionChangeRecord, RegisterBrokerRecord, TopicRecord, PartitionRecord)
from tests.support.rawclient import RawClient


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


def test_reassignment_decisions() -> None:
    from coordinator.metadata.controller import (completed_reassignments, ongoing_reassignments, reassign_decision)
    regs = [RegisterBrokerRecord(broker_id=i, incarnation_id="x", broker_epoch=1,
                                 end_points=(BrokerEndpoint("PLAINTEXT", "h", 1),), fenced=False) for i in (1, 2, 3, 4)]
    img, _ = replay_all(MetadataImage(), [*regs, TopicRecord("t", "tid"),
                                          PartitionRecord(0, "tid", (1, 2, 3), (1, 2, 3), leader=1)])
    move = reassign_decision(img, "t", 0, [4, 2, 3])
    assert isinstance(move, PartitionChangeRecord)
    moving, _ = replay_all(img, [move])
    reg = moving.partition("t", 0)
    assert (reg.replicas, reg.adding_replicas, reg.removing_replicas, reg.leader) == ((4, 2, 3, 1), (4,), (1,), 1)
    assert ongoing_reassignments(moving) == {"t": {0: reg}}
    assert completed_reassignments(moving) == []                  # 4 has not joined the ISR yet
    joined, _ = replay_all(moving, [PartitionChangeRecord(0, "tid", isr=(1, 2, 3, 4))])
    done, _ = replay_all(joined, completed_reassignments(joined))
    reg = done.partition("t", 0)
    assert (reg.replicas, reg.isr, reg.leader, reg.adding_replicas, reg.removing_replicas) == \
        ((4, 2, 3), (2, 3, 4), 4, (), ())
    assert reg.leader_epoch == 1 and ongoing_reassignments(done) == {}
    # cancel reverts to the original replicas (as Kafka: the merged list minus the adding ones,
    # in its order); nothing ongoing -> NO_REASSIGNMENT_IN_PROGRESS
    cancelled, _ = replay_all(moving, [reassign_decision(moving, "t", 0, None)])
    reg = cancelled.partition("t", 0)
    assert (reg.replicas, reg.isr, reg.leader, reg.adding_replicas) == ((2, 3, 1), (1, 2, 3), 1, ())
    assert reassign_decision(cancelled, "t", 0, None).code == 85
    # a subset of the ISR completes at once (only removals); bad targets are refused
    shrink, _ = replay_all(img, [reassign_decision(img, "t", 0, [2, 3])])
    assert (shrink.partition("t", 0).replicas, shrink.partition("t", 0).leader) == ((2, 3), 2)
    assert reassign_decision(img, "t", 0, [1, 9]).code == 39
    assert reassign_decision(img, "t", 0, [1, 1, 2]).code == 39
    assert reassign_decision(img, "t", 0, [1, 2], allow_rf_change=False).code == 38
    assert reassign_decision(img, "t", 0, [1, 2, 3]) is None


def test_single_node_reassignments(samsa_broker) -> None:
    from kafka.protocol.admin import AlterPartitionReassignmentsRequest as APR
    CT = CreateTopicsRequest.CreatableTopic
    T, P = APR.ReassignableTopic, APR.ReassignableTopic.ReassignablePartition
    with RawClient(samsa_broker.bootstrap_servers) as c:
        assert c.request(19, 4, topics=[CT(name="ra", num_partitions=1, replication_factor=1, assignments=[],
                                           configs=[])], timeout_ms=5000, validate_only=False).topics[0].error_code == 0
        r = c.request(45, 0, timeout_ms=5000, topics=[T(name="ra", partitions=[
            P(partition_index=0, replicas=[1]), P(partition_index=0, replicas=[2]), P(partition_index=3, replicas=[1])]),
            T(name="ra", partitions=[P(partition_index=0, replicas=None)])])
        codes = [p.error_code for t in r.responses for p in t.partitions]
        assert codes == [0, 39, 3, 85]
        lst = c.request(46, 0, timeout_ms=5000, topics=None)
        assert lst.error_code == 0 and lst.topics == []
