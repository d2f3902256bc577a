"""``connections.max.idle.ms``: a connection without traffic for that long is closed, on every
listener, authenticated or not (Kafka's Selector IdleExpiryManager; default 10 minutes, -1 never).

Kafka counts a connection active whenever it reads or writes; here bytes received and answers
sent count as traffic, and a request being answered holds the connection (a long Fetch poll is
not idleness). The per-request bookkeeping is two counters and a timestamp: a watch task per
connection sleeps until the idle time after the last traffic, looks again when it wakes (traffic
meanwhile, or a request still being answered, puts it back to sleep) and otherwise cancels the
connection's nursery, which server.py then closes. (Moving the nursery's cancel-scope deadline on
every request instead cost trio a deadline-heap entry and a context manager per request, ~7 % of
the broker's CPU for a small request such as OffsetCommit.)
"""
from __future__ import annotations

import math

import trio


class IdleExpiry:
    __slots__ = ("scope", "idle_s", "busy", "last", "_expired")

    def __init__(self, scope: trio.CancelScope, idle_ms: int) -> None:
        self.scope = scope
        self.idle_s = idle_ms / 1000 if idle_ms >= 0 else math.inf
        self.busy = 0
        self.last = trio.current_time()
        self._expired = False

    @property
    def enabled(self) -> bool:
        """False for ``connections.max.idle.ms`` -1: no watch task is needed."""
        return self.idle_s != math.inf

    def touch(self) -> None:
        """Traffic: the connection is idle from now on (unless a request is being answered)."""
        self.last = trio.current_time()

    def begin(self) -> None:
        """A request is being answered: not idle until its answer is out."""
        self.busy += 1

    def end(self) -> None:
        self.busy -= 1
        self.last = trio.current_time()

    async def watch(self) -> None:
        """Close the connection (cancel its nursery) once it has been idle for ``idle_s``."""
        while True:
            now = trio.current_time()
            due = self.last + self.idle_s
            if self.busy:
                due = max(due, now + self.idle_s)   # looked at again after a full idle period
            elif now >= due:
                self._expired = True
                self.scope.cancel()
                return
            await trio.sleep_until(due)

    def expired(self) -> bool:
        """Did the idle time pass (rather than the connection ending otherwise)?"""
        return self._expired
