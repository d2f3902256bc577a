"""The single node's Topology (broker/metadata/topology.py): a cluster of one broker.

Why this shape: a single node is the controller, the only broker, the leader of every partition
and its only replica and ISR (leader epoch as its log records it), so everything clients see is
derived from the log manager, which holds every topic; a change is made on the log manager
directly (nothing to decide, no other broker to tell), and answered once the log manager's
topic file holds it durably (``topics_durable``: the fdatasync in a worker thread, so other
connections are served meanwhile). Its answers are those of a one-broker
cluster, which is what Kafka's own single node is.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from protocol.errors import ErrorCode

from .topology import (ZERO_UUID, BrokerNode, CatalogTopic, Endpoint, PartitionState, Rejection, TopicConfigs,
                       check_manual_assignment)

if TYPE_CHECKING:
    from broker.common.services import BrokerServices
    from broker.log.manager import Topic

log = structlog.get_logger("samsa.topics")

NOT_NEEDED = "Leader election not needed for topic partition."


def _of_log(t: Topic) -> CatalogTopic:
    return CatalogTopic(t.name, t.topic_id, t.partition_count, t.internal)


class SingleNodeTopology:
    """One broker, itself; the log manager's topics."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self.node_id = broker.node_id
        self._catalog: dict[str, CatalogTopic] = {}
        self._catalog_of: tuple[object, int] | None = None   # (log manager, its generation)
        self._brokers: tuple[tuple[Any, ...], tuple[BrokerNode, ...]] | None = None   # (config inputs, brokers)

    # -- what clients see ------------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        return self.node_id

    @property
    def is_active_controller(self) -> bool:
        return True

    def brokers(self) -> Sequence[BrokerNode]:
        """Itself, made again only when a property it comes from changed: every Metadata request
        reads it, and parsing the listeners each time was a third of a small Metadata answer's cost."""
        config = self.broker.config
        values = config.values
        inputs = (values.get("advertised.listeners"), values.get("listeners"),
                  values.get("listener.security.protocol.map"), values.get("broker.rack"))
        cached = self._brokers
        if cached is None or cached[0] != inputs:
            cached = self._brokers = (inputs, (BrokerNode(self.node_id, tuple(
                Endpoint(a.name, a.host, a.port) for a in config.advertised_listeners), config.get("broker.rack")),))
        return cached[1]

    def live_broker_ids(self) -> frozenset[int]:
        return frozenset((self.node_id,))

    def topics(self) -> Mapping[str, CatalogTopic]:
        """Every topic, built again only after a change (the log manager's generation): a
        Metadata request for all topics, and CreateTopics' name-collision check, read this."""
        logs = self.broker.logs
        if self._catalog_of is None or self._catalog_of[0] is not logs or self._catalog_of[1] != logs.generation:
            self._catalog = {name: _of_log(t) for name, t in list(logs.topics.items())}
            self._catalog_of = (logs, logs.generation)
        return self._catalog

    def topic(self, name: str | None) -> CatalogTopic | None:
        """From ``topics()``' catalog, kept until the log manager's next change: every
        AddPartitionsToTxn and TxnOffsetCommit asks, and a new entry for each was a frozen
        dataclass made per call."""
        return self.topics().get(name) if name is not None else None

    def topic_by_id(self, topic_id: uuid.UUID | None) -> CatalogTopic | None:
        if topic_id is None or topic_id == ZERO_UUID:
            return None
        t = self.broker.logs.topics_by_id.get(topic_id)
        return None if t is None else _of_log(t)

    def partitions(self, name: str) -> Sequence[PartitionState]:
        t = self.broker.logs.topics.get(name)
        if t is None:
            return []
        node = (self.node_id,)
        return [PartitionState(p.index, self.node_id, p.leader_epoch, node, node) for p in t.partitions]

    def topic_configs(self, name: str) -> TopicConfigs | None:
        t = self.broker.logs.topics.get(name)
        return None if t is None else TopicConfigs(t.name, t.configs, t.internal)

    def partition_racks(self) -> Mapping[uuid.UUID, tuple[frozenset[str], ...]]:
        return {}   # one rack at most, which never changes an assignment

    def ongoing_reassignments(self) -> Mapping[str, Mapping[int, PartitionState]]:
        return {}   # a single node's only replica is itself: nothing ever moves

    # -- changes -----------------------------------------------------------------------------
    def place(self, partitions: int, replication_factor: int) -> list[tuple[int, ...]] | Rejection:
        if replication_factor > 1:
            return Rejection(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Unable to replicate the partition {replication_factor} time(s): The target "
                             f"replication factor of {replication_factor} cannot be reached because only "
                             f"1 broker(s) are registered.")
        return [(self.node_id,)] * partitions

    async def create_topic(self, name: str, assignments: Sequence[Sequence[int]], configs: dict[str, str],
                           timeout_ms: int) -> uuid.UUID | Rejection:
        logs = self.broker.logs
        topic = logs.create_topic(name, len(assignments), configs, durable=False)
        await logs.topics_durable()
        return topic.topic_id

    async def auto_create(self, name: str) -> int:
        broker = self.broker
        for shell in (broker.groups, broker.txns):
            if name == shell.topic:
                # as Kafka's AutoTopicCreationManager: an internal topic is created as its
                # coordinator would create it (its partition count and configs), never as a plain one
                shell.ensure_topic()
                return 0
        broker.logs.create_topic(name, int(broker.config["num.partitions"]))
        return 0

    async def create_partitions(self, name: str, assignments: Sequence[Sequence[int]],
                                timeout_ms: int) -> Rejection | None:
        logs = self.broker.logs
        total = logs.topics[name].partition_count + len(assignments)
        logs.add_partitions(name, total, durable=False)
        await logs.topics_durable()
        log.info("partitions added", topic=name, partitions=total)
        return None

    async def delete_topics(self, names: Sequence[str], timeout_ms: int) -> dict[str, Rejection | None]:
        broker = self.broker
        for name in names:
            broker.logs.delete_topic(name, durable=False)
            if broker.metrics is not None:
                broker.metrics.topic_deleted(name)
        if names:
            await broker.logs.topics_durable()   # one fdatasync for all of them
            broker.appends.notify()  # waiting fetches re-check and see the topic gone
            # as Kafka's onPartitionsDeleted: committed offsets of the topics go from every group,
            # so a topic created again under the name does not inherit them (in a cluster every
            # broker does this when the image drops the topic)
            await broker.groups.topics_deleted(list(names))
        return {name: None for name in names}

    async def alter_topic_configs(self, name: str, configs: dict[str, str]) -> Rejection | None:
        logs = self.broker.logs
        logs.alter_configs(name, configs, durable=False)
        await logs.topics_durable()
        log.info("topic configs altered", topic=name, configs=configs)
        return None

    async def elect_leader(self, topic: str, partition: int, election_type: int) -> tuple[int, str | None]:
        t = self.topic(topic)
        if t is None or not t.has_partition(partition):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The partition {topic}-{partition} does not exist."
        return ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED   # it leads every partition it has

    async def reassign(self, topic: str, partition: int, target: list[int] | None,
                       allow_replication_factor_change: bool) -> tuple[int, str | None]:
        t = self.topic(topic)
        if t is None or not t.has_partition(partition):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}."
        if target is None:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, (f"Unable to cancel reassignment for {topic}-{partition}: "
                                                           "no reassignment in progress.")
        for b in target:
            if b != self.node_id:
                return (ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                        f"The manual partition assignment includes broker {b}, but no such broker is registered.")
        if len(target) != 1:
            return (ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {self.node_id} more than once."
                    if target else "The manual partition assignment includes an empty replica list.")
        return 0, None   # moving to [itself] does nothing


__all__ = ["SingleNodeTopology", "check_manual_assignment"]
