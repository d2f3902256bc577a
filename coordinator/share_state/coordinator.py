"""Kafka's share coordinator (``ShareCoordinatorShard``, KIP-932) for the share partitions hashed
onto one ``__share_group_state`` partition: a pure state machine, stepped by the five share-group
state APIs, whose state is exactly what its records say.

Per share partition (:class:`~coordinator.share.persister.SharePartitionKey`) it holds the state
of its latest ShareSnapshot with every later ShareUpdate merged in (``ShareGroupOffset``), the
highest leader epoch and state epoch seen, and how many updates followed the snapshot.

- InitializeShareGroupState writes a fresh ShareSnapshot (snapshot epoch 0, no batches) at a state
  epoch; an older state epoch than the recorded one is FENCED_STATE_EPOCH.
- WriteShareGroupState on a partition never initialized is INVALID_REQUEST ("Write operation on
  uninitialized share partition not allowed."); a leader epoch older than the recorded one is
  FENCED_LEADER_EPOCH, a state epoch older than the recorded one FENCED_STATE_EPOCH (-1 for either:
  not supplied, not checked). Otherwise it writes a ShareUpdate with the changed batches, or, once
  ``share.coordinator.snapshot.update.records.per.snapshot`` updates followed the last snapshot, a
  ShareSnapshot of the whole merged state with the next snapshot epoch (Kafka's count starts at 0
  with the first update after a snapshot read from the log, so the first snapshot comes after N+1
  updates and later ones after N, exactly as Kafka's shard counts).
- ReadShareGroupState answers the merged state; on a partition never initialized INVALID_REQUEST
  ("Read operation on uninitialized share partition not allowed."); a leader epoch older than the
  recorded one is FENCED_LEADER_EPOCH; a newer one is recorded (a ShareUpdate carrying it, Kafka's
  ``readStateAndMaybeUpdateLeaderEpoch``) so that the previous leader is fenced from then on.
- ReadShareGroupStateSummary answers state epoch, leader epoch, start offset and delivery-complete
  count (a partition never initialized: start offset -1, success, as Kafka's summary).
- DeleteShareGroupState writes the tombstone (nothing for a partition never initialized).

Records are applied by :meth:`replay` both when read from the log and right after a step produced
them, so the state after a step equals the state a reload of the log rebuilds.

Not modelled: Kafka's check of the topic partition against its metadata image is the optional
``partition_exists`` callback (UNKNOWN_TOPIC_OR_PARTITION when it says no); Kafka's cold-partition
snapshots (``share.coordinator.cold.partition.snapshot.interval.ms``) and log pruning of redundant
records (``share.coordinator.state.topic.prune.interval.ms``) are not done: the topic's retention
(``cleanup.policy=delete``) is Kafka's default and a reload replays from the log start.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from coordinator.share.persister import (UNINITIALIZED_START_OFFSET, PersisterStateBatch, ReadStateResult,
                                         SharePartitionKey, ShareState, StateSummary)
from coordinator.share_state import records as rec
from coordinator.share_state.batches import combine_state_batches
from coordinator.share_state.records import ShareGroupOffset
from coordinator.step import Step
from protocol.errors import ErrorCode

SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT = 500
DEFAULT_STATE_EPOCH = 0
DEFAULT_LEADER_EPOCH = -1

NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
WRITE_UNINITIALIZED_SHARE_PARTITION = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED_SHARE_PARTITION = "Read operation on uninitialized share partition not allowed."
FENCED_LEADER_EPOCH_MESSAGE = "The leader epoch in the request is older than the epoch on the broker."
FENCED_STATE_EPOCH_MESSAGE = "The state epoch in the request is older than the epoch of the share-partition state."
UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    """Kafka's ``ShareCoordinatorConfig``, the part the shard reads."""
    snapshot_update_records_per_snapshot: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT
    state_topic_num_partitions: int = 50

    _KAFKA_NAMES = ("share.coordinator.snapshot.update.records.per.snapshot",
                    "share.coordinator.state.topic.num.partitions")

    @classmethod
    def from_properties(cls, props: dict[str, Any]) -> ShareCoordinatorConfig:
        per = props.get("share.coordinator.snapshot.update.records.per.snapshot")
        parts = props.get("share.coordinator.state.topic.num.partitions")
        return cls(snapshot_update_records_per_snapshot=int(per) if per is not None else SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT,
                   state_topic_num_partitions=int(parts) if parts is not None else 50)


