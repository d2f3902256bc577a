"""The partition log as a storage engine, driven directly with a fake clock: retention,
DeleteRecords, persisted indexes, timestamp lookups, producer state across restarts, torn and
corrupt files, the bounded descriptor LRU. No broker process; every test runs in milliseconds."""
from __future__ import annotations

import os
import struct
import pytest

from broker.log import index as ix
from broker.log.fds import FdCache
from protocol import records as rb
from protocol.errors import ErrorCode
from tests.support.storage_log import T0, Log, read_all


# -- retention ----------------------------------------------------------------------------

def test_retention_ms_deletes_expired_segments_by_record_timestamp_and_moves_log_start(tmp_path):
    lg = Log(tmp_path, retention_ms=60_000)
    lg.fill(20, ts=T0 - 120_000)   # old records: expired by their timestamps
    lg.fill(20, ts=T0)              # current ones
    part = lg.part
    assert len(part.segments) > 3
    expired = [s for s in part.segments if s.max_timestamp < T0]
    assert part.apply_retention(lg.clock.now) == len(expired)
    assert part.segments[0].max_timestamp == T0 or part.segments[0].idx_offsets[0] <= 20
    assert part.log_start_offset == part.segments[0].base_offset
    assert [o for o, *_ in read_all(part)][0] == part.log_start_offset
    assert part.log_end_offset == 40
    lg.clock.now += 61_000          # now everything has expired: roll, then delete even the active one
    part.apply_retention(lg.clock.now)
    assert len(part.segments) == 1 and part.segments[0].size == 0
    assert part.log_start_offset == part.log_end_offset == 40
    assert lg.put([(b"k", b"v")]) == 40
    part = lg.reopen(clean=False)
    assert (part.log_start_offset, part.log_end_offset) == (40, 41)


def test_retention_bytes_keeps_the_newest_segments_within_the_limit(tmp_path):
    lg = Log(tmp_path, retention_bytes=3000)
    lg.fill(60)
    part = lg.part
    before = part.size_bytes
    deleted = part.apply_retention(lg.clock.now)
    assert deleted > 0
    # Kafka's rule: drop the oldest segments while what remains is still at least the limit
    assert part.size_bytes >= 3000 > part.size_bytes - part.segments[0].size
    assert before > part.size_bytes
    assert part.log_start_offset == part.segments[0].base_offset > 0
    assert part.apply_retention(lg.clock.now) == 0


def test_retention_leaves_compact_only_topics_and_an_empty_active_segment(tmp_path):
    lg = Log(tmp_path, retention_ms=1, cleanup_policy="compact")
    lg.fill(20, ts=T0 - 10_000)
    assert lg.part.apply_retention(lg.clock.now) == 0
    empty = Log(tmp_path / "e", retention_ms=1)
    assert empty.part.apply_retention(T0 + 10**9) == 0 and len(empty.part.segments) == 1


def test_delete_records_drops_whole_segments_below_and_persists_the_start(tmp_path):
    lg = Log(tmp_path)
    lg.fill(40)
    part = lg.part
    second = part.segments[1].base_offset
    part.delete_records_before(second + 2)
    assert part.segments[0].base_offset == second
    assert part.log_start_offset == second + 2
    assert read_all(part)[0][0] == second + 2
    part = lg.reopen(clean=False)
    assert part.log_start_offset == second + 2
    part.delete_records_before(40)   # everything: an empty segment at the end remains
    assert [(s.base_offset, s.size) for s in part.segments] == [(40, 0)]
    assert part.log_start_offset == 40 and lg.put([(b"a", b"b")]) == 40


# -- indexes and timestamps ---------------------------------------------------------------

def test_indexes_are_persisted_and_trusted_after_a_clean_shutdown(tmp_path):
    lg = Log(tmp_path)
    lg.fill(50)
    before = [(s.base_offset, s.idx_offsets, s.idx_positions, s.time_ts, s.next_offset) for s in lg.part.segments]
    part = lg.reopen(clean=True)
    assert all(s.loaded_from == "index" for s in part.segments)
    assert [(s.base_offset, s.idx_offsets, s.idx_positions, s.time_ts, s.next_offset) for s in part.segments] == before
    raw = (tmp_path / f"{0:020d}.index").read_bytes()
    assert struct.unpack_from(">ii", raw, 0) == (0, 0)   # Kafka layout: relative offset, position
    part = lg.reopen(clean=False)                         # unclean: the last segment is walked again
    assert [s.loaded_from for s in part.segments] == ["index"] * (len(part.segments) - 1) + ["scan"]
    assert [(s.base_offset, s.idx_offsets, s.idx_positions, s.time_ts, s.next_offset) for s in part.segments] == before


