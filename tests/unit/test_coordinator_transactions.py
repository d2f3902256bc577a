"""The pure transaction coordinator (coordinator/txn/coordinator.py) and transactional offsets in the
group coordinator, driven with a fake clock: exact results, states, records and marker jobs.

Error codes: 16 NOT_COORDINATOR, 14 COORDINATOR_LOAD_IN_PROGRESS, 42 INVALID_REQUEST,
47 INVALID_PRODUCER_EPOCH, 48 INVALID_TXN_STATE, 49 INVALID_PRODUCER_ID_MAPPING,
50 INVALID_TRANSACTION_TIMEOUT, 51 CONCURRENT_TRANSACTIONS, 88 UNSTABLE_OFFSET_COMMIT,
90 PRODUCER_FENCED, 105 TRANSACTIONAL_ID_NOT_FOUND, 22 ILLEGAL_GENERATION, 25 UNKNOWN_MEMBER_ID.
"""
from __future__ import annotations

import itertools
import random
import struct
from typing import Any

import pytest

from coordinator.group.coordinator import (OffsetCommitPartition, OffsetCommitTopic, TxnOffsetCommit, TxnRecords)
from coordinator.hashing import partition_for_group
from coordinator.group.offsets_records import OffsetCommitKey, OffsetCommitValue
from coordinator.group.offsets_records import _Writer
from coordinator.txn.records import (TransactionLogValue, decode_key, decode_value, encode_key, encode_state, encode_value,
                                     group_partitions)
from coordinator.txn.coordinator import (AddOffsetsToTxn, AddPartitionsToTxn, DescribeTransactions, EndTxn, InitProducerId, ListTransactions, MarkerJob, Step, TransactionCoordinator, TxnCoordinatorConfig, TxnState)
from tests.support.coordinator_harness import Driver, Harness, decode_records

MINUTE = 60000


class Txn(Driver):
    """Drives one transaction coordinator with a fake clock; producer ids count from 1000."""

    def __init__(self, partition: int | None = None, loading: bool = False, **config: Any) -> None:
        self.pids = itertools.count(1000)
        super().__init__(TransactionCoordinator(TxnCoordinatorConfig(**config), partition, loading=loading,
                                                allocate_producer_id=lambda: next(self.pids)))

    def send(self, req: Any) -> tuple[Any, Step]:
        """(the request's one result, the step): every transaction request is answered at once."""
        token, step = super().send(req)
        return self.result(token, step), step

    def finish(self, step: Step) -> list[Step]:
        """Carry out the step's marker jobs, as the shell does."""
        out = []
        for job in step.markers:
            s = self.co.markers_written(job.transactional_id, job.producer_id, job.producer_epoch, job.commit,
                                        self.now)
            self.log.extend(s.records)
            out.append(s)
        return out

    # requests
    def init(self, tid: str = "tx", timeout: int = MINUTE, pid: int = -1, epoch: int = -1, version: int = 5) -> Any:
        r, step = self.send(InitProducerId(transactional_id=tid, transaction_timeout_ms=timeout,
                                           producer_id=pid, producer_epoch=epoch, api_version=version))
        self.finish(step)
        return r

    def add(self, pid: int, epoch: int, *tps: tuple[str, int], tid: str = "tx") -> int:
        r, _ = self.send(AddPartitionsToTxn(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                            partitions=list(tps)))
        return r.error_code

    def end(self, pid: int, epoch: int, commit: bool, tid: str = "tx", finish: bool = True) -> tuple[int, Step]:
        r, step = self.send(EndTxn(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit))
        if finish:
            self.finish(step)
        return r.error_code, step

    def state(self, tid: str = "tx") -> str | None:
        md = self.co.metadata(tid)
        return None if md is None else md.state.display

    def logged(self) -> list[tuple[str, TransactionLogValue | None]]:
        return [(decode_key(k), None if v is None else decode_value(v)) for k, v in self.log]


def states(log: list[tuple[str, TransactionLogValue | None]]) -> list[tuple[str, str | None, int, int]]:
    return [(tid, None if v is None else TxnState.from_id(v.transaction_status).display,
             -1 if v is None else v.producer_id, -1 if v is None else v.producer_epoch) for tid, v in log]


# =========================================================================== record format

