"""Committed offsets of the groups on one ``__consumer_offsets`` partition (Kafka's OffsetMetadataManager).

This module knows storage and the per-partition semantics of OffsetCommit, TxnOffsetCommit,
OffsetFetch, OffsetDelete and offset expiry; whether a request may touch a group at all (generation, member,
group state) is membership logic and lives in :mod:`coordinator.group`. Every mutation returns the
``(key, value)`` records that make it durable, so replaying those records rebuilds the same store.

Transactional offsets (TxnOffsetCommit) stay pending per (group, producer id) until the producer's
COMMIT marker reaches this partition (``complete_transaction``) and are dropped on ABORT. As in
Kafka, a pending offset only replaces the committed one if its record came later in the log, so
every offset remembers its position in the log order (``_order``, a counter that advances with
each record this store produces or replays).
"""
from __future__ import annotations

from protocol.errors import ErrorCode
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


from coordinator.group.offsets_records import OffsetCommitValue, offset_commit_record, offset_commit_record_of

Record = tuple[bytes, "bytes | None"]

NO_ERROR = 0
INVALID_OFFSET = -1
NO_LEADER_EPOCH = -1
DEFAULT_RETENTION_TIME = -1   # OffsetCommitRequest.DEFAULT_RETENTION_TIME: use the broker's retention


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed offset as Kafka keeps it in memory."""
    committed_offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None

    def to_value(self) -> OffsetCommitValue:
        return OffsetCommitValue(
            offset=self.committed_offset,
            metadata=self.metadata,
            commit_timestamp=self.commit_timestamp_ms,
            leader_epoch=NO_LEADER_EPOCH if self.leader_epoch is None else self.leader_epoch,
            expire_timestamp=-1 if self.expire_timestamp_ms is None else self.expire_timestamp_ms,
        )

    @classmethod
    def from_value(cls, value: OffsetCommitValue) -> OffsetAndMetadata:
        return cls(
            committed_offset=value.offset,
            leader_epoch=None if value.leader_epoch < 0 else value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
            expire_timestamp_ms=None if value.expire_timestamp == -1 else value.expire_timestamp,
        )


_new = object.__new__
_slots = vars(OffsetAndMetadata)   # its fields' slot descriptors
_set_offset, _set_epoch, _set_metadata, _set_commit_ts, _set_expire_ts = (
    _slots[name].__set__ for name in ("committed_offset", "leader_epoch", "metadata", "commit_timestamp_ms",
                                      "expire_timestamp_ms"))


def _offset_and_metadata(committed_offset: int, leader_epoch: int | None, metadata: str, commit_timestamp_ms: int,
                         expire_timestamp_ms: int | None) -> OffsetAndMetadata:
    """``OffsetAndMetadata(...)`` through its slots: a frozen dataclass's ``__init__`` sets each
    field through ``object.__setattr__`` by name (~2.4 us here, against ~1), and every
    committed partition makes one (issue 23). The same object: equal, hashable, still frozen."""
    o = _new(OffsetAndMetadata)
    _set_offset(o, committed_offset)
    _set_epoch(o, leader_epoch)
    _set_metadata(o, metadata)
    _set_commit_ts(o, commit_timestamp_ms)
    _set_expire_ts(o, expire_timestamp_ms)
    return o


# --------------------------------------------------------------------------- request parts

@dataclass(slots=True)
class OffsetCommitPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = NO_LEADER_EPOCH
    committed_metadata: str | None = None


@dataclass(slots=True)
class OffsetCommitTopic:
    name: str
    partitions: list[OffsetCommitPartition] = field(default_factory=list)


@dataclass(slots=True)
class TopicPartitions:
    """A topic and partition indexes, as OffsetFetch and OffsetDelete name them."""
    name: str
    partitions: list[int] = field(default_factory=list)


# --------------------------------------------------------------------------- result parts

@dataclass(slots=True)
class PartitionError:
    partition_index: int
    error_code: int = NO_ERROR


@dataclass(slots=True)
class TopicPartitionErrors:
    name: str
    partitions: list[PartitionError] = field(default_factory=list)


@dataclass(slots=True)
class OffsetFetchPartition:
    partition_index: int
    committed_offset: int = INVALID_OFFSET
    committed_leader_epoch: int = NO_LEADER_EPOCH
    metadata: str | None = ""
    error_code: int = NO_ERROR


@dataclass(slots=True)
class OffsetFetchTopic:
    name: str
    partitions: list[OffsetFetchPartition] = field(default_factory=list)


def errors_for_all(topics: Iterable[OffsetCommitTopic], error_code: int) -> list[TopicPartitionErrors]:
    """The same error for every partition of a commit (a group-level rejection)."""
    return [TopicPartitionErrors(t.name, [PartitionError(p.partition_index, error_code)
                                          for p in t.partitions]) for t in topics]


def utf16_length(s: str) -> int:
    """Java's ``String.length`` (UTF-16 code units), which Kafka compares with offset.metadata.max.bytes."""
    if s.isascii():   # nearly every commit's metadata (most often ""): one code unit a character
        return len(s)
    return len(s.encode("utf-16-le")) // 2


