"""Idempotent-producer state of one partition: Kafka's ProducerStateManager rules.

Pure: the partition log asks ``check`` before appending a batch and calls ``update``
after; recovery replays batch headers through ``update`` to rebuild the same state.
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


@dataclass(slots=True)
class Verdict:
    """What to do with a batch: append it, answer with an earlier append, or reject."""

    error: int = ErrorCode.NONE
    duplicate_of: BatchMetadata | None = None
    message: str = ""


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT_MAX)


class ProducerStateTable:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> Verdict:
        entry = self.producers.get(producer_id)
        if entry is None:
            # No state (new producer, or its records were removed): any sequence is accepted.
            return Verdict()
        if epoch < entry.epoch:
            return Verdict(ErrorCode.INVALID_PRODUCER_EPOCH,
                           message=f"epoch {epoch} is older than current epoch {entry.epoch}")
        if first_seq < 0:
            return Verdict()
        if epoch == entry.epoch:
            for b in entry.batches:
                if b.first_seq == first_seq and b.last_seq == last_seq:
                    return Verdict(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, duplicate_of=b)
            if entry.batches and not _in_sequence(entry.last_seq, first_seq):
                return Verdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                               message=f"out of order sequence {first_seq}, expected {entry.last_seq + 1}")
        elif first_seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
            return Verdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                           message=f"invalid sequence {first_seq} for new epoch {epoch}")
        return Verdict()

    def update(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
               first_offset: int, last_offset: int, timestamp: int,
               is_transactional: bool = False) -> None:
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry()
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        if first_seq >= 0:
            entry.batches.append(BatchMetadata(first_seq=first_seq, last_seq=last_seq,
                                               first_offset=first_offset, last_offset=last_offset,
                                               timestamp=timestamp))
        entry.last_timestamp = timestamp
        if is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = first_offset

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
