"""broker/common/notifier.py: notify wakes those waiting now, never a later waiter."""
from __future__ import annotations

import trio
import trio.testing

from broker.common.notifier import Notifier


def test_notify_wakes_current_waiters_only() -> None:
    async def main() -> None:
        n = Notifier()
        woken: list[str] = []

        async def waiter(name: str) -> None:
            await n.wait()
            woken.append(name)

        n.notify()                       # nobody waiting: wakes no one later
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter, "a")
            nursery.start_soon(waiter, "b")
            await trio.testing.wait_all_tasks_blocked()
            assert woken == []
            n.notify()
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(woken) == ["a", "b"]
            nursery.start_soon(waiter, "c")       # after the notify: waits for the next one
            await trio.testing.wait_all_tasks_blocked()
            assert "c" not in woken
            n.notify()
        assert woken[-1] == "c"

    trio.run(main)


def test_a_cancelled_waiter_leaves_the_next_notify_working() -> None:
    async def main() -> None:
        n = Notifier()
        with trio.move_on_after(0.01):
            await n.wait()
        woken = []

        async def waiter() -> None:
            await n.wait()
            woken.append(1)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()
            n.notify()
        assert woken == [1]

    trio.run(main)
