"""The topics this cluster has: name -> (id, partition count, internal), without reading any data.

Why: a broker's LogManager holds only the topics it hosts a replica of. On a single node that is
every topic; in cluster mode (``broker.cluster`` set) a topic may live on other brokers only, and
handlers that merely ask "does this topic exist, with which id and how many partitions"
(OffsetCommit, TxnOffsetCommit, OffsetFetch/OffsetDelete, AddPartitionsToTxn, the KIP-848
heartbeat's topic view, DescribeTopicPartitions) must answer from the metadata image every broker
holds, as Kafka's handlers ask its MetadataCache. Handlers that read or write records keep using
the LogManager (and answer NOT_LEADER_OR_FOLLOWER where they do not host the partition).

Single node: the LogManager's topics, exactly as before. Cluster mode: the image's topics (its
ids parsed to UUIDs), built once per image (images are immutable).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING
from collections.abc import Mapping

from protocol.errors import ErrorCode

from broker.log.manager import INTERNAL_TOPICS

if TYPE_CHECKING:
    from broker.common.services import BrokerServices
    from broker.log.manager import Topic

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class CatalogTopic:
    name: str
    topic_id: uuid.UUID
    partition_count: int
    internal: bool

    def has_partition(self, index: int) -> bool:
        return 0 <= index < self.partition_count


def _of_log(t: Topic) -> CatalogTopic:
    return CatalogTopic(t.name, t.topic_id, t.partition_count, t.internal)


class _ImageCatalog:
    """The image's topics as CatalogTopics, recomputed only when the image object changes."""
    __slots__ = ("image", "by_name", "by_id", "racks")

    def __init__(self, image: object) -> None:
        self.image = image
        self.racks: dict[uuid.UUID, tuple[frozenset[str], ...]] | None = None
        self.by_name: dict[str, CatalogTopic] = {}
        self.by_id: dict[uuid.UUID, CatalogTopic] = {}
        for name, t in image.topics.items():   # type: ignore[attr-defined]
            ct = CatalogTopic(name, uuid.UUID(t.topic_id), len(t.partitions), name in INTERNAL_TOPICS)
            self.by_name[name] = ct
            self.by_id[ct.topic_id] = ct


_last: _ImageCatalog | None = None


def _image_catalog(broker: BrokerServices) -> _ImageCatalog:
    global _last
    image = broker.cluster.image   # type: ignore[union-attr]
    cat = _last
    if cat is None or cat.image is not image:
        cat = _last = _ImageCatalog(image)
    return cat


def all_topics(broker: BrokerServices) -> Mapping[str, CatalogTopic]:
    """Every topic by name (internal ones included)."""
    if broker.cluster is not None:
        return _image_catalog(broker).by_name
    return {name: _of_log(t) for name, t in list(broker.logs.topics.items())}


def topic(broker: BrokerServices, name: str | None) -> CatalogTopic | None:
    if name is None:
        return None
    if broker.cluster is not None:
        return _image_catalog(broker).by_name.get(name)
    t = broker.logs.topics.get(name)
    return None if t is None else _of_log(t)


def topic_by_id(broker: BrokerServices, topic_id: uuid.UUID | None) -> CatalogTopic | None:
    if topic_id is None or topic_id == ZERO_UUID:
        return None
    if broker.cluster is not None:
        return _image_catalog(broker).by_id.get(topic_id)
    t = broker.logs.topics_by_id.get(topic_id)
    return None if t is None else _of_log(t)


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
    assignment of consumer groups; only topics with a replica on a rack. A single node has one
    rack at most, which never changes an assignment: empty. Computed once per metadata image."""
    if broker.cluster is None:
        return {}
    cat = _image_catalog(broker)
    if cat.racks is None:
        image = cat.image
        rack_of = {b.id: b.rack for b in image.brokers.values() if b.rack}   # type: ignore[attr-defined]
        racks: dict[uuid.UUID, tuple[frozenset[str], ...]] = {}
        if rack_of:
            for t in image.topics.values():   # type: ignore[attr-defined]
                per = tuple(frozenset(rack_of[r] for r in reg.replicas if r in rack_of)
                            for _, reg in sorted(t.partitions.items()))
                if any(per):
                    racks[uuid.UUID(t.topic_id)] = per
        cat.racks = racks
    return cat.racks
