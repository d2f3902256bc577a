"""KIP-848 consumer groups with real clients (tests/clients/test_consumer_groups_*.py): the broker
settings they share (fast sessions and heartbeats), the Java client they drive with
``group.protocol=consumer``, and the coordinator's view read with a raw ConsumerGroupDescribe.
The shared broker is the ``cbroker`` fixture (tests/clients/conftest.py)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.support.rawclient import RawClient

PARTITIONS = 6
SESSION_MS = 4000
JAVA = "4.3.0"
CONSUMER = ("--prop", "group.protocol=consumer")
BROKER_PROPS = {
    "num.partitions": str(PARTITIONS),
    # fast tests: Kafka's bounds lowered, then the values set inside them
    "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
}


def java_ready() -> None:
    """Skip unless a JDK is on PATH; compile the Java test client for ``JAVA``."""
    from tests.support.javaclient import compile, java_available
    if not java_available():
        pytest.skip("java and javac (a JDK) are not on PATH")
    compile(JAVA)


def cg_view(bs: str, group: str) -> Any:
    """(error code, state, group epoch, {member_id: (client_id, instance_id, epoch, {topic: partitions})})."""
    with RawClient(bs) as c:
        g = c.request(69, 0, group_ids=[group], include_authorized_operations=False).groups[0]
    members = {m.member_id: (m.client_id, m.instance_id, m.member_epoch,
                             {tp.topic_name: tuple(sorted(tp.partitions)) for tp in m.assignment.topic_partitions})
               for m in g.members}
    return g.error_code, g.group_state, g.group_epoch, members


def group_args(topic: str, group: str, *extra: Any) -> list[Any]:
    """The Java test client's arguments for a consumer-protocol member of ``group`` on ``topic``."""
    return ["consume-group", "--topic", topic, "--group", group, *CONSUMER, *extra]
