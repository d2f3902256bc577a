"""Producer ids in a cluster: blocks reserved through the metadata log (Kafka's
``ProducerIdsRecord``, what its controller writes for AllocateProducerIds).

Why: each broker hands out producer ids on its own (InitProducerId is answered by the
transaction coordinator or any broker), so two brokers must never hand out the same id. A block
of ``BLOCK`` ids is claimed by appending ``ProducerIdsRecord(next_producer_id=start + BLOCK)``
with a compare on the current ``next_producer_id`` (etcd.py), so racing brokers get disjoint
blocks. ``allocate()`` stays synchronous (the transaction coordinator calls it inside its state
machine): the next block is reserved in the background when the current one is half used, and
the first one before the broker serves.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import structlog
import trio

from coordinator.metadata.records import ProducerIdsRecord

from .store import MetadataUnavailable

if TYPE_CHECKING:
    from .etcd import EtcdMetadataStore

log = structlog.get_logger("samsa.metadata")

BLOCK = 1000


class ProducerIdsUnavailable(RuntimeError):
    """No reserved producer id is left and the metadata store cannot give a new block yet."""


class ClusterProducerIdAllocator:
    def __init__(self, store: EtcdMetadataStore) -> None:
        self.store = store
        self._blocks: deque[range] = deque()
        self._next: int | None = None
        self._end = 0
        self._low = trio.Event()

    def remaining(self) -> int:
        current = 0 if self._next is None else self._end - self._next
        return current + sum(len(b) for b in self._blocks)

    async def reserve(self) -> None:
        while True:
            base = self.store.image
            start = base.next_producer_id
            record = ProducerIdsRecord(broker_id=self.store.node_id, broker_epoch=self.store.broker_epoch,
                                       next_producer_id=start + BLOCK)
            if await self.store.append([record], base=base):
                self._blocks.append(range(start, start + BLOCK))
                log.info("producer id block reserved", start=start, size=BLOCK)
                return

    def allocate(self) -> int:
        if self._next is None or self._next >= self._end:
            if not self._blocks:
                self._low.set()
                raise ProducerIdsUnavailable("no producer id block reserved yet")
            block = self._blocks.popleft()
            self._next, self._end = block.start, block.stop
        pid = self._next
        self._next += 1
        if self.remaining() < BLOCK // 2:
            self._low.set()
        return pid

    async def run(self) -> None:
        while True:
            if self.remaining() < BLOCK // 2:
                try:
                    await self.reserve()
                    continue
                except MetadataUnavailable as exc:
                    log.warning("cannot reserve producer ids yet", reason=str(exc))
                    await trio.sleep(1)
                    continue
            await self._low.wait()
            self._low = trio.Event()
