"""Helpers shared by handler modules: topic lookup, leader-epoch checks, coordinator request fields."""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode

from ..log.manager import Topic
from ..log.partition import Partition
from ..broker import Broker

if TYPE_CHECKING:
    from ..dispatch import RequestContext

ZERO_UUID = uuid.UUID(int=0)


def check_leader_epoch(part: Partition, requested: int | None) -> int:
    """Kafka's rule for a client-sent current leader epoch (-1 means 'not sent')."""
    if requested is None or requested < 0:
        return ErrorCode.NONE
    if requested < part.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if requested > part.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def find_topic(broker: Broker, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
    if topic_id is not None and topic_id != ZERO_UUID:
        return broker.logs.topics_by_id.get(topic_id)
    if name is None:
        return None
    return broker.logs.topics.get(name)


def absent_partition_error(broker: Broker, name: str | None, index: int, topic_id: uuid.UUID | None = None) -> int:
    """The error for a partition this broker holds no local replica of (Kafka's
    ReplicaManager.getPartitionOrError): NOT_LEADER_OR_FOLLOWER when the cluster's metadata has the
    partition (the client refreshes metadata and goes to the leader), UNKNOWN_TOPIC_ID for a topic
    id it does not know, else UNKNOWN_TOPIC_OR_PARTITION. On a single node the catalog is the local
    log, so a missing partition is always unknown."""
    from .. import topic_catalog

    by_id = topic_id is not None and topic_id != ZERO_UUID
    known = topic_catalog.topic_by_id(broker, topic_id) if by_id else topic_catalog.topic(broker, name)
    if known is None:
        return ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NOT_LEADER_OR_FOLLOWER if known.has_partition(index) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def coordinator_fields(ctx: "RequestContext") -> dict[str, Any]:
    """What every coordinator request carries about its client (Kafka's client id and
    "/host" as DescribeGroups shows them)."""
    return {"api_version": ctx.api_version, "client_id": ctx.client_id or "", "client_host": "/" + ctx.client_host}
