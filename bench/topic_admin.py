"""CreateTopics and DeleteTopics latency: what a test suite pays per topic it creates and drops.

One connection, one topic per request, one partition, replication factor 1: each request's time
from sending to the answer, so the client library's own waits (an admin client's metadata
refresh, its poll interval) are not in the figure. The requests are raw kafka-python messages
(bench/rawclient.py), the same for every broker; versions are the highest each broker
advertises, capped at what the encoders here need (CreateTopics v5, DeleteTopics v4: both
flexible, topics by name).
"""
from __future__ import annotations

import os
import statistics
import time
import uuid
from dataclasses import dataclass

from bench.rawclient import RawClient
from protocol.messages import REQUESTS

CREATE_TOPICS = 19
DELETE_TOPICS = 20
CREATE_VERSION_CAP = 5
DELETE_VERSION_CAP = 4


@dataclass
class TopicAdminResult:
    create_ms: list[float]
    delete_ms: list[float]
    note: str = ""

    @property
    def create_p50(self) -> float:
        return statistics.median(self.create_ms)

    @property
    def delete_p50(self) -> float:
        return statistics.median(self.delete_ms)


def topic_admin_latency(bootstrap: str, apis: dict[int, tuple[int, int]], count: int = 50,
                        warmup: int = 3) -> TopicAdminResult:
    """Create ``count`` topics one request at a time, then delete them one at a time (after
    ``warmup`` untimed create/delete pairs: the first request of a kind may import its handler)."""
    cv = min(apis[CREATE_TOPICS][1], CREATE_VERSION_CAP)
    dv = min(apis[DELETE_TOPICS][1], DELETE_VERSION_CAP)
    run = uuid.uuid4().hex[:8]
    create_ms: list[float] = []
    delete_ms: list[float] = []
    Creatable = REQUESTS[CREATE_TOPICS].CreatableTopic
    with RawClient(bootstrap, timeout=30.0) as c:
        def create(name: str) -> float:
            t0 = time.perf_counter()
            r = c.request(CREATE_TOPICS, cv, topics=[Creatable(
                name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
                timeout_ms=30000, validate_only=False)
            ms = (time.perf_counter() - t0) * 1000
            err = r.topics[0].error_code
            if err:
                raise RuntimeError(f"CreateTopics {name}: error {err}")
            return ms

        def delete(name: str) -> float:
            t0 = time.perf_counter()
            r = c.request(DELETE_TOPICS, dv, topic_names=[name], timeout_ms=30000)
            ms = (time.perf_counter() - t0) * 1000
            err = r.responses[0].error_code
            if err:
                raise RuntimeError(f"DeleteTopics {name}: error {err}")
            return ms

        for i in range(warmup):
            create(f"bench-warm-{run}-{i}")
            delete(f"bench-warm-{run}-{i}")
        names = [f"bench-topic-{run}-{i}" for i in range(count)]
        for name in names:
            create_ms.append(create(name))
        for name in names:
            delete_ms.append(delete(name))
    return TopicAdminResult(create_ms, delete_ms)


def fdatasync_p50(directory: str, count: int = 50) -> float:
    """p50 of appending one ~200-byte line to a file in ``directory`` and fdatasync-ing it: the
    durable write a topic change waits for (broker/log/topic_file.py), so the figure above can be
    read against what the disk allows at that moment."""
    path = os.path.join(directory, "bench-fdatasync")
    times: list[float] = []
    with open(path, "ab") as f:
        for _ in range(max(count, 5)):
            t0 = time.perf_counter()
            f.write(b"x" * 200 + b"\n")
            f.flush()
            os.fdatasync(f.fileno())
            times.append((time.perf_counter() - t0) * 1000)
    os.unlink(path)
    return statistics.median(times)


# -- in process: the broker's own CPU per topic change (python -m bench.topic_admin) -----------

async def _cpu_per_change(log_dir: str, count: int) -> dict[str, tuple[float, float]]:
    """(CPU ms, wall p50 ms) per CreateTopics and per DeleteTopics answered by a real Broker
    through dispatch() on its own trio loop, as bench/request_cost.py measures small requests:
    ``count`` topics created one request at a time, then deleted, after 3 untimed pairs."""
    import trio

    from bench.request_cost import HOST, LISTENER, Broker, BrokerConfig, _frame, dispatch

    Creatable = REQUESTS[CREATE_TOPICS].CreatableTopic

    def create(name: str) -> bytes:
        return _frame(CREATE_TOPICS, CREATE_VERSION_CAP, topics=[Creatable(
            name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=30000, validate_only=False)

    def delete(name: str) -> bytes:
        return _frame(DELETE_TOPICS, DELETE_VERSION_CAP, topic_names=[name], timeout_ms=30000)

    out: dict[str, tuple[float, float]] = {}
    broker = Broker(BrokerConfig({"listeners": f"{LISTENER}://{HOST}:0", "log.dirs": log_dir}))
    broker.start()
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.run_services)
        for i in range(3):
            await dispatch(broker, create(f"warm-{i}"), HOST, LISTENER)
            await dispatch(broker, delete(f"warm-{i}"), HOST, LISTENER)
        names = [f"bench-topic-{i}" for i in range(count)]
        for kind, frames in (("create", [create(n) for n in names]), ("delete", [delete(n) for n in names])):
            walls = []
            cpu0 = time.process_time()
            for f in frames:
                t0 = time.perf_counter()
                await dispatch(broker, f, HOST, LISTENER)
                walls.append((time.perf_counter() - t0) * 1000)
            out[kind] = ((time.process_time() - cpu0) / count * 1000, statistics.median(walls))
            await trio.sleep(0.2)      # the deleted topics' directories go in a worker thread
        nursery.cancel_scope.cancel()
    return out


def main(argv: list[str] | None = None) -> int:
    """Broker CPU per CreateTopics and DeleteTopics in process (no sockets, no client): the
    broker's own cost, which the client-facing `--only topics` figures hide under the machine's
    load. Run it with the log dir on tmpfs (``--log-dir /dev/shm/x``) to leave the disk out."""
    import argparse
    import shutil
    import sys
    import tempfile

    import trio

    ap = argparse.ArgumentParser(prog="python -m bench.topic_admin", description=main.__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100, help="topics created, then deleted, per round")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each on a fresh broker and log dir")
    ap.add_argument("--log-dir", default=None, help="parent of the log dirs (default: the system's temp dir)")
    args = ap.parse_args(argv)
    from broker.common.logging_setup import configure
    with open(os.devnull, "w") as sink:   # the broker's own log lines, formatted, written nowhere
        stderr, sys.stderr = sys.stderr, sink
        try:
            configure()
        finally:
            sys.stderr = stderr
        for _ in range(args.rounds):
            d = tempfile.mkdtemp(prefix="bench-topic-admin-", dir=args.log_dir)
            try:
                r = trio.run(_cpu_per_change, d, args.count)
            finally:
                shutil.rmtree(d, ignore_errors=True)
            print(f"CreateTopics: {r['create'][0]:.3f} ms CPU, wall p50 {r['create'][1]:.3f} ms; "
                  f"DeleteTopics: {r['delete'][0]:.3f} ms CPU, wall p50 {r['delete'][1]:.3f} ms "
                  f"(load {os.getloadavg()[0]:.1f})", file=sys.__stdout__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
