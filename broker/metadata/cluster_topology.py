"""The cluster's Topology (broker/metadata/topology.py): the metadata image, changed through the metadata log.

Why this shape: in a cluster a topic may live on other brokers only, so what clients see comes
from the metadata image every broker holds (never this broker's local logs), as Kafka's handlers
ask its MetadataCache; a change is a batch of records appended to the metadata log (etcd)
conditionally on the image it was decided on (broker/metadata/cluster_mode.py), waiting while
the store is unreachable up to the request's timeout (then REQUEST_TIMED_OUT, as Kafka answers
when its controller does not answer in time). Views of the image are built once per image
(images are immutable).
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable

import trio

from protocol.errors import ErrorCode

from broker.log.manager import INTERNAL_TOPICS

from .store import MetadataUnavailable
from .topology import ZERO_UUID, BrokerNode, CatalogTopic, Endpoint, PartitionState, Rejection, TopicConfigs

if TYPE_CHECKING:
    from .cluster_mode import ClusterMetadata

DECISION_RETRIES = 10


async def while_unavailable(timeout_ms: int, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """Metadata changes wait while etcd is unreachable, up to the request's timeout (then
    MetadataUnavailable: the caller answers REQUEST_TIMED_OUT, as Kafka does when its controller
    does not answer in time)."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    while True:
        try:
            return await fn(*args)
        except MetadataUnavailable:
            if trio.current_time() + 0.25 >= deadline:
                raise
            await trio.sleep(0.25)


class _ImageViews:
    """One image's topics as CatalogTopics (by name, in name order, and by id), its brokers and
    live broker ids; the racks computed on first use."""
    __slots__ = ("image", "by_name", "by_id", "brokers", "live", "racks")

    def __init__(self, image: Any) -> None:
        self.image = image
        self.racks: dict[uuid.UUID, tuple[frozenset[str], ...]] | None = None
        self.by_name: dict[str, CatalogTopic] = {}
        self.by_id: dict[uuid.UUID, CatalogTopic] = {}
        for name in sorted(image.topics):
            t = image.topics[name]
            ct = CatalogTopic(name, uuid.UUID(t.topic_id), len(t.partitions), name in INTERNAL_TOPICS)
            self.by_name[name] = ct
            self.by_id[ct.topic_id] = ct
        self.brokers = [BrokerNode(b.id, tuple(Endpoint(e.name, e.host, e.port) for e in b.endpoints), b.rack,
                                   b.fenced, b.in_controlled_shutdown) for _, b in sorted(image.brokers.items())]
        self.live = frozenset(b.id for b in image.live_brokers())


def _state(index: int, reg: Any) -> PartitionState:
    return PartitionState(index, reg.leader, reg.leader_epoch, tuple(reg.replicas), tuple(reg.isr),
                          tuple(reg.adding_replicas), tuple(reg.removing_replicas))


