"""The broker's own appends (Partition.append_internal: one per offset commit, plus the
transactional offset commits and markers) take a short path of their own. Whatever it skips,
the log it leaves must be the one :meth:`Partition.append` leaves for the same batch built with
``rb.build_batch``: the same bytes in the same segments (rolls by size and by time), the same
offset and time indexes, log end offset, epoch cache, producer and transaction state,
flush.messages count, and the same state after a crash and recovery (issue 23)."""
from __future__ import annotations

import os
import random
import struct
from pathlib import Path

from broker.log.partition import CONTROL_ABORT, CONTROL_COMMIT, Partition
from protocol import records as rb
from tests.support.storage_log import Log

CONFIG = {"index_interval_bytes": 300, "segment_bytes": 4096, "segment_ms": 50_000, "segment_jitter_ms": 0,
          "flush_messages": 7, "cleanup_policy": "compact"}


def _reference(part: Partition, records: list[tuple[bytes | None, bytes | None]], now_ms: int,
               producer_id: int = rb.NO_PRODUCER_ID, producer_epoch: int = -1, transactional: bool = False,
               control: bool = False, control_marker: tuple[int, int] | None = None) -> int:
    """The long way: build_batch, parse it, Partition.append (what append_internal stands for)."""
    built = rb.build_batch(records, timestamp_ms=now_ms, producer_id=producer_id, producer_epoch=producer_epoch,
                           transactional=transactional, control=control)
    result = part.append(built, [rb.parse_header(built)], now_ms, built_here=True, control_marker=control_marker)
    assert not result.error, result
    return result.base_offset


def _marker(part: Partition, pid: int, epoch: int, commit: bool, coordinator_epoch: int, now_ms: int,
            short: bool) -> int:
    if short:
        return part.append_control(pid, epoch, commit, coordinator_epoch, now_ms)
    marker = CONTROL_COMMIT if commit else CONTROL_ABORT
    return _reference(part, [(struct.pack(">hh", 0, marker), struct.pack(">hi", 0, coordinator_epoch))], now_ms,
                      pid, epoch, transactional=True, control=True, control_marker=(marker, coordinator_epoch))


def _state(part: Partition) -> dict:
    segs = part.segments
    return {
        "leo": part.log_end_offset, "unflushed": part.unflushed_messages, "flush_due": part.flush_due,
        "ongoing": dict(part.ongoing_txns), "aborted": list(part.aborted_txns),
        "producers": part.producers.to_snapshot(), "epochs": list(part.epochs.entries),
        "segments": [(s.base_offset, s.size, s.next_offset, list(s.idx_offsets), list(s.idx_positions),
                      list(s.time_ts), s.max_timestamp, s.rolling_timestamp(), s.max_timestamp_offset())
                     for s in segs],
    }


def _files(path: Path) -> dict[str, bytes]:
    return {f: (path / f).read_bytes() for f in sorted(os.listdir(path)) if f.endswith(".log")}


def _run(path: Path, short: bool, seed: int) -> tuple[Log, list]:
    lg = Log(path, **CONFIG)
    part = lg.part
    rnd = random.Random(seed)
    open_txn: dict[int, int] = {}
    steps = []
    for step in range(600):
        lg.clock.now += rnd.choice([0, 1, 5, 700, 20_000])
        now = lg.clock.now
        if step in (100, 350):
            part.leader_epoch += 1
        kind = rnd.random()
        if kind < 0.6 or not open_txn and kind < 0.8:   # an offset commit (or a group's records)
            n = rnd.choice([1, 1, 1, 2, 3])
            records = [(b"\x00\x01" + rnd.randbytes(rnd.choice([10, 30, 70])),
                        None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([20, 40, 200])))
                       for _ in range(n)]
            got = part.append_internal(records, now) if short else _reference(part, records, now)
        elif kind < 0.8:                                 # a marker ends a transaction
            pid = rnd.choice(sorted(open_txn))
            got = _marker(part, pid, open_txn.pop(pid), rnd.random() < 0.6, rnd.choice([0, 3]), now, short)
        else:                                            # a transactional offset commit
            pid = rnd.choice([1000, 1001, 1002])
            epoch = open_txn.setdefault(pid, pid % 2)
            records = [(b"\x00\x01" + rnd.randbytes(20), rnd.randbytes(30))]
            kw = dict(producer_id=pid, producer_epoch=epoch, transactional=True)
            got = part.append_internal(records, now, **kw) if short else _reference(part, records, now, **kw)
        steps.append((got, _state(part)))
        if part.flush_due:
            part.flush()
    return lg, steps


def test_internal_appends_leave_the_log_append_leaves(tmp_path: Path) -> None:
    for seed in (1, 2, 3):
        short, short_steps = _run(tmp_path / f"short-{seed}", True, seed)
        ref, ref_steps = _run(tmp_path / f"ref-{seed}", False, seed)
        assert len(short_steps) == len(ref_steps)
        for i, (a, b) in enumerate(zip(short_steps, ref_steps)):
            assert a == b, f"seed {seed}, step {i}"
        assert len(short.part.segments) > 3        # rolled by size and by time
        assert _files(tmp_path / f"short-{seed}") == _files(tmp_path / f"ref-{seed}")
        # what recovery reads back from a crash (no clean shutdown) is the same too
        assert _state(short.reopen(clean=False)) == _state(ref.reopen(clean=False))


def test_every_partition_tells_the_brokers_reaction_of_its_appends(tmp_path: Path) -> None:
    """Partitions call LogManager.on_leader_append themselves (Partition.on_append): those made
    before it is set, those made after, and none once it is unset."""
    from broker.common.config import BrokerConfig
    from broker.log.manager import LogManager

    lm = LogManager(BrokerConfig({"log.dirs": str(tmp_path)}))
    lm.load()
    seen: list[str] = []
    before = lm.create_topic("before", 1).partitions[0]
    lm.on_leader_append = lambda part: seen.append(part.name)
    after = lm.create_topic("after", 1).partitions[0]
    before.append_internal([(b"k", b"v")], 1)
    data = rb.build_batch([(b"k", b"v")], timestamp_ms=1)
    assert after.append(data, [rb.parse_header(data)], 1).error == 0
    assert seen == ["before-0", "after-0"]
    lm.on_leader_append = None
    before.append_internal([(b"k", b"v")], 2)
    after.append_internal([(b"k", b"v")], 2)
    assert seen == ["before-0", "after-0"] and before.log_end_offset == after.log_end_offset == 2
    lm.fds.close_all()
