"""KIP-890 verification guards in a partition's producer state (coordinator/txn/producer_state.py):
the append after a coordinator's answer happens only if the guard taken before asking is still
current; a marker, an epoch bump or the transaction's first append clears it."""
from __future__ import annotations

from coordinator.txn.producer_state import ProducerStateTable


def table_with_ongoing(pid: int = 7, epoch: int = 0) -> ProducerStateTable:
    t = ProducerStateTable()
    t.update(pid, epoch, 0, 0, 10, 10, 1, is_transactional=True)
    return t


def test_no_guard_while_the_transaction_is_ongoing() -> None:
    t = table_with_ongoing()
    assert t.has_ongoing_transaction(7, 0)
    assert t.start_verification(7, 0) is None
    assert t.verified(7, 0, None)
    assert not t.has_ongoing_transaction(7, 1)              # another epoch's transaction is not this one


def test_guard_is_current_until_cleared() -> None:
    t = ProducerStateTable()
    g = t.start_verification(7, 0)
    assert g is not None and t.verified(7, 0, g)
    assert t.start_verification(7, 0) is g                   # a concurrent verification shares it
    assert not t.verified(7, 0, None)                        # an unverified append is refused
    t.update(7, 0, 0, 0, 0, 0, 1, is_transactional=True)    # the verified append: now ongoing
    assert t.verification_guard(7) is None and t.verified(7, 0, g)


def test_marker_clears_the_guard() -> None:
    t = ProducerStateTable()
    g = t.start_verification(7, 0)
    t.end_transaction(7, 0)                                  # an ABORT raced with the verification
    assert not t.verified(7, 0, g)


def test_epoch_bump_and_newer_verification_fence_the_guard() -> None:
    t = ProducerStateTable()
    g = t.start_verification(7, 0)
    newer = t.start_verification(7, 1)                       # a newer epoch's verification replaces it
    assert newer is not g and not t.verified(7, 0, g) and t.verified(7, 1, newer)
    t2 = ProducerStateTable()
    g2 = t2.start_verification(7, 0)
    t2.update(7, 1, 0, 0, 0, 0, 1)                           # an idempotent batch of a bumped epoch
    assert not t2.verified(7, 0, g2)


def test_guard_survives_other_producers_and_is_not_snapshotted() -> None:
    t = ProducerStateTable()
    g = t.start_verification(7, 0)
    t.update(8, 0, 0, 0, 0, 0, 1, is_transactional=True)
    t.end_transaction(8, 0)
    assert t.verified(7, 0, g)
    restored = ProducerStateTable.from_snapshot(t.to_snapshot())
    assert restored.verification_guard(7) is None
