"""Log compaction on a partition with a fake clock: Kafka's LogCleaner rules, checked record by
record (what a consumer reading the whole partition would get), plus crash leftovers."""
from __future__ import annotations

import os
import time

import crc32c
import pytest
import trio

from broker.log import cleaner
from broker.log.partition import CONTROL_ABORT, CONTROL_COMMIT, control_marker
from protocol import records as rb
from protocol.errors import ErrorCode
from tests.support.storage_log import T0, Log, read_all

COMPACT = dict(cleanup_policy="compact", min_cleanable_dirty_ratio=0.01, delete_retention_ms=1000)


def compact(lg: Log, capacity: int = 10**6) -> cleaner.Result | None:
    cand = cleaner.candidate(lg.part, lg.clock.now)
    if cand is None:
        return None
    plan = cleaner.make_plan(cand, lg.clock.now, capacity)
    result = cleaner.clean(plan)
    assert cleaner.swap_in(lg.part, plan, result)
    return result


def batches(part) -> list[tuple[rb.BatchHeader, bytes]]:
    out = []
    for seg in part.segments:
        for h in seg.iter_headers():
            data = seg.read(h.position, h.size)
            out.append((rb.parse_header(data), data))
    return out


def latest_by_key(records):
    last = {}
    for off, k, v, _ in records:
        last[k] = (off, v)
    return last


