"""KIP-932 share-partition state: which records of one topic partition a share group has handed
out, to whom, how often, and what came back (Kafka's SharePartition.java), plus the share
sessions of ShareFetch/ShareAcknowledge (Kafka's ShareSessionCache). Pure: time is injected and
records are seen only as batch extents ``(base_offset, last_offset, is_control)``.

- The share-partition start offset (SPSO) is the first offset not yet delivery-complete; the end
  offset is the next offset never acquired. Records in between are *in flight*, one state each:
  AVAILABLE, ACQUIRED (by a member, with an acquisition lock that ends at a deadline),
  ACKNOWLEDGED or ARCHIVED. Their number is bounded by ``group.share.partition.max.record.locks``.
- Acquiring takes AVAILABLE in-flight records first, then new records up to the high watermark
  (the last stable offset for a read_committed group), whole batches at a time (the record limit
  may be exceeded to finish a batch, as Kafka's batch-optimised mode does; the record_limit acquire
  mode of KIP-1206 splits the batch instead); each acquisition increments the delivery count. Control batches
  (transaction markers) are archived, offsets missing from the log (compaction) skipped: never
  delivered. Work is bounded by the in-flight records, never by offset distances.
- ACCEPT acknowledges; RELEASE makes the record AVAILABLE again; REJECT and GAP archive it; RENEW
  (KIP-1222) extends the member's acquisition lock by the lock duration from now. A
  record whose lock expires is released; released records that reached
  ``group.share.delivery.count.limit`` deliveries are archived instead. Acknowledging a record not
  ACQUIRED by that member (e.g. after its lock expired) is INVALID_RECORD_STATE, as in Kafka.
- Lock expiry is evaluated lazily at ``now`` whenever the partition is touched (no timers).

Persisted as Kafka's SharePartition persists it (the flow is broker/coordinator_runtime/share_runtime.py,
through a ``Persister``, coordinator/share/persister.py): a leader rebuilds a partition from its
persisted state (:meth:`SharePartition.from_state`), and writes the records whose state or delivery
count changed since the last write (:meth:`SharePartition.dirty_batches`). Acquiring writes nothing
(Kafka's ``acquire`` does not call the persister): an ACQUIRED record keeps its last persisted form,
so after a restart or a leader change it is AVAILABLE again with the delivery count of its last
release (a first delivery that was never acknowledged comes back with delivery count 1).
Acknowledgements are planned on copies (:meth:`SharePartition.plan_acknowledge`) and applied only
once written (:meth:`SharePartition.apply_planned`), Kafka's "ongoing state transition": while the
write is under way the records stay ACQUIRED, so nothing re-acquires them and a failed write has
nothing to roll back.
"""
from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from coordinator.share.persister import PersisterStateBatch, ShareState
from protocol.errors import ErrorCode


NONE = 0
INVALID_REQUEST: int = ErrorCode.INVALID_REQUEST
INVALID_RECORD_STATE: int = ErrorCode.INVALID_RECORD_STATE
SHARE_SESSION_NOT_FOUND: int = ErrorCode.SHARE_SESSION_NOT_FOUND
INVALID_SHARE_SESSION_EPOCH: int = ErrorCode.INVALID_SHARE_SESSION_EPOCH

INITIAL_SESSION_EPOCH = 0
FINAL_SESSION_EPOCH = -1


class RecordState(IntEnum):
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4       # KIP-1222 (ShareFetch/ShareAcknowledge v2): extend the acquisition lock


class ShareAcquireMode(IntEnum):
    """KIP-1206 (ShareFetch v2's ShareAcquireMode, the client's ``share.acquire.mode``)."""
    BATCH_OPTIMIZED = 0     # whole batches: MaxRecords may be exceeded to finish a batch
    RECORD_LIMIT = 1        # never more than MaxRecords records, a batch is split


@dataclass(slots=True)
class InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class Acquisition:
    ranges: tuple[AcquiredRange, ...]
    batches: tuple[int, ...]       # indexes of the given batches that hold an acquired record


