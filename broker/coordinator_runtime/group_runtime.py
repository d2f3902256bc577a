"""The trio shell around the pure group coordinators (coordinator/group/coordinator.py): one
GroupCoordinator per ``__consumer_offsets`` partition, driven as coordinator_shell.py
describes. Parked requests (joins, follower syncs) wait there; the timer task fires session
expiries, rebalance timeouts and the initial delay. Transactional offset commits are
written as transactional batches of the producer and settle when a marker arrives.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
import trio

from coordinator.group.coordinator import GroupCoordinator, GroupCoordinatorConfig, TopicsDeleted
from coordinator.step import Step
from coordinator.txn.coordinator import OFFSETS_TOPIC

from broker.coordinator_runtime.runtime import CoordinatorShell
from .group_timeline import GroupTimeline

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.groups")


class GroupShell(CoordinatorShell[GroupCoordinator]):
    topic = OFFSETS_TOPIC
    partition_count_field = "offsets_topic_num_partitions"

    def __init__(self, broker: BrokerServices) -> None:
        cfg = broker.config
        super().__init__(broker, int(cfg["offsets.topic.num.partitions"]))
        self.coordinator_config = GroupCoordinatorConfig.from_properties(
            {k: cfg[k] for k in (*GroupCoordinatorConfig._KAFKA_NAMES, *GroupCoordinatorConfig._STRING_NAMES)
             if cfg.get(k) is not None})
        self.timeline = GroupTimeline(self, broker.now_ms)   # lifecycle logs, the console's timeline

    def new_coordinator(self, partition: int) -> GroupCoordinator:
        from broker.metadata.group_configs import group_config_lookup   # loaded with the first coordinator
        return GroupCoordinator(self.coordinator_config, partition, loading=True,
                                group_configs=group_config_lookup(self.broker))

    def topic_configs(self) -> dict[str, str]:
        return {"cleanup.policy": "compact", "segment.bytes": str(self.broker.config["offsets.topic.segment.bytes"])}

    def load(self) -> int:
        loaded = super().load()
        if loaded:
            self._share_groups().partition_loaded()
            log.info("group coordinators loaded", partitions=loaded)
        return loaded

    def _share_groups(self) -> Any:
        """The share groups' shell: their membership records are on this topic too
        (broker/coordinator_runtime/share_runtime.py)."""
        return self.broker.share_groups

    def replay_batch(self, coord: GroupCoordinator, data: bytes, h: Any) -> None:
        super().replay_batch(self._share_groups().replaying(coord), data, h)

    def before_request(self, request: Any) -> None:
        self.timeline.before_request(request)

    def after_step(self, partition: int, step: Step) -> None:
        self.timeline.after_step(partition, step)

    async def run_timers(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        cluster = self.broker.cluster
        if cluster is not None:   # cluster mode: a DeleteTopics answered by any broker reaches us here
            cluster.store.subscribe(self._on_metadata)
        await super().run_timers(task_status)

    def _on_metadata(self, old: Any, new: Any, delta: Any) -> None:
        """As Kafka's BrokerMetadataPublisher calling onPartitionsDeleted: the coordinators this
        broker leads drop the committed offsets of topics deleted from the metadata image."""
        deleted = [name for name in (getattr(delta, "deleted_topics", None) or ()) if name not in new.topics]
        if deleted and self._tasks is not None:
            self._tasks.start_soon(self._drop_offsets_of, deleted)

    def become_leader(self, partition: int) -> None:
        """Load the partition's coordinator; then drop (with tombstones) the offsets it replayed
        for topics the metadata image no longer has: deleted while another broker, or none, led
        this partition (Kafka's coordinators drop deleted topics' offsets, onPartitionsDeleted)."""
        self._share_groups().partition_loading(partition)
        super().become_leader(partition)
        self._share_groups().partition_loaded(partition)
        coord = self.coordinators.get(partition)
        cluster = self.broker.cluster
        if coord is None or cluster is None or coord.unloaded:
            return
        gone = sorted(t for t in coord.offsets.topics() if t not in cluster.image.topics)
        if gone:
            step = coord.handle(TopicsDeleted(topics=gone), self.broker.now_ms())
            self._apply(partition, step)
            removed = sum(r.offsets_removed for _, r in step.completions)
            log.info("offsets of deleted topics removed on loading", partition=partition, topics=gone,
                     offsets=removed)

    def resign(self, partition: int) -> None:
        super().resign(partition)
        self._share_groups().partition_unloaded(partition)

    async def _drop_offsets_of(self, topics: list[str]) -> None:
        try:
            removed = await self.topics_deleted(topics)
        except Exception as exc:   # e.g. a coordinator moved away meanwhile: its new leader's job
            log.warning("offsets of deleted topics not removed", topics=topics, error=str(exc))
            return
        if removed:
            log.info("offsets of deleted topics removed", topics=topics, offsets=removed)

    async def topics_deleted(self, topics: list[str]) -> int:
        """Remove every group's offsets for deleted topics (tombstones written); returns how many."""
        removed = 0
        for p in list(self.coordinators):   # none yet: no group has ever committed anything
            if self.coordinators[p].unloaded:
                continue                    # cluster mode: led by another broker, which does it
            result = await self.call(p, TopicsDeleted(topics=topics))
            removed += result.offsets_removed
        return removed

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT marker was written to this partition (by the transaction shell)."""
        coord = self.coordinators.get(partition)
        if coord is not None:
            self._apply(partition, coord.complete_transaction(producer_id, commit, self.broker.now_ms()))