def test_record_bytes_are_kafkas_transaction_log_v0() -> None:
    assert encode_key("tx") == b"\x00\x00\x00\x02tx"
    value = TransactionLogValue(1000, 3, 60000, 1, (("t", (0, 1)),), 100, 90)
    assert encode_value(value) == (
        b"\x00\x00" + struct.pack(">qhib", 1000, 3, 60000, 1)
        + struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">qq", 100, 90))
    empty = TransactionLogValue(1000, 0, 60000, 0, None, 5, -1)
    assert encode_value(empty)[17:21] == b"\xff\xff\xff\xff"            # null partitions in state Empty
    assert decode_value(encode_value(value)) == value
    assert decode_value(encode_value(empty)) == empty


def _field_by_field_v0(value: TransactionLogValue) -> bytes:
    """TransactionLogValue v0 written field by field, as the encoder did before it packed structs."""
    w = _Writer()
    w.int16(0)
    w.int64(value.producer_id)
    w.int16(value.producer_epoch)
    w.int32(value.transaction_timeout_ms)
    w.parts.append(struct.pack(">b", value.transaction_status))
    if value.transaction_partitions is None:
        w.int32(-1)
    else:
        w.array_len(len(value.transaction_partitions))
        for topic, ids in value.transaction_partitions:
            w.string(topic)
            w.array_len(len(ids))
            for p in ids:
                w.int32(p)
    w.int64(value.transaction_last_update_timestamp_ms)
    w.int64(value.transaction_start_timestamp_ms)
    return w.getvalue()


def test_state_records_built_from_fields_have_the_bytes_of_the_value_encoder() -> None:
    """The coordinator writes ``encode_state`` (no TransactionLogValue per transition): over random
    fields and partition sets (none, one, several topics, non-ASCII names) its bytes are those of
    ``encode_value`` and of the field-by-field writer, and decode to the same value."""
    rng = random.Random(23)
    topics = ["t", "orders", "__consumer_offsets", "tö-ünicode", "x" * 200]
    for i in range(3000):
        status = rng.randrange(0, 7)
        n = rng.choice([0, 1, 1, 1, 2, 3, rng.randrange(0, 40)])
        partitions = {(rng.choice(topics), rng.randrange(0, 1 << rng.choice([2, 8, 31]))) for _ in range(n)}
        fields = (rng.randrange(-1, 1 << 63), rng.randrange(-1, 32767), rng.randrange(0, 1 << 31), status)
        last_update, start = rng.randrange(-1, 1 << 62), rng.choice([-1, rng.randrange(0, 1 << 62)])
        empty = status == 0 and i % 2 == 0          # state Empty writes the null list
        value = TransactionLogValue(*fields, None if empty else group_partitions(partitions), last_update, start)
        data = encode_state(*fields, None if empty else partitions, last_update, start)
        assert data == encode_value(value) == _field_by_field_v0(value)
        assert decode_value(data) == value


def test_flexible_v1_values_with_tagged_fields_are_read() -> None:
    value = TransactionLogValue(7, 2, 1000, 4, (("a", (3,)), ("b", ())), 11, 10, previous_producer_id=6,
                                next_producer_id=8, client_transaction_version=2, next_producer_epoch=0)
    data = encode_value(value, version=1)
    assert data[:2] == b"\x00\x01"
    assert decode_value(data) == value


# =========================================================================== InitProducerId

def test_init_allocates_producer_id_then_bumps_epoch() -> None:
    t = Txn()
    t.at(5)
    r = t.init()
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, 1000, 0)
    assert states(t.logged()) == [("tx", "Empty", 1000, 0)]
    assert t.logged()[0][1].transaction_partitions is None
    assert t.logged()[0][1].transaction_last_update_timestamp_ms == 5
    assert t.logged()[0][1].transaction_start_timestamp_ms == -1
    r = t.init()                                 # a new producer instance with the same id
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, 1000, 1)
    assert t.init(tid="other").producer_id == 1001


def test_init_rejects_bad_input() -> None:
    t = Txn(transaction_max_timeout_ms=900000)
    assert t.init(timeout=900001).error_code == 50
    assert t.init(timeout=0).error_code == 50
    assert t.init(timeout=900000).error_code == 0
    assert t.init(tid="").error_code == 42
    assert t.init(tid="x", pid=5).error_code == 42          # producer id without epoch
    assert t.co.metadata("x") is None


