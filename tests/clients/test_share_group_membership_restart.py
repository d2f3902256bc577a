"""Share-group membership survives a broker restart, with confluent-kafka 2.16's ``ShareConsumer``
staying connected across it: the group's records are on ``__consumer_offsets`` (Kafka's share-group
records), so after the restart the group has the epoch it had (not a new group's), the member
keeps its member id and epoch, and it goes on receiving records."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker, running_broker
from tests.support.groups_support import unique
from tests.support.rawclient import RawClient
from tests.support.share_clients_support import poll_until, produce_values, share_consumer, wait_for_members

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.skipif(not hasattr(ck, "ShareConsumer"), reason="confluent-kafka without ShareConsumer")

SHARE_PROPS = {
    "samsa.share.auto.offset.reset": "earliest",
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "100",
    "num.partitions": "2",
}


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides=SHARE_PROPS) as broker:
        yield broker


def describe(bootstrap: str, group: str):
    with RawClient(bootstrap) as c:
        [g] = c.request(77, 1, group_ids=[group], include_authorized_operations=False).groups
    return g


def test_a_share_consumer_keeps_its_membership_across_a_broker_restart(own_broker):
    bs = own_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_values(bs, topic, [f"a{i}" for i in range(5)])
    c1 = share_consumer(bs, group, topic, explicit=False)
    try:
        assert len(poll_until(c1, lambda rs: len(rs) >= 5, 60)) == 5
        c2 = share_consumer(bs, group, topic, explicit=False)      # joins and leaves: the epoch moves on
        try:
            wait_for_members(bs, group, 2)
        finally:
            c2.close()
        wait_for_members(bs, group, 1)
        poll_until(c1, lambda rs: False, 3)                        # c1 takes the new assignment
        before = describe(bs, group)
        assert before.error_code == 0 and len(before.members) == 1 and before.group_epoch >= 4, before
        [member] = before.members

        own_broker.restart()

        produce_values(bs, topic, [f"b{i}" for i in range(5)])
        again = poll_until(c1, lambda rs: len(rs) >= 5, 90)
        assert sorted(m.value() for m in again) == [f"b{i}".encode() for i in range(5)]
        after = describe(bs, group)
        assert (after.error_code, after.group_state, after.group_epoch, after.assignment_epoch) == \
            (0, "Stable", before.group_epoch, before.assignment_epoch), after
        assert [(m.member_id, m.member_epoch) for m in after.members] == [(member.member_id, member.member_epoch)]
    finally:
        c1.close()
