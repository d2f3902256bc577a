"""Share-partition state through the Persister (issue 21; Kafka's SharePartition with its
Persister): a share partition rebuilt from persisted state, exported, the records changed since the
last write (dirty batches), acknowledgements planned on copies and applied after the write, the
in-memory persister's merge and fencing, and the leader's flow in ShareGroups (initialize, read,
write, failures, drop and re-read). Time is injected; no broker."""
from __future__ import annotations

import uuid
from types import SimpleNamespace

import trio
import trio.testing

from broker.coordinator_runtime.share_runtime import ShareGroups
from coordinator.share.group import ShareGroup
from coordinator.share.memory_persister import MemoryPersister
from coordinator.share.partition import INVALID_RECORD_STATE, NONE, InFlight, RecordState, SharePartition
from coordinator.share.persister import PersisterStateBatch as B, SharePartitionKey, ShareState
from protocol.errors import ErrorCode

T = uuid.UUID("11111111-1111-1111-1111-111111111111")
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
ACCEPT, RELEASE, REJECT = 1, 2, 3


def extents(*spans):
    return [(b, l, False) for b, l in spans]


def states(sp: SharePartition) -> dict[int, tuple[RecordState, int]]:
    return {off: (r.state, r.delivery_count) for off, r in sorted(sp.records.items())}


# -- SharePartition: import / export / dirty batches --------------------------------------------------------
def test_from_state_rebuilds_available_with_counts_and_never_redelivers_acknowledged_or_archived():
    state = ShareState(state_epoch=3, start_offset=10, leader_epoch=1, batches=(
        B(10, 11, ACKNOWLEDGED, 1), B(12, 14, AVAILABLE, 2), B(15, 15, ARCHIVED, 5), B(16, 17, AVAILABLE, 1)))
    sp = SharePartition.from_state(state, delivery_count_limit=5)
    assert sp.start_offset == 12 and sp.end_offset == 18        # the acknowledged prefix is done
    assert states(sp) == {12: (RecordState.AVAILABLE, 2), 13: (RecordState.AVAILABLE, 2),
                          14: (RecordState.AVAILABLE, 2), 15: (RecordState.ARCHIVED, 5),
                          16: (RecordState.AVAILABLE, 1), 17: (RecordState.AVAILABLE, 1)}
    assert sp.next_fetch_offset(0) == 12
    got = sp.acquire("m", extents((12, 17), (18, 19)), 20, 100, 0)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got.ranges] == \
        [(12, 14, 3), (16, 17, 2), (18, 19, 1)]                  # 15 archived: never again
    assert sp.dirty_batches() == []                              # acquiring writes nothing
    assert sp.start_offset != sp.persisted_start                 # the start moved past 10-11
    exported = sp.export_state(3, 1)
    assert exported == ShareState(3, 12, 1, (B(12, 14, AVAILABLE, 3), B(15, 15, ARCHIVED, 5),
                                             B(16, 17, AVAILABLE, 2), B(18, 19, AVAILABLE, 1)))


def test_from_state_ignores_batches_below_the_start_and_an_empty_state():
    sp = SharePartition.from_state(ShareState(0, 7, batches=(B(2, 8, AVAILABLE, 1),)))
    assert sp.start_offset == 7 and states(sp) == {7: (RecordState.AVAILABLE, 1), 8: (RecordState.AVAILABLE, 1)}
    empty = SharePartition.from_state(ShareState(0, 42))
    assert (empty.start_offset, empty.end_offset, empty.records) == (42, 42, {})
    assert not empty.has_dirty()


def test_dirty_batches_are_the_changed_records_in_runs_until_marked_persisted():
    sp = SharePartition(0, lock_duration_ms=1000, delivery_count_limit=3)
    sp.persisted_start = 0
    sp.acquire("m", extents((0, 9)), 10, 100, 0)
    assert sp.dirty_batches() == [] and not sp.has_dirty()
    assert sp.acknowledge("m", [(0, 3, [ACCEPT]), (4, 5, [REJECT]), (6, 9, [RELEASE])], 0) == NONE
    assert sp.start_offset == 6
    # 0-5 went below the start: the start offset carries them; 6-9 are AVAILABLE with count 1
    assert sp.dirty_batches() == [B(6, 9, AVAILABLE, 1)] and sp.has_dirty()
    sp.mark_persisted(sp.dirty_batches(), sp.start_offset)
    assert sp.dirty_batches() == [] and not sp.has_dirty()
    sp.acquire("m", extents((6, 9)), 10, 100, 0)                 # count 2, nothing to write
    assert sp.dirty_batches() == []
    assert sp.expire_locks(5000) == 4                             # the lock expired: AVAILABLE, count 2
    assert sp.dirty_batches() == [B(6, 9, AVAILABLE, 2)]


