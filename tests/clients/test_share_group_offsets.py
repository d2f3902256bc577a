"""The share admin APIs with the real Java Admin 4.3 (tests/support/java/ShareOffsetsAdmin.java):
alterShareGroupOffsets, listShareGroupOffsets (DescribeShareGroupOffsets v1, with lag) and
deleteShareGroupOffsets against a broker with share groups enabled, the offsets kept by the share
coordinator (issue 21). The share group is made with ShareGroupHeartbeat (a member joins and leaves:
offsets change only in an empty group, as Kafka)."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker
from protocol import schema_messages as m
from tests.support.groups_support import unique
from tests.support.javaclient import of_type, requires_java, start_java_source
from tests.support.rawclient import RawClient

SOURCE = Path(__file__).resolve().parents[1] / "support" / "java" / "ShareOffsetsAdmin.java"
PROPS = {"group.share.enable": "true", "share.coordinator.state.topic.num.partitions": "3"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    b = SamsaBroker(tmp_path_factory.mktemp("share-offsets") / "data", overrides=PROPS).start()
    try:
        yield b
    finally:
        b.stop()


def admin(broker: SamsaBroker, group: str, *args: str) -> list[dict]:
    return start_java_source("4.3.0", SOURCE, "--bootstrap", broker.bootstrap_servers, "--group", group,
                             *args).result(timeout=90, allow_errors=True)


def heartbeat(bootstrap: str, group: str, member: str, epoch: int, topics: list[str] | None) -> int:
    R = m.ShareGroupHeartbeatRequest
    with RawClient(bootstrap) as c:
        return c.call(R(group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                        subscribed_topic_names=topics), m.ShareGroupHeartbeatResponse, 1).error_code


def produce(bootstrap: str, topic: str, partitions: dict[int, int]) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap)
    try:
        for partition, count in partitions.items():
            for i in range(count):
                p.send(topic, value=b"v%d" % i, partition=partition)
        p.flush(timeout=20)
    finally:
        p.close(timeout=5)


@pytest.mark.slow
@requires_java
def test_alter_list_and_delete_share_group_offsets(broker):
    from kafka.admin import KafkaAdminClient, NewTopic

    bs = broker.bootstrap_servers
    topic, group, member = unique("so"), unique("sg"), uuid.uuid4().hex
    a = KafkaAdminClient(bootstrap_servers=bs)
    a.create_topics([NewTopic(topic, 2, 1)])
    a.close()
    produce(bs, topic, {0: 10, 1: 4})

    # an unknown group, then a group with a member: Kafka's errors
    assert of_type(admin(broker, group, "--alter", f"{topic}:0=3"), "error")[0]["error"] == "GroupIdNotFoundException"
    assert heartbeat(bs, group, member, 0, [topic]) == 0
    err = of_type(admin(broker, group, "--alter", f"{topic}:0=3"), "error")[0]
    assert err["error"] == "GroupNotEmptyException", err
    assert heartbeat(bs, group, member, -1, None) == 0

    assert of_type(admin(broker, group, "--alter", f"{topic}:0=3,{topic}:1=1"), "altered")
    offsets = {(o["topic"], o["partition"]): (o["start_offset"], o["lag"])
               for o in of_type(admin(broker, group, "--list"), "offset")}
    # no lag yet: a reset share partition's delivery-complete count is unknown (-1) until its leader
    # writes one (tests/broker/test_share_group_offsets_wire.py has the lag)
    assert offsets == {(topic, 0): (3, None), (topic, 1): (1, None)}
    one = of_type(admin(broker, group, "--list", f"{topic}:1"), "offset")
    assert [(o["partition"], o["start_offset"]) for o in one] == [(1, 1)]

    assert of_type(admin(broker, group, "--delete", topic), "deleted")
    assert of_type(admin(broker, group, "--list"), "offset") == []
