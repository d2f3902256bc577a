"""The leaders' batching of remote KIP-890 checks (broker/replica/txn_verify.py, Kafka's
AddPartitionsToTxnManager): one AddPartitionsToTxn in flight per coordinator broker, what queues
meanwhile goes out together; a waiting transactional id with the same epoch is merged, a newer
epoch fences the waiting one, an older one is fenced at once; a cancelled sender hands over."""
from __future__ import annotations

from typing import Any

import trio

from broker.replica import txn_verify
from broker.replica.txn_verify import AddPartitionsToTxnManager

NONE, NETWORK_EXCEPTION, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE = 0, 13, 47, 48


class FakeManager(AddPartitionsToTxnManager):
    """Sends nothing: records each batch and answers NONE (INVALID_TXN_STATE for partition 9)
    when ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(broker=None)    # type: ignore[arg-type]
        self.batches: list[dict[str, tuple[int, int, bool, list[tuple[str, int]]]]] = []
        self.release = trio.Event()

    async def _send(self, node_id: int, node: Any, batch: dict[str, Any]) -> None:
        self.batches.append({tid: (t.producer_id, t.producer_epoch, t.add, t.partitions()) for tid, t in batch.items()})
        await self.release.wait()
        for t in batch.values():
            errors = {tp: INVALID_TXN_STATE if tp[1] == 9 else NONE for tp in t.partitions()}
            for w in t.waiters:
                w.answer(errors)


def run(scenario: Any) -> Any:
    return trio.run(scenario)


def test_requests_queued_while_one_is_in_flight_go_out_together() -> None:
    async def scenario() -> tuple[list, dict]:
        m = FakeManager()
        results: dict[str, Any] = {}

        async def verify(key: str, tid: str, pid: int, epoch: int, parts: list[tuple[str, int]], add: bool) -> None:
            results[key] = await m.verify(2, tid, pid, epoch, parts, add)

        async with trio.open_nursery() as n:
            n.start_soon(verify, "a", "tx-a", 1, 0, [("t", 0)], False)
            await trio.sleep(0.01)                           # tx-a in flight
            n.start_soon(verify, "b", "tx-b", 2, 0, [("t", 1), ("t", 9)], True)
            n.start_soon(verify, "c", "tx-c", 3, 0, [("u", 0)], False)
            n.start_soon(verify, "b2", "tx-b", 2, 0, [("t", 2)], True)   # same id and epoch: merged
            await trio.sleep(0.01)
            m.release.set()
        return m.batches, results

    batches, results = run(scenario)
    assert batches == [{"tx-a": (1, 0, False, [("t", 0)])},
                       {"tx-b": (2, 0, True, [("t", 1), ("t", 2), ("t", 9)]), "tx-c": (3, 0, False, [("u", 0)])}]
    assert results == {"a": {("t", 0): NONE}, "b": {("t", 1): NONE, ("t", 9): INVALID_TXN_STATE},
                       "c": {("u", 0): NONE}, "b2": {("t", 2): NONE}}


def test_epochs_fence_waiting_entries() -> None:
    async def scenario() -> dict[str, Any]:
        m = FakeManager()
        results: dict[str, Any] = {}

        async def verify(key: str, epoch: int) -> None:
            results[key] = await m.verify(2, "tx", 1, epoch, [("t", 0)], False)

        async with trio.open_nursery() as n:
            n.start_soon(m.verify, 2, "other", 5, 0, [("t", 0)], False)   # keeps a request in flight
            await trio.sleep(0.01)
            n.start_soon(verify, "old", 3)
            await trio.sleep(0.01)
            n.start_soon(verify, "new", 4)                   # fences the waiting epoch 3
            await trio.sleep(0.01)
            n.start_soon(verify, "older", 2)                 # fenced by the waiting epoch 4
            await trio.sleep(0.01)
            m.release.set()
        return results

    results = run(scenario)
    assert results == {"old": {("t", 0): INVALID_PRODUCER_EPOCH}, "older": {("t", 0): INVALID_PRODUCER_EPOCH},
                       "new": {("t", 0): NONE}}


def test_a_cancelled_sender_fails_its_batch_and_a_waiter_takes_over() -> None:
    async def scenario() -> dict[str, Any]:
        m = FakeManager()
        results: dict[str, Any] = {}

        async def verify(key: str, tid: str) -> None:
            results[key] = await m.verify(2, tid, 1, 0, [("t", 0)], False)

        sender = trio.CancelScope()

        async def first() -> None:
            with sender:
                await verify("first", "tx-1")

        async with trio.open_nursery() as n:
            n.start_soon(first)
            await trio.sleep(0.01)
            n.start_soon(verify, "second", "tx-2")          # queued behind the in-flight one
            await trio.sleep(0.01)
            sender.cancel()                                  # the client went away mid-request
            await trio.sleep(0.01)
            m.release.set()
        return results

    results = run(scenario)
    assert "first" not in results                            # cancelled
    assert results == {"second": {("t", 0): NONE}}


def test_no_coordinator_leader_is_coordinator_not_available() -> None:
    m = FakeManager()
    assert trio.run(m.verify, -1, "tx", 1, 0, [("t", 0)], False) == {("t", 0): 15}
    assert txn_verify._producer_error(90) == INVALID_PRODUCER_EPOCH