class OffsetStore:
    """Committed offsets by group, then (topic, partition); insertion-ordered for stable output."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        # log order of each committed offset's record, and transactional offsets not yet committed:
        # group -> producer id -> (topic, partition) -> (offset, log order)
        self._order: dict[str, dict[tuple[str, int], int]] = {}
        self._pending_txn: dict[str, dict[int, dict[tuple[str, int], tuple[OffsetAndMetadata, int]]]] = {}
        self._seq = itertools.count()

    # ----------------------------------------------------------------- plain access

    def group_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        """A copy of the group's offsets."""
        return dict(self._offsets.get(group_id, {}))

    def has_offsets(self, group_id: str) -> bool:
        return bool(self._offsets.get(group_id))

    def put(self, group_id: str, topic: str, partition: int, oam: OffsetAndMetadata,
            order: int | None = None) -> None:
        """Store a committed offset; ``order`` is its record's log position (default: a new
        record, after every other)."""
        tp = (topic, partition)
        offsets = self._offsets.get(group_id)
        if offsets is None:
            offsets = self._offsets[group_id] = {}
        offsets[tp] = oam
        orders = self._order.get(group_id)
        if orders is None:
            orders = self._order[group_id] = {}
        orders[tp] = next(self._seq) if order is None else order

    def remove(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        offsets = self._offsets.get(group_id)
        if offsets is None:
            return None
        removed = offsets.pop((topic, partition), None)
        self._order.get(group_id, {}).pop((topic, partition), None)
        if not offsets:
            del self._offsets[group_id]
            self._order.pop(group_id, None)
        return removed

    # ----------------------------------------------------------------- transactional offsets

    def put_pending(self, group_id: str, producer_id: int, topic: str, partition: int,
                    oam: OffsetAndMetadata) -> None:
        """A transactional offset record (written by TxnOffsetCommit, or replayed)."""
        self._pending_txn.setdefault(group_id, {}).setdefault(producer_id, {})[(topic, partition)] = \
            (oam, next(self._seq))

    def has_pending(self, group_id: str) -> bool:
        return bool(self._pending_txn.get(group_id))

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in offs for offs in self._pending_txn.get(group_id, {}).values())

    def complete_transaction(self, producer_id: int, commit: bool) -> list[str]:
        """The producer's COMMIT/ABORT marker reached this partition: its pending offsets become
        committed (unless a later record already committed that partition) or are dropped.
        Returns the groups that had pending offsets from it."""
        touched = []
        for group_id in list(self._pending_txn):
            by_producer = self._pending_txn[group_id]
            pending = by_producer.pop(producer_id, None)
            if pending is None:
                continue
            touched.append(group_id)
            if not by_producer:
                del self._pending_txn[group_id]
            if not commit:
                continue
            order = self._order.get(group_id, {})
            for (topic, partition), (oam, seq) in pending.items():
                current = order.get((topic, partition))
                if current is None or current < seq:
                    self.put(group_id, topic, partition, oam, seq)
        return touched

    def txn_commit(self, group_id: str, producer_id: int, topics: list[OffsetCommitTopic], now_ms: int,
                   metadata_max_bytes: int = 4096) -> tuple[list[TopicPartitionErrors], list[Record]]:
        """Store an already-validated TxnOffsetCommit as pending offsets of ``producer_id``; the
        records go in a transactional batch of that producer (the caller's business)."""
        return self._store(group_id, topics, now_ms, metadata_max_bytes, None,
                           lambda group_id, topic, partition, oam: self.put_pending(group_id, producer_id, topic,
                                                                                    partition, oam))

    def _drop_pending(self, group_id: str, tps: Iterable[tuple[str, int]]) -> None:
        """Kafka's removeOffsets also forgets pending transactional offsets of those partitions."""
        by_producer = self._pending_txn.get(group_id)
        if not by_producer:
            return
        tps = set(tps)
        for pid in list(by_producer):
            for tp in tps:
                by_producer[pid].pop(tp, None)
            if not by_producer[pid]:
                del by_producer[pid]
        if not by_producer:
            del self._pending_txn[group_id]

    # ----------------------------------------------------------------- OffsetCommit

    def commit(self, group_id: str, topics: list[OffsetCommitTopic], now_ms: int,
               retention_time_ms: int = DEFAULT_RETENTION_TIME,
               metadata_max_bytes: int = 4096) -> tuple[list[TopicPartitionErrors], list[Record]]:
        """Store an already-validated commit. Partitions whose metadata exceeds
        ``offset.metadata.max.bytes`` get OFFSET_METADATA_TOO_LARGE and are not stored; a null
        metadata is stored as the empty string; a retention time (OffsetCommit v2-v4) becomes an
        explicit expire timestamp."""
        expire = None if retention_time_ms == DEFAULT_RETENTION_TIME else now_ms + retention_time_ms
        return self._store(group_id, topics, now_ms, metadata_max_bytes, expire, self.put)

    @staticmethod
    def _store(group_id: str, topics: list[OffsetCommitTopic], now_ms: int, metadata_max_bytes: int,
               expire: int | None, store: Callable[[str, str, int, OffsetAndMetadata], None],
               ) -> tuple[list[TopicPartitionErrors], list[Record]]:
        """What OffsetCommit and TxnOffsetCommit share: the metadata size check, the stored
        form of each offset and its __consumer_offsets record; ``store(group_id, topic,
        partition, offset)`` says where it goes."""
        results: list[TopicPartitionErrors] = []
        records: list[Record] = []
        expire_timestamp = -1 if expire is None else expire
        for topic in topics:
            name = topic.name
            parts: list[PartitionError] = []
            results.append(TopicPartitionErrors(name, parts))
            for p in topic.partitions:
                index = p.partition_index
                metadata = p.committed_metadata
                if metadata is None:
                    metadata = ""
                elif utf16_length(metadata) > metadata_max_bytes:
                    parts.append(PartitionError(index, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                    continue
                epoch = p.committed_leader_epoch
                if epoch < 0:
                    epoch = NO_LEADER_EPOCH
                store(group_id, name, index, _offset_and_metadata(
                    p.committed_offset, None if epoch == NO_LEADER_EPOCH else epoch, metadata, now_ms, expire))
                # the record of the stored offset's to_value()
                records.append(offset_commit_record_of(group_id, name, index, p.committed_offset, epoch, metadata,
                                                       now_ms, expire_timestamp))
                parts.append(PartitionError(index, NO_ERROR))
        return results, records

    # ----------------------------------------------------------------- OffsetFetch

    def fetch(self, group_id: str, topics: list[TopicPartitions] | None,
              group_exists: bool = True, require_stable: bool = False) -> list[OffsetFetchTopic]:
        """Offsets for the named partitions (-1, epoch -1, metadata "" where none is committed,
        as Kafka answers), or every committed offset of the group when ``topics`` is None. With
        ``require_stable`` a partition with a pending transactional offset answers
        UNSTABLE_OFFSET_COMMIT (the client retries until the transaction completes)."""
        offsets = self._offsets.get(group_id, {}) if group_exists else {}
        unstable = require_stable and group_exists and self.has_pending(group_id)

        def fetched(topic: str, partition: int) -> OffsetFetchPartition:
            if unstable and self.is_pending(group_id, topic, partition):
                return OffsetFetchPartition(partition_index=partition, committed_offset=INVALID_OFFSET,
                                            committed_leader_epoch=NO_LEADER_EPOCH, metadata="",
                                            error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT)
            return self._fetched(partition, offsets.get((topic, partition)))

        if topics is None:
            by_topic: dict[str, list[OffsetFetchPartition]] = {}
            for (topic, partition) in sorted(offsets):
                by_topic.setdefault(topic, []).append(fetched(topic, partition))
            return [OffsetFetchTopic(name, parts) for name, parts in by_topic.items()]
        out = []
        for t in topics:
            out.append(OffsetFetchTopic(t.name, [fetched(t.name, p) for p in t.partitions]))
        return out

    @staticmethod
    def _fetched(partition: int, oam: OffsetAndMetadata | None) -> OffsetFetchPartition:
        if oam is None:
            return OffsetFetchPartition(partition_index=partition, committed_offset=INVALID_OFFSET,
                                        committed_leader_epoch=NO_LEADER_EPOCH, metadata="", error_code=NO_ERROR)
        return OffsetFetchPartition(
            partition_index=partition, committed_offset=oam.committed_offset,
            committed_leader_epoch=NO_LEADER_EPOCH if oam.leader_epoch is None else oam.leader_epoch,
            metadata=oam.metadata, error_code=NO_ERROR)

    # ----------------------------------------------------------------- OffsetDelete / DeleteGroups

    def delete(self, group_id: str, topics: list[TopicPartitions],
               is_subscribed: Callable[[str], bool]) -> tuple[list[TopicPartitionErrors], list[Record]]:
        """Kafka's OffsetDelete per topic: a topic the group is subscribed to answers
        GROUP_SUBSCRIBED_TO_TOPIC for each partition; otherwise each partition answers NONE and a
        tombstone is written only where an offset exists."""
        results: list[TopicPartitionErrors] = []
        records: list[Record] = []
        for t in topics:
            tres = TopicPartitionErrors(t.name)
            results.append(tres)
            if is_subscribed(t.name):
                tres.partitions = [PartitionError(p, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
                                   for p in t.partitions]
                continue
            for p in t.partitions:
                tres.partitions.append(PartitionError(p, NO_ERROR))
                self._drop_pending(group_id, [(t.name, p)])
                if self.remove(group_id, t.name, p) is not None:
                    records.append(offset_commit_record(group_id, t.name, p, None))
        return results, records

    def delete_all(self, group_id: str) -> list[Record]:
        """Tombstones for every offset of the group (DeleteGroups), removing them (and any
        pending transactional offsets)."""
        offsets = self._offsets.pop(group_id, {})
        self._order.pop(group_id, None)
        self._pending_txn.pop(group_id, None)
        return [offset_commit_record(group_id, topic, partition, None) for (topic, partition) in offsets]

    def topics(self) -> set[str]:
        """Every topic some group has an offset for (committed or pending in a transaction)."""
        out = {t for by_tp in self._offsets.values() for t, _ in by_tp}
        out.update(t for by_pid in self._pending_txn.values() for by in by_pid.values() for t, _ in by)
        return out

    def delete_topics(self, topics: set[str]) -> list[Record]:
        """Kafka's onPartitionsDeleted: the offsets of deleted topics go from every group, with
        tombstones for the committed ones; pending transactional offsets for them are dropped."""
        records: list[Record] = []
        for gid in list(self._offsets):
            for topic, partition in [tp for tp in self._offsets[gid] if tp[0] in topics]:
                self.remove(gid, topic, partition)
                records.append(offset_commit_record(gid, topic, partition, None))
        for gid in list(self._pending_txn):
            self._drop_pending(gid, [tp for by in self._pending_txn[gid].values() for tp in by if tp[0] in topics])
        return records

    # ----------------------------------------------------------------- expiry

    def expire(self, group_id: str, base_timestamp: Callable[[OffsetAndMetadata], int],
               is_subscribed: Callable[[str], bool], now_ms: int,
               retention_ms: int) -> tuple[list[Record], bool]:
        """Kafka's cleanupExpiredOffsets: drop offsets of topics the group is not subscribed to whose
        explicit expire timestamp has passed, or, without one, whose base timestamp (commit time, or
        the time the group became Empty) is at least ``retention_ms`` old. Returns the tombstones and
        whether no offset is left."""
        offsets = self._offsets.get(group_id)
        if not offsets:
            return [], True
        records: list[Record] = []
        all_expired = True
        for (topic, partition), oam in list(offsets.items()):
            if is_subscribed(topic):
                all_expired = False
                continue
            if oam.expire_timestamp_ms is not None:
                expired = now_ms >= oam.expire_timestamp_ms
            else:
                expired = now_ms - base_timestamp(oam) >= retention_ms
            if expired:
                self.remove(group_id, topic, partition)
                records.append(offset_commit_record(group_id, topic, partition, None))
            else:
                all_expired = False
        return records, all_expired
