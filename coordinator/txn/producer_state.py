"""Idempotent-producer state of one partition: Kafka's ProducerStateManager rules.

Pure: the partition log asks ``check`` before appending a batch and calls ``update``
after; recovery replays batch headers through ``update`` to rebuild the same state.

It also keeps Kafka's verification guards (KIP-890, VerificationStateEntry): before the first
transactional batch of a producer epoch is appended, the leader asks the transaction coordinator
whether the partition is in the transaction, and that takes an await. A guard object is made when
the verification starts; a marker, a newer epoch or the append of a transactional batch (the
transaction is then ongoing here) clears it, and a verification for another epoch replaces it.
The append after the await happens only if its guard is still the current one, so a verification
that raced with an abort or a fence cannot append. Guards are not part of snapshots (in memory
only, as Kafka's).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
_INT_MAX = 0x7FFFFFFF


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1
    current_txn_first_offset: int = -1  # first offset of the open transaction, if any
    coordinator_epoch: int = -1  # of the transaction coordinator that wrote the last marker

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a batch: append it, answer with an earlier append, or reject. Frozen: the
    verdict to append is one shared instance (``_APPEND``), asked for every batch with a producer id."""

    error: int = ErrorCode.NONE
    duplicate_of: BatchMetadata | None = None
    message: str = ""


_APPEND = Verdict()


class VerificationGuard:
    """Kafka's VerificationGuard: an object compared by identity. ``epoch`` is the producer epoch
    whose verification made it."""

    __slots__ = ("producer_id", "epoch")

    def __init__(self, producer_id: int, epoch: int) -> None:
        self.producer_id = producer_id
        self.epoch = epoch

    def __repr__(self) -> str:
        return f"VerificationGuard(producer_id={self.producer_id}, epoch={self.epoch}, id={id(self):#x})"


class ProducerStateTable:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.verification_guards: dict[int, VerificationGuard] = {}

    # -- KIP-890 verification guards ------------------------------------------------------
    def has_ongoing_transaction(self, producer_id: int, epoch: int) -> bool:
        """Kafka's UnifiedLog.hasOngoingTransaction: this producer epoch has a transaction open
        on this partition (its first batch was appended, no marker yet)."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 and entry.epoch == epoch

    def start_verification(self, producer_id: int, epoch: int) -> VerificationGuard | None:
        """Kafka's maybeStartTransactionVerification: None when the transaction is already ongoing
        here (no verification needed), else the guard the append must still hold after the
        coordinator answered. A verification already under way for the same epoch shares its
        guard (Kafka's maybeCreateVerificationStateEntry); another epoch's is replaced."""
        if self.has_ongoing_transaction(producer_id, epoch):
            return None
        guard = self.verification_guards.get(producer_id)
        if guard is None or guard.epoch != epoch:
            guard = self.verification_guards[producer_id] = VerificationGuard(producer_id, epoch)
        return guard

    def verification_guard(self, producer_id: int) -> VerificationGuard | None:
        return self.verification_guards.get(producer_id)

    def verified(self, producer_id: int, epoch: int, guard: VerificationGuard | None) -> bool:
        """May a transactional batch of this producer epoch be appended now? Yes when its
        transaction is ongoing here, or when ``guard`` (from ``start_verification``, before the
        coordinator was asked) is still the current one (Kafka's batchMissingRequiredVerification)."""
        if self.has_ongoing_transaction(producer_id, epoch):
            return True
        return guard is not None and guard.epoch == epoch and self.verification_guards.get(producer_id) is guard

    def clear_verification(self, producer_id: int) -> None:
        self.verification_guards.pop(producer_id, None)

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> Verdict:
        entry = self.producers.get(producer_id)
        if entry is None:
            # No state (new producer, or its records were removed): any sequence is accepted.
            return _APPEND
        if epoch < entry.epoch:
            return Verdict(ErrorCode.INVALID_PRODUCER_EPOCH,
                           message=f"epoch {epoch} is older than current epoch {entry.epoch}")
        if first_seq < 0:
            return _APPEND
        if epoch == entry.epoch:
            batches = entry.batches
            for b in batches:
                if b.first_seq == first_seq and b.last_seq == last_seq:
                    return Verdict(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, duplicate_of=b)
            # in sequence: the next one after the last batch's, or 0 after Int.MAX (it wraps)
            if batches:
                last = batches[-1].last_seq
                if not (first_seq == last + 1 or (first_seq == 0 and last == _INT_MAX)):
                    return Verdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                   message=f"out of order sequence {first_seq}, expected {last + 1}")
        elif first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
            return Verdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                           message=f"invalid sequence {first_seq} for new epoch {epoch}")
        return _APPEND

    def update(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int,
               is_transactional: bool = False) -> None:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry()
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
            self._clear_older_guard(producer_id, epoch)
        if first_seq >= 0:
            entry.batches.append(BatchMetadata(first_seq=first_seq, last_seq=last_seq,
                                               first_offset=first_offset, last_offset=last_offset,
                                               timestamp=timestamp))
        entry.last_timestamp = timestamp
        if is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = first_offset
        if is_transactional:
            self.verification_guards.pop(producer_id, None)   # verified: the transaction is ongoing here

    def end_transaction(self, producer_id: int, epoch: int, coordinator_epoch: int = -1) -> None:
        """A COMMIT/ABORT marker closed the producer's transaction on this partition."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(epoch=epoch)
        if epoch > entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        self.verification_guards.pop(producer_id, None)   # the transaction ended: verify the next one

    def _clear_older_guard(self, producer_id: int, epoch: int) -> None:
        """An epoch bump fences verifications started for an older epoch."""
        guard = self.verification_guards.get(producer_id)
        if guard is not None and guard.epoch < epoch:
            del self.verification_guards[producer_id]

    def to_snapshot(self) -> list[dict[str, Any]]:
        return [{"pid": pid, "epoch": e.epoch, "ts": e.last_timestamp, "txn": e.current_txn_first_offset,
                 "ce": e.coordinator_epoch,
                 "batches": [[b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp]
                             for b in e.batches]}
                for pid, e in self.producers.items()]

    @classmethod
    def from_snapshot(cls, rows: list[dict[str, Any]]) -> ProducerStateTable:
        table = cls()
        for row in rows:
            entry = ProducerEntry(epoch=row["epoch"], last_timestamp=row["ts"],
                                  current_txn_first_offset=row.get("txn", -1),
                                  coordinator_epoch=row.get("ce", -1))
            for b in row["batches"]:
                entry.batches.append(BatchMetadata(*b))
            table.producers[row["pid"]] = entry
        return table