class ClusterTopology:
    """The metadata image and the controller's writes."""

    def __init__(self, cluster: ClusterMetadata) -> None:
        self.cluster = cluster
        self._views: _ImageViews | None = None

    def _view(self) -> _ImageViews:
        image = self.cluster.image
        views = self._views
        if views is None or views.image is not image:
            views = self._views = _ImageViews(image)
        return views

    # -- what clients see ------------------------------------------------------------------
    @property
    def controller_id(self) -> int:
        return self.cluster.controller_id

    @property
    def is_active_controller(self) -> bool:
        return bool(self.cluster.store.is_controller)

    def brokers(self) -> Sequence[BrokerNode]:
        return self._view().brokers

    def live_broker_ids(self) -> frozenset[int]:
        return self._view().live

    def topics(self) -> Mapping[str, CatalogTopic]:
        return self._view().by_name

    def topic(self, name: str | None) -> CatalogTopic | None:
        return None if name is None else self._view().by_name.get(name)

    def topic_by_id(self, topic_id: uuid.UUID | None) -> CatalogTopic | None:
        if topic_id is None or topic_id == ZERO_UUID:
            return None
        return self._view().by_id.get(topic_id)

    def partitions(self, name: str) -> Sequence[PartitionState]:
        t = self.cluster.image.topics.get(name)
        return [] if t is None else [_state(i, reg) for i, reg in sorted(t.partitions.items())]

    def topic_configs(self, name: str) -> TopicConfigs | None:
        image = self.cluster.image
        if name not in image.topics:
            return None
        return TopicConfigs(name, dict(image.topic_configs(name)), name in INTERNAL_TOPICS)

    def partition_racks(self) -> Mapping[uuid.UUID, tuple[frozenset[str], ...]]:
        views = self._view()
        if views.racks is None:
            image = views.image
            rack_of = {b.id: b.rack for b in image.brokers.values() if b.rack}
            racks: dict[uuid.UUID, tuple[frozenset[str], ...]] = {}
            if rack_of:
                for t in image.topics.values():
                    per = tuple(frozenset(rack_of[r] for r in reg.replicas if r in rack_of)
                                for _, reg in sorted(t.partitions.items()))
                    if any(per):
                        racks[uuid.UUID(t.topic_id)] = per
            views.racks = racks
        return views.racks

    def ongoing_reassignments(self) -> Mapping[str, Mapping[int, PartitionState]]:
        from coordinator.metadata.controller import ongoing_reassignments

        return {name: {p: _state(p, reg) for p, reg in parts.items()}
                for name, parts in ongoing_reassignments(self.cluster.image).items()}

    # -- changes -----------------------------------------------------------------------------
    def place(self, partitions: int, replication_factor: int) -> list[tuple[int, ...]] | Rejection:
        return self.cluster.place(partitions, replication_factor)

    async def create_topic(self, name: str, assignments: Sequence[Sequence[int]], configs: dict[str, str],
                           timeout_ms: int) -> uuid.UUID | Rejection:
        try:
            created = await while_unavailable(timeout_ms, self.cluster.create_topic, name, assignments, configs)
        except MetadataUnavailable as exc:
            return Rejection(ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata store is unavailable: {exc}")
        return created if isinstance(created, Rejection) else uuid.UUID(created)

    async def auto_create(self, name: str) -> int:
        from .topic_creation import auto_create

        try:
            return await auto_create(self.cluster.broker, name)
        except MetadataUnavailable:   # etcd unreachable: metadata changes wait
            return ErrorCode.LEADER_NOT_AVAILABLE

    async def create_partitions(self, name: str, assignments: Sequence[Sequence[int]],
                                timeout_ms: int) -> Rejection | None:
        try:
            return await while_unavailable(timeout_ms, self.cluster.create_partitions, name, assignments)
        except MetadataUnavailable as exc:
            return Rejection(ErrorCode.REQUEST_TIMED_OUT, str(exc))

    async def delete_topics(self, names: Sequence[str], timeout_ms: int) -> dict[str, Rejection | None]:
        """One RemoveTopicRecord each; every broker drops the topic's replicas and its groups'
        offsets when its image does."""
        out: dict[str, Rejection | None] = {}
        for name in names:
            try:
                out[name] = await while_unavailable(timeout_ms, self.cluster.delete_topic, name)
            except MetadataUnavailable as exc:
                out[name] = Rejection(ErrorCode.REQUEST_TIMED_OUT, str(exc))
        return out

    async def alter_topic_configs(self, name: str, configs: dict[str, str]) -> Rejection | None:
        """The difference between the image's overrides and ``configs`` as ConfigRecords
        (value None deletes), in one batch."""
        from coordinator.metadata.records import TOPIC_RESOURCE, ConfigRecord

        current = dict(self.cluster.image.topic_configs(name))
        records = [ConfigRecord(TOPIC_RESOURCE, name, k, v) for k, v in sorted(configs.items()) if current.get(k) != v]
        records += [ConfigRecord(TOPIC_RESOURCE, name, k, None) for k in sorted(current) if k not in configs]
        if not records:
            return None
        try:
            await while_unavailable(30000, self.cluster.store.append, records)
        except MetadataUnavailable as exc:
            return Rejection(ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata store is unavailable: {exc}")
        return None

    async def elect_leader(self, topic: str, partition: int, election_type: int) -> tuple[int, str | None]:
        from coordinator.metadata.controller import elect_leaders_decision

        return await self._write_decision(lambda image: elect_leaders_decision(image, topic, partition, election_type))

    async def reassign(self, topic: str, partition: int, target: list[int] | None,
                       allow_replication_factor_change: bool) -> tuple[int, str | None]:
        from coordinator.metadata.controller import reassign_decision

        return await self._write_decision(
            lambda image: reassign_decision(image, topic, partition, target, allow_replication_factor_change))

    async def _write_decision(self, decide: Callable[[Any], Any]) -> tuple[int, str | None]:
        """One controller decision about a partition, made on the current image (it carries the
        partition epoch it was made on) and appended conditionally on that image; decided again
        on the new image when another write got in first, a bounded number of times.
        ``decide(image)`` returns a record to append, a Rejection to answer, or None (nothing to
        write: success)."""
        store = self.cluster.store
        for _ in range(DECISION_RETRIES):
            base = store.image
            decision = decide(base)
            if decision is None:
                return 0, None
            if isinstance(decision, Rejection):
                return decision.code, decision.message
            try:
                if await store.append([decision], base=base):
                    return 0, None
            except MetadataUnavailable as exc:
                return ErrorCode.REQUEST_TIMED_OUT, str(exc)
        return ErrorCode.REQUEST_TIMED_OUT, "the partition kept changing"
