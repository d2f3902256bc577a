"""OffsetCommit (and small transaction) latency on a local 3-broker RF=3 cluster, printed.

Run: ``.venv/bin/python -m bench.commit_latency [brokers]``. A measurement for issue 20
(cluster OffsetCommit p50 < 5 ms), not a test: it asserts nothing but the committed offset.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker.testing.local_cluster import LocalCluster


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def run(bootstrap: str, label: str, commits: int = 200) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("t", 3, -1)]).values():
        f.result()
    # both internal topics exist first (50 partitions each, RF=3), as on any cluster that has
    # seen a group and a transactional producer: every follower fetch then covers ~a third of them
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx1"})
    producer.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
    consumer.assign([TopicPartition("t", 0, 0)])
    lat = []
    for i in range(commits):
        t0 = time.perf_counter()
        consumer.commit(offsets=[TopicPartition("t", 0, i)], asynchronous=False)
        lat.append((time.perf_counter() - t0) * 1000)
    lat = lat[10:]     # the first commits also find the coordinator and create __consumer_offsets
    got = consumer.committed([TopicPartition("t", 0)], timeout=10)
    assert got[0].offset == commits - 1, got
    print(f"{label}: OffsetCommit p50 {statistics.median(lat):.2f} ms, p99 {_pct(lat, 0.99):.2f} ms "
          f"({len(lat)} commits)", flush=True)
    lat = []
    for _ in range(50):
        t0 = time.perf_counter()
        producer.begin_transaction()
        producer.produce("t", b"v", partition=1)
        producer.commit_transaction(30)
        lat.append((time.perf_counter() - t0) * 1000)
    lat = lat[5:]
    print(f"{label}: transaction p50 {statistics.median(lat):.2f} ms, {1000 / statistics.mean(lat):.1f} txn/s",
          flush=True)
    consumer.close()


def main() -> None:
    brokers = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    cluster = LocalCluster(tempfile.mkdtemp(prefix="samsa-commit-lat-"), brokers=brokers).start()
    try:
        run(cluster.bootstrap_servers, f"{brokers}-broker cluster")
    finally:
        cluster.stop_all()


if __name__ == "__main__":
    main()
