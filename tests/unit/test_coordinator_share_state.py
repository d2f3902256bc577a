"""Kafka's share coordinator (coordinator/share_state/), the pure parts: the ``__share_group_state``
records in Kafka's formats, the batch combiner, and the state machine's answers — exact states,
Kafka's fencing codes, the ShareSnapshot cadence, and that replaying the records a coordinator
wrote rebuilds exactly its state. Time is injected; no broker."""
from __future__ import annotations

import uuid

import pytest

from coordinator.share.persister import PersisterStateBatch as B, ReadStateResult, SharePartitionKey, ShareState, StateSummary
from coordinator.share_state import records as rec
from coordinator.share_state.batches import combine_state_batches
from coordinator.share_state.coordinator import (READ_UNINITIALIZED_SHARE_PARTITION, WRITE_UNINITIALIZED_SHARE_PARTITION,
                                                 DeleteState, InitializeState, ReadState, ReadStateSummary,
                                                 ShareCoordinator, ShareCoordinatorConfig, StateResult, WriteState)
from protocol.errors import ErrorCode

T1 = uuid.UUID("11111111-1111-1111-1111-111111111111")
KEY = SharePartitionKey("g", T1, 0)
NOW = 1_000_000


def _coord(per_snapshot: int = 500, **kw) -> ShareCoordinator:
    c = ShareCoordinator(ShareCoordinatorConfig(snapshot_update_records_per_snapshot=per_snapshot), 0, loading=True, **kw)
    c.load_complete(NOW)
    return c


def _do(c: ShareCoordinator, request, now: int = NOW):
    request.token = token = object()
    step = c.handle(request, now)
    return step.take(token), step.records


def _write(c, start=-1, batches=(), leader_epoch=1, state_epoch=0, dcc=-1, now=NOW):
    return _do(c, WriteState(key=KEY, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start,
                             batches=tuple(batches), delivery_complete_count=dcc), now)


# -- records ------------------------------------------------------------------------------------------
def test_records_are_kafkas_layout():
    k, v = rec.share_snapshot(KEY, rec.ShareGroupOffset(0, 1, 2, 10, (B(10, 12, 0, 1),), 3, 5, 6))
    assert k[:2] == b"\x00\x00" and v[:2] == b"\x00\x00"            # record type 0, value version 0
    assert k == b"\x00\x00" + b"\x00\x01g" + T1.bytes + b"\x00\x00\x00\x00"
    assert rec.decode_key(k) == KEY
    assert rec.decode_snapshot(v) == rec.ShareGroupOffset(0, 1, 2, 10, (B(10, 12, 0, 1),), 3, 5, 6)
    k, v = rec.share_update(KEY, 4, 2, -1, -1, (B(10, 12, 2, 1),))
    assert k[:2] == b"\x00\x01" and rec.decode_key(k) == KEY
    assert rec.decode_update(v) == rec.ShareUpdate(4, 2, -1, -1, (B(10, 12, 2, 1),))
    assert rec.share_state_tombstone(KEY) == (rec._key(rec.SHARE_SNAPSHOT, KEY), None)


def test_coordinator_key_prints_the_topic_id_as_kafka():
    assert rec.share_coordinator_key(SharePartitionKey("g", uuid.UUID(int=1), 3)) == "g:AAAAAAAAAAAAAAAAAAAAAQ:3"


# -- the combiner (Kafka's PersisterStateBatchCombiner) -----------------------------------------------
@pytest.mark.parametrize("current,new,start,expected", [
    ([], [B(0, 9, 0, 1)], 0, [B(0, 9, 0, 1)]),
    ([B(0, 9, 0, 1)], [B(3, 5, 2, 1)], 0, [B(0, 2, 0, 1), B(3, 5, 2, 1), B(6, 9, 0, 1)]),      # newer overrides
    ([B(0, 9, 0, 1)], [B(5, 14, 4, 2)], 0, [B(0, 4, 0, 1), B(5, 14, 4, 2)]),
    ([B(0, 9, 0, 1)], [B(10, 19, 0, 1)], 0, [B(0, 19, 0, 1)]),                                # same state: one
    ([B(0, 9, 2, 1), B(10, 19, 0, 1)], [], 12, [B(12, 19, 0, 1)]),                            # pruned, trimmed
    ([B(100, 109, 1, 1), B(110, 119, 1, 2), B(120, 129, 1, 0)], [B(100, 109, 2, 1)], -1,
     [B(100, 109, 2, 1), B(110, 119, 1, 2), B(120, 129, 1, 0)]),
    ([], [B(0, 9, 0, 1), B(5, 6, 2, 1)], 0, [B(0, 4, 0, 1), B(5, 6, 2, 1), B(7, 9, 0, 1)]),    # later wins within a write
])
def test_combine_state_batches(current, new, start, expected):
    assert list(combine_state_batches(current, new, start)) == expected


