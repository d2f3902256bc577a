"""One wake-up event that many waiters share and re-check their own condition on.

The broker wakes waiting fetches when any partition grows (Broker.appends) and the replica
manager wakes them when a high watermark moves (ReplicaManager.hw_moved): one event per broker
is enough, since every waiter re-checks its own partitions, and nothing polls.
"""
from __future__ import annotations

import trio


class Notifier:
    """``notify`` wakes everyone waiting now; later waiters wait for the next notify."""

    __slots__ = ("_event", "_waited")

    def __init__(self) -> None:
        self._event = trio.Event()
        self._waited = False

    def notify(self) -> None:
        """Nothing to do when nobody waited since the last notify: the broker's appends
        notify once each (every offset commit, every transaction state record), mostly with
        no fetch parked, and setting a trio.Event then making the next cost ~1 % of a commit."""
        if self._waited:
            self._waited = False
            self._event.set()
            self._event = trio.Event()

    async def wait(self) -> None:
        self._waited = True
        await self._event.wait()