def test_init_with_expected_epoch_kip360() -> None:
    t = Txn()
    assert t.init().producer_epoch == 0
    r = t.init(pid=1000, epoch=0)                            # resume after an error: bump
    assert (r.error_code, r.producer_epoch) == (0, 1)
    r = t.init(pid=1000, epoch=0)                            # retry of that call: same epoch again
    assert (r.error_code, r.producer_epoch) == (0, 1)
    assert t.init(pid=1000, epoch=5).error_code == 90        # a fenced epoch
    assert t.init(pid=77, epoch=1).error_code == 90          # someone else's producer id


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    t = Txn()
    t.init()
    t.co.metadata("tx").producer_epoch = 32766
    r = t.init()
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, 1001, 0)
    assert t.co.metadata("tx").last_producer_id == 1000


def test_second_producer_fences_the_first_and_aborts_its_transaction() -> None:
    t = Txn()
    t.init()
    assert t.add(1000, 0, ("t", 1), ("t", 0)) == 0
    r, step = t.send(InitProducerId(transactional_id="tx", transaction_timeout_ms=MINUTE))
    assert r.error_code == 51                                 # CONCURRENT_TRANSACTIONS: retry
    assert step.markers == [MarkerJob("tx", 1000, 1, False, 0, (("t", 0), ("t", 1)))]
    assert t.state() == "PrepareAbort"
    assert t.init().error_code == 51                          # still completing
    t.finish(step)
    assert t.state() == "CompleteAbort"
    r = t.init()
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, 1000, 2)
    assert states(t.logged()) == [("tx", "Empty", 1000, 0), ("tx", "Ongoing", 1000, 0),
                                  ("tx", "PrepareAbort", 1000, 1), ("tx", "CompleteAbort", 1000, 1),
                                  ("tx", "Empty", 1000, 2)]
    # the old producer is fenced everywhere
    assert t.add(1000, 0, ("t", 2)) == 90
    assert t.end(1000, 0, True)[0] == 90
    assert t.add(1000, 1, ("t", 2)) == 90


# =========================================================================== a transaction's life

def test_commit_writes_prepare_markers_then_complete() -> None:
    t = Txn()
    t.at(10).init()
    assert t.at(20).add(1000, 0, ("b", 0)) == 0
    assert t.at(30).add(1000, 0, ("a", 2), ("b", 0)) == 0
    n = len(t.log)
    assert t.add(1000, 0, ("a", 2)) == 0 and len(t.log) == n           # nothing new: no record
    md = t.co.metadata("tx")
    assert (md.state, md.partitions, md.start_ms) == (TxnState.ONGOING, {("a", 2), ("b", 0)}, 20)
    code, step = t.at(40).end(1000, 0, True, finish=False)
    assert code == 0
    assert step.markers == [MarkerJob("tx", 1000, 0, True, 0, (("a", 2), ("b", 0)))]
    assert t.state() == "PrepareCommit"
    assert t.end(1000, 0, True, finish=False)[0] == 51      # a retry while the markers are written
    assert t.end(1000, 0, False, finish=False)[0] == 48     # abort after commit was decided
    assert t.add(1000, 0, ("c", 0)) == 51
    t.at(50).finish(step)
    assert t.state() == "CompleteCommit"
    assert t.end(1000, 0, True)[0] == 0                     # idempotent retry of a finished commit
    assert t.end(1000, 0, False)[0] == 48
    log = t.logged()
    assert states(log) == [("tx", "Empty", 1000, 0), ("tx", "Ongoing", 1000, 0), ("tx", "Ongoing", 1000, 0),
                           ("tx", "PrepareCommit", 1000, 0), ("tx", "CompleteCommit", 1000, 0)]
    assert log[3][1].transaction_partitions == (("a", (2,)), ("b", (0,)))
    assert (log[3][1].transaction_start_timestamp_ms, log[3][1].transaction_last_update_timestamp_ms) == (20, 40)
    assert log[4][1].transaction_partitions == ()
    # the next transaction starts afresh
    assert t.at(60).add(1000, 0, ("c", 0)) == 0
    assert (t.co.metadata("tx").partitions, t.co.metadata("tx").start_ms) == ({("c", 0)}, 60)
    code, step = t.end(1000, 0, False)
    assert (code, t.state()) == (0, "CompleteAbort")


def test_bad_end_and_add_requests() -> None:
    t = Txn()
    assert t.end(1, 0, True)[0] == 49                        # unknown transactional id
    assert t.add(1, 0, ("t", 0)) == 49
    t.init()
    assert t.end(1000, 0, True)[0] == 48                     # nothing to end (Empty)
    assert t.end(999, 0, True)[0] == 49                      # wrong producer id
    assert t.end(1000, 3, True)[0] == 90                     # wrong epoch
    assert t.add(1000, 1, ("t", 0)) == 90
    assert t.end(1000, 0, True, tid="")[0] == 42
    assert t.state() == "Empty"