@dataclass
class SharePartition:
    start_offset: int
    lock_duration_ms: int = 30000
    delivery_count_limit: int = 5
    max_record_locks: int = 2000
    end_offset: int = -1
    records: dict[int, InFlight] = field(default_factory=dict)
    # what the persister holds: (delivery state, delivery count) per in-flight offset, and the start offset
    persisted: dict[int, tuple[int, int]] = field(default_factory=dict)
    persisted_start: int = -1

    def __post_init__(self) -> None:
        if self.end_offset < self.start_offset:
            self.end_offset = self.start_offset

    # -- time -------------------------------------------------------------------------------------
    def expire_locks(self, now_ms: int) -> int:
        """Release every record whose acquisition lock ended; returns how many."""
        expired = [r for r in self.records.values() if r.state == RecordState.ACQUIRED and r.deadline_ms <= now_ms]
        for r in expired:
            self._release(r)
        if expired:
            self._advance_start()
        return len(expired)

    def _release(self, r: InFlight) -> None:
        r.state = RecordState.ARCHIVED if r.delivery_count >= self.delivery_count_limit else RecordState.AVAILABLE
        r.member_id = None
        r.deadline_ms = 0

    def _advance_start(self) -> None:
        """Move the start past delivery-complete records and offsets the log does not hold (gaps
        are jumped, never walked: a compacted log may skip billions of offsets)."""
        while self.start_offset < self.end_offset:
            r = self.records.get(self.start_offset)
            if r is None:
                later = [off for off in self.records if off > self.start_offset]
                self.start_offset = min(later) if later else self.end_offset
                continue
            if r.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1

    def move_start(self, offset: int) -> None:
        """The log start moved past records (retention, DeleteRecords): they are gone."""
        if offset <= self.start_offset:
            return
        for off in [off for off in self.records if off < offset]:
            del self.records[off]
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)

    # -- fetch ------------------------------------------------------------------------------------
    def next_fetch_offset(self, now_ms: int) -> int:
        """Where a fetch must start reading: the first AVAILABLE in-flight record, else the end."""
        self.expire_locks(now_ms)
        available = [off for off, r in self.records.items() if r.state == RecordState.AVAILABLE]
        return min(available) if available else self.end_offset

    def acquire(self, member_id: str, batches: Sequence[tuple[int, int, bool]], high_watermark: int,
                max_records: int, now_ms: int, record_limit: bool = False) -> Acquisition:
        """Acquire records of ``batches`` (read from :meth:`next_fetch_offset`, in offset order) for
        a member, at most ``max_records``: in batch-optimised mode a batch is finished even past
        the limit; with ``record_limit`` (KIP-1206) never more, so a batch may be split (the rest
        of it stays unacquired and is read again by the next fetch). A batch whose third element is
        true (a control batch, or an aborted transaction's for a read_committed group) is archived,
        never delivered. ``high_watermark`` is where acquisition stops (the last stable offset for
        a read_committed group)."""
        self.expire_locks(now_ms)
        deadline = now_ms + self.lock_duration_ms
        taken: list[tuple[int, int]] = []       # (offset, delivery count)
        chosen: list[int] = []
        for i, (base, last, archive) in enumerate(batches):
            if len(taken) >= max_records:
                break
            took = False
            for off in range(max(base, self.start_offset), min(last + 1, high_watermark)):
                if record_limit and len(taken) >= max_records:
                    break
                if off < self.end_offset:
                    r = self.records.get(off)
                    if r is None or r.state != RecordState.AVAILABLE:
                        continue
                else:
                    if self.end_offset - self.start_offset >= self.max_record_locks:
                        break
                    self.end_offset = off + 1      # offsets the log does not hold get no entry
                    r = self.records[off] = InFlight(RecordState.ARCHIVED if archive else RecordState.AVAILABLE)
                    if archive:
                        continue
                r.state = RecordState.ACQUIRED
                r.delivery_count += 1
                r.member_id = member_id
                r.deadline_ms = deadline
                taken.append((off, r.delivery_count))
                took = True
            if took:
                chosen.append(i)
        self._advance_start()
        return Acquisition(tuple(_ranges(taken)), tuple(chosen))

    # -- acknowledge --------------------------------------------------------------------------------
    def acknowledge(self, member_id: str, batches: Iterable[tuple[int, int, Sequence[int]]], now_ms: int,
                renew: bool = True) -> int:
        """Apply acknowledgement batches ``(first, last, types)`` of a member, all or nothing;
        returns Kafka's error code. RENEW (KIP-1222, only when ``renew``: ShareFetch and
        ShareAcknowledge v2) keeps the record acquired by the member with a fresh lock of
        ``lock_duration_ms`` from ``now_ms``; it is not delivered again and its delivery count
        does not move."""
        self.expire_locks(now_ms)
        valid = _ACK_TYPES_RENEW if renew else _ACK_TYPES
        plan: list[tuple[InFlight, int]] = []
        for first, last, types in batches:
            if first > last or not types or (len(types) != 1 and len(types) != last - first + 1):
                return INVALID_REQUEST
            if first < self.start_offset or last >= self.end_offset:    # also bounds the loop below
                return INVALID_RECORD_STATE
            if any(t not in valid for t in types):
                return INVALID_REQUEST
            for off in range(first, last + 1):
                r = self.records.get(off)
                if r is None or r.state != RecordState.ACQUIRED or r.member_id != member_id:
                    return INVALID_RECORD_STATE
                plan.append((r, types[0] if len(types) == 1 else types[off - first]))
        for r, t in plan:
            if t == AcknowledgeType.ACCEPT:
                r.state, r.member_id, r.deadline_ms = RecordState.ACKNOWLEDGED, None, 0
            elif t == AcknowledgeType.RELEASE:
                self._release(r)
            elif t == AcknowledgeType.RENEW:
                r.deadline_ms = now_ms + self.lock_duration_ms
            else:   # REJECT, GAP
                r.state, r.member_id, r.deadline_ms = RecordState.ARCHIVED, None, 0
        self._advance_start()
        return NONE

    def release_member(self, member_id: str) -> int:
        """A member's share session closed or it left the group: its records go back."""
        mine = [r for r in self.records.values() if r.state == RecordState.ACQUIRED and r.member_id == member_id]
        for r in mine:
            self._release(r)
        self._advance_start()
        return len(mine)


    # -- persistence (Kafka's SharePartition with its Persister) ----------------------------------------
    @classmethod
    def from_state(cls, state: ShareState, lock_duration_ms: int = 30000, delivery_count_limit: int = 5,
                   max_record_locks: int = 2000) -> SharePartition:
        """Rebuild from what ReadShareGroupState answered (Kafka's ``maybeInitialize``): AVAILABLE
        records keep their delivery count and are delivered again; ACKNOWLEDGED and ARCHIVED ones
        never are; the start then moves past a delivery-complete prefix. A batch state the leader
        never writes (ACQUIRED) is read as AVAILABLE."""
        sp = cls(state.start_offset, lock_duration_ms, delivery_count_limit, max_record_locks)
        for b in sorted(state.batches, key=lambda b: b.first_offset):
            if b.last_offset < sp.start_offset:
                continue
            kind = RecordState(b.delivery_state) if b.delivery_state in (0, 2, 4) else RecordState.AVAILABLE
            for off in range(max(b.first_offset, sp.start_offset), b.last_offset + 1):
                sp.records[off] = InFlight(kind, b.delivery_count)
                sp.persisted[off] = (b.delivery_state, b.delivery_count)
            sp.end_offset = max(sp.end_offset, b.last_offset + 1)
        sp.persisted_start = state.start_offset
        sp._advance_start()
        return sp

    def export_state(self, state_epoch: int, leader_epoch: int = -1) -> ShareState:
        """The whole in-flight state as WriteShareGroupState would carry it (ACQUIRED records as
        AVAILABLE with their count: a lock does not survive its leader)."""
        batches = _batches((off, RecordState.AVAILABLE if r.state == RecordState.ACQUIRED else r.state,
                            r.delivery_count) for off, r in sorted(self.records.items()) if off >= self.start_offset)
        return ShareState(state_epoch=state_epoch, start_offset=self.start_offset, leader_epoch=leader_epoch,
                          batches=tuple(batches))

    def dirty_batches(self, planned: dict[int, InFlight] | None = None) -> list[PersisterStateBatch]:
        """The records whose (state, delivery count) differ from what was last written, as
        consecutive runs; ACQUIRED records are left as persisted (acquiring writes nothing).
        ``planned`` (offset -> its state after a planned acknowledgement) overrides the records."""
        changed = []
        for off in sorted(set(self.records) | set(planned or ())):
            r = (planned or {}).get(off) or self.records.get(off)
            if r is None or off < self.start_offset or r.state == RecordState.ACQUIRED:
                continue
            if self.persisted.get(off) != (int(r.state), r.delivery_count):
                changed.append((off, r.state, r.delivery_count))
        return _batches(changed)

    def has_dirty(self) -> bool:
        return self.start_offset != self.persisted_start or bool(self.dirty_batches())

    def mark_persisted(self, batches: Iterable[PersisterStateBatch], start_offset: int) -> None:
        """A write of ``batches`` at ``start_offset`` succeeded."""
        for b in batches:
            for off in range(b.first_offset, b.last_offset + 1):
                self.persisted[off] = (b.delivery_state, b.delivery_count)
        self.persisted_start = start_offset
        floor = min(start_offset, self.start_offset)
        for off in [off for off in self.persisted if off < floor]:
            del self.persisted[off]

    def plan_acknowledge(self, member_id: str, batches: Sequence[tuple[int, int, Sequence[int]]],
                         now_ms: int, renew: bool = False) -> tuple[int, dict[int, InFlight]]:
        """Run :meth:`acknowledge` on copies of the records it names: (error code, offset -> the
        record as it would be). Nothing here changes until :meth:`apply_planned`."""
        shadow = copy.copy(self)
        spans = [(first, last) for first, last, _ in batches]
        copies = {off: dataclasses.replace(r) for off, r in self.records.items()
                  if any(first <= off <= last for first, last in spans)}
        shadow.records = dict(copies)
        code = shadow.acknowledge(member_id, batches, now_ms, renew=renew)
        if code:
            return code, {}
        return NONE, {off: r for off, r in copies.items() if r != self.records[off]}

    def start_after(self, planned: dict[int, InFlight]) -> int:
        """The start offset once ``planned`` is applied (what :meth:`_advance_start` would make it),
        so that the write carrying an acknowledgement carries the start it moves to."""
        start = self.start_offset
        while start < self.end_offset:
            r = planned.get(start) or self.records.get(start)
            if r is None:
                later = [off for off in self.records if off > start]
                start = min(later) if later else self.end_offset
                continue
            if r.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            start += 1
        return start

    def apply_planned(self, member_id: str, planned: dict[int, InFlight]) -> None:
        """Apply planned acknowledgements whose write succeeded, to the records the member still
        holds (one whose lock expired meanwhile and was acquired again is left alone)."""
        for off, new in planned.items():
            r = self.records.get(off)
            if r is not None and r.state == RecordState.ACQUIRED and r.member_id == member_id:
                self.records[off] = dataclasses.replace(new)
        self._advance_start()


