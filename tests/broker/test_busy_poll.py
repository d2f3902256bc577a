"""Busy polling (broker/network/busy_poll.py, ``samsa.socket.busy.poll.us``): after answering a
client that came back within the window, the broker's loop polls (epoll with a zero timeout)
instead of sleeping, for one window; a client that came back later keeps nothing awake.

What the loop does is read from trio's own instrument hook ``before_io_wait(timeout)``: a zero
timeout is a poll, a positive one is the loop going to sleep."""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from time import perf_counter

import trio
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from broker.network import busy_poll
from broker.network.busy_poll import BusyPoll
from broker.testing.inprocess import InProcessBroker
from tests.support.rawclient import RawClient


class IoWaits(trio.abc.Instrument):
    """Every wait of the loop for I/O: (perf_counter() when it began, its timeout in seconds)."""

    def __init__(self) -> None:
        self.waits: list[tuple[float, float]] = []

    def before_io_wait(self, timeout: float) -> None:
        self.waits.append((perf_counter(), timeout))

    def between(self, start: float, end: float) -> list[float]:
        return [timeout for at, timeout in list(self.waits) if start < at < end]

    def first_sleep_after(self, start: float) -> float:
        """When the loop first went to sleep (a wait with a timeout) after ``start``."""
        return min((at for at, timeout in list(self.waits) if at > start and timeout > 0), default=float("inf"))


def test_poller_keeps_the_loop_awake_for_one_window_then_sleeps(monkeypatch):
    # the window alone: a loaded machine would rightly make the poller step aside (tests below)
    monkeypatch.setattr(busy_poll, "LONG_PASS_S", 1.0)
    monkeypatch.setattr(busy_poll, "_preempted", lambda: 0)

    async def main() -> tuple[list[float], float, list[float]]:
        waits = IoWaits()
        poll = BusyPoll(30_000)   # 30 ms
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll.run)
            await trio.sleep(0.05)
            trio.lowlevel.add_instrument(waits)
            before = perf_counter()
            await trio.sleep(0.05)                  # nothing asked: the loop sleeps
            opened = perf_counter()
            poll.keep_awake(opened)
            await trio.sleep(0.3)
            nursery.cancel_scope.cancel()
        asleep = waits.first_sleep_after(opened)
        return waits.between(before, opened), asleep - opened, waits.between(opened, asleep)

    idle, awake_for, polls = trio.run(main)
    assert idle and all(t > 0 for t in idle)
    assert 0.03 <= awake_for < 0.06           # the window, then asleep again
    assert len(polls) >= 20 and all(t == 0 for t in polls)   # polled, never slept, until then


class PollerSteps(trio.abc.Instrument):
    """How many times the poller's task ran."""

    def __init__(self) -> None:
        self.steps = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        if task.name.endswith("BusyPoll.run"):
            self.steps += 1


def _poller_steps_beside(work: Callable[[], Awaitable[None]], window_us: int = 100_000) -> int:
    """The poller's task steps while ``work`` runs for 0.1 s with a window open all along."""
    async def main() -> int:
        steps = PollerSteps()
        poll = BusyPoll(window_us)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll.run)
            await trio.sleep(0.01)
            trio.lowlevel.add_instrument(steps)
            end = perf_counter() + 0.1
            while perf_counter() < end:
                poll.keep_awake(perf_counter())
                await work()
            trio.lowlevel.remove_instrument(steps)
            nursery.cancel_scope.cancel()
        return steps.steps

    return trio.run(main)


async def _short_work() -> None:
    await trio.lowlevel.checkpoint()


async def _long_work() -> None:
    spin = perf_counter() + 100e-6    # 100 us of another task's work in every pass of the loop
    while perf_counter() < spin:
        pass
    await trio.lowlevel.checkpoint()


def test_the_poller_steps_aside_while_the_loop_is_busy_anyway():
    idle = _poller_steps_beside(_short_work)
    busy = _poller_steps_beside(_long_work)
    assert idle > 2000           # polled in every pass beside a task that does next to nothing (~14,000 here)
    assert busy < 20             # three long passes, then a window's sleep, then three more...