# -- the five requests ---------------------------------------------------------------------------------
def test_initialize_then_read_and_summary():
    c = _coord()
    result, records = _do(c, InitializeState(key=KEY, state_epoch=0, start_offset=10))
    assert result == StateResult(0) and [rec.key_type(k) for k, _ in records] == [rec.SHARE_SNAPSHOT]
    assert c.state(KEY) == rec.ShareGroupOffset(0, 0, -1, 10, (), -1, NOW, NOW)
    result, records = _do(c, ReadState(key=KEY, leader_epoch=3))
    assert result == ReadStateResult(0, ShareState(state_epoch=0, start_offset=10, leader_epoch=3))
    assert [rec.key_type(k) for k, _ in records] == [rec.SHARE_UPDATE]     # the new leader epoch, recorded
    assert c.epochs(KEY) == (3, 0)
    result, records = _do(c, ReadState(key=KEY, leader_epoch=3))
    assert result.error_code == 0 and records == []                         # same epoch: nothing written
    assert _do(c, ReadStateSummary(key=KEY, leader_epoch=-1))[0] == StateSummary(0, 0, 3, 10, -1)


def test_uninitialized_share_partition_answers_as_kafka():
    c = _coord()
    assert _write(c, 0, [B(0, 0, 2, 1)])[0] == StateResult(ErrorCode.INVALID_REQUEST, WRITE_UNINITIALIZED_SHARE_PARTITION)
    assert _do(c, ReadState(key=KEY, leader_epoch=0))[0] == ReadStateResult(
        ErrorCode.INVALID_REQUEST, error_message=READ_UNINITIALIZED_SHARE_PARTITION)
    assert _do(c, ReadStateSummary(key=KEY))[0] == StateSummary(0, 0, -1, -1, -1)
    assert _do(c, DeleteState(key=KEY)) == (StateResult(0), [])
    assert c.keys() == []


def test_write_merges_batches_and_read_returns_them():
    c = _coord()
    _do(c, InitializeState(key=KEY, state_epoch=0, start_offset=0))
    assert _write(c, 0, [B(0, 9, 0, 1)])[0] == StateResult(0)
    assert _write(c, -1, [B(0, 4, 2, 1)], dcc=5)[0] == StateResult(0)          # 0-4 acknowledged
    assert _write(c, 5, [B(5, 6, 4, 2)], dcc=2)[0] == StateResult(0)            # start moves, 5-6 archived
    state = c.state(KEY)
    assert (state.start_offset, state.batches, state.delivery_complete_count) == (5, (B(5, 6, 4, 2), B(7, 9, 0, 1)), 2)
    result, _ = _do(c, ReadState(key=KEY, leader_epoch=1))
    assert result.state == ShareState(state_epoch=0, start_offset=5, leader_epoch=1,
                                      batches=(B(5, 6, 4, 2), B(7, 9, 0, 1)), delivery_complete_count=2)


