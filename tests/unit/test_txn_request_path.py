"""The transaction request path's shortcuts (issue 23) change no answer and no byte of any log:
a real in-process Broker answers the frames librdkafka sends for a transaction (InitProducerId,
then AddPartitionsToTxn v0, Produce v10 of 10 transactional records, EndTxn v1 per transaction,
as bench/request_cost.py sends them) once with the shortcuts and once through the general paths
they stand in for, on a frozen clock; the answers and every log file must be identical."""
from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Any

import pytest
import trio

import bench.request_cost as request_cost
import broker.common.clock as clock
from bench.request_cost import HOST, LISTENER, _Transactions
from broker.common.config import BrokerConfig
from broker.coordinator_runtime.txn_runtime import TxnShell
from broker.network.dispatch import dispatch
from broker.server.broker_server import Broker
from coordinator.txn.coordinator import TransactionCoordinator

NOW_MS = 1_800_000_000_000


def _run(directory: Path, transactions: int) -> tuple[list[bytes], dict[str, bytes]]:
    """The answers to ``transactions`` transactions (after InitProducerId), and every .log file."""
    answers: list[bytes] = []

    async def main() -> None:
        b = Broker(BrokerConfig({"listeners": f"{LISTENER}://{HOST}:0", "log.dirs": str(directory)}))
        b.start()
        async with trio.open_nursery() as nursery:
            await nursery.start(b.run_services)
            b.logs.create_topic("bench", 1)
            txn = _Transactions(b, "bench", 10)
            await txn.init()
            for _ in range(transactions):
                for frame in txn.frames():
                    answers.append(bytes(await dispatch(b, frame, HOST, LISTENER)))
            nursery.cancel_scope.cancel()

    trio.run(main)
    logs = {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*.log"))}
    return answers, logs


def test_transactions_answer_and_write_as_the_general_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "wall_ms", lambda: NOW_MS)
    monkeypatch.setattr(request_cost, "time", types.SimpleNamespace(time=lambda: NOW_MS / 1000))
    fast = _run(tmp_path / "fast", 4)
    verify_now = TransactionCoordinator.verify_now
    calls: list[Any] = []

    def counted(self: TransactionCoordinator, req: Any, now_ms: int) -> Any:
        calls.append(req)
        return verify_now(self, req, now_ms)
    monkeypatch.setattr(TransactionCoordinator, "verify_now", counted)
    again = _run(tmp_path / "again", 4)
    assert len(calls) == 4                              # Produce's check took the shortcut each time
    monkeypatch.setattr(TxnShell, "_verify_now", lambda self, partition, request: None)
    general = _run(tmp_path / "general", 4)
    assert fast == again == general
    answers, logs = general
    assert len(answers) == 12 and any(name.startswith(f"bench-0{os.sep}") for name in logs)
    assert sum(len(v) for k, v in logs.items() if k.startswith("__transaction_state")) > 0
