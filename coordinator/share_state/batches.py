"""Kafka's ``PersisterStateBatchCombiner``: how the share coordinator folds a write's state batches
into the batches it holds.

A write carries only the batches that changed since the last write, so the coordinator merges:
newer batches override the offsets they cover in older ones (an older batch is cut around a newer
one), everything below the share-partition start offset is dropped (a batch straddling it is
trimmed to start there), and neighbouring batches with the same delivery state and count become
one. The result is sorted and non-overlapping, which is what ReadShareGroupState answers.
"""
from __future__ import annotations

from collections.abc import Iterable

from coordinator.share.persister import PersisterStateBatch


def combine_state_batches(current: Iterable[PersisterStateBatch], new: Iterable[PersisterStateBatch],
                          start_offset: int) -> tuple[PersisterStateBatch, ...]:
    """``current`` overridden by ``new`` (later batches of ``new`` win over earlier ones too),
    pruned below ``start_offset`` (-1: nothing is pruned) and coalesced."""
    merged: list[PersisterStateBatch] = sorted(current, key=lambda b: b.first_offset)
    for b in new:
        if b.last_offset < b.first_offset:
            continue
        kept: list[PersisterStateBatch] = []
        for old in merged:
            if old.last_offset < b.first_offset or old.first_offset > b.last_offset:
                kept.append(old)
                continue
            if old.first_offset < b.first_offset:       # the part of ``old`` before ``b``
                kept.append(PersisterStateBatch(old.first_offset, b.first_offset - 1, old.delivery_state,
                                                old.delivery_count))
            if old.last_offset > b.last_offset:         # the part after
                kept.append(PersisterStateBatch(b.last_offset + 1, old.last_offset, old.delivery_state,
                                                old.delivery_count))
        kept.append(b)
        merged = sorted(kept, key=lambda x: x.first_offset)
    out: list[PersisterStateBatch] = []
    for b in merged:
        if start_offset >= 0 and b.last_offset < start_offset:
            continue
        if start_offset >= 0 and b.first_offset < start_offset:
            b = PersisterStateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        if out and out[-1].last_offset + 1 == b.first_offset and out[-1].delivery_state == b.delivery_state \
                and out[-1].delivery_count == b.delivery_count:
            prev = out.pop()
            b = PersisterStateBatch(prev.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        out.append(b)
    return tuple(out)