def test_timestamp_lookup_is_exact_across_segments_and_restarts(tmp_path):
    lg = Log(tmp_path)
    stamps = []   # 5 records per batch; then one batch with an older timestamp
    for b in range(30):
        base = T0 + b * 100
        lg.put([(b"k", b"v" * 40)] * 5, ts=base)
        stamps += [(b * 5 + i, base) for i in range(5)]
    lg.put([(b"late", b"x")], ts=T0 + 150)   # an older timestamp after newer ones
    stamps.append((150, T0 + 150))

    def expect(ts):
        for off, t in stamps:
            if t >= ts:
                return off, t
        return None
    for part in (lg.part, lg.reopen(clean=True), lg.reopen(clean=False)):
        for target in (T0 - 1, T0, T0 + 1, T0 + 150, T0 + 151, T0 + 1450, T0 + 2899, T0 + 2900, T0 + 2901):
            assert part.offset_for_timestamp(target) == expect(target), target
        assert part.max_timestamp_offset() == (145, T0 + 2900)


def test_corrupt_or_missing_index_files_are_rebuilt_with_a_log_line(tmp_path, capsys):
    lg = Log(tmp_path)
    lg.fill(50)
    want = read_all(lg.part)
    lg.part.close()
    seg0 = tmp_path / f"{0:020d}"
    seg1_base = lg.part.segments[1].base_offset
    seg1 = tmp_path / f"{seg1_base:020d}"
    # an index entry pointing past the end of its log
    data = bytearray(seg0.with_suffix(".index").read_bytes())
    struct.pack_into(">ii", data, len(data) - 8, 30, 10_000_000)
    seg0.with_suffix(".index").write_bytes(bytes(data))
    # garbage in another segment's time index, and a missing index for a third
    seg1.with_suffix(".timeindex").write_bytes(b"\x00" * 7)
    seg2 = tmp_path / f"{lg.part.segments[2].base_offset:020d}"
    os.unlink(seg2.with_suffix(".index"))
    part = lg.open(True)
    lg.part = part
    assert [s.loaded_from for s in part.segments[:3]] == ["scan", "scan", "scan"]
    assert read_all(part) == want
    out = capsys.readouterr().out
    assert "rebuilding segment index" in out and "past the log end" in out and "missing" in out


def test_stale_index_entry_detected_at_read_time(tmp_path, capsys):
    """An entry that passes the start-up checks but names the wrong position (a hand-edited
    index) is caught when a read lands on it: the segment's index is rebuilt, the read is right."""
    lg = Log(tmp_path)
    lg.fill(8)
    seg = lg.part.segments[0]
    assert len(seg.idx_offsets) >= 3
    seg.idx_positions[1] += 1
    part = lg.part
    assert part.read(seg.idx_offsets[1], 1 << 20, part.log_end_offset)[:8] == struct.pack(">q", seg.idx_offsets[1])
    assert "offset index entry does not match the log" in capsys.readouterr().out


# -- torn files -------------------------------------------------------------------------------

def test_segment_truncated_mid_header_is_cut_and_the_bytes_kept(tmp_path, capsys):
    lg = Log(tmp_path, segment_bytes=1 << 20)
    lg.fill(10)
    want = read_all(lg.part)
    for s in lg.part.segments:
        s.close()
    log_file = tmp_path / f"{0:020d}.log"
    with open(log_file, "ab") as f:
        f.write(bytes(rb.build_batch([(b"x", b"y")], timestamp_ms=T0))[:30])   # half a header
    part = lg.open(False)
    assert read_all(part) == want and part.log_end_offset == 10
    kept = list(tmp_path.glob("*.corrupt-*"))
    assert len(kept) == 1 and kept[0].stat().st_size == 30
    assert "truncating torn segment tail" in capsys.readouterr().out


