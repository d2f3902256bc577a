"""Broker CPU per small request, in process: ``python -m bench.request_cost``.

The client-facing figures (offset commits/s, transactions/s in ``python -m bench``) move by
±30 % or more with the machine's load, because the client and the broker share two cores.
This one measures what the broker itself spends on the two small-request paths where tansu is
ahead: a real Broker (log files in a temporary directory, the coordinators, the timer tasks)
answers request frames through ``dispatch()`` on its own trio loop, and the figure is the
process CPU time (``time.process_time``) per request, so time spent waiting for the CPU does
not count. Sockets and trio's connection tasks are left out: the client-facing runs include
them. Frames are built beforehand with the project's message classes, as librdkafka 2.16
sends them (OffsetCommit v9; AddPartitionsToTxn v0, Produce v10, EndTxn v1).

``--served`` sends the same frames to ``python -m broker serve`` (``--samsa-source DIR`` for
another checkout) over one connection, one request at a time as librdkafka does, and reads the
broker process's CPU from /proc (user and system apart): what the connection's tasks, trio's
scheduling and the socket system calls add to the in-process figure.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import tempfile
import time
from typing import Any

import trio

from broker import apis  # noqa: F401  (registers the API handlers)
from broker.server.broker_server import Broker
from broker.common.config import BrokerConfig
from broker.network.dispatch import dispatch
from protocol import records as rb
from protocol.messages import REQUESTS, RESPONSES

HOST, LISTENER = "127.0.0.1", "PLAINTEXT"


def _frame(key: int, version: int, **fields: Any) -> bytes:
    req = REQUESTS[key](version=version, **fields)
    req.with_header(correlation_id=1, client_id="rdkafka")
    return bytes(req.encode(header=True, framed=False))


def _commit_frames(topic: str, groups: int, count: int) -> list[bytes]:
    C = REQUESTS[8]
    P = C.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    return [_frame(8, 9, group_id=f"bench-commit-{i % groups}", generation_id_or_member_epoch=-1, member_id="",
                   group_instance_id=None, topics=[C.OffsetCommitRequestTopic(name=topic, partitions=[
                       P(partition_index=0, committed_offset=i, committed_leader_epoch=-1, committed_metadata="")])])
            for i in range(count)]


async def _answer(broker: Broker, frame: bytes, key: int, version: int) -> Any:
    out = await dispatch(broker, frame, HOST, LISTENER)
    return RESPONSES[key].decode(bytes(out)[4:], version=version, header=True)


class _Transactions:
    """One transactional producer: each transaction is AddPartitionsToTxn, one Produce of
    ``records`` 1 KB records, EndTxn(commit), answered in turn; frames are built untimed."""

    def __init__(self, broker: Broker | None, topic: str, records: int) -> None:
        self.broker, self.topic, self.records = broker, topic, records
        self.tid, self.seq = "bench-txn", 0
        self.value = bytes(1024)

    def init_frame(self) -> bytes:
        return _frame(22, 4, transactional_id=self.tid, transaction_timeout_ms=60000, producer_id=-1,
                      producer_epoch=-1)

    def initialized(self, r: Any) -> None:
        """Take the InitProducerId answer."""
        if r.error_code:
            raise RuntimeError(f"InitProducerId failed with error {r.error_code}")
        self.pid, self.epoch = r.producer_id, r.producer_epoch

    async def init(self) -> None:
        self.initialized(await _answer(self.broker, self.init_frame(), 22, 4))

    def frames(self) -> list[bytes]:
        A, P = REQUESTS[24], REQUESTS[0]
        batch = bytes(rb.build_batch([(None, self.value)] * self.records, timestamp_ms=int(time.time() * 1000),
                                     producer_id=self.pid, producer_epoch=self.epoch, base_sequence=self.seq,
                                     transactional=True))
        self.seq += self.records
        return [
            _frame(24, 0, v3_and_below_transactional_id=self.tid, v3_and_below_producer_id=self.pid,
                   v3_and_below_producer_epoch=self.epoch,
                   v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=self.topic, partitions=[0])]),
            _frame(0, 10, transactional_id=self.tid, acks=-1, timeout_ms=30000, topic_data=[
                P.TopicProduceData(name=self.topic, partition_data=[
                    P.TopicProduceData.PartitionProduceData(index=0, records=batch)])]),
            _frame(26, 1, transactional_id=self.tid, producer_id=self.pid, producer_epoch=self.epoch, committed=True),
        ]


async def _cpu_per(broker: Broker, frames: list[bytes], per: int) -> float:
    """CPU microseconds per ``per`` frames while dispatching ``frames`` in order."""
    t0 = time.process_time()
    for f in frames:
        await dispatch(broker, f, HOST, LISTENER)
    return (time.process_time() - t0) / (len(frames) / per) * 1e6


async def measure(args: argparse.Namespace) -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {"commit": [], "txn": []}
    with tempfile.TemporaryDirectory(prefix="bench-request-cost-") as d:
        broker = Broker(BrokerConfig({"listeners": f"{LISTENER}://{HOST}:0", "log.dirs": d}))
        broker.start()
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.run_services)
            broker.logs.create_topic("bench", 1)
            if args.commits:
                commits = _commit_frames("bench", args.groups, args.commits)
                await _cpu_per(broker, commits[:args.groups], 1)     # warm-up: coordinators, codecs
                for _ in range(args.rounds):
                    runs["commit"].append(await _cpu_per(broker, commits, 1))
            if args.transactions:
                txn = _Transactions(broker, "bench", args.records)
                await txn.init()
                await _cpu_per(broker, txn.frames(), 3)
                for _ in range(args.rounds):
                    frames = [f for _ in range(args.transactions) for f in txn.frames()]
                    runs["txn"].append(await _cpu_per(broker, frames, 3))
            nursery.cancel_scope.cancel()
    return runs


class _ServedBroker:
    """``python -m broker serve`` and one connection to it; requests answered one at a time."""

    def __init__(self, source: str | None, python: str | None = None) -> None:
        from bench.brokers import RunningBroker, default_samsa_python, samsa_kind
        self.broker = RunningBroker(samsa_kind(python or default_samsa_python(), source))
        self.sock = socket.create_connection((HOST, self.broker.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        self.sock.close()
        self.broker.stop()

    def call(self, frame: bytes) -> bytes:
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self._recv(4))
        return self._recv(size)

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def cpu(self) -> tuple[float, float]:
        """(user, system) CPU seconds of the broker process so far."""
        with open(f"/proc/{self.broker.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tick, int(fields[12]) / tick

    def cpu_per(self, frames: list[bytes], per: int) -> tuple[float, float]:
        """(user, system) CPU microseconds per ``per`` frames while answering ``frames`` in order."""
        u0, s0 = self.cpu()
        for f in frames:
            self.call(f)
        u1, s1 = self.cpu()
        n = len(frames) / per
        return (u1 - u0) / n * 1e6, (s1 - s0) / n * 1e6


def measure_served(args: argparse.Namespace) -> dict[str, list[tuple[float, float]]]:
    runs: dict[str, list[tuple[float, float]]] = {"commit": [], "txn": []}
    served = _ServedBroker(args.samsa_source, args.samsa_python)
    try:
        T = REQUESTS[19].CreatableTopic
        served.call(_frame(19, 5, topics=[T(name="bench", num_partitions=1, replication_factor=1, assignments=[],
                                            configs=[])], timeout_ms=10000, validate_only=False))
        if args.commits:
            commits = _commit_frames("bench", args.groups, args.commits)
            served.cpu_per(commits[:max(args.groups, 200)], 1)     # warm-up: coordinators, codecs
            for _ in range(args.rounds):
                runs["commit"].append(served.cpu_per(commits, 1))
        if args.transactions:
            txn = _Transactions(None, "bench", args.records)
            txn.initialized(RESPONSES[22].decode(served.call(txn.init_frame()), version=4, header=True))
            served.cpu_per(txn.frames(), 3)
            for _ in range(args.rounds):
                frames = [f for _ in range(args.transactions) for f in txn.frames()]
                runs["txn"].append(served.cpu_per(frames, 3))
    finally:
        served.close()
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.request_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=3000, help="OffsetCommit requests per round")
    ap.add_argument("--groups", type=int, default=100, help="groups they are spread over")
    ap.add_argument("--transactions", type=int, default=600, help="transactions per round")
    ap.add_argument("--records", type=int, default=10, help="1 KB records per transaction")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    ap.add_argument("--served", action="store_true",
                    help="send the frames to `python -m broker serve` over a socket; CPU read from /proc")
    ap.add_argument("--samsa-python", default=None, metavar="PYTHON",
                    help="with --served: the interpreter of the served broker (default: .venv-pgo if made, else .venv)")
    ap.add_argument("--samsa-source", metavar="DIR", default=None,
                    help="with --served: run broker/, coordinator/, protocol/ from DIR (another checkout)")
    args = ap.parse_args(argv)
    if min(args.commits, args.transactions, args.rounds) < 0 or args.rounds == 0:
        ap.error("--commits and --transactions must be 0 or more (0: not measured), --rounds 1 or more")
    what = {"commit": "OffsetCommit v9 (1 partition)",
            "txn": f"transaction (AddPartitionsToTxn + Produce of {args.records} x 1 KB + EndTxn)"}
    if args.served:
        served = measure_served(args)
        for name, xs in served.items():
            if not xs:
                continue
            totals = [u + s for u, s in xs]
            i = totals.index(statistics.median_low(totals))
            print(f"{what[name]}, served: median {totals[i]:.1f} us broker CPU (user {xs[i][0]:.1f}, system "
                  f"{xs[i][1]:.1f}); rounds " + ", ".join(f"{x:.1f}" for x in totals))
        return 0
    from broker.common.logging_setup import configure
    # the broker's own log set-up (INFO), any lines written to /dev/null: their formatting is
    # part of the cost, as in a served broker writing to a file
    with open(os.devnull, "w") as sink:
        stderr, sys.stderr = sys.stderr, sink
        try:
            configure()
        finally:
            sys.stderr = stderr
        runs = trio.run(measure, args)
    for name, xs in runs.items():
        if not xs:
            continue   # --commits 0 or --transactions 0: that kind was not measured
        print(f"{what[name]}: median {statistics.median(xs):.1f} us broker CPU; rounds "
              + ", ".join(f"{x:.1f}" for x in xs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
