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
