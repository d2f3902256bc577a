"""The cluster metadata image: Kafka's ``MetadataImage`` / ``MetadataDelta``, pure replay.

Why: every broker must agree on who leads each partition, with which epochs, without asking
anyone. Each one replays the same ordered metadata records (coordinator/metadata/records.py)
from its ``MetadataStore`` (broker/metadata/) into an immutable ``MetadataImage``; a change is a
``MetadataDelta`` over the old image. Deterministic, no IO, no clock: the same records give the
same image everywhere (tests replay records by hand).

Interface (what the replica manager, the APIs and the controller use):
- ``MetadataImage``: ``brokers`` {id: BrokerRegistration}, ``topics`` {name: TopicImage},
  ``topics_by_id`` {topic_id: TopicImage}, ``configs`` {(resource_type, name): {key: value}},
  ``next_producer_id``, ``acls`` {id: AccessControlEntryRecord},
  ``scram_credentials`` {(user, mechanism): UserScramCredentialRecord}, ``offset`` (the store's
  position of the last record applied: etcd revision in a cluster, record count on a single
  node). ``image.partition(topic, p)`` -> ``PartitionRegistration | None``;
  ``image.live_brokers()`` = registered and not fenced; ``image.topic_configs(name)``.
- ``PartitionRegistration(replicas, isr, leader, leader_epoch, partition_epoch)`` (+ adding/
  removing replicas), tuples of broker ids; ``merge(PartitionChangeRecord)`` is Kafka's
  PartitionRegistration.merge.
- ``MetadataDelta(image)``: ``replay(record)`` any number of times, then ``apply(offset)`` ->
  the new image. After apply, ``delta.partition_changes`` {(topic, p): (old|None, new|None)},
  ``delta.deleted_topics`` {name: TopicImage}, ``delta.changed_brokers`` {id}, and
  ``delta.local_changes(broker_id)`` (Kafka's TopicsDelta.localChanges: the partitions this
  broker now leads, follows, or must delete) tell subscribers what happened.
- ``replay_all(image, records, offset)`` -> ``(new_image, delta)``; ``delta_from_empty(image)``
  describes a whole image as changes (for a listener subscribing after start-up).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any
from collections.abc import Callable, Iterable, Mapping

from coordinator.metadata.records import (BROKER_RESOURCE, TOPIC_RESOURCE, AccessControlEntryRecord, BrokerEndpoint, BrokerRegistrationChangeRecord, ConfigRecord, FenceBrokerRecord, MetadataRecord, NO_LEADER_CHANGE, PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, RemoveAccessControlEntryRecord, RemoveTopicRecord, RemoveUserScramCredentialRecord, TopicRecord, UnfenceBrokerRecord, UnregisterBrokerRecord, UserScramCredentialRecord)

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def _empty() -> Mapping[Any, Any]:
    return _EMPTY


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    id: int
    incarnation_id: str
    epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool = False

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        """This broker's endpoint on a listener (by name), as Metadata answers per listener."""
        return next((e for e in self.endpoints if e.name == listener), None)


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        leader, epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, epoch = change.leader, self.leader_epoch + 1
        return PartitionRegistration(
            replicas=tuple(change.replicas) if change.replicas is not None else self.replicas,
            isr=tuple(change.isr) if change.isr is not None else self.isr,
            leader=leader, leader_epoch=epoch, partition_epoch=self.partition_epoch + 1,
            removing_replicas=(tuple(change.removing_replicas) if change.removing_replicas is not None
                               else self.removing_replicas),
            adding_replicas=(tuple(change.adding_replicas) if change.adding_replicas is not None
                             else self.adding_replicas))

    def has_leader(self) -> bool:
        return self.leader >= 0


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: str
    partitions: Mapping[int, PartitionRegistration]


