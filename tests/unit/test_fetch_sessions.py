"""Incremental fetch sessions (KIP-227): the leader's session cache and the follower's handler
(broker/replica/fetch_session.py, fetch_session_handler.py), without IO."""
from __future__ import annotations

import random
import uuid
from types import SimpleNamespace

from protocol.errors import ErrorCode

from broker.replica.fetch_session import (FINAL_EPOCH, INT32_MAX, INVALID_SESSION_ID, CachedPartition,
                                          FetchSessionCache, next_epoch)
from broker.replica.fetch_session_handler import FetchSessionHandler, PartitionData

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def fp(partition: int, offset: int, epoch: int = 5) -> SimpleNamespace:
    return SimpleNamespace(partition=partition, fetch_offset=offset, log_start_offset=0, partition_max_bytes=1024,
                           current_leader_epoch=epoch, last_fetched_epoch=epoch)


def cp(topic_id: uuid.UUID, partition: int, offset: int, epoch: int = 5) -> CachedPartition:
    return CachedPartition.of(None, topic_id, fp(partition, offset, epoch))


def answer(hw: int, records: bytes = b"", error: int = 0, lso: int | None = None, log_start: int = 0) -> SimpleNamespace:
    return SimpleNamespace(records=records, high_watermark=hw, last_stable_offset=hw if lso is None else lso,
                           log_start_offset=log_start, preferred_read_replica=-1, error_code=error)


def respond(c: CachedPartition, a: SimpleNamespace, update: bool) -> bool:
    return c.must_respond(bool(a.records), a.high_watermark, a.last_stable_offset, a.log_start_offset, a.error_code,
                          update)


def full_session(cache: FetchSessionCache, parts: list[CachedPartition], replica: int = 2, now: int = 0) -> int:
    ctx = cache.new_context(0, 0, parts, [], True, replica, now)
    assert ctx.full and not ctx.incremental and ctx.partitions == parts
    for p in ctx.partitions:
        respond(p, answer(hw=10), True)
    return cache.maybe_create_session(ctx.partitions, True, replica, True, now)


# -- leader: the cache -------------------------------------------------------------------------
def test_next_epoch_wraps_to_one_and_final_stays_final():
    assert next_epoch(0) == 1 and next_epoch(7) == 8
    assert next_epoch(INT32_MAX) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_full_fetch_creates_a_session_and_incremental_fetches_every_cached_partition():
    cache = FetchSessionCache(rng=random.Random(1))
    sid = full_session(cache, [cp(T1, 0, 10), cp(T1, 1, 10), cp(T2, 0, 10)])
    assert sid > 0 and cache.get(sid).epoch == 1
    # epoch 1 names only T1-0 at a new offset and forgets T2-0
    ctx = cache.new_context(sid, 1, [cp(T1, 0, 12)], [(T2, 0)], True, 2, 5)
    assert ctx.incremental and ctx.expected_epoch == 2 and cache.get(sid).epoch == 2
    assert [(p.topic_id, p.partition, p.fetch_offset) for p in ctx.partitions] == [(T1, 0, 12), (T1, 1, 10)]
    # a partition new to the session is added at the end, with nothing told yet
    ctx = cache.new_context(sid, 2, [cp(T2, 3, 0)], [], True, 2, 6)
    assert [(p.topic_id, p.partition) for p in ctx.partitions] == [(T1, 0), (T1, 1), (T2, 3)]
    assert ctx.partitions[-1].high_watermark == -1


def test_session_errors():
    cache = FetchSessionCache(rng=random.Random(2))
    sid = full_session(cache, [cp(T1, 0, 10)])
    assert cache.new_context(sid + 1, 1, [], [], True, 2, 0).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.new_context(sid, 1, [], [], True, 3, 0).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND  # another replica
    assert cache.new_context(sid, 2, [], [], True, 2, 0).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.new_context(sid, 1, [], [], False, 2, 0).error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    assert not cache.new_context(sid, 1, [], [], True, 2, 0).error
    # the same epoch again (a duplicate) is refused: the session moved on
    assert cache.new_context(sid, 1, [], [], True, 2, 0).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_full_fetch_closes_the_named_session_and_final_epoch_is_sessionless():
    cache = FetchSessionCache(rng=random.Random(3))
    sid = full_session(cache, [cp(T1, 0, 10)])
    ctx = cache.new_context(sid, 0, [cp(T1, 0, 10)], [], True, 2, 0)
    assert ctx.full and cache.get(sid) is None
    sid2 = full_session(cache, [cp(T1, 0, 10)])
    ctx = cache.new_context(sid2, FINAL_EPOCH, [cp(T1, 0, 10)], [], True, 2, 0)
    assert not ctx.full and not ctx.incremental and len(cache) == 0


def test_forgetting_every_partition_closes_the_session():
    cache = FetchSessionCache(rng=random.Random(4))
    sid = full_session(cache, [cp(T1, 0, 10)])
    ctx = cache.new_context(sid, 1, [], [(T1, 0)], True, 2, 0)
    assert not ctx.incremental and ctx.partitions == [] and cache.get(sid) is None


