"""fsync off the event loop: the acks=all sync (``samsa.fsync.on.acks.all``), ``flush.messages``
and the ``flush.ms`` flusher task.

By default Samsa does what Kafka does: nothing is fsynced on the produce path
(``log.flush.interval.messages`` and ``log.flush.interval.ms`` are unset, the OS writes pages
back); a kill -9 loses nothing that was acknowledged, a power cut may. With
``samsa.fsync.on.acks.all=true`` an acks=all produce request is answered only after its
partitions are fsynced. The fsync runs in a worker thread on a duplicate descriptor (the
LRU may close the original meanwhile), and concurrent requests for the same partition share
one fsync (group commit), so one slow disk flush never blocks other connections.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol
from collections.abc import Iterable, Mapping

import structlog
import trio

from broker.common.clock import Clock
from broker.common.config import LONG_MAX
from .fds import fsync_dir

if TYPE_CHECKING:
    from .partition import Partition

log = structlog.get_logger("samsa.log")


class FlushedLogs(Protocol):
    """What flushing reads of the LogManager (broker/log/manager.py), which awaits
    ``after_append`` and so is above this module."""

    @property
    def topics(self) -> Mapping[str, Any]: ...     # name -> broker.log.manager.Topic
    @property
    def clock(self) -> Clock: ...
    @property
    def fsync_on_acks_all(self) -> bool: ...

    def topic_config_value(self, topic: Any, name: str) -> Any: ...
    def now_ms(self) -> int: ...


async def sync_partition(part: Partition) -> None:
    """Return once every byte appended before the call is fsynced."""
    target = part.log_end_offset
    while part.synced_offset < target:
        running = part.sync_in_flight
        if running is not None:
            await running.wait()
            continue
        done = part.sync_in_flight = trio.Event()
        upto = part.log_end_offset
        jobs: list[tuple] = []
        try:
            for seg in part.unflushed_segments():
                jobs.append((seg, seg.size, os.dup(seg.fd)))
            for seg, size, fd in jobs:
                await trio.to_thread.run_sync(os.fdatasync, fd)  # data and the size: what a read needs
                seg.flushed_size = max(seg.flushed_size, size)
            if any(not seg.dir_synced for seg, _, _ in jobs):
                # a segment created since the last sync: its directory entry must be durable too
                await trio.to_thread.run_sync(fsync_dir, part.directory)
                for seg, _, _ in jobs:
                    seg.dir_synced = True
            part.mark_flushed(upto)
        except OSError as exc:
            log.error("fsync failed", partition=part.name, error=str(exc))
            raise
        finally:
            for _, _, fd in jobs:
                os.close(fd)
            part.sync_in_flight = None
            done.set()


async def sync_partitions(parts: Iterable[Partition]) -> None:
    parts = list(parts)
    if len(parts) == 1:
        await sync_partition(parts[0])
        return
    async with trio.open_nursery() as nursery:
        for part in parts:
            nursery.start_soon(sync_partition, part)


async def after_append(logs: FlushedLogs, parts: list[Partition], acks: int) -> None:
    """What the produce path awaits before answering: an fsync when acks=all is to mean
    "on disk", or when ``flush.messages`` was reached."""
    if acks == -1 and logs.fsync_on_acks_all:
        await sync_partitions(parts)
        return
    due = [p for p in parts if p.flush_due]
    if due:
        await sync_partitions(due)


def _flush_ms(logs: FlushedLogs, topic) -> int | None:
    value = logs.topic_config_value(topic, "flush.ms")
    if value is None or int(value) >= LONG_MAX:
        return None
    return max(0, int(value))


async def run_flusher(logs: FlushedLogs, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
    """Kafka's log flusher: fsync partitions whose last flush is ``flush.ms`` old (and any that
    reached ``flush.messages`` through an internal append). Checks at the smallest flush.ms in
    use (at least every 10 ms, at most every second)."""
    task_status.started()
    while True:
        now = logs.now_ms()
        period = 1000
        todo: list[Partition] = []
        for topic in list(logs.topics.values()):
            flush_ms = _flush_ms(logs, topic)
            if flush_ms is not None:
                period = min(period, max(10, flush_ms))
            for part in topic.partitions:
                if part.synced_offset >= part.log_end_offset or part.deleted:
                    continue
                if part.flush_due or (flush_ms is not None and now - part.last_flush_ms >= flush_ms):
                    todo.append(part)
        if todo:
            try:
                await sync_partitions(todo)
            except OSError:
                pass  # logged; the next round retries
        await logs.clock.sleep(period)