def test_add_offsets_adds_the_groups_offsets_partition() -> None:
    t = Txn()
    t.init()
    p = partition_for_group("my-group", 50)
    r, _ = t.send(AddOffsetsToTxn(transactional_id="tx", producer_id=1000, producer_epoch=0, group_id="my-group",
                                  offsets_partition=p))
    assert r.error_code == 0
    assert t.co.metadata("tx").partitions == {("__consumer_offsets", p)}


def test_verify_only_checks_membership() -> None:
    t = Txn()
    t.init()
    t.add(1000, 0, ("t", 0))
    r, step = t.send(AddPartitionsToTxn(transactional_id="tx", producer_id=1000, producer_epoch=0,
                                        partitions=[("t", 0), ("t", 1)], verify_only=True))
    assert (r.error_for(("t", 0)), r.error_for(("t", 1)), step.records) == (0, 48, [])
    r, _ = t.send(AddPartitionsToTxn(transactional_id="tx", producer_id=1000, producer_epoch=7,
                                     partitions=[("t", 0)], verify_only=True))
    assert r.error_for(("t", 0)) == 90
    assert t.co.metadata("tx").partitions == {("t", 0)}


# =========================================================================== timeouts and expiry

def test_transaction_past_its_timeout_is_aborted_with_a_bumped_epoch() -> None:
    t = Txn()
    t.at(0).init(timeout=1000)
    t.at(100).add(1000, 0, ("t", 0))
    # Kafka: aborted once start + timeout < now, by a sweep every
    # transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s from the first step, at 0)
    assert t.co.next_deadline() == 10000
    assert t.tick(9999).records == []
    step = t.tick(10000)
    assert step.markers == [MarkerJob("tx", 1000, 1, False, 0, (("t", 0),))]
    assert t.state() == "PrepareAbort"
    t.finish(step)
    assert t.state() == "CompleteAbort"
    assert t.end(1000, 0, True)[0] == 90                     # the stale producer learns it is fenced
    assert t.co.next_deadline() == 3600000                   # only the expiry scan is left
    assert t.init(timeout=1000).producer_epoch == 2


def test_next_deadline_follows_ongoing_transactions_over_random_requests() -> None:
    """``next_deadline`` keeps a count of Ongoing transactions instead of walking every id: over
    random inits (fencing Ongoing ones), adds, commits/aborts, time-outs, expiry and a replay into a
    fresh coordinator, the count is the number of Ongoing ids and the deadline what a walk gives."""
    rng = random.Random(29)
    t = Txn(transactional_id_expiration_ms=5000, remove_expired_transaction_cleanup_interval_ms=3000,
            abort_timed_out_transaction_cleanup_interval_ms=700)
    ids = [f"tx{i}" for i in range(6)]
    now = 0

    def check(co: TransactionCoordinator) -> None:
        ongoing = sum(1 for tid in co.transactional_ids() if co.metadata(tid).state == TxnState.ONGOING)
        assert co._ongoing == ongoing
        sweep, expiry = co._next_abort_sweep, co._next_expiry_check
        walked = sweep if sweep is not None and ongoing and (expiry is None or sweep < expiry) else expiry
        assert co.next_deadline() == walked

    for _ in range(3000):
        now += rng.randrange(0, 300)
        tid = rng.choice(ids)
        md = t.co.metadata(tid)
        pid, epoch = (md.producer_id, md.producer_epoch) if md is not None else (-1, -1)
        action = rng.randrange(5)
        t.at(now)
        if action == 0:
            t.init(tid=tid, timeout=rng.choice([500, 2000]))
        elif action == 1:
            t.add(pid, epoch, ("t", rng.randrange(3)), tid=tid)
        elif action == 2:
            t.end(pid, epoch, rng.random() < 0.5, tid=tid)
        elif action == 3:
            t.finish(t.tick(now))
        else:
            t.end(pid, epoch, False, tid=tid, finish=False)     # markers never reported
        check(t.co)
    fresh = TransactionCoordinator(t.co.config, loading=True, allocate_producer_id=lambda: 0)
    for k, v in t.log:
        fresh.replay(k, v)
    assert fresh._ongoing == sum(1 for tid in fresh.transactional_ids()
                                 if fresh.metadata(tid).state == TxnState.ONGOING)
    fresh.load_complete(now)
    check(fresh)