def test_must_respond_only_with_news():
    c = cp(T1, 0, 10)
    assert respond(c, answer(hw=10), True)                  # never told: goes out
    assert not respond(c, answer(hw=10), True)              # nothing new
    assert respond(c, answer(hw=10, records=b"x"), True)    # records
    assert respond(c, answer(hw=11), False)                 # a new HW (not cached: update False)
    assert respond(c, answer(hw=11), True) and not respond(c, answer(hw=11), True)
    assert respond(c, answer(hw=11, lso=9), True)           # a new last stable offset
    assert respond(c, answer(hw=11, lso=9, log_start=3), True)
    assert respond(c, answer(hw=-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER), True)
    assert c.high_watermark == -1
    assert respond(c, answer(hw=11, lso=9, log_start=3), True)  # the error cleared: sent again


def test_full_cache_evicts_stale_then_smaller_old_sessions_only():
    cache = FetchSessionCache(max_entries=2, eviction_ms=1000, rng=random.Random(5))
    a = full_session(cache, [cp(T1, 0, 0)], now=0)
    b = full_session(cache, [cp(T1, 0, 0), cp(T1, 1, 0)], now=0)
    # both young and privileged: no room
    assert cache.maybe_create_session([cp(T1, 0, 0)], True, 2, True, 500) == INVALID_SESSION_ID
    cache.new_context(b, 1, [], [], True, 2, 1500)              # b used; a idle since 0
    c = cache.maybe_create_session([cp(T1, 0, 0)], True, 2, True, 1600)   # a is stale
    assert c and cache.get(a) is None and cache.get(b) is not None and cache.evictions == 1
    # none stale; b is old (created at 0) and not larger than the newcomer: evicted
    d = cache.maybe_create_session([cp(T1, i, 0) for i in range(3)], True, 2, True, 1700)
    assert d and cache.get(b) is None and cache.get(c) is not None


# -- follower: the handler ---------------------------------------------------------------------
def pd(topic_id: uuid.UUID, partition: int, offset: int, epoch: int = 5) -> PartitionData:
    return PartitionData(topic_id, partition, offset, 0, 1024, epoch, epoch)


def test_handler_full_then_incremental_with_changed_added_and_forgotten():
    h = FetchSessionHandler()
    first = h.build([pd(T1, 0, 10), pd(T1, 1, 10), pd(T2, 0, 10)])
    assert (first.session_id, first.epoch, first.full) == (0, 0, True)
    assert [p.key for p in first.to_send] == [(T1, 0), (T1, 1), (T2, 0)] and first.to_forget == []
    assert h.handle_response(0, 77, {(T1, 0), (T1, 1), (T2, 0)})
    nothing = h.build([pd(T1, 0, 10), pd(T1, 1, 10), pd(T2, 0, 10)])
    assert (nothing.session_id, nothing.epoch, nothing.to_send, nothing.to_forget) == (77, 1, [], [])
    assert h.handle_response(0, 77, set())                     # nothing new: an empty answer
    nxt = h.build([pd(T1, 0, 12), pd(T1, 1, 10, epoch=6), pd(T2, 5, 0)])
    assert nxt.epoch == 2
    assert [p.key for p in nxt.to_send] == [(T1, 0), (T1, 1), (T2, 5)] and nxt.to_forget == [(T2, 0)]
    assert h.handle_response(0, 77, {(T1, 0)})
    assert h.build([pd(T1, 0, 12), pd(T1, 1, 10, epoch=6), pd(T2, 5, 0)]).epoch == 3


def test_handler_falls_back_to_full_fetches():
    h = FetchSessionHandler()
    h.build([pd(T1, 0, 10)])
    h.handle_response(0, 77, {(T1, 0)})
    h.build([pd(T1, 0, 10)])
    assert not h.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, set())
    again = h.build([pd(T1, 0, 10)])
    assert (again.session_id, again.epoch) == (77, 0) and [p.key for p in again.to_send] == [(T1, 0)]
    assert not h.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, set())
    assert (h.build([pd(T1, 0, 10)]).session_id, h.epoch) == (0, 0)
    assert h.handle_response(0, 78, {(T1, 0)})
    h.build([pd(T1, 0, 10)])
    h.handle_error()                                           # no answer: full, closing session 78
    assert (h.build([pd(T1, 0, 10)]).session_id, h.epoch) == (78, 0)
    # a full answer that omits a partition is not used; sessionless answers keep fetches full
    assert not h.handle_response(0, 79, set())
    h.build([pd(T1, 0, 10)])
    assert h.handle_response(0, INVALID_SESSION_ID, {(T1, 0)})
    assert h.build([pd(T1, 0, 10)]).full
    # an incremental answer naming a partition outside the session is not used
    h.handle_response(0, 80, {(T1, 0)})
    h.build([pd(T1, 0, 10)])
    assert not h.handle_response(0, 80, {(T2, 9)}) and h.build([pd(T1, 0, 10)]).full
