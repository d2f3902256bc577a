"""The broker's clock: wall time plus an offset that tests can move forward.

Every timed thing in the broker reads this clock (record timestamps, segment ages, retention,
session and rebalance timeouts, transaction timeouts, offsets retention, delayed file
deletion), and every timer task sleeps on it with :meth:`Clock.sleep_until` or
:meth:`Clock.wait`, which return early when :meth:`Clock.advance` moves the clock. So
``clock.advance(45_000)`` makes everything that would have fired in the next 45 s fire now,
without anyone waiting. The clock only moves forward, as time does for Kafka's timers.
"""
from __future__ import annotations

import time

import trio


def wall_ms() -> int:
    return int(time.time() * 1000)


class Clock:
    """``now_ms()`` = wall time + ``offset_ms``; ``advance(ms)`` grows the offset and wakes
    every sleeper so it re-reads the time. ``advance`` must run on the broker's trio thread
    (the control endpoint and the in-process fixture arrange that)."""

    def __init__(self) -> None:
        self.offset_ms = 0
        self._waiters: set[trio.Event] = set()

    def now_ms(self) -> int:
        return wall_ms() + self.offset_ms

    __call__ = now_ms  # a Clock is also the ``() -> ms`` callable the log and partitions take

    def advance(self, ms: int) -> int:
        """Move the clock ``ms`` forward; returns the new ``now_ms()``."""
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise ValueError(f"clock.advance needs a non-negative integer of milliseconds, got {ms!r}")
        self.offset_ms += ms
        for event in list(self._waiters):
            event.set()
        return self.now_ms()

    async def wait(self, deadline_ms: int | None, event: trio.Event | None = None) -> None:
        """Return when the clock reaches ``deadline_ms`` (None: never), when ``event`` is set,
        or when the clock is advanced (which sets ``event``); callers re-check and loop."""
        remaining = float("inf") if deadline_ms is None else (deadline_ms - self.now_ms()) / 1000
        if remaining <= 0:
            await trio.lowlevel.checkpoint()
            return
        event = trio.Event() if event is None else event
        self._waiters.add(event)
        try:
            with trio.move_on_after(remaining):
                await event.wait()
        finally:
            self._waiters.discard(event)

    async def sleep_until(self, deadline_ms: int) -> None:
        """Sleep until the clock reads ``deadline_ms`` (sooner in wall time if it is advanced)."""
        while self.now_ms() < deadline_ms:
            await self.wait(deadline_ms)

    async def sleep(self, ms: float) -> None:
        """Sleep ``ms`` of clock time; ``advance`` shortens it."""
        if ms <= 0:
            await trio.sleep(0)
            return
        await self.sleep_until(self.now_ms() + int(ms))