@dataclass(frozen=True, slots=True)
class LocalReplicaChanges:
    """Kafka's LocalReplicaChanges: what one broker must do after a delta."""
    leaders: dict[tuple[str, int], PartitionRegistration]
    followers: dict[tuple[str, int], PartitionRegistration]
    deletes: set[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class MetadataImage:
    brokers: Mapping[int, BrokerRegistration] = field(default_factory=_empty)
    topics: Mapping[str, TopicImage] = field(default_factory=_empty)
    topics_by_id: Mapping[str, TopicImage] = field(default_factory=_empty)
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=_empty)
    next_producer_id: int = 0
    acls: Mapping[str, AccessControlEntryRecord] = field(default_factory=_empty)
    scram_credentials: Mapping[tuple[str, int], UserScramCredentialRecord] = field(default_factory=_empty)
    offset: int = -1

    def partition(self, topic: str, partition: int) -> PartitionRegistration | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(partition)

    def topic(self, name: str) -> TopicImage | None:
        return self.topics.get(name)

    def live_brokers(self) -> list[BrokerRegistration]:
        """Registered, unfenced brokers, by id (the ones replicas may be placed on)."""
        return [b for _, b in sorted(self.brokers.items()) if not b.fenced]

    def topic_configs(self, name: str) -> Mapping[str, str]:
        return self.configs.get((TOPIC_RESOURCE, name), _EMPTY)

    def broker_configs(self, broker_id: int | None = None) -> Mapping[str, str]:
        """Dynamic broker configs: per broker ('<id>') or cluster-wide default ('')."""
        return self.configs.get((BROKER_RESOURCE, "" if broker_id is None else str(broker_id)), _EMPTY)