def _batches(states: Iterable[tuple[int, int, int]]) -> list[PersisterStateBatch]:
    """(offset, state, delivery count) in offset order as runs of consecutive offsets alike."""
    out: list[PersisterStateBatch] = []
    for off, state, count in states:
        last = out[-1] if out else None
        if last is not None and last.last_offset == off - 1 and last.delivery_state == state \
                and last.delivery_count == count:
            out[-1] = PersisterStateBatch(last.first_offset, off, last.delivery_state, count)
        else:
            out.append(PersisterStateBatch(off, off, int(state), count))
    return out


_ACK_TYPES = frozenset((AcknowledgeType.GAP, AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT))
_ACK_TYPES_RENEW = _ACK_TYPES | {AcknowledgeType.RENEW}


def never_delivered(batch: tuple[int, int, bool, int, bool], aborted: Iterable[tuple[int, int, int]]) -> bool:
    """Whether a batch ``(base, last, is_control, producer_id, is_transactional)`` is archived
    unseen: a control batch (transaction marker), or for a read_committed share group
    (``share.isolation.level``) a transactional batch inside one of the ``aborted`` transactions
    ``(producer_id, first_offset, marker_offset)`` (the partition's aborted-transaction index, as
    Kafka's SharePartition filters with the fetch's aborted transactions)."""
    base, _, control, producer_id, transactional = batch
    if control:
        return True
    return transactional and any(pid == producer_id and first <= base <= marker for pid, first, marker in aborted)


