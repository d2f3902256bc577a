"""FindCoordinator in a cluster: a group's or transactional id's coordinator is the leader of
its ``__consumer_offsets`` / ``__transaction_state`` partition (created through the
controller on first use, as Kafka's AutoTopicCreationManager does). The coordinators load
and unload with that leadership (ReplicaManager._coordinator_roles, broker/coordinator_runtime/runtime.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator.hashing import partition_for_group
from protocol.errors import ErrorCode

from broker.metadata.topic_creation import auto_create

if TYPE_CHECKING:
    from broker.network.dispatch import RequestContext

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


def share_key_error(key: str | None) -> str | None:
    """Kafka's ``SharePartitionKey.validate`` of a FindCoordinator key of type SHARE:
    ``"<group id>:<topic id>:<partition>"``; the reason it is invalid, or None."""
    import uuid

    parts = (key or "").rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return f"Share coordinator key {key!r} is not of the form <group>:<topic id>:<partition>."
    try:
        _base64_uuid(parts[1]) if len(parts[1]) == 22 else uuid.UUID(parts[1])
        if int(parts[2]) < 0:
            raise ValueError
    except ValueError:
        return f"Share coordinator key {key!r} is not of the form <group>:<topic id>:<partition>."
    return None


def _base64_uuid(s: str) -> None:
    """Kafka prints a topic id in URL-safe base64 (``Uuid.toString``): 22 characters."""
    import base64
    import binascii

    try:
        if len(base64.urlsafe_b64decode(s + "==")) != 16:
            raise ValueError(s)
    except binascii.Error as exc:
        raise ValueError(s) from exc


async def locate_coordinator(ctx: RequestContext, key_type: int, key: str) -> tuple[int, str | None, int, str, int]:
    """(error, message, node id, host, port) of the coordinator for ``key``."""
    broker = ctx.broker
    if key_type == GROUP_KEY:
        topic_name = broker.groups.topic
    elif key_type == TRANSACTION_KEY:
        topic_name = broker.txns.topic
    elif key_type == SHARE_KEY:
        if (reason := share_key_error(key)) is not None:
            return ErrorCode.INVALID_REQUEST, reason, -1, "", -1
        topic_name = broker.share_coordinator.topic
    else:
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}", -1, "", -1
    cluster = broker.cluster
    assert cluster is not None, "placement serves FindCoordinator in cluster mode only"
    image = cluster.image
    topic = image.topics.get(topic_name)
    if topic is None:
        err = await auto_create(broker, topic_name)
        image = cluster.image
        topic = image.topics.get(topic_name)
        if err or topic is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.", -1, "", -1
    p = partition_for_group(key or "", len(topic.partitions))
    reg = topic.partitions.get(p)
    b = image.brokers.get(reg.leader) if reg is not None and reg.leader >= 0 else None
    if b is not None and b.fenced:
        # its lease expired and leadership is about to move: Metadata no longer lists it, so a
        # client told to go there cannot (kafka-python raises UnknownBrokerIdError); Kafka answers
        # COORDINATOR_NOT_AVAILABLE while the coordinator's partition has no live leader
        b = None
    ep = b.endpoint(ctx.listener or ctx.advertised.name) if b is not None else None
    if ep is None and b is not None and b.endpoints:
        ep = b.endpoints[0]
    if ep is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.", -1, "", -1
    assert reg is not None   # a leader broker (hence an endpoint) is found only for a registered partition
    return ErrorCode.NONE, "NONE", reg.leader, ep.host, ep.port
