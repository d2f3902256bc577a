"""Busy polling (broker/network/busy_poll.py, ``samsa.socket.busy.poll.us``): after answering a
client that came back within the window, the broker's loop polls (epoll with a zero timeout)
instead of sleeping, for one window; a client that came back later keeps nothing awake.

What the loop does is read from trio's own instrument hook ``before_io_wait(timeout)``: a zero
timeout is a poll, a positive one is the loop going to sleep."""
from __future__ import annotations

import time
from time import perf_counter

import trio
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

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


def test_poller_keeps_the_loop_awake_for_one_window_then_sleeps():
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


def test_the_loop_polls_only_after_answering_a_client_that_came_back_within_the_window(tmp_path):
    # 50 ms, so the test's own thread (sharing the GIL with this in-process broker) is quick enough
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
