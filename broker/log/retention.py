"""The retention task: every ``log.retention.check.interval.ms`` each partition drops whole
segments past ``retention.ms`` / ``retention.bytes`` (delete policy) or wholly below its log
start offset (any policy), as Kafka's LogManager.cleanupLogs does. Time is the broker's
injected clock. Fetches waiting on a partition are woken so consumers below the new log
start get OFFSET_OUT_OF_RANGE at once."""
from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
import trio

if TYPE_CHECKING:
    from ..broker import Broker

log = structlog.get_logger("samsa.log")

_YIELD_EVERY = 256  # partitions checked between yields to the event loop


def check_interval_s(broker: "Broker") -> float:
    return max(0.01, int(broker.config.get("log.retention.check.interval.ms") or 300000) / 1000)


async def retention_pass(broker: "Broker") -> int:
    deleted = 0
    now = broker.now_ms()
    for i, part in enumerate(broker.logs.all_partitions()):
        if part.deleted:
            continue
        try:
            deleted += part.apply_retention(now)
        except OSError as exc:
            log.error("retention failed", partition=part.name, error=str(exc))
        if i % _YIELD_EVERY == _YIELD_EVERY - 1:
            await trio.sleep(0)
    if deleted:
        broker.appends.notify()
    return deleted


async def run_retention(broker: "Broker", task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    interval = check_interval_s(broker)
    while True:
        await trio.sleep(interval)
        await retention_pass(broker)