def test_plan_acknowledge_changes_nothing_until_applied():
    sp = SharePartition(0, lock_duration_ms=1000)
    sp.acquire("m", extents((0, 4)), 5, 100, 0)
    before = states(sp)
    code, planned = sp.plan_acknowledge("m", [(0, 1, [ACCEPT]), (2, 4, [RELEASE])], 0)
    assert code == NONE and states(sp) == before and sp.start_offset == 0
    assert {off: (r.state, r.delivery_count) for off, r in planned.items()} == {
        0: (RecordState.ACKNOWLEDGED, 1), 1: (RecordState.ACKNOWLEDGED, 1), 2: (RecordState.AVAILABLE, 1),
        3: (RecordState.AVAILABLE, 1), 4: (RecordState.AVAILABLE, 1)}
    assert sp.dirty_batches(planned) == [B(0, 1, ACKNOWLEDGED, 1), B(2, 4, AVAILABLE, 1)]
    assert sp.next_fetch_offset(0) == 5                           # still ACQUIRED: nothing to re-acquire
    sp.apply_planned("m", planned)
    assert sp.start_offset == 2 and sp.next_fetch_offset(0) == 2
    assert sp.plan_acknowledge("other", [(2, 2, [ACCEPT])], 0) == (INVALID_RECORD_STATE, {})


def test_start_after_is_the_start_the_planned_acknowledgement_moves_to():
    sp = SharePartition(0, lock_duration_ms=1000)
    sp.acquire("m", extents((0, 3), (100, 101)), 102, 100, 0)    # 4-99 not in the log (compacted)
    _, planned = sp.plan_acknowledge("m", [(0, 3, [ACCEPT])], 0)
    assert sp.start_after(planned) == 100 and sp.start_offset == 0
    _, planned = sp.plan_acknowledge("m", [(0, 1, [REJECT]), (2, 2, [RELEASE])], 0)
    assert sp.start_after(planned) == 2
    sp.apply_planned("m", planned)
    assert sp.start_offset == 2


def test_apply_planned_leaves_records_acquired_again_by_another_member():
    sp = SharePartition(0, lock_duration_ms=1000)
    sp.acquire("m", extents((0, 1)), 2, 100, 0)
    _, planned = sp.plan_acknowledge("m", [(0, 1, [ACCEPT])], 0)
    sp.expire_locks(2000)
    sp.acquire("n", extents((0, 0)), 2, 1, 2000)                  # 0 taken by n while m's write was under way
    sp.apply_planned("m", planned)
    assert states(sp) == {0: (RecordState.ACQUIRED, 2), 1: (RecordState.AVAILABLE, 1)}
    assert sp.records[0].member_id == "n"


# -- the in-memory persister ---------------------------------------------------------------------------
def test_memory_persister_merges_prunes_and_fences():
    p = MemoryPersister()
    key = SharePartitionKey("g", T, 0)

    async def main():
        assert (await p.read_state(key, 0)).error_code == ErrorCode.INVALID_REQUEST     # never initialized
        assert await p.initialize_state(key, 0, 5) == NONE
        assert (await p.read_state(key, 1)).state == ShareState(0, 5, 1, ())
        assert await p.write_state(key, ShareState(0, 5, 1, (B(5, 9, AVAILABLE, 1),))) == NONE
        assert await p.write_state(key, ShareState(0, 7, 1, (B(7, 7, ACKNOWLEDGED, 1), B(9, 10, ARCHIVED, 2)))) == NONE
        assert (await p.read_state(key, 1)).state == ShareState(0, 7, 1, (
            B(7, 7, ACKNOWLEDGED, 1), B(8, 8, AVAILABLE, 1), B(9, 10, ARCHIVED, 2)))
        assert (await p.read_state(key, 0)).error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert await p.write_state(key, ShareState(0, 7, 0)) == ErrorCode.FENCED_LEADER_EPOCH
        assert await p.initialize_state(key, 1, 0) == NONE
        assert await p.write_state(key, ShareState(0, 7, 1)) == ErrorCode.FENCED_STATE_EPOCH
        assert await p.delete_state(key) == NONE
        assert (await p.read_summary(key)).start_offset == -1

    trio.run(main)


# -- the leader's flow (ShareGroups) -----------------------------------------------------------------------
def shell(persister: MemoryPersister, reset: str = "earliest") -> tuple[ShareGroups, SimpleNamespace]:
    broker = SimpleNamespace(config={"samsa.share.auto.offset.reset": reset}, now_ms=lambda: 0,
                             share_persister=persister, metadata=SimpleNamespace(image=SimpleNamespace(configs={})))
    return ShareGroups(broker), SimpleNamespace(log_start_offset=0, high_watermark=20, leader_epoch=0)