def test_idle_transactional_ids_expire() -> None:
    t = Txn(transactional_id_expiration_ms=10 * MINUTE, remove_expired_transaction_cleanup_interval_ms=MINUTE)
    t.at(0).init()
    t.at(0).init(tid="busy")
    t.add(1001, 0, ("t", 0), tid="busy")
    t.co.metadata("busy").timeout_ms = 900000
    t.tick(10 * MINUTE)
    assert t.co.transactional_ids() == ["busy"]              # Ongoing ids never expire
    assert t.logged()[-1] == ("tx", None)                    # tombstone


# =========================================================================== describe / list

def test_describe_and_list() -> None:
    t = Txn()
    t.at(0).init()
    t.at(0).init(tid="other")
    t.at(100).add(1000, 0, ("t", 1), ("t", 0), ("a", 5))
    r, _ = t.send(DescribeTransactions(transactional_ids=["tx", "nope", "other"]))
    d = {x.transactional_id: x for x in r.transactions}
    assert (d["tx"].error_code, d["tx"].state, d["tx"].timeout_ms, d["tx"].start_time_ms, d["tx"].producer_id,
            d["tx"].producer_epoch, d["tx"].topics) == (0, "Ongoing", MINUTE, 100, 1000, 0, [("a", [5]), ("t", [0, 1])])
    assert d["nope"].error_code == 105
    assert (d["other"].state, d["other"].start_time_ms, d["other"].topics) == ("Empty", -1, [])

    def listed(**kw: Any) -> tuple[list[str], list[tuple[str, int, str]]]:
        r, _ = t.at(200).send(ListTransactions(**kw))
        return r.unknown_state_filters, [(x.transactional_id, x.producer_id, x.state) for x in r.transactions]

    assert listed() == ([], [("tx", 1000, "Ongoing"), ("other", 1001, "Empty")])
    assert listed(state_filters=["Ongoing", "Bogus"]) == (["Bogus"], [("tx", 1000, "Ongoing")])
    assert listed(producer_id_filters=[1001]) == ([], [("other", 1001, "Empty")])
    assert listed(duration_filter_ms=99) == ([], [("tx", 1000, "Ongoing"), ("other", 1001, "Empty")])
    assert listed(duration_filter_ms=100) == ([], [("other", 1001, "Empty")])     # start -1: very old
    assert listed(transactional_id_pattern="o.*") == ([], [("other", 1001, "Empty")])


def test_not_coordinator_and_loading() -> None:
    tid = "tx"
    mine = partition_for_group(tid, 50)
    t = Txn(partition=(mine + 1) % 50)
    assert t.init(tid).error_code == 16
    t = Txn(partition=mine, loading=True)
    assert t.init(tid).error_code == 14
    t.co.load_complete(0)
    assert t.init(tid).error_code == 0


# =========================================================================== replay

def test_replay_rebuilds_state_and_finishes_prepared_transactions() -> None:
    t = Txn()
    t.at(0).init()
    t.add(1000, 0, ("t", 0))
    t.at(0).init(tid="open", timeout=5000)
    t.at(10).add(1001, 0, ("t", 1), tid="open")
    code, step = t.at(20).end(1000, 0, True, finish=False)     # crash before the markers
    assert code == 0
    fresh = TransactionCoordinator(allocate_producer_id=lambda: 5000, loading=True)
    for k, v in t.log:
        fresh.replay(k, v)
    md = fresh.metadata("tx")
    assert (md.state, md.producer_id, md.producer_epoch, md.partitions) == (TxnState.PREPARE_COMMIT, 1000, 0, {("t", 0)})
    step = fresh.load_complete(30)
    assert step.markers == [MarkerJob("tx", 1000, 0, True, 0, (("t", 0),))]
    done = fresh.markers_written("tx", 1000, 0, True, 40)
    assert fresh.metadata("tx").state == TxnState.COMPLETE_COMMIT
    assert states([(decode_key(k), decode_value(v)) for k, v in done.records]) == [("tx", "CompleteCommit", 1000, 0)]
    # the open transaction keeps its start time and times out as it would have
    assert fresh.metadata("open").state == TxnState.ONGOING
    assert fresh.next_deadline() == 10030                    # the first sweep: 10 s after loading
    assert fresh.tick(10030).markers == [MarkerJob("open", 1001, 1, False, 0, (("t", 1),))]
    # a tombstone removes the id
    from coordinator.txn.records import transaction_record
    fresh.replay(*transaction_record("tx", None))
    assert fresh.metadata("tx") is None


