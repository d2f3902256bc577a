"""The ``MetadataStore`` interface and what its implementations share: publishing.

Why an interface: a single node keeps its metadata log in a file, a cluster in etcd; the broker's
APIs, the controller and the replica manager only see this protocol:

- ``image`` (``coordinator.metadata_image.MetadataImage``): the newest image applied, immutable.
- ``subscribe(listener, initial=False)``: ``listener(old_image, new_image, delta)`` is called
  synchronously, in record order, for every batch applied (also the ones this broker wrote),
  after ``image`` was updated; with ``initial`` first once for the image as it is now. The replica manager uses ``delta.local_changes(node_id)`` to become leader/follower.
  Listeners must not block; they may start trio work of their own.
- ``await append(records, base=image, as_controller=False) -> bool``: writes one batch
  atomically and returns once this broker's image has applied it. ``base`` is the image the
  records were decided on: the write is refused (False) when a partition the batch changes has
  moved past its partition epoch in ``base``, or a topic the batch creates already exists, or a
  topic it grows, shrinks or removes changed, or (ProducerIdsRecord) ``next_producer_id`` moved,
  or (``as_controller``) this broker is no longer the active controller. Raises
  ``MetadataUnavailable`` while the store cannot be reached (metadata changes wait; nothing
  is guessed).
- ``await alter_partition(topic, partition, leader_id, leader_epoch, partition_epoch, new_isr)``
  -> the new ``PartitionRegistration`` or a ``coordinator.metadata_controller.Rejection`` with
  Kafka's error (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INVALID_REQUEST,
  INELIGIBLE_REPLICA, UNKNOWN_TOPIC_OR_PARTITION); applied with a compare of the partition epoch.
- ``controller_id`` (-1 when unknown), ``cluster_id``.
- ``await start()`` loads (replays) the log; ``run(task_status)`` keeps it current (a
  nursery task: watch, leases, election) until cancelled; ``await close()``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import structlog

from coordinator.metadata.image import MetadataDelta, MetadataImage, PartitionRegistration
from coordinator.metadata.records import MetadataRecord

if TYPE_CHECKING:  # the controller's rules load only when a partition changes (single-node start-up)
    from coordinator.metadata.controller import Rejection

log = structlog.get_logger("samsa.metadata")

Listener = Callable[[MetadataImage, MetadataImage, MetadataDelta], None]


class MetadataUnavailable(Exception):
    """The metadata store cannot be reached now; the change was not made."""


class MetadataStore(Protocol):
    image: MetadataImage
    controller_id: int
    cluster_id: str

    def subscribe(self, listener: Listener, initial: bool = False) -> None: ...

    async def start(self) -> None: ...

    async def run(self, task_status=...) -> None: ...

    async def append(self, records: Sequence[MetadataRecord], base: MetadataImage | None = None,
                     as_controller: bool = False) -> bool: ...

    async def alter_partition(self, topic: str, partition: int, leader_id: int, leader_epoch: int,
                              partition_epoch: int, new_isr: Sequence[int]) -> PartitionRegistration | Rejection: ...

    async def close(self) -> None: ...


class Publisher:
    """Applies batches to the image and tells the listeners, in order."""

    def __init__(self) -> None:
        self.image = MetadataImage()
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener, initial: bool = False) -> None:
        """Add a listener; with ``initial`` it is first called at once with
        ``(empty image, current image, delta_from_empty(current))``, so a replica manager that
        subscribes after start-up sees every partition it already hosts."""
        from coordinator.metadata.image import delta_from_empty

        self._listeners.append(listener)
        if initial:
            listener(MetadataImage(), self.image, delta_from_empty(self.image))

    def publish(self, records: Sequence[MetadataRecord], offset: int) -> MetadataDelta:
        old = self.image
        delta = MetadataDelta(old)
        for r in records:
            try:
                delta.replay(r)
            except ValueError as exc:
                # a record that cannot apply (e.g. a change for a topic deleted meanwhile) is
                # skipped everywhere alike: replay stays deterministic
                log.warning("metadata record skipped", record=type(r).__name__, reason=str(exc))
        new = delta.apply(offset)
        self.image = new
        for listener in list(self._listeners):
            try:
                listener(old, new, delta)
            except Exception:
                log.exception("metadata listener failed", listener=getattr(listener, "__qualname__", repr(listener)))
        return delta

    async def alter_partition(self, topic: str, partition: int, leader_id: int, leader_epoch: int,
                              partition_epoch: int, new_isr: Sequence[int]) -> PartitionRegistration | Rejection:
        """Shared by both stores: decide on the current image, write with the epoch compare;
        a lost race is INVALID_UPDATE_VERSION, as Kafka answers a stale partition epoch."""
        from coordinator.metadata.controller import Rejection, alter_partition
        from protocol.errors import ErrorCode

        base = self.image
        decision = alter_partition(base, topic, partition, leader_id, leader_epoch, partition_epoch, new_isr)
        if isinstance(decision, Rejection):
            return decision
        if not await self.append([decision], base=base):  # type: ignore[attr-defined]
            cur = self.image.partition(topic, partition)
            if cur is not None and cur.leader_epoch != leader_epoch:
                return Rejection(ErrorCode.FENCED_LEADER_EPOCH, "the leader epoch changed meanwhile")
            return Rejection(ErrorCode.INVALID_UPDATE_VERSION, "the partition changed meanwhile")
        old = base.partition(topic, partition)
        assert old is not None
        return old.merge(decision)  # what this write made, even if newer changes followed