# =========================================================================== requests

@dataclass(kw_only=True, slots=True)
class _Request:
    key: SharePartitionKey
    token: Any = None


@dataclass(kw_only=True, slots=True)
class InitializeState(_Request):
    state_epoch: int
    start_offset: int


@dataclass(kw_only=True, slots=True)
class ReadState(_Request):
    leader_epoch: int


@dataclass(kw_only=True, slots=True)
class WriteState(_Request):
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[PersisterStateBatch, ...] = ()
    delivery_complete_count: int = -1


@dataclass(kw_only=True, slots=True)
class DeleteState(_Request):
    pass


@dataclass(kw_only=True, slots=True)
class ReadStateSummary(_Request):
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class StateResult:
    """The answer of InitializeShareGroupState, WriteShareGroupState and DeleteShareGroupState."""
    error_code: int
    error_message: str | None = None


ShareStateRequest = InitializeState | ReadState | WriteState | DeleteState | ReadStateSummary


@dataclass(slots=True)
class _Entry:
    state: ShareGroupOffset
    leader_epoch: int
    state_epoch: int
    updates_since_snapshot: int | None = None   # Kafka's snapshotUpdateCount (absent until an update)


class ShareCoordinator:
    """One ``__share_group_state`` partition's share coordinator (Kafka's ``ShareCoordinatorShard``);
    implements :class:`coordinator.step.Coordinator`. Construct with ``loading=True`` to answer
    COORDINATOR_LOAD_IN_PROGRESS while ``replay`` runs, then call ``load_complete``."""

    def __init__(self, config: ShareCoordinatorConfig | None = None, partition: int | None = None, *,
                 loading: bool = False, partition_exists: Callable[[uuid.UUID, int], bool] | None = None) -> None:
        self.config = config or ShareCoordinatorConfig()
        self.partition = partition
        self.loading = loading
        self._unloaded = False
        self._partition_exists = partition_exists
        self._entries: dict[SharePartitionKey, _Entry] = {}

    # -- inspection ------------------------------------------------------------------------
    def state(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        entry = self._entries.get(key)
        return entry.state if entry is not None else None

    def epochs(self, key: SharePartitionKey) -> tuple[int, int] | None:
        """(leader epoch, state epoch) recorded for ``key``."""
        entry = self._entries.get(key)
        return (entry.leader_epoch, entry.state_epoch) if entry is not None else None

    def updates_since_snapshot(self, key: SharePartitionKey) -> int | None:
        entry = self._entries.get(key)
        return entry.updates_since_snapshot if entry is not None else None

    def keys(self) -> list[SharePartitionKey]:
        return list(self._entries)

    # -- Coordinator protocol --------------------------------------------------------------
    def handle(self, request: Any, now_ms: int) -> Step:
        step = Step()
        if self.loading:
            step.complete(request.token, self.unavailable(request))
            return step
        if isinstance(request, WriteState):
            result: Any = self._write(request, now_ms, step)
        elif isinstance(request, ReadState):
            result = self._read(request, now_ms, step)
        elif isinstance(request, InitializeState):
            result = self._initialize(request, now_ms, step)
        elif isinstance(request, ReadStateSummary):
            result = self._summary(request)
        elif isinstance(request, DeleteState):
            result = self._delete(request, step)
        else:
            raise TypeError(f"not a share-coordinator request: {type(request).__name__}")
        step.complete(request.token, result)
        return step

    def tick(self, now_ms: int) -> Step:
        return Step()

    def next_deadline(self) -> int | None:
        return None

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        """The share coordinator writes no transactional records."""

    def load_complete(self, now_ms: int) -> Step:
        self.loading = False
        return Step()

    def unload(self) -> Step:
        self._entries.clear()
        self.loading = True
        self._unloaded = True
        return Step()

    @property
    def unloaded(self) -> bool:
        return self._unloaded

    def unavailable(self, request: Any, error: int | None = None) -> Any:
        err = error if error is not None else \
            ErrorCode.NOT_COORDINATOR if self._unloaded else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        err = int(err)
        if isinstance(request, ReadState):
            return ReadStateResult(err)
        if isinstance(request, ReadStateSummary):
            return StateSummary(err)
        return StateResult(err)

    # -- replay ----------------------------------------------------------------------------
    def replay(self, key: bytes, value: bytes | None, producer_id: int | None = None) -> None:
        kind = rec.key_type(key)
        if kind not in rec.RECORD_TYPES:
            return
        spk = rec.decode_key(key)
        if kind == rec.SHARE_SNAPSHOT:
            if value is None:       # DeleteShareGroupState's tombstone
                self._entries.pop(spk, None)
                return
            snap = rec.decode_snapshot(value)
            entry = self._entries.get(spk)
            if entry is None:
                self._entries[spk] = _Entry(snap, snap.leader_epoch, snap.state_epoch)
                return
            entry.state = snap
            entry.leader_epoch = max(entry.leader_epoch, snap.leader_epoch)
            entry.state_epoch = max(entry.state_epoch, snap.state_epoch)
            if entry.updates_since_snapshot is not None and \
                    entry.updates_since_snapshot >= self.config.snapshot_update_records_per_snapshot:
                entry.updates_since_snapshot = 0
            return
        if value is None:
            return
        upd = rec.decode_update(value)
        entry = self._entries.get(spk)
        if entry is None:       # an update without its snapshot (Kafka keeps it as the state)
            self._entries[spk] = _Entry(ShareGroupOffset(upd.snapshot_epoch, DEFAULT_STATE_EPOCH, upd.leader_epoch,
                                                         upd.start_offset, upd.batches, upd.delivery_complete_count),
                                        upd.leader_epoch, DEFAULT_STATE_EPOCH, 0)
            return
        cur = entry.state
        start = cur.start_offset if upd.start_offset == -1 else upd.start_offset
        entry.state = replace(
            cur, start_offset=start,
            leader_epoch=cur.leader_epoch if upd.leader_epoch == -1 else upd.leader_epoch,
            delivery_complete_count=cur.delivery_complete_count if upd.delivery_complete_count == -1
            else upd.delivery_complete_count,
            batches=combine_state_batches(cur.batches, upd.batches, start))
        entry.leader_epoch = max(entry.leader_epoch, upd.leader_epoch)
        entry.updates_since_snapshot = 0 if entry.updates_since_snapshot is None else entry.updates_since_snapshot + 1

    def _append(self, step: Step, record: rec.Record) -> None:
        step.records.append(record)
        self.replay(*record)

    # -- requests --------------------------------------------------------------------------
    def _unknown_partition(self, key: SharePartitionKey) -> bool:
        return self._partition_exists is not None and not self._partition_exists(key.topic_id, key.partition)

    def _initialize(self, req: InitializeState, now_ms: int, step: Step) -> StateResult:
        key = req.key
        if key.partition < 0:
            return StateResult(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)
        entry = self._entries.get(key)
        if entry is not None and entry.state_epoch > req.state_epoch:
            return StateResult(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE)
        if self._unknown_partition(key):
            return StateResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
        self._append(step, rec.share_snapshot(key, ShareGroupOffset(
            snapshot_epoch=0, state_epoch=req.state_epoch, leader_epoch=DEFAULT_LEADER_EPOCH,
            start_offset=req.start_offset, create_timestamp=now_ms, write_timestamp=now_ms)))
        return StateResult(ErrorCode.NONE)

    def _write(self, req: WriteState, now_ms: int, step: Step) -> StateResult:
        key = req.key
        if key.partition < 0:
            return StateResult(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)
        entry = self._entries.get(key)
        if entry is None:
            return StateResult(ErrorCode.INVALID_REQUEST, WRITE_UNINITIALIZED_SHARE_PARTITION)
        if req.leader_epoch != -1 and entry.leader_epoch > req.leader_epoch:
            return StateResult(ErrorCode.FENCED_LEADER_EPOCH, FENCED_LEADER_EPOCH_MESSAGE)
        if req.state_epoch != -1 and entry.state_epoch > req.state_epoch:
            return StateResult(ErrorCode.FENCED_STATE_EPOCH, FENCED_STATE_EPOCH_MESSAGE)
        if self._unknown_partition(key):
            return StateResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
        self._append(step, self._state_record(key, entry, req.leader_epoch, req.state_epoch, req.start_offset,
                                              req.delivery_complete_count, req.batches, now_ms))
        return StateResult(ErrorCode.NONE)

    def _state_record(self, key: SharePartitionKey, entry: _Entry, leader_epoch: int, state_epoch: int,
                      start_offset: int, delivery_complete_count: int, batches: tuple[PersisterStateBatch, ...],
                      now_ms: int) -> rec.Record:
        """Kafka's ``generateShareStateRecord``: a ShareSnapshot of the merged state once enough
        updates followed the last one, else a ShareUpdate of what changed."""
        cur = entry.state
        if (entry.updates_since_snapshot or 0) >= self.config.snapshot_update_records_per_snapshot:
            start = cur.start_offset if start_offset == -1 else start_offset
            return rec.share_snapshot(key, ShareGroupOffset(
                snapshot_epoch=cur.snapshot_epoch + 1,
                state_epoch=cur.state_epoch if state_epoch == -1 else state_epoch,
                leader_epoch=cur.leader_epoch if leader_epoch == -1 else leader_epoch,
                start_offset=start,
                batches=combine_state_batches(cur.batches, batches, start),
                delivery_complete_count=cur.delivery_complete_count if delivery_complete_count == -1
                else delivery_complete_count,
                create_timestamp=cur.create_timestamp, write_timestamp=now_ms))
        return rec.share_update(key, cur.snapshot_epoch, leader_epoch, start_offset, delivery_complete_count,
                                combine_state_batches((), batches, start_offset))

    def _read(self, req: ReadState, now_ms: int, step: Step) -> ReadStateResult:
        key = req.key
        if key.partition < 0:
            return ReadStateResult(ErrorCode.INVALID_REQUEST, error_message=NEGATIVE_PARTITION_ID)
        entry = self._entries.get(key)
        if entry is None:
            return ReadStateResult(ErrorCode.INVALID_REQUEST, error_message=READ_UNINITIALIZED_SHARE_PARTITION)
        if req.leader_epoch != -1 and entry.leader_epoch > req.leader_epoch:
            return ReadStateResult(ErrorCode.FENCED_LEADER_EPOCH, error_message=FENCED_LEADER_EPOCH_MESSAGE)
        if self._unknown_partition(key):
            return ReadStateResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
        s = entry.state
        result = ReadStateResult(ErrorCode.NONE, ShareState(
            state_epoch=s.state_epoch, start_offset=s.start_offset, leader_epoch=max(entry.leader_epoch, req.leader_epoch),
            batches=s.batches, delivery_complete_count=s.delivery_complete_count))
        if req.leader_epoch != -1 and req.leader_epoch > entry.leader_epoch:
            # the new leader's epoch is recorded: the previous leader's writes are fenced from now on
            self._append(step, self._state_record(key, entry, req.leader_epoch, -1, -1, -1, (), now_ms))
        return result

    def _summary(self, req: ReadStateSummary) -> StateSummary:
        key = req.key
        if key.partition < 0:
            return StateSummary(ErrorCode.INVALID_REQUEST, error_message=NEGATIVE_PARTITION_ID)
        entry = self._entries.get(key)
        if entry is None:
            return StateSummary(ErrorCode.NONE, state_epoch=DEFAULT_STATE_EPOCH, leader_epoch=DEFAULT_LEADER_EPOCH,
                                start_offset=UNINITIALIZED_START_OFFSET)
        if req.leader_epoch != -1 and entry.leader_epoch > req.leader_epoch:
            return StateSummary(ErrorCode.FENCED_LEADER_EPOCH, error_message=FENCED_LEADER_EPOCH_MESSAGE)
        if self._unknown_partition(key):
            return StateSummary(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=UNKNOWN_TOPIC_OR_PARTITION_MESSAGE)
        s = entry.state
        return StateSummary(ErrorCode.NONE, state_epoch=s.state_epoch, leader_epoch=entry.leader_epoch,
                            start_offset=s.start_offset, delivery_complete_count=s.delivery_complete_count)

    def _delete(self, req: DeleteState, step: Step) -> StateResult:
        key = req.key
        if key.partition < 0:
            return StateResult(ErrorCode.INVALID_REQUEST, NEGATIVE_PARTITION_ID)
        if key in self._entries:
            self._append(step, rec.share_state_tombstone(key))
        return StateResult(ErrorCode.NONE)


__all__ = ["ShareCoordinator", "ShareCoordinatorConfig", "InitializeState", "ReadState", "WriteState",
           "DeleteState", "ReadStateSummary", "StateResult", "ShareStateRequest"]
