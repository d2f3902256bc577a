"""The cluster as clients see it, and the operations that change its topics: one interface, two modes.

Why: a single node and a cluster answer the same APIs (Metadata, DescribeCluster,
DescribeTopicPartitions, CreateTopics, CreatePartitions, DeleteTopics, the config APIs,
ElectLeaders, the reassignment APIs) with the same request and response shapes and the same
validation; they differ only in where the brokers, topics and partition states come from and in
how a change is made. Handlers used to ask ``broker.cluster is None`` and keep two versions of
each answer. Now the composition root (broker/server/broker_server.py) picks one ``Topology``
once, and every handler asks it, never which mode it is in:

- ``SingleNodeTopology`` (broker/metadata/single_node.py): one broker, itself; the controller,
  the leader of every partition, its only replica and ISR; the topics are the log manager's and
  changes are made on the log manager directly.
- ``ClusterTopology`` (broker/metadata/cluster_topology.py): the metadata image every broker
  holds, changed by writing records to the metadata log (etcd) that the controller decides on.

This is the interface Kafka's handlers have in its MetadataCache (reads) and its controller
(writes). Kafka's own single node runs the very same image path as its cluster; Samsa's
single node keeps its topics in the log manager for now (moving them to TopicRecord /
PartitionRecord in the local metadata log, broker/metadata/local.py, is the next step), which
this interface hides from every caller.

Results are Kafka's: a ``Rejection`` (error code and message) per item, or the item's outcome.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from coordinator.metadata.rejection import Rejection
from protocol.errors import ErrorCode

__all__ = ["BrokerNode", "CatalogTopic", "PartitionState", "Rejection", "Topology", "ZERO_UUID",
           "check_manual_assignment"]

ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str      # the listener's name
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """A registered broker: its advertised endpoints per listener, rack and state."""
    id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None
    fenced: bool = False
    in_controlled_shutdown: bool = False

    def endpoint(self, listener: str) -> Endpoint | None:
        """The endpoint on ``listener``, else the first one (as Metadata answers per listener)."""
        return next((e for e in self.endpoints if e.name == listener), self.endpoints[0] if self.endpoints else None)


@dataclass(frozen=True, slots=True)
class CatalogTopic:
    """What handlers that only ask "does this topic exist, with which id and how many
    partitions" need, without reading any data."""
    name: str
    topic_id: uuid.UUID
    partition_count: int
    internal: bool

    def has_partition(self, index: int) -> bool:
        return 0 <= index < self.partition_count


@dataclass(frozen=True, slots=True)
class PartitionState:
    """A partition's registration as recorded: its leader (whether live or not: see
    ``Topology.live_broker_ids``), leader epoch, replicas and ISR, and an ongoing reassignment."""
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicConfigs:
    """What the config APIs read of a topic: its name, overrides and whether it is internal."""
    name: str
    configs: Mapping[str, str]
    internal: bool


class Topology(Protocol):
    """The brokers, the controller and the topics, as clients see them, and the topic changes."""

    # -- what clients see ------------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        """The active controller's broker id, as Metadata and DescribeCluster answer it."""
        ...

    @property
    def is_active_controller(self) -> bool:
        """Whether this broker is the active controller (metrics report the cluster-wide
        counts on that broker only)."""
        ...

    def brokers(self) -> Sequence[BrokerNode]:
        """Every registered broker by id, fenced ones included."""
        ...

    def live_broker_ids(self) -> frozenset[int]:
        """The unfenced brokers: a partition's leader elsewhere is not available, its replicas
        elsewhere are offline."""
        ...

    def topics(self) -> Mapping[str, CatalogTopic]:
        """Every topic by name (internal ones included), in the order Metadata lists them."""
        ...

    def topic(self, name: str | None) -> CatalogTopic | None: ...

    def topic_by_id(self, topic_id: uuid.UUID | None) -> CatalogTopic | None: ...

    def partitions(self, name: str) -> Sequence[PartitionState]:
        """The topic's partitions by index (empty for an unknown topic)."""
        ...

    def topic_configs(self, name: str) -> TopicConfigs | None:
        """The topic's config overrides, None for an unknown topic."""
        ...

    def partition_racks(self) -> Mapping[uuid.UUID, tuple[frozenset[str], ...]]:
        """Topic id -> per partition, the racks of its replicas (only topics with a replica on
        a rack), for the rack-aware assignment of consumer groups."""
        ...

    def ongoing_reassignments(self) -> Mapping[str, Mapping[int, PartitionState]]:
        """Topic -> partition -> state, for the partitions being reassigned."""
        ...

    # -- changes (Kafka's controller operations) --------------------------------------------
    def place(self, partitions: int, replication_factor: int) -> list[tuple[int, ...]] | Rejection:
        """Replica lists for new partitions (Kafka's replica placer), or why they cannot be placed."""
        ...

    async def create_topic(self, name: str, assignments: Sequence[Sequence[int]], configs: dict[str, str],
                           timeout_ms: int) -> uuid.UUID | Rejection:
        """Create the topic with these replica lists and config overrides: its id."""
        ...

    async def auto_create(self, name: str) -> int:
        """Kafka's AutoTopicCreationManager (Metadata's auto-creation): the topic created with
        the broker's defaults (an internal topic as its coordinator lays it out); 0 when the
        topic exists now, else the error."""
        ...

    async def create_partitions(self, name: str, assignments: Sequence[Sequence[int]],
                                timeout_ms: int) -> Rejection | None:
        """Add one partition per replica list."""
        ...

    async def delete_topics(self, names: Sequence[str], timeout_ms: int) -> dict[str, Rejection | None]:
        """Delete the topics (validated by the caller); per topic, None or why not."""
        ...

    async def alter_topic_configs(self, name: str, configs: dict[str, str]) -> Rejection | None:
        """Replace the topic's config overrides."""
        ...

    async def elect_leader(self, topic: str, partition: int, election_type: int) -> tuple[int, str | None]:
        """ElectLeaders for one partition: (error code, message)."""
        ...

    async def reassign(self, topic: str, partition: int, target: list[int] | None,
                       allow_replication_factor_change: bool) -> tuple[int, str | None]:
        """AlterPartitionReassignments for one partition (a null target cancels): (error code, message)."""
        ...


def check_manual_assignment(registered: frozenset[int] | set[int], broker_ids: Sequence[int],
                            replication_factor: int | None) -> Rejection | None:
    """Kafka's ReplicationControlManager.validateManualPartitionAssignment, in its order: an
    empty list, then (in broker id order) an unregistered broker or one named twice, then a
    replica count unlike the other partitions'."""
    if not broker_ids:
        return Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
    prev = None
    for b in sorted(broker_ids):
        if b not in registered:
            return Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             f"The manual partition assignment includes broker {b}, but no such broker is registered.")
        if b == prev:
            return Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             f"The manual partition assignment includes the broker {prev} more than once.")
        prev = b
    if replication_factor is not None and len(broker_ids) != replication_factor:
        return Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                         f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), "
                         f"but this is not consistent with previous partitions, which have "
                         f"{replication_factor} replica(s).")
    return None