def test_stale_markers_written_report_changes_nothing() -> None:
    t = Txn()
    t.init()
    assert t.co.markers_written("tx", 1000, 0, True, 0).records == []
    assert t.co.markers_written("nope", 1, 0, True, 0).records == []


# =========================================================================== transactional offsets

def txn_commit(h: Harness, offsets: dict[tuple[str, int], int], pid: int = 7, epoch: int = 0, group: str = "g",
               **kw: Any) -> tuple[dict[tuple[str, int], int], Step]:
    topics: dict[str, OffsetCommitTopic] = {}
    for (topic, p), off in offsets.items():
        topics.setdefault(topic, OffsetCommitTopic(topic)).partitions.append(OffsetCommitPartition(p, off))
    token, step = h.send(TxnOffsetCommit(group_id=group, transactional_id="tx", producer_id=pid,
                                         producer_epoch=epoch, topics=list(topics.values()), **kw))
    r = h.result(token, step)
    return {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}, step


def test_txn_offsets_are_pending_until_commit_marker() -> None:
    h = Harness()
    h.at(100)
    errors, step = txn_commit(h, {("t", 0): 5, ("t", 1): 6})
    assert errors == {("t", 0): 0, ("t", 1): 0}
    assert step.records == []
    assert [b.producer_id for b in step.txn_records] == [7]
    assert decode_records(list(step.txn_records[0].records)) == [
        (OffsetCommitKey("g", "t", 0), OffsetCommitValue(5, "", 100, -1, -1)),
        (OffsetCommitKey("g", "t", 1), OffsetCommitValue(6, "", 100, -1, -1))]
    assert h.fetched() == {}                                           # nothing committed yet
    res = h.fetch(("g", {"t": [0, 2]}), require_stable=True).groups[0]
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in res.topics[0].partitions] == \
        [(0, -1, 88), (2, -1, 0)]
    assert h.fetched("g", {"t": [0]}) == {("t", 0): (-1, -1, "", 0)}  # without require_stable: last committed
    h.co.complete_transaction(7, True, 200)
    assert h.fetched() == {("t", 0): (5, -1, "", 0), ("t", 1): (6, -1, "", 0)}
    res = h.fetch(("g", {"t": [0]}), require_stable=True).groups[0]
    assert res.topics[0].partitions[0].error_code == 0


def test_aborted_txn_offsets_are_discarded_and_later_commits_win() -> None:
    h = Harness()
    h.commit_errors({("t", 0): 1})
    txn_commit(h, {("t", 0): 50})
    h.co.complete_transaction(7, False, 0)
    assert h.fetched() == {("t", 0): (1, -1, "", 0)}
    txn_commit(h, {("t", 0): 60, ("t", 1): 61}, pid=8)
    h.commit_errors({("t", 0): 2})                                    # a plain commit after the txn's record
    h.co.complete_transaction(8, True, 0)
    assert h.fetched() == {("t", 0): (2, -1, "", 0), ("t", 1): (61, -1, "", 0)}


def test_txn_offset_commit_validates_members() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    assert txn_commit(h, {("t", 0): 1}, generation_id=gen, member_id=a)[0] == {("t", 0): 0}
    assert txn_commit(h, {("t", 0): 1}, generation_id=gen + 1, member_id=a)[0] == {("t", 0): 22}
    assert txn_commit(h, {("t", 0): 1}, generation_id=gen, member_id="ghost")[0] == {("t", 0): 25}
    assert txn_commit(h, {("t", 0): 1})[0] == {("t", 0): 0}            # v0-v2: no member info, allowed
    assert txn_commit(h, {("t", 0): 1}, group="")[0] == {("t", 0): 24}


def test_replay_settles_txn_offsets_by_markers() -> None:
    h = Harness()
    _, s1 = txn_commit(h, {("t", 0): 5}, pid=7, group="a")
    _, s2 = txn_commit(h, {("t", 0): 9}, pid=8, group="b")
    _, s3 = txn_commit(h, {("t", 1): 3}, pid=9, group="a")
    fresh = Harness(loading=True)
    for s, pid in ((s1, 7), (s2, 8), (s3, 9)):
        for k, v in s.txn_records[0].records:
            fresh.co.replay(k, v, producer_id=pid)
    fresh.co.replay_marker(7, True)
    fresh.co.replay_marker(8, False)                                  # pid 9 still open
    fresh.co.load_complete(0)
    assert fresh.fetched("a") == {("t", 0): (5, -1, "", 0)}
    assert fresh.fetched("b") == {}
    res = fresh.fetch(("a", {"t": [1]}), require_stable=True).groups[0]
    assert res.topics[0].partitions[0].error_code == 88
    assert fresh.state("b") == "Empty"                                # groups known only by their txn offsets


