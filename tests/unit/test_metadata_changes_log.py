"""The cluster lifecycle lines (broker/metadata/changes_log.py) for batches applied through the
store's Publisher: which broker logs what, with which epochs. The same lines on real processes:
tests/cluster/test_cluster_observe.py."""
from __future__ import annotations

from structlog.testing import capture_logs

from broker.metadata.changes_log import ImageChangeLog
from broker.metadata.store import Publisher
from coordinator.metadata.records import (BrokerEndpoint, BrokerRegistrationChangeRecord, FenceBrokerRecord, PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord)

TID = "3f1b1e0a-6d9b-4c4e-8a3b-2f0d5c6e7a81"


def register(b: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=b, incarnation_id=f"i{b}-{epoch}", broker_epoch=epoch,
                                end_points=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9090 + b),), fenced=False)


def publishers(controller: int = 3) -> dict[int, Publisher]:
    """One Publisher per broker 1..3, each with the lifecycle listener, all fed the same batches."""
    out = {}
    for node in (1, 2, 3):
        pub = Publisher()
        pub.publish([register(b, 10 + b) for b in (1, 2, 3)]
                    + [TopicRecord("t", TID), PartitionRecord(0, TID, (1, 2, 3), (1, 2, 3), leader=1)], 1)
        pub.subscribe(ImageChangeLog(node, lambda node=node: node == controller))
        out[node] = pub
    return out


def apply(pubs: dict[int, Publisher], records: list, offset: int) -> dict[int, list[dict]]:
    """The lines each broker logs for one batch."""
    lines = {}
    for node, pub in pubs.items():
        with capture_logs() as cap:
            pub.publish(records, offset)
        lines[node] = [{k: v for k, v in e.items() if k != "log_level"} for e in cap]
    return lines


def test_isr_changes_are_logged_once_by_the_leader() -> None:
    pubs = publishers()
    shrink = apply(pubs, [PartitionChangeRecord(0, TID, isr=(1, 3))], 2)
    assert shrink[1] == [{"event": "ISR shrunk", "partition": "t-0", "isr": [1, 3], "previous_isr": [1, 2, 3],
                          "removed": [2], "added": [], "leader": 1, "leader_epoch": 0, "partition_epoch": 1}]
    assert shrink[2] == shrink[3] == []
    expand = apply(pubs, [PartitionChangeRecord(0, TID, isr=(1, 3, 2))], 3)
    assert expand[1] == [{"event": "ISR expanded", "partition": "t-0", "isr": [1, 3, 2], "previous_isr": [1, 3],
                          "removed": [], "added": [2], "leader": 1, "leader_epoch": 0, "partition_epoch": 2}]
    assert expand[2] == expand[3] == []
    # a new leader's ISR without the old one: the election once (controller 3), the ISR by the new leader
    fail = apply(pubs, [FenceBrokerRecord(id=1, epoch=11), PartitionChangeRecord(0, TID, isr=(3, 2), leader=2)], 4)
    fenced = {"event": "broker fenced", "broker": 1, "broker_epoch": 11}
    assert fail[3] == [fenced, {"event": "partition leader changed", "partition": "t-0", "leader": 2,
                                "previous_leader": 1, "leader_epoch": 1, "partition_epoch": 3, "isr": [3, 2]}]
    assert fail[2] == [fenced, {"event": "ISR shrunk", "partition": "t-0", "isr": [3, 2], "previous_isr": [1, 3, 2],
                                "removed": [1], "added": [], "leader": 2, "leader_epoch": 1, "partition_epoch": 3}]
    assert fail[1] == [fenced]


def test_broker_registration_fencing_and_shutdown() -> None:
    pubs = publishers()
    lines = apply(pubs, [FenceBrokerRecord(id=2, epoch=12)], 2)
    assert all(v == [{"event": "broker fenced", "broker": 2, "broker_epoch": 12}] for v in lines.values())
    lines = apply(pubs, [register(2, 20)], 3)     # back with a new session
    assert all(v == [{"event": "broker unfenced", "broker": 2, "broker_epoch": 20, "reregistered": True}]
               for v in lines.values())
    lines = apply(pubs, [BrokerRegistrationChangeRecord(broker_id=3, broker_epoch=13, in_controlled_shutdown=True)], 4)
    assert all(v == [{"event": "broker in controlled shutdown", "broker": 3, "broker_epoch": 13}]
               for v in lines.values())
    lines = apply(pubs, [register(4, 40)], 5)
    assert all(v == [{"event": "broker registered", "broker": 4, "broker_epoch": 40, "rack": None, "fenced": False}]
               for v in lines.values())
    assert apply(pubs, [TopicRecord("u", "9e1b1e0a-6d9b-4c4e-8a3b-2f0d5c6e7a82")], 6) == {1: [], 2: [], 3: []}