def test_corrupt_batch_in_a_middle_segment_is_reported_not_silently_dropped(tmp_path, capsys):
    lg = Log(tmp_path)
    lg.fill(40)
    part = lg.part
    seg = part.segments[1]
    last_h = list(seg.iter_headers())[-1]
    part.close()
    os.unlink(seg.stem + ".index")   # force a walk of that segment
    with open(seg.path, "r+b") as f:
        f.seek(last_h.position + rb.HEADER_SIZE + 2)
        f.write(b"\xff\xff")
    part = lg.open(True)
    out = capsys.readouterr().out
    assert "segment in the middle of the log had a corrupt tail" in out
    assert part.segments[1].next_offset == last_h.base_offset
    offsets = [o for o, *_ in read_all(part)]
    assert offsets == [o for o in range(40) if o != last_h.base_offset]


def test_overlapping_segments_refuse_to_load(tmp_path):
    from broker.log.partition import LogCorrupt
    lg = Log(tmp_path)
    lg.fill(30)
    lg.part.close()
    second = lg.part.segments[1]
    # a stray copy of the first segment under a later base offset
    (tmp_path / f"{second.base_offset - 1:020d}.log").write_bytes((tmp_path / f"{0:020d}.log").read_bytes())
    with pytest.raises(LogCorrupt, match="overlapping"):
        lg.open(True)


# -- producer state ------------------------------------------------------------------------------