def _ranges(taken: list[tuple[int, int]]) -> list[AcquiredRange]:
    """Consecutive offsets with the same delivery count, as the response's AcquiredRecords."""
    out: list[AcquiredRange] = []
    for off, dc in taken:
        if out and out[-1].last_offset == off - 1 and out[-1].delivery_count == dc:
            out[-1] = AcquiredRange(out[-1].first_offset, off, dc)
        else:
            out.append(AcquiredRange(off, off, dc))
    return out


# -- share sessions -------------------------------------------------------------------------------------
TopicPartition = tuple[object, int]     # (topic id, partition)


@dataclass
class ShareSession:
    partitions: set[TopicPartition]
    epoch: int = 1          # the epoch the next request must carry


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 0x7FFFFFFF else epoch + 1


class ShareSessions:
    """Share sessions by (group, member): epoch 0 opens (replacing an old one), -1 closes, any
    other must be the expected next epoch (INVALID_SHARE_SESSION_EPOCH), and there must be a
    session (SHARE_SESSION_NOT_FOUND)."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def fetch(self, group_id: str, member_id: str, epoch: int, added: Iterable[TopicPartition],
              forgotten: Iterable[TopicPartition]) -> tuple[int, ShareSession | None]:
        """ShareFetch: (error code, the session to fetch from; None when closed by epoch -1)."""
        key = (group_id, member_id)
        if epoch == INITIAL_SESSION_EPOCH:
            session = self.sessions[key] = ShareSession(set(added))
            return NONE, session
        existing = self.sessions.get(key)
        if existing is None:
            return SHARE_SESSION_NOT_FOUND, None
        session = existing
        if epoch == FINAL_SESSION_EPOCH:
            del self.sessions[key]
            return NONE, None
        if epoch != session.epoch:
            return INVALID_SHARE_SESSION_EPOCH, None
        session.partitions.update(added)
        session.partitions.difference_update(forgotten)
        session.epoch = next_epoch(epoch)
        return NONE, session

    def acknowledge(self, group_id: str, member_id: str, epoch: int) -> int:
        """ShareAcknowledge: cannot open a session; -1 closes it after the acknowledgements."""
        key = (group_id, member_id)
        if epoch == INITIAL_SESSION_EPOCH:
            return INVALID_SHARE_SESSION_EPOCH
        session = self.sessions.get(key)
        if session is None:
            return SHARE_SESSION_NOT_FOUND
        if epoch == FINAL_SESSION_EPOCH:
            del self.sessions[key]
            return NONE
        if epoch != session.epoch:
            return INVALID_SHARE_SESSION_EPOCH
        session.epoch = next_epoch(epoch)
        return NONE

    def drop_member(self, group_id: str, member_id: str) -> None:
        self.sessions.pop((group_id, member_id), None)