def test_groups_with_pending_txn_offsets_do_not_expire() -> None:
    h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=MINUTE)
    h.at(0)
    txn_commit(h, {("t", 0): 5})
    h.tick(10 * MINUTE)
    assert h.state() == "Empty"
    h.co.complete_transaction(7, True, 10 * MINUTE)
    assert h.fetched() == {("t", 0): (5, -1, "", 0)}


@pytest.mark.parametrize("commit", [True, False])
def test_txn_records_type(commit: bool) -> None:
    h = Harness()
    _, step = txn_commit(h, {("t", 0): 5}, pid=3, epoch=4)
    assert step.txn_records[0] == TxnRecords(3, 4, step.txn_records[0].records)
    h.co.complete_transaction(3, commit, 0)
    assert (("t", 0) in {k for k in h.fetched()}) == commit


# =========================================================================== KIP-890 / issue 20

def test_timed_out_transactions_wait_for_the_sweep_interval() -> None:
    """Kafka aborts timed-out transactions in a sweep every
    transaction.abort.timed.out.transaction.cleanup.interval.ms, not at the exact deadline."""
    t = Txn(abort_timed_out_transaction_cleanup_interval_ms=500)
    t.at(0).init(timeout=100)
    t.at(10).add(1000, 0, ("t", 0))
    assert t.co.next_deadline() == 500
    assert t.at(300).add(1000, 0, ("t", 1)) == 0            # past its timeout, not swept yet
    step = t.tick(500)
    assert step.markers == [MarkerJob("tx", 1000, 1, False, 0, (("t", 0), ("t", 1)))]
    t.finish(step)
    t.at(600).init(tid="late", timeout=100)
    t.at(600).add(1001, 0, ("t", 0), tid="late")
    assert t.co.next_deadline() == 1000                      # the next sweep: 500 after the last one
    assert t.tick(999).markers == []
    assert [j.transactional_id for j in t.tick(1000).markers] == ["late"]


def test_txn_coordinator_config_names_the_sweep_interval() -> None:
    c = TxnCoordinatorConfig.from_properties({"transaction.abort.timed.out.transaction.cleanup.interval.ms": "250"})
    assert c.abort_timed_out_transaction_cleanup_interval_ms == 250
    assert TxnCoordinatorConfig().abort_timed_out_transaction_cleanup_interval_ms == 10000


def tracked() -> Txn:
    t = Txn()
    t.co.track_pending = True
    return t


def test_pending_transition_answers_concurrent_transactions() -> None:
    """With a runtime that reports commits, a request while the transaction's last state record is
    not committed answers CONCURRENT_TRANSACTIONS (Kafka's pendingTransitionInProgress)."""
    t = tracked()
    assert t.at(0).init().error_code == 0
    t.co.transitions_committed(["tx"])
    assert t.add(1000, 0, ("t", 0)) == 0                     # Ongoing, written, not committed
    assert t.co.metadata("tx").pending_transition
    assert t.add(1000, 0, ("t", 0)) == 51                    # a retry while pending
    assert t.end(1000, 0, True)[0] == 51
    assert t.init(pid=1000, epoch=0).error_code == 51
    t.co.transitions_committed(["tx"])
    assert t.add(1000, 0, ("t", 0)) == 0                     # committed: nothing new, no record
    assert not t.co.metadata("tx").pending_transition
    code, step = t.end(1000, 0, True, finish=False)
    assert code == 0 and t.state() == "PrepareCommit"
    assert t.end(1000, 0, True)[0] == 51                     # the PrepareCommit record is pending
    t.co.transitions_committed(["tx"])
    t.finish(step)                                           # markers are the runtime's, never refused
    assert t.state() == "CompleteCommit"
    assert t.init(pid=1000, epoch=0).error_code == 51        # CompleteCommit pending
    t.co.transitions_committed(["tx"])
    assert t.init(pid=1000, epoch=0).error_code == 0


