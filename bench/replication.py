"""Replication benchmark: acks=all produce on a 3-broker cluster with RF=3 against one broker
with RF=1 (same run, same client), and failover time from a leader SIGKILL to the first
acknowledged acks=all produce at the new leader.

    .venv/bin/python -m bench.replication [--mb 64] [--failovers 3] [--markdown FILE]

Brokers: the single node is `samsa serve` (broker.testing.SamsaBroker); the cluster is etcd
plus 3 brokers (broker.devcluster.LocalCluster) with min.insync.replicas=2. Client:
confluent-kafka, 1 KB records, linger.ms 5, idempotence off. Failover: a producer with
message.timeout.ms 60 s and topic.metadata.refresh.interval.ms 250 sends one record, waits for
its acknowledgement, and repeats; the leader is SIGKILLed and the time to the first
acknowledgement after the kill is measured (the lease TTL, broker.session.timeout.ms, bounds
how fast the controller notices; it is printed with the result).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from confluent_kafka import Producer

from broker.testing.local_cluster import LocalCluster, find_etcd
from broker.testing import SamsaBroker

from .workloads import produce_records

RECORD = 1000


def _create(bootstrap: str, name: str, rf: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, 1, rf)])
    finally:
        admin.close()


def produce_mb_s(bootstrap: str, topic: str, mb: float) -> float:
    count = int(mb * 1e6 / RECORD)
    result = produce_records(bootstrap, topic, 1, count, "all", max_seconds=300)
    return result.mb_per_s


def failover_ms(c: LocalCluster, topic: str) -> float:
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 0,
                  "message.timeout.ms": 60000, "topic.metadata.refresh.interval.ms": 250,
                  "retry.backoff.ms": 20, "retry.backoff.max.ms": 100})
    acked = []
    p.produce(topic, b"warm", on_delivery=lambda err, msg: acked.append(err))
    p.flush(30)
    leader = c.leader(topic, 0)
    t0 = time.monotonic()
    c.kill(leader)
    first = None
    while first is None and time.monotonic() - t0 < 90:
        done: list = []
        p.produce(topic, b"x", on_delivery=lambda err, msg, done=done: done.append((err, time.monotonic())))
        p.flush(60)
        if done and done[0][0] is None:
            first = done[0][1]
    c.start_broker(leader)
    c.wait_for(lambda: len(c.image().partition(topic, 0).isr) == 3, timeout=60, what="ISR back to 3")
    if first is None:
        raise RuntimeError("no acknowledgement within 90 s of the kill")
    return (first - t0) * 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=64, help="MB produced per throughput figure")
    ap.add_argument("--failovers", type=int, default=3)
    ap.add_argument("--session-timeout-ms", type=int, default=3000, help="broker.session.timeout.ms (lease TTL)")
    ap.add_argument("--markdown", help="also write the results here")
    args = ap.parse_args(argv)
    if find_etcd() is None:
        print("etcd is not installed", file=sys.stderr)
        return 2
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="samsa-bench-repl-") as tmp:
        single = SamsaBroker(os.path.join(tmp, "single")).start()
        try:
            _create(single.bootstrap_servers, "rf1", 1)
            rf1 = produce_mb_s(single.bootstrap_servers, "rf1", args.mb)
        finally:
            single.stop()
        overrides = {"min.insync.replicas": "2", "broker.session.timeout.ms": str(args.session_timeout_ms)}
        cluster = LocalCluster(os.path.join(tmp, "cluster"), brokers=3, overrides=overrides).start()
        try:
            _create(cluster.bootstrap_servers, "rf3", 3)
            cluster.wait_for(lambda: cluster.leader("rf3", 0) >= 0, what="a leader")
            rf3 = produce_mb_s(cluster.bootstrap_servers, "rf3", args.mb)
            times = [failover_ms(cluster, "rf3") for _ in range(args.failovers)]
        finally:
            cluster.stop_all()
    rows.append(("produce acks=all, RF=1 on 1 broker (MB/s)", f"{rf1:.1f}"))
    rows.append(("produce acks=all, RF=3 on 3 brokers, min.insync.replicas=2 (MB/s)", f"{rf3:.1f}"))
    rows.append(("RF=3 / RF=1", f"{rf3 / rf1:.2f}x"))
    rows.append((f"failover: leader SIGKILL to first acks=all ack (ms), median of {len(times)}",
                 f"{statistics.median(times):.0f} (each: {', '.join(f'{t:.0f}' for t in times)})"))
    rows.append(("broker.session.timeout.ms (lease TTL)", str(args.session_timeout_ms)))
    out = "| figure | value |\n|---|---:|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)
    print(f"load average {os.getloadavg()[0]:.2f}, {args.mb} MB of 1 KB records per figure")
    print(out)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"# Replication benchmark\n\n`python -m bench.replication {' '.join(argv or sys.argv[1:])}`, "
                    f"load average {os.getloadavg()[0]:.2f}\n\n{out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