def test_released_records_come_back_after_the_share_partition_is_read_again():
    persister = MemoryPersister()
    shares, log = shell(persister)
    key = SharePartitionKey("g", T, 0)

    async def main():
        assert await shares.load("g", T, 0, log) == NONE
        assert [c[0] for c in persister.calls] == ["read_state", "initialize_state", "read_state"]
        sp = shares.partition("g", T, 0, log)
        sp.acquire("m", extents((0, 19)), 20, 100, 0)
        assert await shares.acknowledge("g", T, 0, "m", [(0, 9, [ACCEPT])], 0) == NONE
        assert await shares.acknowledge("g", T, 0, "m", [(10, 19, [RELEASE])], 0) == NONE
        assert persister.states[key].offsets == {off: (AVAILABLE, 1) for off in range(10, 20)}
        assert persister.states[key].start_offset == 10
        shares.drop(("g", T, 0))                   # e.g. a leader change: the next leader reads the state
        assert await shares.load("g", T, 0, log) == NONE
        again = shares.partition("g", T, 0, log)
        assert again is not sp and again.start_offset == 10 and again.next_fetch_offset(0) == 10
        got = again.acquire("m", extents((0, 19)), 20, 100, 0)
        assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got.ranges] == [(10, 19, 2)]

    trio.run(main)


def test_a_failed_write_answers_its_error_and_changes_nothing():
    persister = MemoryPersister()
    shares, log = shell(persister)

    async def main():
        await shares.load("g", T, 0, log)
        sp = shares.partition("g", T, 0, log)
        sp.acquire("m", extents((0, 4)), 5, 100, 0)
        persister.fail["write_state"] = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert await shares.acknowledge("g", T, 0, "m", [(0, 4, [ACCEPT])], 0) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert all(r.state == RecordState.ACQUIRED for r in sp.records.values()) and sp.start_offset == 0
        assert await shares.acknowledge("g", T, 0, "m", [(0, 4, [ACCEPT])], 0) == NONE    # the retry succeeds
        assert sp.start_offset == 5

    trio.run(main)


def test_fenced_state_drops_the_share_partition_and_answers_not_leader():
    persister = MemoryPersister()
    shares, log = shell(persister)

    async def main():
        await shares.load("g", T, 0, log)
        shares.partition("g", T, 0, log).acquire("m", extents((0, 4)), 5, 100, 0)
        persister.fail["write_state"] = ErrorCode.FENCED_STATE_EPOCH
        assert await shares.acknowledge("g", T, 0, "m", [(0, 4, [ACCEPT])], 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert shares.partition("g", T, 0, log) is None and shares.existing("g", T, 0) is None
        persister.fail["read_state"] = ErrorCode.FENCED_LEADER_EPOCH
        assert await shares.load("g", T, 0, log) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert shares.load_errors[("g", T, 0)] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert await shares.load("g", T, 0, log) == NONE                # read again: the records are back
        assert shares.partition("g", T, 0, log).next_fetch_offset(0) == 0

    trio.run(main)


def test_a_new_leader_epoch_reads_the_state_again_and_concurrent_loads_share_one_read():
    persister = MemoryPersister()
    shares, log = shell(persister, reset="latest")

    async def main():
        async with trio.open_nursery() as n:
            for _ in range(3):
                n.start_soon(shares.load, "g", T, 0, log)
        assert [c[0] for c in persister.calls] == ["read_state", "initialize_state", "read_state"]
        assert shares.partition("g", T, 0, log).start_offset == 20       # latest: the high watermark
        log.leader_epoch = 1
        assert shares.partition("g", T, 0, log) is None                 # another epoch: not this one's state
        assert await shares.load("g", T, 0, log) == NONE
        assert persister.states[SharePartitionKey("g", T, 0)].leader_epoch == 1

    trio.run(main)


def test_expired_locks_and_departed_members_are_written_in_the_background():
    persister = MemoryPersister()
    shares, log = shell(persister)
    key = SharePartitionKey("g", T, 0)

    async def main():
        async with trio.open_nursery() as n:
            await n.start(shares.run)
            await shares.load("g", T, 0, log)
            sp = shares.partition("g", T, 0, log)
            sp.acquire("m", extents((0, 4)), 5, 100, 0)
            assert shares.release("g", "m") == 5
            await trio.testing.wait_all_tasks_blocked()
            assert persister.states[key].offsets == {off: (AVAILABLE, 1) for off in range(5)}
            n.cancel_scope.cancel()

    trio.run(main)


def test_delete_group_deletes_the_persisted_state():
    persister = MemoryPersister()
    shares, log = shell(persister)

    async def main():
        await shares.load("g", T, 0, log)
        shares.coordinator.groups["g"] = ShareGroup("g")
        assert await shares.delete("g", 0) == NONE
        assert persister.states == {} and ("delete_state", SharePartitionKey("g", T, 0)) in persister.calls

    trio.run(main)


def test_inflight_equality_is_what_plan_compares():
    assert InFlight(RecordState.ACQUIRED, 1, "m", 5) == InFlight(RecordState.ACQUIRED, 1, "m", 5)
