"""Durability knobs: ``flush.messages``, ``flush.ms`` (the flusher task), and
``samsa.fsync.on.acks.all`` with group commit, checked by counting the fdatasync calls made
(in worker threads, never on the event loop)."""
from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace

import trio

from broker.common.config import BrokerConfig
from broker.log import flush
from broker.log.manager import LogManager
from protocol import records as rb
from tests.support.storage_log import Log


class SyncCounter:
    def __init__(self, monkeypatch, delay: float = 0.0) -> None:
        self.calls: list[int] = []
        self.threads: set[int] = set()
        real = os.fdatasync

        def fdatasync(fd: int) -> None:
            self.calls.append(fd)
            self.threads.add(threading.get_ident())
            if delay:
                time.sleep(delay)
            real(fd)
        monkeypatch.setattr(os, "fdatasync", fdatasync)


def test_flush_messages_makes_the_produce_path_sync_before_answering(tmp_path, monkeypatch):
    counter = SyncCounter(monkeypatch)
    lg = Log(tmp_path, flush_messages=3)
    part = lg.part
    logs = SimpleNamespace(fsync_on_acks_all=False)
    lg.put([(b"k", b"v")] * 2)
    assert not part.flush_due
    trio.run(flush.after_append, logs, [part], 1)
    assert counter.calls == []                        # below flush.messages: nothing synced
    lg.put([(b"k", b"v")])
    assert part.flush_due
    trio.run(flush.after_append, logs, [part], 1)
    assert len(counter.calls) == 1 and threading.get_ident() not in counter.threads
    assert not part.flush_due and part.synced_offset == part.log_end_offset == 3
    assert part.segments[-1].flushed_size == part.segments[-1].size


def test_fsync_on_acks_all_shares_one_fsync_between_concurrent_requests(tmp_path, monkeypatch):
    counter = SyncCounter(monkeypatch, delay=0.05)
    lg = Log(tmp_path)
    part = lg.part
    logs = SimpleNamespace(fsync_on_acks_all=True)

    async def main() -> None:
        lg.put([(b"k", b"v")])
        async with trio.open_nursery() as n:
            for _ in range(10):                      # ten acks=all requests waiting on the same data
                n.start_soon(flush.after_append, logs, [part], -1)
            await trio.sleep(0.01)
            lg.put([(b"k", b"w")])                   # appended while the first fsync runs
            n.start_soon(flush.after_append, logs, [part], -1)
        assert part.synced_offset == part.log_end_offset == 2
        await flush.after_append(logs, [part], -1)   # nothing new: no fsync
        await flush.after_append(logs, [part], 1)    # acks=1: never waits
    trio.run(main)
    assert len(counter.calls) == 2


def test_flusher_task_honours_flush_ms_and_default_relies_on_the_os(tmp_path, monkeypatch):
    lm = LogManager(BrokerConfig({"log.dirs": str(tmp_path)}))
    lm.load()
    timed = lm.create_topic("timed", 1, {"flush.ms": "50"})
    default = lm.create_topic("default", 1)
    counter = SyncCounter(monkeypatch)      # the segments' syncs (a topic change syncs the topic file)
    broker = SimpleNamespace(logs=lm, now_ms=lambda: int(time.time() * 1000))
    for t in (timed, default):
        data = rb.build_batch([(b"k", b"v")], timestamp_ms=broker.now_ms())
        assert t.partitions[0].append(data, [rb.parse_header(data)], broker.now_ms()).error == 0

    async def main() -> None:
        with trio.move_on_after(0.4):
            await flush.run_flusher(lm)
    trio.run(main)
    assert timed.partitions[0].synced_offset == 1
    assert default.partitions[0].synced_offset == 0   # Kafka's default: no fsync, the OS writes back
    assert len(counter.calls) == 1
    lm.shutdown()