def test_the_poller_pauses_when_another_process_takes_the_cpu(monkeypatch):
    switches = iter(range(1_000_000))
    monkeypatch.setattr(busy_poll, "_preempted", lambda: next(switches))   # preempted between every check
    assert _poller_steps_beside(_short_work, window_us=1_000_000) <= 11 * 33   # 32 passes per 10 ms pause
    monkeypatch.setattr(busy_poll, "_preempted", lambda: 0)
    assert _poller_steps_beside(_short_work, window_us=1_000_000) > 2000        # ~14,000 here


def test_a_zero_window_turns_polling_off():
    async def main() -> list[float]:
        waits = IoWaits()
        poll = BusyPoll(0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poll.run)
            trio.lowlevel.add_instrument(waits)
            opened = perf_counter()
            poll.keep_awake(opened)
            await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
        return waits.between(opened, opened + 0.05)

    waits = trio.run(main)
    assert any(t > 0 for t in waits) and sum(1 for t in waits if t == 0) <= 2   # asleep, not polling


def _api_versions(c: RawClient, correlation_id: int) -> None:
    req = ApiVersionsRequest(version=0)
    req.with_header(correlation_id=correlation_id, client_id="samsa-tests")
    c.send_raw(bytes(req.encode(version=0, header=True, framed=True)))
    answer = ApiVersionsResponse.decode(c.recv_frame(), version=0, header=True)
    assert answer.header.correlation_id == correlation_id and answer.error_code == 0


def test_the_loop_polls_only_after_answering_a_client_that_came_back_within_the_window(tmp_path, monkeypatch):
    # 50 ms, so the test's own thread (sharing the GIL with this in-process broker) is quick enough;
    # and that thread takes the GIL and CPU from the poller now and then, which the poller rightly
    # reads as contention (the two tests above): here it must poll through the whole window
    monkeypatch.setattr(busy_poll, "LONG_PASS_S", 1.0)
    monkeypatch.setattr(busy_poll, "_preempted", lambda: 0)
    broker = InProcessBroker(tmp_path, overrides={"samsa.socket.busy.poll.us": "50000"}).start()
    waits = IoWaits()
    try:
        broker._on_loop(trio.lowlevel.add_instrument, waits)
        with RawClient(broker.bootstrap_servers) as c:
            _api_versions(c, 1)
            time.sleep(0.2)                  # longer than the window
            late = perf_counter()
            _api_versions(c, 2)              # came back late: answering it opens no window
            time.sleep(0.02)
            soon = perf_counter()
            _api_versions(c, 3)              # came back within the window: answering it opens one
            time.sleep(0.3)
        broker._on_loop(trio.lowlevel.remove_instrument, waits)
    finally:
        broker.stop()
    assert waits.first_sleep_after(late) - late < 0.015      # asleep right after answering request 2
    asleep = waits.first_sleep_after(soon)
    assert 0.045 <= asleep - soon < 0.15                     # awake for the window after answering 3
    assert len(waits.between(soon, asleep)) >= 10            # polling (zero timeouts) until then


def test_the_in_process_broker_does_not_poll(tmp_path):
    broker = InProcessBroker(tmp_path).start()
    waits = IoWaits()
    try:
        broker._on_loop(trio.lowlevel.add_instrument, waits)
        with RawClient(broker.bootstrap_servers) as c:
            for i in range(1, 6):
                sent = perf_counter()
                _api_versions(c, i)      # each came back at once
            time.sleep(0.3)
        broker._on_loop(trio.lowlevel.remove_instrument, waits)
    finally:
        broker.stop()
    assert broker.broker is not None and broker.broker.busy_poll.window_s == 0
    asleep = waits.first_sleep_after(sent)
    assert asleep - sent < 0.02 and len(waits.between(sent, asleep)) <= 3
