"""The trio shell around the pure share coordinators (coordinator/share_state/coordinator.py,
Kafka's ``ShareCoordinatorShard``): one ShareCoordinator per ``__share_group_state`` partition,
driven by the generic coordinator runtime (broker/coordinator_runtime/runtime.py), so an answer
leaves only once the ShareSnapshot / ShareUpdate records it wrote are committed.

The topic is created on first use like ``__transaction_state``, with Kafka's
``share.coordinator.state.topic.*`` configs: ``num.partitions`` (50), ``replication.factor`` (3;
``samsa cluster`` caps it at the cluster's size like the other internal topics), ``min.isr`` (2),
``segment.bytes`` (100 MiB), and ``cleanup.policy=delete`` as KIP-932 defines it (the state is a
log of snapshots and updates, not a keyed table). A share partition's state lives on partition
``abs(hash("<group>:<topic id>:<partition>")) % partitions`` (Kafka's
``ShareCoordinatorService.partitionFor``, Java's String.hashCode).

Deviation: Kafka prunes the records older than every share partition's latest snapshot with
DeleteRecords and re-snapshots cold partitions periodically, so that the topic's retention never
takes the only snapshot of an idle share partition; neither is done here, so the topic is created
with ``retention.ms=-1`` (kept until deleted) instead of the broker's retention.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import structlog

from coordinator.share.persister import SharePartitionKey
from coordinator.share_state.coordinator import InitializeState, ShareCoordinator, ShareCoordinatorConfig, WriteState
from coordinator.share_state.records import share_coordinator_key

from broker.coordinator_runtime.runtime import CoordinatorShell
from broker.metadata import topic_catalog

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.share")

SHARE_GROUP_STATE_TOPIC = "__share_group_state"


class ShareCoordinatorShell(CoordinatorShell[ShareCoordinator]):
    """Kafka's ``ShareCoordinatorService`` on this broker's ``__share_group_state`` partitions."""
    topic = SHARE_GROUP_STATE_TOPIC
    partition_count_field = "state_topic_num_partitions"

    def __init__(self, broker: BrokerServices) -> None:
        cfg = broker.config
        super().__init__(broker, int(cfg.get("share.coordinator.state.topic.num.partitions") or 50))
        self.coordinator_config = ShareCoordinatorConfig.from_properties(
            {k: cfg.get(k) for k in ShareCoordinatorConfig._KAFKA_NAMES})
        # for /metrics (broker/observability/metrics.py): WriteShareGroupState calls answered NONE
        # (Kafka's share-coordinator-metrics write-total), and the committed records they and
        # InitializeShareGroupState wrote, by type (ShareSnapshot / ShareUpdate)
        self.writes_total = 0
        self.records_written: dict[str, int] = {"ShareSnapshot": 0, "ShareUpdate": 0}

    def new_coordinator(self, partition: int) -> ShareCoordinator:
        return ShareCoordinator(self.coordinator_config, partition, loading=True,
                                partition_exists=self._partition_exists)

    def _partition_exists(self, topic_id: uuid.UUID, partition: int) -> bool:
        """Kafka's check of the share partition against the metadata image."""
        t = topic_catalog.topic_by_id(self.broker, topic_id)
        return t is not None and t.has_partition(partition)

    def topic_configs(self) -> dict[str, str]:
        cfg = self.broker.config
        return {"cleanup.policy": "delete", "compression.type": "producer", "retention.ms": "-1",
                "segment.bytes": str(cfg.get("share.coordinator.state.topic.segment.bytes") or 104857600),
                "min.insync.replicas": str(cfg.get("share.coordinator.state.topic.min.isr") or 2)}

    def load(self) -> int:
        loaded = super().load()
        if loaded:
            log.info("share coordinators loaded", partitions=loaded,
                     share_partitions=sum(len(c.keys()) for c in self.coordinators.values()))
        return loaded

    def partition_for_key(self, key: SharePartitionKey) -> int:
        """Kafka's ``ShareCoordinatorService.partitionFor(SharePartitionKey)``."""
        return self.partition_for(share_coordinator_key(key))

    async def call_key(self, key: SharePartitionKey, request: Any) -> Any:
        """Step a share-state request on the coordinator of ``key``'s partition and wait for its
        committed answer (NOT_COORDINATOR from a partition not led here)."""
        result = await self.call_for(share_coordinator_key(key), request)
        if isinstance(request, (WriteState, InitializeState)) and not getattr(result, "error_code", 1):
            if isinstance(request, WriteState):
                self.writes_total += 1
            coord = self.coordinators.get(self.partition_for_key(key))
            since = coord.updates_since_snapshot(key) if coord is not None else None
            self.records_written["ShareUpdate" if since else "ShareSnapshot"] += 1
        return result