def test_pending_transition_is_not_swept_and_untracked_is_never_pending() -> None:
    t = tracked()
    t.at(0).init(timeout=100)
    t.co.transitions_committed(["tx"])
    t.at(10).add(1000, 0, ("t", 0))
    assert t.tick(10000).markers == []                       # its Ongoing record is not committed yet
    t.co.transitions_committed(["tx"])
    assert len(t.tick(20000).markers) == 1
    u = Txn()
    u.at(0).init()
    u.add(1000, 0, ("t", 0))
    assert not u.co.metadata("tx").pending_transition and u.add(1000, 0, ("t", 0)) == 0
    replayed = TransactionCoordinator(allocate_producer_id=lambda: 1, loading=True, track_pending=True)
    for k, v in t.log:
        replayed.replay(k, v)
    assert all(not replayed.metadata(tid).pending_transition for tid in replayed.transactional_ids())


def test_verify_only_reports_membership_and_pending_prepare() -> None:
    t = Txn()
    t.at(0).init()
    t.add(1000, 0, ("t", 0))
    r, _ = t.send(AddPartitionsToTxn(transactional_id="tx", producer_id=1000, producer_epoch=0,
                                     partitions=[("t", 0), ("t", 1)], verify_only=True))
    assert (r.error_for(("t", 0)), r.error_for(("t", 1))) == (0, 48)
    r, _ = t.send(AddPartitionsToTxn(transactional_id="tx", producer_id=1000, producer_epoch=1,
                                     partitions=[("t", 0)], verify_only=True))
    assert r.error_for(("t", 0)) == 90
    t.end(1000, 0, False, finish=False)
    r, _ = t.send(AddPartitionsToTxn(transactional_id="tx", producer_id=1000, producer_epoch=0,
                                     partitions=[("t", 0)], verify_only=True))
    assert r.error_for(("t", 0)) == 51


def test_verify_now_answers_what_handle_answers_or_defers() -> None:
    """``verify_now`` (the runtime's shortcut for a leader's KIP-890 check) gives the answer a
    stepped verify_only request gives, in every state the check distinguishes, and defers (None)
    whenever the step would hold more than that answer: loading, no clock yet, a timer due."""
    def verify(tid: str = "tx", pid: int = 1000, epoch: int = 0, tps: tuple = (("t", 0), ("t", 1))) -> Any:
        return AddPartitionsToTxn(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                  partitions=list(tps), verify_only=True)

    def same(t: Txn, req: AddPartitionsToTxn) -> Any:
        fast = t.co.verify_now(req, t.now)
        stepped, step = t.send(verify(req.transactional_id, req.producer_id, req.producer_epoch,
                                      tuple(req.partitions)))
        assert (step.records, step.markers) == ([], [])
        assert fast is not None and (fast.error_code, fast.partition_errors) == \
            (stepped.error_code, stepped.partition_errors)
        return fast

    assert Txn(loading=True).co.verify_now(verify(), 0) is None
    t = Txn(partition=partition_for_group("tx", 50))
    assert t.co.verify_now(verify(), 0) is None          # the clock starts with the first step
    t.at(0).init()
    assert same(t, verify()).partition_errors == {("t", 0): 48, ("t", 1): 48}   # Empty: in no transaction
    assert t.add(1000, 0, ("t", 0)) == 0
    assert same(t, verify()).partition_errors == {("t", 0): 0, ("t", 1): 48}
    assert same(t, verify(epoch=1)).error_code == 90    # fenced
    assert same(t, verify(pid=7)).error_code == 49      # another producer id
    unknown = next(f"id{i}" for i in range(500) if partition_for_group(f"id{i}", 50) == t.co.partition)
    assert same(t, verify(tid=unknown)).error_code == 49
    assert same(t, verify(tid="")).error_code == 42
    other = next(f"tx{i}" for i in range(100) if partition_for_group(f"tx{i}", 50) != t.co.partition)
    assert same(t, verify(tid=other)).error_code == 16  # hashed onto another coordinator
    with pytest.raises(AssertionError):                 # a request that is not a check is stepped
        assert t.co.verify_now(AddPartitionsToTxn(transactional_id="tx", producer_id=1000, producer_epoch=0,
                                                  partitions=[("t", 0)]), t.now) is not None
    t.end(1000, 0, True, finish=False)
    assert same(t, verify()).error_code == 51           # PrepareCommit
    # the abort sweep is due at 10 s (it would time the transaction out): stepped, not answered here
    t.at(9999)
    assert t.co.verify_now(verify(), 9999).error_code == 51
    assert t.co.verify_now(verify(), 10000) is None
    assert t.co._now == 9999                            # a deferred check moved nothing
