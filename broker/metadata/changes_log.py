"""Info-level log lines for what each applied metadata batch changed: brokers registered,
fenced, unfenced or in controlled shutdown; partition leaders elected (with the leader epoch);
ISR shrinks and expands (with the partition epoch).

Why a listener on the store rather than lines in the controller or the replica manager: the
image is where every decision becomes a fact on this broker (a controller's election, a
leader's AlterPartition, a fencing), in the metadata log's order, whoever made it. So that a
cluster of N brokers does not print each partition change N times, partition lines are written
once: a leader change by the active controller, an ISR change by the partition's leader (by the
controller when the partition has no leader). Broker lines are written by every broker: they
are rare and say what this broker now believes about its peers. Becoming leader or follower of
a local partition is logged by the replica manager (broker/replica/manager.py).
"""
from __future__ import annotations

from collections.abc import Callable

import structlog

from coordinator.metadata.image import MetadataDelta, MetadataImage

log = structlog.get_logger("samsa.metadata")


class ImageChangeLog:
    """A ``MetadataStore`` listener (broker/metadata/store.py): ``listener(old, new, delta)``."""

    def __init__(self, node_id: int, is_controller: Callable[[], bool]) -> None:
        self.node_id = node_id
        self.is_controller = is_controller

    def __call__(self, old: MetadataImage, new: MetadataImage, delta: MetadataDelta) -> None:
        if new.brokers is not old.brokers:
            self._brokers(old, new)
        if new.topics is not old.topics:
            self._partitions(old, new)

    def _brokers(self, old: MetadataImage, new: MetadataImage) -> None:
        for bid, b in sorted(new.brokers.items()):
            was = old.brokers.get(bid)
            if was is b:
                continue
            if was is None:
                log.info("broker registered", broker=bid, broker_epoch=b.epoch, rack=b.rack, fenced=b.fenced)
            elif was.fenced and not b.fenced:
                log.info("broker unfenced", broker=bid, broker_epoch=b.epoch,
                         reregistered=was.epoch != b.epoch)
            elif b.fenced and not was.fenced:
                log.info("broker fenced", broker=bid, broker_epoch=b.epoch)
            elif b.epoch != was.epoch:
                log.info("broker registered again", broker=bid, broker_epoch=b.epoch, previous_epoch=was.epoch)
            if b.in_controlled_shutdown and not was_shutting_down(was):
                log.info("broker in controlled shutdown", broker=bid, broker_epoch=b.epoch)
        for bid in sorted(set(old.brokers) - set(new.brokers)):
            log.info("broker unregistered", broker=bid)

    def _partitions(self, old: MetadataImage, new: MetadataImage) -> None:
        controller: bool | None = None   # asked once per batch, only when needed
        for name, topic in new.topics.items():
            before = old.topics.get(name)
            if before is topic or before is None or before.topic_id != topic.topic_id:
                continue   # unchanged, or created by this batch (its partitions are new)
            for index, reg in sorted(topic.partitions.items()):
                prev = before.partitions.get(index)
                if prev is None or prev is reg:
                    continue
                leader_changed = (prev.leader, prev.leader_epoch) != (reg.leader, reg.leader_epoch)
                if leader_changed:
                    if controller is None:
                        controller = self.is_controller()
                    if controller:
                        log.info("partition leader changed", partition=f"{name}-{index}", leader=reg.leader,
                                 previous_leader=prev.leader, leader_epoch=reg.leader_epoch,
                                 partition_epoch=reg.partition_epoch, isr=list(reg.isr))
                if set(prev.isr) == set(reg.isr):
                    continue
                if reg.leader == self.node_id:
                    mine = True
                elif reg.leader < 0:
                    if controller is None:
                        controller = self.is_controller()
                    mine = controller
                else:
                    mine = False
                if mine:
                    removed = sorted(set(prev.isr) - set(reg.isr))
                    added = sorted(set(reg.isr) - set(prev.isr))
                    event = ("ISR shrunk" if not added else "ISR expanded" if not removed else "ISR changed")
                    log.info(event, partition=f"{name}-{index}", isr=list(reg.isr), previous_isr=list(prev.isr),
                             removed=removed, added=added, leader=reg.leader, leader_epoch=reg.leader_epoch,
                             partition_epoch=reg.partition_epoch)


def was_shutting_down(b: object) -> bool:
    return bool(b is not None and getattr(b, "in_controlled_shutdown", False))


__all__ = ["ImageChangeLog"]
