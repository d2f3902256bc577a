"""The active controller's loop: one broker at a time (the etcd election in etcd.py).

Why a loop over the image rather than a queue of events: every decision is recomputed from the
current image and the live brokers (``store.live``, the leased keys), so a controller that takes
over after a crash simply finds what is left to do: brokers whose lease is gone are fenced and
lose their leaderships and ISR places; brokers in controlled shutdown lose their leaderships;
leaderless partitions get a leader from the ISR (outside it only with
``unclean.leader.election.enable``); reassignments whose target replicas all joined the ISR
are completed (KIP-455). Each write compares the controller key and the partition
epochs it was decided on (``as_controller=True``), so a deposed controller writes nothing.
Changes go out in chunks that fit etcd's default 128 operations per transaction.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
import trio

from coordinator.metadata.controller import (broker_leaving_records, completed_reassignments, leaderless_records)
from coordinator.metadata.image import MetadataImage
from coordinator.metadata.records import FenceBrokerRecord

from .store import MetadataUnavailable

if TYPE_CHECKING:
    from .etcd import EtcdMetadataStore

log = structlog.get_logger("samsa.controller")

CHUNK = 40          # partition changes per transaction: 2 etcd ops each, under etcd's 128
RECHECK_S = 1.0     # reconcile at least this often (e.g. after a lost race)


def unclean_for(image: MetadataImage, default: bool):
    def unclean(topic: str) -> bool:
        v = image.topic_configs(topic).get("unclean.leader.election.enable")
        return default if v is None else v.strip().lower() == "true"
    return unclean


async def _write_chunks(store: EtcdMetadataStore, compute) -> None:
    """Append what ``compute(image)`` decides, CHUNK partition changes at a time, recomputing
    on the new image after each write until nothing is left (or a write is refused)."""
    for _ in range(10_000):
        image = store.image
        changes = compute(image)
        if not changes:
            return
        if not await store.append(changes[:CHUNK], base=image, as_controller=True):
            return


async def reconcile(store: EtcdMetadataStore, unclean_default: bool) -> None:
    image = store.image
    for b in list(image.brokers.values()):
        if not b.fenced and b.id not in store.live:
            log.info("broker session expired: fencing it", broker=b.id, epoch=b.epoch)
            if not await store.append([FenceBrokerRecord(id=b.id, epoch=b.epoch)], base=image, as_controller=True):
                return
            image = store.image
    for b in list(store.image.brokers.values()):
        if b.fenced or b.in_controlled_shutdown:
            await _write_chunks(store, lambda img, i=b.id: broker_leaving_records(
                img, i, unclean_for(img, unclean_default)))
    await _write_chunks(store, lambda img: leaderless_records(img, unclean_for(img, unclean_default)))
    await _write_chunks(store, completed_reassignments)  # every target replica joined the ISR


async def run_controller(store: EtcdMetadataStore, unclean_default: bool) -> None:
    """Campaign while there is no controller; reconcile while we are it."""
    while True:
        try:
            if store.available and not store.closing:
                if store.controller_id == -1 and store.lease_id:
                    await store.campaign()
                if store.is_controller:
                    await reconcile(store, unclean_default)
        except MetadataUnavailable as exc:
            log.warning("controller: etcd unavailable", reason=str(exc))
        with trio.move_on_after(RECHECK_S):
            await store.changed()