class MetadataDelta:
    """Changes over one image; copy-on-write, so the base image is never touched."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._brokers: dict[int, BrokerRegistration] | None = None
        self._topics: dict[str, TopicImage] | None = None
        self._parts: dict[str, dict[int, PartitionRegistration]] = {}   # topic_id -> changed partition maps
        self._names: dict[str, str] = {}                                  # topic_id -> name (new topics)
        self._configs: dict[tuple[int, str], dict[str, str]] | None = None
        self._acls: dict[str, AccessControlEntryRecord] | None = None
        self._scram: dict[tuple[str, int], UserScramCredentialRecord] | None = None
        self._next_pid = image.next_producer_id
        self.partition_changes: dict[tuple[str, int], tuple[PartitionRegistration | None,
                                                            PartitionRegistration | None]] = {}
        self.deleted_topics: dict[str, TopicImage] = {}
        self.created_topics: set[str] = set()
        self.changed_brokers: set[int] = set()
        self.changed_configs: set[tuple[int, str]] = set()
        self.acls_changed = False
        self.scram_changed = False

    # -- copy-on-write accessors ---------------------------------------------------------
    def _brokers_w(self) -> dict[int, BrokerRegistration]:
        if self._brokers is None:
            self._brokers = dict(self.image.brokers)
        return self._brokers

    def _topics_w(self) -> dict[str, TopicImage]:
        if self._topics is None:
            self._topics = dict(self.image.topics)
        return self._topics

    def _topic_by_id(self, topic_id: str) -> TopicImage | None:
        topics = self._topics if self._topics is not None else self.image.topics
        name = self._names.get(topic_id)
        if name is not None:
            return topics.get(name)
        t = self.image.topics_by_id.get(topic_id)
        return None if t is None or topics.get(t.name) is None else topics[t.name]

    def _parts_w(self, topic: TopicImage) -> dict[int, PartitionRegistration]:
        parts = self._parts.get(topic.topic_id)
        if parts is None:
            parts = self._parts[topic.topic_id] = dict(topic.partitions)
        return parts

    # -- replay -----------------------------------------------------------------------------
    def replay(self, record: MetadataRecord) -> None:
        handler = _HANDLERS.get(type(record))
        if handler is None:
            raise ValueError(f"cannot replay {type(record).__name__}")
        handler(self, record)

    def _register(self, r: RegisterBrokerRecord) -> None:
        self._brokers_w()[r.broker_id] = BrokerRegistration(id=r.broker_id, incarnation_id=r.incarnation_id,
                                                            epoch=r.broker_epoch, endpoints=tuple(r.end_points),
                                                            rack=r.rack, fenced=r.fenced,
                                                            in_controlled_shutdown=r.in_controlled_shutdown)
        self.changed_brokers.add(r.broker_id)

    def _unregister(self, r: UnregisterBrokerRecord) -> None:
        b = self._brokers_w().get(r.broker_id)
        if b is not None and b.epoch == r.broker_epoch:
            del self._brokers_w()[r.broker_id]
            self.changed_brokers.add(r.broker_id)

    def _set_broker(self, broker_id: int, epoch: int, fenced: bool | None, shutdown: bool | None) -> None:
        b = self._brokers_w().get(broker_id)
        if b is None or b.epoch != epoch:
            return  # a record for an older incarnation: Kafka rejects it before it is written
        self._brokers_w()[broker_id] = replace(
            b, fenced=b.fenced if fenced is None else fenced,
            in_controlled_shutdown=b.in_controlled_shutdown if shutdown is None else shutdown)
        self.changed_brokers.add(broker_id)

    def _fence(self, r: FenceBrokerRecord) -> None:
        self._set_broker(r.id, r.epoch, True, None)

    def _unfence(self, r: UnfenceBrokerRecord) -> None:
        self._set_broker(r.id, r.epoch, False, None)

    def _broker_change(self, r: BrokerRegistrationChangeRecord) -> None:
        self._set_broker(r.broker_id, r.broker_epoch, r.fenced, r.in_controlled_shutdown)

    def _topic(self, r: TopicRecord) -> None:
        topics = self._topics_w()
        topics[r.name] = TopicImage(r.name, r.topic_id, _EMPTY)
        self._names[r.topic_id] = r.name
        self._parts[r.topic_id] = {}
        self.created_topics.add(r.name)
        self.deleted_topics.pop(r.name, None)

    def _remove_topic(self, r: RemoveTopicRecord) -> None:
        t = self._topic_by_id(r.topic_id)
        if t is None:
            return
        old_parts = self._parts.pop(r.topic_id, t.partitions)
        del self._topics_w()[t.name]
        self._names.pop(r.topic_id, None)
        self.created_topics.discard(t.name)
        self.deleted_topics[t.name] = TopicImage(t.name, t.topic_id, MappingProxyType(dict(old_parts)))
        for p, reg in old_parts.items():
            old = self.partition_changes.get((t.name, p), (reg, None))[0]
            self.partition_changes[(t.name, p)] = (old, None)
        if self._configs is None:
            self._configs = {k: dict(v) for k, v in self.image.configs.items()}
        if self._configs.pop((TOPIC_RESOURCE, t.name), None) is not None:
            self.changed_configs.add((TOPIC_RESOURCE, t.name))

    def _partition(self, r: PartitionRecord) -> None:
        t = self._topic_by_id(r.topic_id)
        if t is None:
            raise ValueError(f"PartitionRecord for unknown topic id {r.topic_id}")
        reg = PartitionRegistration(replicas=tuple(r.replicas), isr=tuple(r.isr), leader=r.leader,
                                    leader_epoch=r.leader_epoch, partition_epoch=r.partition_epoch,
                                    removing_replicas=tuple(r.removing_replicas),
                                    adding_replicas=tuple(r.adding_replicas))
        self._set_partition(t, r.partition_id, reg)

    def _partition_change(self, r: PartitionChangeRecord) -> None:
        t = self._topic_by_id(r.topic_id)
        if t is None:
            raise ValueError(f"PartitionChangeRecord for unknown topic id {r.topic_id}")
        parts = self._parts_w(t)
        cur = parts.get(r.partition_id)
        if cur is None:
            raise ValueError(f"PartitionChangeRecord for unknown partition {t.name}-{r.partition_id}")
        self._set_partition(t, r.partition_id, cur.merge(r))

    def _set_partition(self, t: TopicImage, p: int, reg: PartitionRegistration) -> None:
        parts = self._parts_w(t)
        key = (t.name, p)
        old = self.partition_changes[key][0] if key in self.partition_changes else parts.get(p)
        parts[p] = reg
        self.partition_changes[key] = (old, reg)

    def _config(self, r: ConfigRecord) -> None:
        if self._configs is None:
            self._configs = {k: dict(v) for k, v in self.image.configs.items()}
        key = (r.resource_type, r.resource_name)
        entries = self._configs.setdefault(key, {})
        if r.value is None:
            entries.pop(r.name, None)
            if not entries:
                del self._configs[key]
        else:
            entries[r.name] = r.value
        self.changed_configs.add(key)

    def _producer_ids(self, r: ProducerIdsRecord) -> None:
        self._next_pid = max(self._next_pid, r.next_producer_id)

    def _acl(self, r: AccessControlEntryRecord) -> None:
        if self._acls is None:
            self._acls = dict(self.image.acls)
        self._acls[r.id] = r
        self.acls_changed = True

    def _remove_acl(self, r: RemoveAccessControlEntryRecord) -> None:
        if self._acls is None:
            self._acls = dict(self.image.acls)
        self._acls.pop(r.id, None)
        self.acls_changed = True

    def _scram_put(self, r: UserScramCredentialRecord) -> None:
        if self._scram is None:
            self._scram = dict(self.image.scram_credentials)
        self._scram[(r.name, r.mechanism)] = r
        self.scram_changed = True

    def _scram_remove(self, r: RemoveUserScramCredentialRecord) -> None:
        if self._scram is None:
            self._scram = dict(self.image.scram_credentials)
        self._scram.pop((r.name, r.mechanism), None)
        self.scram_changed = True

    # -- result -----------------------------------------------------------------------------
    def apply(self, offset: int | None = None) -> MetadataImage:
        img = self.image
        topics = img.topics
        by_id = img.topics_by_id
        if self._topics is not None or self._parts:
            new_topics = dict(self._topics if self._topics is not None else img.topics)
            for topic_id, parts in self._parts.items():
                name = self._names.get(topic_id) or (by_id[topic_id].name if topic_id in by_id else None)
                if name is None or name not in new_topics:
                    continue
                new_topics[name] = TopicImage(name, topic_id, MappingProxyType(parts))
            topics = MappingProxyType(new_topics)
            by_id = MappingProxyType({t.topic_id: t for t in new_topics.values()})
        return MetadataImage(
            brokers=MappingProxyType(self._brokers) if self._brokers is not None else img.brokers,
            topics=topics, topics_by_id=by_id,
            configs=(MappingProxyType({k: MappingProxyType(v) for k, v in self._configs.items()})
                     if self._configs is not None else img.configs),
            next_producer_id=self._next_pid,
            acls=MappingProxyType(self._acls) if self._acls is not None else img.acls,
            scram_credentials=MappingProxyType(self._scram) if self._scram is not None else img.scram_credentials,
            offset=img.offset if offset is None else offset)

    def local_changes(self, broker_id: int) -> LocalReplicaChanges:
        """Partitions this broker now leads or follows (new or changed registrations that name it
        as a replica), and those it must delete (topic removed, or no longer a replica)."""
        leaders: dict[tuple[str, int], PartitionRegistration] = {}
        followers: dict[tuple[str, int], PartitionRegistration] = {}
        deletes: set[tuple[str, int]] = set()
        for key, (old, new) in self.partition_changes.items():
            if new is None or broker_id not in new.replicas:
                if old is not None and broker_id in old.replicas:
                    deletes.add(key)
                continue
            if new.leader == broker_id:
                leaders[key] = new
            else:
                followers[key] = new
        return LocalReplicaChanges(leaders, followers, deletes)


_HANDLERS: dict[type, Callable[[MetadataDelta, Any], None]] = {
    RegisterBrokerRecord: MetadataDelta._register,
    UnregisterBrokerRecord: MetadataDelta._unregister,
    FenceBrokerRecord: MetadataDelta._fence,
    UnfenceBrokerRecord: MetadataDelta._unfence,
    BrokerRegistrationChangeRecord: MetadataDelta._broker_change,
    TopicRecord: MetadataDelta._topic,
    RemoveTopicRecord: MetadataDelta._remove_topic,
    PartitionRecord: MetadataDelta._partition,
    PartitionChangeRecord: MetadataDelta._partition_change,
    ConfigRecord: MetadataDelta._config,
    ProducerIdsRecord: MetadataDelta._producer_ids,
    AccessControlEntryRecord: MetadataDelta._acl,
    RemoveAccessControlEntryRecord: MetadataDelta._remove_acl,
    UserScramCredentialRecord: MetadataDelta._scram_put,
    RemoveUserScramCredentialRecord: MetadataDelta._scram_remove,
}


def delta_from_empty(image: MetadataImage) -> MetadataDelta:
    """A delta that describes ``image`` as built from nothing: every partition, broker and
    topic is new. What a listener that subscribes late is first given."""
    delta = MetadataDelta(MetadataImage())
    for t in image.topics.values():
        delta.created_topics.add(t.name)
        for p, reg in t.partitions.items():
            delta.partition_changes[(t.name, p)] = (None, reg)
    delta.changed_brokers.update(image.brokers)
    delta.changed_configs.update(image.configs)
    delta.acls_changed = bool(image.acls)
    delta.scram_changed = bool(image.scram_credentials)
    return delta


def replay_all(image: MetadataImage, records: Iterable[MetadataRecord],
               offset: int | None = None) -> tuple[MetadataImage, MetadataDelta]:
    delta = MetadataDelta(image)
    for r in records:
        delta.replay(r)
    return delta.apply(offset), delta


__all__ = ["BrokerRegistration", "PartitionRegistration", "TopicImage", "MetadataImage", "MetadataDelta",
           "LocalReplicaChanges", "replay_all",
           "delta_from_empty"]