@pytest.mark.parametrize("clean", [True, False])
def test_producer_state_survives_restart(tmp_path, clean):
    lg = Log(tmp_path)
    for seq in range(0, 30, 3):
        lg.put([(b"k", b"v" * 50)] * 3, producer_id=7, producer_epoch=0, base_sequence=seq)
    part = lg.reopen(clean=clean)
    if not clean:
        assert part.segments[-1].loaded_from == "scan"
    dup = rb.build_batch([(b"k", b"v" * 50)] * 3, timestamp_ms=T0, producer_id=7, producer_epoch=0,
                         base_sequence=27)
    assert part.append(dup, [rb.parse_header(dup)], T0).base_offset == 27   # answered as a duplicate
    gap = rb.build_batch([(b"k", b"v")], timestamp_ms=T0, producer_id=7, producer_epoch=0, base_sequence=31)
    assert part.append(gap, [rb.parse_header(gap)], T0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert lg.put([(b"k", b"v")], producer_id=7, producer_epoch=0, base_sequence=30) == 30


def test_producer_snapshots_are_written_at_roll_and_shutdown(tmp_path):
    lg = Log(tmp_path)
    for seq in range(20):
        lg.put([(b"k", b"v" * 100)], producer_id=3, producer_epoch=1, base_sequence=seq)
    snaps = ix.list_snapshots(str(tmp_path))
    assert snaps and snaps[-1] == lg.part.segments[-1].base_offset and len(snaps) <= 2
    lg.part.close()
    assert ix.list_snapshots(str(tmp_path))[-1] == 20
    state = ix.read_snapshot(str(tmp_path), 20)
    assert state["producers"][0]["pid"] == 3 and state["producers"][0]["batches"][-1][:2] == [19, 19]


# -- descriptors ------------------------------------------------------------------------------------

def test_open_descriptors_stay_within_the_lru_bound(tmp_path):
    fds = FdCache(16)
    logs = [Log(tmp_path / f"p{i}", fds=fds) for i in range(40)]
    for lg in logs:
        lg.fill(15)   # several segments each
    assert len(fds) <= 16
    proc_fds = len(os.listdir("/proc/self/fd"))
    for lg in logs:
        assert [o for o, *_ in read_all(lg.part)] == list(range(15))
        assert len(fds) <= 16
    assert len(os.listdir("/proc/self/fd")) <= proc_fds + 1
    assert fds.opened > 16  # files were closed and reopened on demand



def test_created_partitions_keep_their_new_file_descriptors_within_the_bound(tmp_path):
    """A topic's new partitions (Partition.create) make their first segment with the descriptor
    they keep: the LRU bound holds as for opened files, the records read back, the directory
    holds only the empty segment until the first write, and a restart finds the same log."""
    import time

    from broker.common.config import BrokerConfig
    from broker.log.manager import LogManager

    lm = LogManager(BrokerConfig({"log.dirs": str(tmp_path)}))
    lm.load()
    lm.fds.capacity = 16
    topic = lm.create_topic("many", 40)
    assert len(lm.fds) <= 16
    assert sorted(os.listdir(tmp_path / "many-7")) == ["00000000000000000000.log"]
    now = int(time.time() * 1000)
    for part in topic.partitions:
        data = rb.build_batch([(b"k", str(part.index).encode())], timestamp_ms=now)
        assert part.append(data, [rb.parse_header(data)], now).error == 0
        assert len(lm.fds) <= 16
    assert [[v for _, _, v, _ in read_all(p)] for p in topic.partitions][:3] == [[b"0"], [b"1"], [b"2"]]
    lm.shutdown()
    again = LogManager(BrokerConfig({"log.dirs": str(tmp_path)}))
    again.load()
    parts = list(again.topics["many"].partitions)
    assert [[v for _, _, v, _ in read_all(p)] for p in parts] == [[str(i).encode()] for i in range(40)]
    again.fds.close_all()

# -- time-based rolling ----------------------------------------------------------------------

def test_segment_ms_rolls_by_record_time_less_each_segments_jitter(tmp_path):
    """Kafka's shouldRoll: a new segment once the incoming records are more than segment.ms
    minus the segment's random jitter (below segment.jitter.ms) past its first batch."""
    log = Log(tmp_path, segment_bytes=1 << 30, segment_ms=10_000, segment_jitter_ms=8_000)
    jitters = []
    ts = T0
    for _ in range(12):
        log.put([(b"k", b"v")], ts=ts)
        seg = log.part.segments[-1]
        log.put([(b"k", b"v")], ts=ts + 1)              # draws the jitter, never rolls
        jitter = seg.roll_jitter_ms
        assert 0 <= jitter < 8_000
        jitters.append(jitter)
        log.put([(b"k", b"v")], ts=ts + 10_000 - jitter)
        assert log.part.segments[-1] is seg              # exactly segment.ms - jitter: not yet
        log.put([(b"k", b"v")], ts=ts + 10_000 - jitter + 1)
        assert log.part.segments[-1] is not seg          # one ms more: rolled
        ts = ts + 10_000 - jitter + 1
    assert len(set(jitters)) > 1                         # drawn per segment
    plain = Log(tmp_path / "plain", segment_bytes=1 << 30, segment_ms=10_000)
    plain.put([(b"k", b"v")], ts=T0)
    plain.put([(b"k", b"v")], ts=T0 + 10_000)
    assert (len(plain.part.segments), plain.part.segments[-1].roll_jitter_ms) == (1, 0)
    plain.put([(b"k", b"v")], ts=T0 + 10_001)
    assert len(plain.part.segments) == 2


def test_topic_deletion_interrupted_before_the_files_go_leaves_nothing_behind(tmp_path, monkeypatch):
    """Kafka's order: partition dirs renamed to ``*-delete``, then unlisted, then removed. A crash
    before the removal leaves only ``-delete`` dirs, which the next start removes."""
    import time

    from broker.common.config import BrokerConfig
    from broker.log import manager as lm_mod
    from broker.log.manager import LogManager

    lm = LogManager(BrokerConfig({"log.dirs": str(tmp_path)}))
    lm.load()
    topic = lm.create_topic("gone", 2)
    lm.create_topic("kept", 1)
    data = rb.build_batch([(b"k", b"v")], timestamp_ms=int(time.time() * 1000))
    assert topic.partitions[0].append(data, [rb.parse_header(data)], int(time.time() * 1000)).error == 0

    def crash(part) -> None:
        raise KeyboardInterrupt("the process dies here")
    monkeypatch.setattr(lm_mod, "_remove_partition_files", crash)
    with pytest.raises(KeyboardInterrupt):
        lm.delete_topic("gone")
    monkeypatch.undo()
    marked = sorted(n for n in os.listdir(tmp_path) if n.startswith("gone-"))
    assert len(marked) == 2 and all(n.endswith("-delete") for n in marked)
    lm.fds.close_all()
    again = LogManager(BrokerConfig({"log.dirs": str(tmp_path)}))
    again.load()
    assert sorted(again.topics) == ["kept"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith("gone")]
    assert os.path.isdir(tmp_path / "kept-0")
    again.shutdown()
