"""Busy polling: the broker's loop stays awake for a moment after answering a client that
answers back quickly (``samsa.socket.busy.poll.us``, default 200; 0 turns it off).

Why: a client that sends one request at a time (a synchronous offset commit, a transactional
producer's next step, a test's next call) finds the broker asleep in ``epoll_wait`` each time, and
on the virtual machines this project is measured on waking a sleeping process is the largest
single cost of a small request's round trip. A trio server answering a canned 20-byte frame took
66 us per round trip when it slept between requests and 20 us when it polled; Samsa's offset
commits from one librdkafka consumer went from ~3,400-3,800/s to ~6,200-7,200/s (docs/benchmarks.md),
for about the same broker CPU per commit, since a poll costs less than going to sleep and being
woken. Linux's
``net.core.busy_poll`` makes the same trade for NIC queues; it does not apply to loopback.

How: a connection whose last request arrived within the window of the answers before it
(``listeners._serve_socket`` measures the gap) asks, after answering, that the loop stay awake
until a window from now. One task, :meth:`BusyPoll.run`, then passes trio checkpoints until that
time: with a task ready to run, trio's scheduler polls epoll with a zero timeout instead of
sleeping in it, so the next request is seen within one pass of the scheduler and its connection's
task runs at once. The connections themselves wait on epoll as always, so the cost does not grow
with their number: one task step and one ``epoll_wait`` per pass, only while some connection is in
its window. A client that pauses longer than the window, or sends now and then (heartbeats, a
consumer's parked fetch), keeps nothing awake: the CPU spent is at most one window after each
answer to a client that came back within the window the time before, and the poller steps
aside while the loop is busy anyway or another process wants the CPU (``BusyPoll.run``).

Not in the in-process test broker (broker/testing/inprocess.py sets 0): it shares the test
process' GIL, which polling would hold from the test's own threads.
"""
from __future__ import annotations

import resource
from time import perf_counter

import trio

# the loop's own thread where the platform can say (Linux), else the process
_RUSAGE_THREAD: int = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)

PROPERTY = "samsa.socket.busy.poll.us"
LONG_PASS_S = 30e-6   # a pass of the scheduler with only the poller in it takes a few us
BUSY_PASSES = 3
PREEMPTION_CHECK_PASSES = 32
CONTENDED_PAUSE_S = 0.01


def _preempted() -> int:
    """Times the kernel took the CPU from this thread for another (involuntary context switches)."""
    return resource.getrusage(_RUSAGE_THREAD).ru_nivcsw


class BusyPoll:
    """The broker's one poller; ``window_s`` 0 means off (``run`` returns at once)."""

    __slots__ = ("window_s", "_until", "_wake")

    def __init__(self, window_us: int) -> None:
        self.window_s = max(0, window_us) / 1e6
        self._until = 0.0                    # perf_counter() time the loop stays awake until
        self._wake: trio.Event | None = None  # set while run() sleeps

    def keep_awake(self, now: float) -> None:
        """Keep the loop awake until a window after ``now`` (a ``perf_counter()`` reading)."""
        self._until = now + self.window_s
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()

    async def run(self) -> None:
        """Poll while a window is open; sleep (on an Event, not on the clock) between windows.

        A pass of the poller is one pass of trio's scheduler. When the loop has other work in
        every pass (many clients at once), it does not go to sleep anyway, and each pass of the
        poller only costs a task step and an ``epoll_wait`` that finds fewer ready sockets than a
        later one would: so after ``BUSY_PASSES`` passes in a row that each took longer than
        ``LONG_PASS_S`` (others' work ran in them), the poller steps aside for a window and then
        looks again. One client's request in a pass now and then does not count as busy.

        Polling should only use a CPU nobody else wants: every ``PREEMPTION_CHECK_PASSES`` passes
        the poller reads the loop thread's involuntary context switches, and if the kernel took
        the CPU away meanwhile (a client, another broker, a test run on the same cores), it pauses
        for ``CONTENDED_PAUSE_S`` before polling again."""
        if not self.window_s:
            return
        checkpoint = trio.lowlevel.checkpoint
        while True:
            wake = self._wake = trio.Event()
            await wake.wait()
            long_passes = passes = 0
            preempted = _preempted()
            last = perf_counter()
            while last < self._until:
                await checkpoint()
                now = perf_counter()
                passes += 1
                if now - last < LONG_PASS_S:
                    long_passes = 0
                else:
                    long_passes += 1
                    if long_passes >= BUSY_PASSES:
                        await trio.sleep(self.window_s)
                        long_passes = 0
                        now = perf_counter()
                if not passes % PREEMPTION_CHECK_PASSES:
                    count = _preempted()
                    if count != preempted:   # another process wanted this CPU: the poll was not free
                        await trio.sleep(CONTENDED_PAUSE_S)
                        preempted = _preempted()
                        now = perf_counter()
                last = now
