"""The topics this cluster has: name -> (id, partition count, internal), without reading any data.

Why: a broker's LogManager holds only the topics it hosts a replica of (every topic on a single
node; in a cluster a topic may live on other brokers only). Handlers that merely ask "does this
topic exist, with which id and how many partitions" (OffsetCommit, TxnOffsetCommit,
OffsetFetch/OffsetDelete, AddPartitionsToTxn, the KIP-848 heartbeat's topic view,
DescribeTopicPartitions) ask the broker's Topology (broker/metadata/topology.py), as Kafka's
handlers ask its MetadataCache; these are the shortcuts they call. Handlers that read or write
records keep using the LogManager (and answer NOT_LEADER_OR_FOLLOWER where they do not host the
partition).
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode

from .topology import ZERO_UUID, CatalogTopic

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

__all__ = ["CatalogTopic", "ZERO_UUID", "absent_partition_error", "all_topics", "has_partition", "partition_racks",
           "topic", "topic_by_id"]


def all_topics(broker: BrokerServices) -> Mapping[str, CatalogTopic]:
    """Every topic by name (internal ones included)."""
    return broker.topology.topics()


def topic(broker: BrokerServices, name: str | None) -> CatalogTopic | None:
    return broker.topology.topic(name)


def topic_by_id(broker: BrokerServices, topic_id: uuid.UUID | None) -> CatalogTopic | None:
    return broker.topology.topic_by_id(topic_id)


def has_partition(broker: BrokerServices, name: str, index: int) -> bool:
    t = topic(broker, name)
    return t is not None and t.has_partition(index)


def absent_partition_error(broker: BrokerServices, name: str | None, index: int, topic_id: uuid.UUID | None = None) -> int:
    """The error for a partition this broker holds no local replica of (Kafka's
    ReplicaManager.getPartitionOrError): NOT_LEADER_OR_FOLLOWER when the cluster's metadata has the
    partition (the client refreshes metadata and goes to the leader), UNKNOWN_TOPIC_ID for a topic
    id it does not know, else UNKNOWN_TOPIC_OR_PARTITION. On a single node the catalog is the local
    log, so a missing partition is always unknown."""
    by_id = topic_id is not None and topic_id != ZERO_UUID
    known = topic_by_id(broker, topic_id) if by_id else topic(broker, name)
    if known is None:
        return ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return ErrorCode.NOT_LEADER_OR_FOLLOWER if known.has_partition(index) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def partition_racks(broker: BrokerServices) -> Mapping[uuid.UUID, tuple[frozenset[str], ...]]:
    """Topic id -> per partition, the racks (``broker.rack``) of its replicas, for the rack-aware
    assignment of consumer groups; only topics with a replica on a rack. Computed once per
    metadata image."""
    return broker.topology.partition_racks()
