"""The retention task: every ``log.retention.check.interval.ms`` each partition drops whole
segments past ``retention.ms`` / ``retention.bytes`` (delete policy) or wholly below its log
start offset (any policy), as Kafka's LogManager.cleanupLogs does. Time is the broker's
injected clock. Fetches waiting on a partition are woken so consumers below the new log
start get OFFSET_OUT_OF_RANGE at once."""
from __future__ import annotations

from typing import TYPE_CHECKING
from collections.abc import Callable

import structlog
import trio

if TYPE_CHECKING:
    from .manager import LogManager

log = structlog.get_logger("samsa.log")

_YIELD_EVERY = 256  # partitions checked between yields to the event loop


def check_interval_ms(logs: LogManager) -> int:
    return max(10, int(logs.config.get("log.retention.check.interval.ms") or 300000))


async def retention_pass(logs: LogManager, notify: Callable[[], None]) -> int:
    """One check of every partition; ``notify`` wakes waiting fetches when segments went."""
    deleted = 0
    now = logs.now_ms()
    for i, part in enumerate(logs.all_partitions()):
        if part.deleted:
            continue
        try:
            deleted += part.apply_retention(now)
        except OSError as exc:
            log.error("retention failed", partition=part.name, error=str(exc))
        if i % _YIELD_EVERY == _YIELD_EVERY - 1:
            await trio.sleep(0)
    if deleted:
        notify()
    return deleted


async def run_retention(logs: LogManager, notify: Callable[[], None],
                        task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
    """Check every ``log.retention.check.interval.ms`` of the broker's clock (an advanced clock
    runs the check at once)."""
    task_status.started()
    interval = check_interval_ms(logs)
    while True:
        await logs.clock.sleep(interval)
        await retention_pass(logs, notify)
