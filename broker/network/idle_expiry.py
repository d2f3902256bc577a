"""``connections.max.idle.ms``: a connection without traffic for that long is closed, on every
listener, authenticated or not (Kafka's Selector IdleExpiryManager; default 10 minutes, -1 never).

Kafka counts a connection active whenever it reads or writes; here bytes received and answers
sent push the connection's deadline forward, and a request being answered holds it (a long
Fetch poll is not idleness). The deadline is the connection nursery's cancel scope deadline: no
timer task, no thread; when it passes, trio cancels the connection and server.py closes it.
"""
from __future__ import annotations

import math

import trio


class IdleExpiry:
    __slots__ = ("scope", "idle_s", "slack_s", "busy")

    def __init__(self, scope: trio.CancelScope, idle_ms: int) -> None:
        self.scope = scope
        self.idle_s = idle_ms / 1000 if idle_ms >= 0 else math.inf
        # moving a deadline costs a heap entry in trio: on a busy connection move it only once
        # it is this much behind (a 20th of the idle time, at most a second)
        self.slack_s = min(1.0, self.idle_s / 20)
        self.busy = 0
        self.touch()

    def touch(self) -> None:
        """Traffic: the connection is idle from now on (unless a request is being answered)."""
        if self.busy or self.idle_s == math.inf:
            return
        deadline = trio.current_time() + self.idle_s
        if deadline - self.scope.deadline > self.slack_s or self.scope.deadline == math.inf:
            self.scope.deadline = deadline

    def begin(self) -> None:
        """A request is being answered: not idle until its answer is out."""
        self.busy += 1
        self.scope.deadline = math.inf

    def end(self) -> None:
        self.busy -= 1
        self.touch()

    def expired(self) -> bool:
        """Did the idle deadline pass (rather than the connection ending otherwise)?"""
        return trio.current_time() >= self.scope.deadline
