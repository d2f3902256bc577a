"""Kafka 4.2's share-group protocol on the pure state machines: RENEW acknowledgements (KIP-1222),
the record_limit acquire mode (KIP-1206), read_committed filtering, and the group configs
(Kafka's GroupConfig)."""
from __future__ import annotations

import pytest

from coordinator.group.group_config import duration_ms, share_settings, validate
from coordinator.share.partition import (INVALID_RECORD_STATE, INVALID_REQUEST, NONE, AcknowledgeType,
                                         AcquiredRange, RecordState, SharePartition, never_delivered)

ACCEPT, RELEASE, RENEW = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.RENEW


def one_batch(first: int, last: int) -> list[tuple[int, int, bool]]:
    return [(first, last, False)]


def test_renew_extends_the_lock_without_redelivery():
    sp = SharePartition(0, lock_duration_ms=1000)
    assert sp.acquire("m", one_batch(0, 2), 3, 100, 0).ranges == (AcquiredRange(0, 2, 1),)
    assert sp.acknowledge("m", [(0, 0, [RENEW])], 900) == NONE
    assert sp.next_fetch_offset(1500) == 1          # 1, 2 came back at 1000; 0 is held until 1900
    assert sp.records[0].state == RecordState.ACQUIRED and sp.records[1].state == RecordState.AVAILABLE
    got = sp.acquire("n", one_batch(0, 2), 3, 100, 1500)
    assert got.ranges == (AcquiredRange(1, 2, 2),)          # 0 is not delivered again
    assert sp.records[0].delivery_count == 1
    assert sp.acknowledge("m", [(0, 0, [ACCEPT])], 1800) == NONE
    assert sp.acknowledge("m", [(0, 0, [RENEW])], 1800) == INVALID_RECORD_STATE    # no longer acquired


def test_renew_only_from_v2_and_only_by_the_holder():
    sp = SharePartition(0, lock_duration_ms=1000)
    sp.acquire("m", one_batch(0, 0), 1, 100, 0)
    assert sp.acknowledge("m", [(0, 0, [RENEW])], 10, renew=False) == INVALID_REQUEST
    assert sp.acknowledge("other", [(0, 0, [RENEW])], 10) == INVALID_RECORD_STATE
    assert sp.acknowledge("m", [(0, 0, [5])], 10) == INVALID_REQUEST


def test_record_limit_splits_a_batch_batch_optimized_finishes_it():
    batched = SharePartition(0)
    assert batched.acquire("m", one_batch(0, 9), 10, 3, 0).ranges == (AcquiredRange(0, 9, 1),)
    strict = SharePartition(0)
    got = strict.acquire("m", one_batch(0, 9), 10, 3, 0, record_limit=True)
    assert got.ranges == (AcquiredRange(0, 2, 1),) and got.batches == (0,)
    assert strict.next_fetch_offset(0) == 3
    got = strict.acquire("n", one_batch(0, 9), 10, 4, 0, record_limit=True)     # the same stored batch again
    assert got.ranges == (AcquiredRange(3, 6, 1),)
    strict.acknowledge("m", [(0, 2, [RELEASE])], 1)
    got = strict.acquire("n", [(0, 9, False)], 10, 2, 1, record_limit=True)      # released ones first
    assert got.ranges == (AcquiredRange(0, 1, 2),)


def test_read_committed_archives_aborted_transactions_and_control_batches():
    aborted = [(7, 10, 14)]         # producer 7's transaction from 10, aborted by the marker at 14
    assert never_delivered((10, 12, False, 7, True), aborted)
    assert not never_delivered((10, 12, False, 8, True), aborted)       # another producer's
    assert not never_delivered((15, 16, False, 7, True), aborted)       # the producer's next transaction
    assert not never_delivered((10, 12, False, 7, False), aborted)      # not transactional
    assert never_delivered((14, 14, True, 7, True), [])                 # a marker, whatever the isolation
    sp = SharePartition(10)
    got = sp.acquire("m", [(10, 12, True), (13, 13, False), (14, 14, True)], 15, 100, 0)
    assert got.ranges == (AcquiredRange(13, 13, 1),) and got.batches == (1,)


def test_group_config_validation_follows_the_broker_bounds():
    props = {"group.share.min.record.lock.duration.ms": 2000}
    assert validate({"share.record.lock.duration.ms": "2000"}, props) is None
    assert validate({"share.record.lock.duration.ms": "1999"}, props) == \
        "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"
    assert validate({"share.record.lock.duration.ms": "999"}, {"group.share.min.record.lock.duration.ms": 1}) == \
        "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"   # ConfigDef
    assert validate({"share.record.lock.duration.ms": "60001"}, props) == \
        "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"
    assert validate({"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "5000",
                     "consumer.session.timeout.ms": "50000", "share.delivery.count.limit": "3"}, {}) is None
    assert validate({"share.delivery.count.limit": "11"}, {}) is not None
    assert validate({"share.isolation.level": "read_committed", "share.auto.offset.reset": "by_duration:PT1H"},
                    {}) is None
    assert validate({"share.auto.offset.reset": "none"}, {}) is not None
    assert validate({"share.auto.offset.reset": "by_duration:-PT1H"}, {}) is not None
    assert validate({"share.lock": "1"}, {}) == "Unknown group config name: share.lock"
    assert validate({"share.heartbeat.interval.ms": "x"}, {}) is not None


@pytest.mark.parametrize("iso, ms", [("PT1H", 3600000), ("P1D", 86400000), ("PT0.5S", 500), ("P1DT1M", 86460000),
                                     ("PT", None), ("P", None), ("1H", None)])
def test_by_duration_parses_iso_8601_durations(iso, ms):
    assert duration_ms(iso) == ms


def test_group_settings_default_to_the_broker_properties():
    s = share_settings({}, {"group.share.record.lock.duration.ms": 3000, "samsa.share.auto.offset.reset": "earliest"})
    assert (s.record_lock_duration_ms, s.auto_offset_reset, s.read_committed) == (3000, "earliest", False)
    s = share_settings({"share.record.lock.duration.ms": "20000", "share.isolation.level": "read_committed"}, {})
    assert (s.record_lock_duration_ms, s.read_committed, s.delivery_count_limit) == (20000, True, 5)