def test_fencing_codes():
    c = _coord()
    _do(c, InitializeState(key=KEY, state_epoch=2, start_offset=0))
    _do(c, ReadState(key=KEY, leader_epoch=5))
    assert _write(c, 0, [], leader_epoch=4, state_epoch=2)[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert _write(c, 0, [], leader_epoch=5, state_epoch=1)[0].error_code == ErrorCode.FENCED_STATE_EPOCH
    assert _write(c, 0, [], leader_epoch=-1, state_epoch=-1)[0].error_code == 0      # -1: not supplied
    assert _do(c, ReadState(key=KEY, leader_epoch=4))[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert _do(c, ReadStateSummary(key=KEY, leader_epoch=4))[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert _do(c, InitializeState(key=KEY, state_epoch=1, start_offset=0))[0].error_code == ErrorCode.FENCED_STATE_EPOCH
    # a fenced request writes nothing
    assert _write(c, 0, [B(0, 0, 2, 1)], leader_epoch=4, state_epoch=2)[1] == []
    # AlterShareGroupOffsets: a higher state epoch starts afresh and fences the old state epoch
    assert _do(c, InitializeState(key=KEY, state_epoch=3, start_offset=100))[0] == StateResult(0)
    assert _write(c, 0, [], leader_epoch=5, state_epoch=2)[0].error_code == ErrorCode.FENCED_STATE_EPOCH
    assert c.state(KEY).start_offset == 100 and c.epochs(KEY) == (5, 3)


def test_invalid_partition_and_unknown_topic():
    c = _coord(partition_exists=lambda tid, p: p < 2)
    bad = SharePartitionKey("g", T1, -1)
    assert _do(c, InitializeState(key=bad, state_epoch=0, start_offset=0))[0].error_code == ErrorCode.INVALID_REQUEST
    assert _do(c, InitializeState(key=SharePartitionKey("g", T1, 5), state_epoch=0, start_offset=0))[0] \
        .error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_delete_writes_the_tombstone():
    c = _coord()
    _do(c, InitializeState(key=KEY, state_epoch=0, start_offset=0))
    result, records = _do(c, DeleteState(key=KEY))
    assert result == StateResult(0) and records == [rec.share_state_tombstone(KEY)]
    assert c.state(KEY) is None and c.epochs(KEY) is None


def test_loading_and_unloaded_answers():
    c = ShareCoordinator(loading=True)
    assert _do(c, ReadState(key=KEY, leader_epoch=0))[0] == ReadStateResult(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    c.load_complete(NOW)
    c.unload()
    assert _do(c, WriteState(key=KEY, state_epoch=0, leader_epoch=0, start_offset=0))[0] == \
        StateResult(ErrorCode.NOT_COORDINATOR)
    assert _do(c, ReadStateSummary(key=KEY))[0] == StateSummary(ErrorCode.NOT_COORDINATOR)


# -- snapshot cadence and replay ------------------------------------------------------------------------
def test_snapshot_cadence_is_kafkas():
    """Kafka counts updates from 0 after the first one following a snapshot read from the log
    (absent until then), so with N per snapshot the first ShareSnapshot comes after N+1
    ShareUpdates and every later one after N."""
    c = _coord(per_snapshot=3)
    _do(c, InitializeState(key=KEY, state_epoch=0, start_offset=0))
    kinds = []
    for i in range(9):
        _, records = _write(c, -1, [B(i, i, 2, 1)])
        kinds.append(rec.key_type(records[0][0]))
    U, S = rec.SHARE_UPDATE, rec.SHARE_SNAPSHOT
    assert kinds == [U, U, U, U, S, U, U, U, S]
    snap = c.state(KEY)
    assert snap.snapshot_epoch == 2 and snap.batches == (B(0, 8, 2, 1),)


def test_snapshot_carries_the_whole_state():
    c = _coord(per_snapshot=0)      # every write a snapshot (Kafka's own test setting)
    _do(c, InitializeState(key=KEY, state_epoch=0, start_offset=100))
    _write(c, 100, [B(100, 109, 0, 1), B(110, 119, 0, 2), B(120, 129, 0, 1)], leader_epoch=0)
    _write(c, -1, [B(100, 109, 2, 1)], leader_epoch=0, dcc=10)
    _, records = _write(c, 110, [B(120, 129, 2, 1)], leader_epoch=0, dcc=10, now=NOW + 5)
    assert [rec.key_type(k) for k, _ in records] == [rec.SHARE_SNAPSHOT]
    assert rec.decode_snapshot(records[0][1]) == rec.ShareGroupOffset(
        3, 0, 0, 110, (B(110, 119, 0, 2), B(120, 129, 2, 1)), 10, NOW, NOW + 5)   # batch 110-119 not lost


def test_replay_rebuilds_the_same_state():
    c = _coord(per_snapshot=4)
    log: list = []
    other = SharePartitionKey("g2", T1, 1)
    for req in [InitializeState(key=KEY, state_epoch=0, start_offset=0),
                InitializeState(key=other, state_epoch=1, start_offset=7)]:
        log += _do(c, req)[1]
    for i in range(13):
        log += _write(c, i // 3, [B(i, i + 2, (0, 2, 4)[i % 3], 1 + i % 2)], leader_epoch=1 + i // 5, dcc=i)[1]
        log += _do(c, ReadState(key=KEY, leader_epoch=1 + i // 5))[1]
    log += _do(c, DeleteState(key=other))[1]
    fresh = ShareCoordinator(ShareCoordinatorConfig(snapshot_update_records_per_snapshot=4), 0, loading=True)
    for k, v in log:
        fresh.replay(k, v)
    fresh.load_complete(NOW)
    assert fresh.keys() == c.keys() == [KEY]
    assert fresh.state(KEY) == c.state(KEY)
    assert fresh.epochs(KEY) == c.epochs(KEY)
    assert fresh.updates_since_snapshot(KEY) == c.updates_since_snapshot(KEY)
    # and both answer the next write alike
    assert _write(fresh, -1, [B(50, 50, 2, 1)], leader_epoch=3) == _write(c, -1, [B(50, 50, 2, 1)], leader_epoch=3)
