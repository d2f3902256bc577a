"""One wake-up event that many waiters share and re-check their own condition on.

The broker wakes waiting fetches when any partition grows (Broker.appends) and the replica
manager wakes them when a high watermark moves (ReplicaManager.hw_moved): one event per broker
is enough, since every waiter re-checks its own partitions, and nothing polls.
"""
from __future__ import annotations

import trio


class Notifier:
    """``notify`` wakes everyone waiting now; later waiters wait for the next notify."""

    def __init__(self) -> None:
        self._event = trio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = trio.Event()

    async def wait(self) -> None:
        await self._event.wait()
