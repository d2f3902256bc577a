"""The log pieces replication needs, driven directly (no broker): the leader epoch cache and
its ``leader-epoch-checkpoint`` file, appends with the leader's offsets, and truncation."""
from __future__ import annotations

from pathlib import Path

import pytest

from broker.log.epoch_cache import LeaderEpochCache, read_checkpoint, write_checkpoint, UNDEFINED_EPOCH
from protocol import records as rb
from protocol.errors import ErrorCode
from tests.support.storage_log import Log, T0


def _batch(n: int, base: int = 0, epoch: int = 0, pid: int = -1, seq: int = -1, value: bytes = b"v") -> bytearray:
    data = rb.build_batch([(None, value + str(i).encode()) for i in range(n)], base_offset=base,
                          timestamp_ms=T0, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                          base_sequence=seq)
    rb.stamp(data, 0, base, epoch)
    return data


def _values(part) -> list[bytes]:
    out: list[bytes] = []
    offset = part.log_start_offset
    while offset < part.log_end_offset:
        data = part.read(offset, 1 << 30, part.log_end_offset)
        for h in rb.iter_batches(data, validate=False):
            out += [r.value for r in rb.iter_records(data, h)]
            offset = h.last_offset + 1
    return out


def test_checkpoint_file_is_kafkas_format(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    write_checkpoint(str(path), [(0, 0), (3, 1500)])
    assert path.read_text() == "0\n2\n0 0\n3 1500\n"
    assert read_checkpoint(str(path)) == [(0, 0), (3, 1500)]


def test_epoch_cache_end_offsets(tmp_path: Path) -> None:
    c = LeaderEpochCache(str(tmp_path))
    assert c.end_offset_for(0, 10) == (UNDEFINED_EPOCH, -1)
    c.assign(1, 0)
    c.assign(1, 5)          # same epoch again: ignored
    c.assign(3, 10)
    c.assign(2, 12)         # older than the latest: ignored
    c.assign(5, 20)
    assert c.entries == [(1, 0), (3, 10), (5, 20)]
    assert c.end_offset_for(5, 30) == (5, 30)      # the latest epoch ends at the log end
    assert c.end_offset_for(3, 30) == (3, 20)
    assert c.end_offset_for(4, 30) == (3, 20)      # unknown epoch: the largest one below it
    assert c.end_offset_for(9, 30) == (UNDEFINED_EPOCH, -1)   # newer than anything known
    assert c.end_offset_for(0, 30) == (0, 0)        # older than the first: it ends where that starts
    assert c.epoch_for_offset(15) == 3
    c.truncate_from_end(20)
    assert c.entries == [(1, 0), (3, 10)] and c.latest_epoch == 3
    c.truncate_from_start(12)
    assert c.entries == [(3, 12)]
    assert LeaderEpochCache(str(tmp_path)).entries == [(3, 12)]   # persisted


def test_leader_appends_record_new_epochs(tmp_path: Path) -> None:
    log = Log(tmp_path)
    p = log.part
    p.append(_batch(3), [rb.parse_header(_batch(3))], T0)
    p.leader_epoch = 4
    b = _batch(2)
    p.append(b, [rb.parse_header(b)], T0)
    assert p.epochs.entries == [(0, 0), (4, 3)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n4 3\n"
    p = log.reopen(clean=False)
    assert p.epochs.entries == [(0, 0), (4, 3)]


def test_follower_append_keeps_leader_offsets_and_producer_state(tmp_path: Path) -> None:
    leader = Log(tmp_path / "leader").part
    follower = Log(tmp_path / "follower").part
    leader.leader_epoch = 2
    for i in range(5):
        b = _batch(2, pid=7, seq=2 * i, value=b"r%d-" % i)
        assert leader.append(b, [rb.parse_header(b)], T0).error == 0
    data = leader.read(0, 1 << 20, leader.log_end_offset)
    assert follower.append_as_follower(data, T0) == 10
    assert follower.read(0, 1 << 20, 10) == data
    assert follower.epochs.entries == [(2, 0)]
    # a follower promoted to leader continues the producer's sequence checks
    dup = _batch(2, pid=7, seq=8, value=b"r4-")
    r = follower.append(dup, [rb.parse_header(dup)], T0)
    assert (r.error, r.base_offset) == (0, 8)                # duplicate: the original offset
    gap = _batch(1, pid=7, seq=12)
    assert follower.append(gap, [rb.parse_header(gap)], T0).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    with pytest.raises(rb.InvalidBatch):
        follower.append_as_follower(data, T0)                # does not continue the log


@pytest.mark.parametrize("reopen", [False, True])
def test_truncate_cuts_batches_segments_and_state(tmp_path: Path, reopen: bool) -> None:
    log = Log(tmp_path, segment_bytes=400)
    p = log.part
    for i in range(20):
        p.leader_epoch = 1 if i < 10 else 2
        b = _batch(1, pid=3, seq=i, value=b"x" * 40)
        assert p.append(b, [rb.parse_header(b)], T0).error == 0
    assert len(p.segments) > 3
    p.roll()   # a snapshot past the cut, which must not be trusted after it
    p.hw = 20
    p.truncate_to(7)
    assert p.log_end_offset == 7 and p.hw == 7
    assert p.epochs.entries == [(1, 0)]
    assert len(_values(p)) == 7
    if reopen:
        p = log.reopen(clean=True)
    # producer state is back at sequence 6: sequence 7 is the next in order
    b = _batch(1, pid=3, seq=7, value=b"y")
    r = p.append(b, [rb.parse_header(b)], T0)
    assert (r.error, r.base_offset) == (0, 7)
    assert p.epochs.entries[0] == (1, 0)


def test_truncate_everything(tmp_path: Path) -> None:
    log = Log(tmp_path)
    p = log.part
    b = _batch(4)
    p.append(b, [rb.parse_header(b)], T0)
    p.truncate_to(0)
    assert p.log_end_offset == 0 and p.epochs.entries == [] and _values(p) == []
    b = _batch(1)
    assert p.append(b, [rb.parse_header(b)], T0).base_offset == 0


@pytest.mark.parametrize("damage", ["missing", "torn"])
def test_epoch_checkpoint_is_rebuilt_from_the_log(tmp_path: Path, damage: str) -> None:
    log = Log(tmp_path)
    p = log.part
    for epoch, n in ((0, 2), (3, 1), (3, 2), (7, 1)):
        p.leader_epoch = epoch
        b = _batch(n)
        p.append(b, [rb.parse_header(b)], T0)
    assert p.epochs.entries == [(0, 0), (3, 2), (7, 5)]
    p.close()
    path = tmp_path / "leader-epoch-checkpoint"
    if damage == "missing":
        path.unlink()
    else:
        path.write_text("0\n3\n0 0\n3")
    p = log.open(True)
    assert p.epochs.entries == [(0, 0), (3, 2), (7, 5)]
    assert path.read_text() == "0\n3\n0 0\n3 2\n7 5\n"
