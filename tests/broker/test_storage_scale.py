"""10,000 partitions inside the default open-file limit (``ulimit -n`` 1024).

SLOW-ISH (about 30 s, marked ``slow``; deselect with ``-m 'not slow'``): the broker is started with
RLIMIT_NOFILE lowered to 1024, one topic of 10,000 partitions is created, librdkafka produces one
record to every partition, a single Fetch reads them all back, and after a clean restart (indexes
and producer snapshots loaded, not rebuilt) and a kill -9 restart everything is still there.
Segment files are opened lazily and bounded by the LRU (``samsa.log.max.open.segment.files``,
default a quarter of the soft limit), so the descriptor count stays far below the limit.
"""
from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest
from kafka.protocol.consumer import FetchRequest

from broker.testing import SamsaBroker
from protocol import records as rb
from tests.support.rawclient import RawClient

pytestmark = pytest.mark.slow

PARTITIONS = 10_000
NOFILE = 1024
FETCH = 1


def start_limited(broker: SamsaBroker) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(NOFILE, hard), hard))
    try:
        broker.start(timeout=120)   # the child inherits the limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def open_fds(broker: SamsaBroker) -> int:
    return len(os.listdir(f"/proc/{broker.proc.pid}/fd"))


def fetch_all(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    FT = FetchRequest.FetchTopic
    parts = [FT.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                               partition_max_bytes=1 << 16) for p in range(PARTITIONS)]
    with RawClient(bootstrap, timeout=60) as c:
        resp = c.request(FETCH, 11, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 26,
                         isolation_level=0, session_id=0, session_epoch=-1,
                         topics=[FT(topic=topic, partitions=parts)], forgotten_topics_data=[], rack_id="")
    out: dict[int, list[bytes]] = {}
    for pd in resp.responses[0].partitions:
        assert pd.error_code == 0
        vals = []
        for h in rb.iter_batches(pd.records or b""):
            vals += [r.value for r in rb.iter_records(pd.records, h)]
        out[pd.partition_index] = vals
    return out


def test_ten_thousand_partitions_within_1024_open_files(tmp_path: Path):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = SamsaBroker(tmp_path / "data", overrides={"num.partitions": "1"})
    start_limited(broker)
    try:
        bootstrap = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        t0 = time.monotonic()
        admin.create_topics([NewTopic("wide", PARTITIONS, 1)], operation_timeout=60)["wide"].result(120)
        created_s = time.monotonic() - t0
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": "all"})
        for i in range(PARTITIONS):
            p.produce("wide", key=b"k", value=b"v%d" % i, partition=i)
            if i % 2000 == 1999:
                p.poll(0)
        assert p.flush(120) == 0
        del p
        assert open_fds(broker) < NOFILE // 2
        got = fetch_all(bootstrap, "wide")
        assert got == {i: [b"v%d" % i] for i in range(PARTITIONS)}

        broker.stop()
        t0 = time.monotonic()
        start_limited(broker)
        restart_s = time.monotonic() - t0
        log = broker.read_log()
        assert "rebuilding segment index" not in log
        assert fetch_all(bootstrap, "wide") == got
        assert open_fds(broker) < NOFILE // 2

        broker.kill()
        start_limited(broker)
        assert fetch_all(bootstrap, "wide") == got
        print(f"\n10,000 partitions: created in {created_s:.1f}s, clean restart {restart_s:.1f}s")
    finally:
        broker.stop()