def test_keeps_the_latest_record_per_key_with_offsets_and_leaves_the_active_segment(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    for i in range(200):
        lg.put([(b"key-%d" % (i % 7), b"value-%d" % i + b"." * 40)])
    before = read_all(lg.part)
    active = lg.part.segments[-1]
    active_bytes = open(active.path, "rb").read()
    first_uncleanable = active.base_offset
    result = compact(lg)
    assert result is not None and result.end_offset == first_uncleanable
    after = read_all(lg.part)
    cleaned = [r for r in after if r[0] < first_uncleanable]
    want = {k: ov for k, ov in latest_by_key([r for r in before if r[0] < first_uncleanable]).items()}
    assert sorted((o, k, v) for o, k, v, _ in cleaned) == sorted((o, k, v) for k, (o, v) in want.items())
    assert [r for r in after if r[0] >= first_uncleanable] == [r for r in before if r[0] >= first_uncleanable]
    assert lg.part.segments[-1] is active and open(active.path, "rb").read() == active_bytes
    assert latest_by_key(after) == latest_by_key(before)           # a reader replaying sees the same state
    assert lg.part.log_end_offset == 200
    assert cleaner.read_checkpoint(lg.part) == first_uncleanable
    assert compact(lg) is None                                      # nothing dirty any more
    for h, data in batches(lg.part):                                # every batch well formed
        assert crc32c.crc32c(data[rb.CRC_START:]) == h.crc
    part = lg.reopen(clean=True)
    assert read_all(part) == after and all(s.loaded_from == "index" for s in part.segments)


def test_dirty_ratio_and_compaction_lag_hold_cleaning_back(tmp_path):
    lg = Log(tmp_path, **dict(COMPACT, min_cleanable_dirty_ratio=0.9))
    for i in range(100):
        lg.put([(b"k%d" % (i % 3), b"x" * 60)])
    assert compact(lg) is not None            # everything dirty: ratio 1.0 > 0.9
    for i in range(20):
        lg.put([(b"k%d" % (i % 3), b"y" * 60)])
    cand = cleaner.candidate(lg.part, lg.clock.now)
    assert cand is None or cand.ratio > 0.9   # a little new data is below the ratio
    lag = Log(tmp_path / "lag", **dict(COMPACT, min_compaction_lag_ms=60_000))
    for i in range(100):
        lag.put([(b"k%d" % (i % 3), b"x" * 60)], ts=T0 - 30_000 if i < 50 else T0)
    cand = cleaner.candidate(lag.part, lag.clock.now)
    assert cand is None                        # the first dirty segment is younger than the lag
    lag.clock.now += 61_000
    assert compact(lag) is not None


def test_tombstones_get_a_delete_horizon_then_go_after_delete_retention_ms(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    for i in range(30):
        lg.put([(b"k%d" % (i % 3), b"v%d" % i + b"." * 60)])
    lg.put([(b"k0", None)])                    # delete k0
    for i in range(20):
        lg.put([(b"pad", b"p" * 60)])
    compact(lg)
    recs = read_all(lg.part)
    tomb = [r for r in recs if r[1] == b"k0"]
    assert [(k, v) for _, k, v, _ in tomb] == [(b"k0", None)]   # only the tombstone is left for k0
    h, data = next((h, d) for h, d in batches(lg.part) if h.base_offset == tomb[0][0])
    assert h.attributes & rb.DELETE_HORIZON_MASK and h.base_timestamp == lg.clock.now + 1000
    assert tomb[0][3] == T0                    # the record's own timestamp is unchanged
    lg.clock.now += 500
    for i in range(20):
        lg.put([(b"pad", b"q" * 60)])
    compact(lg)
    assert [r[1:3] for r in read_all(lg.part) if r[1] == b"k0"] == [(b"k0", None)]   # horizon not reached
    lg.clock.now += 600
    for i in range(20):
        lg.put([(b"pad", b"r" * 60)])
    compact(lg)
    recs = read_all(lg.part)
    assert [r for r in recs if r[1] == b"k0"] == []
    assert {k for _, k, _, _ in recs} == {b"k1", b"k2", b"pad"}


@pytest.mark.parametrize("codec", [rb.CODEC_GZIP, rb.CODEC_SNAPPY, rb.CODEC_LZ4, rb.CODEC_ZSTD])
def test_compressed_batches_are_rewritten_with_the_same_codec(tmp_path, codec):
    lg = Log(tmp_path, **COMPACT)
    for b in range(40):
        recs = [(b"k%d" % ((b * 5 + i) % 9), b"value-%d-%d" % (b, i) + b"z" * 30) for i in range(5)]
        plain = rb.build_batch(recs, timestamp_ms=T0 + b)
        h = rb.parse_header(plain)
        section = bytes(plain[rb.HEADER_SIZE:])
        data = rb.assemble_batch(0, -1, codec, h.last_offset_delta, h.base_timestamp, h.max_timestamp, -1, -1, -1,
                                 h.record_count, section)
        result = lg.part.append(data, [rb.parse_header(data)], lg.clock.now)
        assert result.error == 0
    before = read_all(lg.part)
    compact(lg)
    after = read_all(lg.part)
    uncleanable = lg.part.segments[-1].base_offset
    assert latest_by_key(after) == latest_by_key(before)
    assert len([r for r in after if r[0] < uncleanable]) < len([r for r in before if r[0] < uncleanable])
    rewritten = 0
    for h, data in batches(lg.part):
        assert h.compression == codec
        assert crc32c.crc32c(data[rb.CRC_START:]) == h.crc
        rewritten += h.record_count != h.last_offset_delta + 1 or h.base_offset % 5 != 0
    assert rewritten


def test_aborted_transactions_are_removed_and_markers_stay_until_their_data_is_gone(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    part = lg.part
    lg.put([(b"a", b"1" + b"." * 80)])
    # transaction of producer 5, aborted; of producer 6, committed
    lg.put([(b"a", b"aborted" + b"." * 80)], producer_id=5, producer_epoch=0, base_sequence=0, transactional=True)
    lg.put([(b"b", b"committed" + b"." * 80)], producer_id=6, producer_epoch=0, base_sequence=0, transactional=True)
    abort_at = part.append_control(5, 0, commit=False, coordinator_epoch=0, now_ms=lg.clock.now)
    commit_at = part.append_control(6, 0, commit=True, coordinator_epoch=0, now_ms=lg.clock.now)
    for i in range(30):
        lg.put([(b"pad", b"p" * 80)])
    compact(lg)
    kinds = [(h.base_offset, h.is_control, h.record_count) for h, _ in batches(part)]
    recs = read_all(part)
    assert (1, b"a", b"aborted" + b"." * 80) not in [r[:3] for r in recs]       # aborted data gone
    assert (0, b"a", b"1" + b"." * 80) in [r[:3] for r in recs]                   # what it would have hidden stays
    assert (2, b"b", b"committed" + b"." * 80) in [r[:3] for r in recs]
    assert (abort_at, True, 1) in kinds            # its data went in this very pass: the marker stays for now
    assert (commit_at, True, 1) in kinds           # committed data still there: its marker stays
    # the aborted batch is still producer 5's last one: kept empty (its sequence matters), and so is the marker
    assert (1, False, 0) in kinds

    def another_pass(pad: bytes) -> None:
        lg.clock.now += 10
        for _ in range(20):
            lg.put([(b"pad", pad * 80)])
        compact(lg)

    lg.put([(b"c", b"later")], producer_id=5, producer_epoch=0, base_sequence=1)   # producer 5 moves on
    another_pass(b"q")
    assert 1 not in [h.base_offset for h, _ in batches(part)]       # the empty batch went
    another_pass(b"r")                                                 # no data left: the marker gets a horizon
    abort_h = next(h for h, _ in batches(part) if h.base_offset == abort_at)
    assert abort_h.attributes & rb.DELETE_HORIZON_MASK and abort_h.base_timestamp == lg.clock.now + 1000
    lg.clock.now += 2000
    another_pass(b"s")
    controls = {h.base_offset: control_marker(d, h) for h, d in batches(part) if h.is_control}
    assert controls == {commit_at: CONTROL_COMMIT}                     # the abort marker is gone
    assert CONTROL_ABORT not in controls.values()


def test_the_last_batch_of_an_active_producer_stays_even_when_superseded(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    for seq in range(5):
        lg.put([(b"same", b"v%d" % seq + b"." * 80)], producer_id=9, producer_epoch=2, base_sequence=seq)
    for i in range(30):
        lg.put([(b"same", b"w%d" % i + b"." * 80)])     # a non-idempotent writer supersedes the key
    compact(lg)
    hs = [h for h, _ in batches(lg.part) if h.producer_id == 9]
    assert [(h.base_offset, h.record_count, h.base_sequence) for h in hs] == [(4, 0, 4)]   # kept, empty
    part = lg.reopen(clean=False)
    dup = rb.build_batch([(b"same", b"v4" + b"." * 80)], timestamp_ms=T0, producer_id=9, producer_epoch=2,
                         base_sequence=4)
    assert part.append(dup, [rb.parse_header(dup)], T0).base_offset == 4   # still known as a duplicate
    nxt = rb.build_batch([(b"same", b"v5")], timestamp_ms=T0, producer_id=9, producer_epoch=2, base_sequence=6)
    assert part.append(nxt, [rb.parse_header(nxt)], T0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_keyless_records_are_rejected_by_compacted_topics(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    data = rb.build_batch([(b"k", b"v"), (None, b"v")], timestamp_ms=T0)
    result = lg.part.append(data, [rb.parse_header(data)], T0)
    assert result.error == ErrorCode.INVALID_RECORD and "without key" in result.message
    assert lg.part.log_end_offset == 0


def test_small_offset_map_cleans_in_several_passes(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    for i in range(300):
        lg.put([(b"k%d" % i, b"v" * 40)])
    for i in range(300):
        lg.put([(b"k%d" % i, b"w" * 40)])
    before = read_all(lg.part)
    passes = 0
    while compact(lg, capacity=150) is not None:
        passes += 1
        assert passes < 20
    assert passes > 2
    assert latest_by_key(read_all(lg.part)) == latest_by_key(before)


def test_crash_leftovers_cleaned_files_dropped_and_swaps_completed(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    for i in range(120):
        lg.put([(b"k%d" % (i % 4), b"v%d" % i + b"." * 60)])
    before = read_all(lg.part)
    cand = cleaner.candidate(lg.part, lg.clock.now)
    plan = cleaner.make_plan(cand, lg.clock.now, 10**6)
    result = cleaner.clean(plan)
    assert all(os.path.exists(s.path) for s in result.segments)
    # crash before the swap: the .cleaned files are dropped, the log is as it was
    lg.part.close()
    part = lg.open(True)
    assert not list(tmp_path.glob("*.cleaned")) and read_all(part) == before
    # crash right after the commit point: .swap files replace the segments they cover
    lg.part = part
    cand = cleaner.candidate(part, lg.clock.now)
    plan = cleaner.make_plan(cand, lg.clock.now, 10**6)
    result = cleaner.clean(plan)
    for out in result.segments:
        os.replace(out.path, out.path.replace(".cleaned", ".swap"))
    part.close()
    part = lg.open(True)
    lg.part = part
    assert not list(tmp_path.glob("*.swap"))
    after = read_all(part)
    assert latest_by_key(after) == latest_by_key(before) and len(after) < len(before)
    cleaned_keys = [k for o, k, _, _ in after if o < plan.first_uncleanable]
    assert len(cleaned_keys) == len(set(cleaned_keys))          # one record per key below the active segment
    assert all(s.loaded_from == "scan" for s in part.segments[:len(result.segments)])  # indexes rebuilt


def test_cleaner_task_pass_runs_in_a_thread_and_swaps(tmp_path):
    lg = Log(tmp_path, **COMPACT)
    for i in range(100):
        lg.put([(b"k%d" % (i % 2), b"v" * 50)])

    async def main():
        cand = cleaner.pick([lg.part], lg.clock.now)
        assert cand is not None
        result = await cleaner.clean_partition(lg.part, cand, lg.clock.now, 10**6)
        assert result is not None and not lg.part.cleaning
    trio.run(main)
    recs = [r for r in read_all(lg.part) if r[0] < lg.part.segments[-1].base_offset]
    assert len(recs) <= 2


def test_max_compaction_lag_forces_cleaning_below_the_dirty_ratio(tmp_path):
    lg = Log(tmp_path, **dict(COMPACT, min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=60_000))
    for i in range(60):
        lg.put([(b"k%d" % (i % 3), b"x" * 60)])
    compact(lg)
    for i in range(10):
        lg.put([(b"k%d" % (i % 3), b"y" * 60)])
    lg.part.roll()
    cand = cleaner.candidate(lg.part, lg.clock.now)
    assert cand is None                                  # little dirty data, ratio far below 0.99
    lg.clock.now += 61_000                               # its oldest batch is now past the max lag
    cand = cleaner.candidate(lg.part, lg.clock.now)
    assert cand is not None and cand.forced and cand.ratio < 0.99


def test_compact_delete_policy_both_compacts_and_retains(tmp_path):
    lg = Log(tmp_path, **dict(COMPACT, cleanup_policy="compact,delete", retention_ms=60_000))
    for i in range(40):
        lg.put([(b"k%d" % (i % 4), b"v" * 60)], ts=lg.clock.now - 120_000 if i < 20 else lg.clock.now)
    assert lg.part.apply_retention(lg.clock.now) > 0     # old segments go by retention.ms
    start = lg.part.log_start_offset
    assert start > 0
    compact(lg)
    recs = read_all(lg.part)
    assert recs[0][0] >= start
    assert latest_by_key(recs) == {b"k%d" % k: (36 + k, b"v" * 60) for k in range(4)}


def test_crash_in_the_middle_of_a_swap_is_completed_at_start_up(tmp_path, monkeypatch):
    lg = Log(tmp_path, **dict(COMPACT, segment_bytes=600))
    for i in range(150):
        lg.put([(b"k%d" % (i % 4), b"v%d" % i + b"." * 60)])
    compact(lg)                                                      # small cleaned segments now
    for i in range(60):
        lg.put([(b"k%d" % (i % 4), b"w%d" % i + b"." * 60)])
    before = read_all(lg.part)
    cand = cleaner.candidate(lg.part, lg.clock.now)
    plan = cleaner.make_plan(cand, lg.clock.now, 10**6)
    result = cleaner.clean(plan)
    assert any(len(out.replaces) > 1 for out in result.segments)    # groups of several segments
    real_replace = os.replace
    calls = []

    def crash_after_commit(src, dst):
        calls.append(src)
        if src.endswith(".swap"):
            raise KeyboardInterrupt("power cut")                      # after .cleaned -> .swap
        real_replace(src, dst)
    monkeypatch.setattr(os, "replace", crash_after_commit)
    with pytest.raises(KeyboardInterrupt):
        cleaner.swap_in(lg.part, plan, result)
    monkeypatch.setattr(os, "replace", real_replace)
    assert list(tmp_path.glob("*.swap")) and list(tmp_path.glob("*.replaces"))
    lg.reopen(clean=False)
    part = lg.part
    assert not list(tmp_path.glob("*.swap")) and not list(tmp_path.glob("*.replaces"))
    after = read_all(part)
    assert latest_by_key(after) == latest_by_key(before)
    first = result.segments[0]
    kept = [r for r in after if r[0] < (result.segments[1].base_offset if len(result.segments) > 1 else 10**9)]
    assert len(kept) <= 4 and all(r[0] >= first.base_offset for r in kept)   # the first group was swapped in
    assert [o for o, *_ in after] == sorted(o for o, *_ in after)


def test_a_corrupt_batch_makes_the_partition_uncleanable_not_rewritten(tmp_path, capsys):
    lg = Log(tmp_path, **COMPACT)
    for i in range(60):
        lg.put([(b"k%d" % (i % 3), b"v" * 60)])
    seg = lg.part.segments[1]
    with open(seg.path, "r+b") as f:
        f.seek(rb.HEADER_SIZE + 5)
        f.write(b"\xee")
    raw = open(seg.path, "rb").read()

    async def main():
        cand = cleaner.pick([lg.part], lg.clock.now)
        assert await cleaner.clean_partition(lg.part, cand, lg.clock.now, 10**6) is None
    trio.run(main)
    assert lg.part.uncleanable and cleaner.candidate(lg.part, lg.clock.now) is None
    assert open(seg.path, "rb").read() == raw and not list(tmp_path.glob("*.cleaned"))
    assert "partition marked uncleanable" in capsys.readouterr().out


def test_throttler_sleeps_the_observed_rate_down_to_the_desired_one():
    """Kafka's Throttler arithmetic: checked once the interval has passed, sleeping
    observed/desired - elapsed."""
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(round(s, 6))
        now[0] += s
    t = cleaner.Throttler(1000.0, check_interval_s=0.3, clock=lambda: now[0], sleep=sleep)
    t(500)                      # before the interval: nothing
    now[0] = 0.31
    t(100)                      # 600 bytes in 0.31 s: 1935 B/s -> sleep until 0.6 s
    assert slept == [0.29]
    now[0] += 0.5
    t(200)                      # 200 bytes in 0.5 s: under the rate, no sleep
    assert slept == [0.29]
    assert cleaner.throttler_for({}) is None
    assert cleaner.throttler_for({"log.cleaner.io.max.bytes.per.second": 1.7976931348623157e308}) is None
    assert cleaner.throttler_for({"log.cleaner.io.max.bytes.per.second": "1048576"}).bytes_per_second == 1048576


def test_log_cleaner_io_max_bytes_per_second_slows_a_cleaning_pass(tmp_path):
    def run(rate: float | None) -> tuple[float, cleaner.Result]:
        lg = Log(tmp_path / str(rate), **dict(COMPACT, segment_bytes=1 << 20))
        for i in range(3000):
            lg.put([(b"k%d" % (i % 50), b"v" * 1000)])
        cand = cleaner.candidate(lg.part, lg.clock.now)
        # a short check interval: Kafka's 300 ms is longer than this whole pass unthrottled
        throttle = cleaner.Throttler(rate, check_interval_s=0.01) if rate else None
        plan = cleaner.make_plan(cand, lg.clock.now, 10**6, throttle)
        t0 = time.monotonic()
        result = cleaner.clean(plan)
        return time.monotonic() - t0, result
    fast, r1 = run(None)
    rate = 10e6
    slow, r2 = run(rate)
    moved = r2.bytes_read + r2.bytes_written
    assert r2.records_written == r1.records_written
    assert moved / rate * 0.8 <= slow <= moved / rate * 4   # held to about the rate
    assert fast < slow / 2
