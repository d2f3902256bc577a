"""Control-plane timings of a local 3-broker cluster (etcd + Samsa brokers, broker/testing/local_cluster.py).

    .venv/bin/python -m bench.cluster_control [--session-ms 3000] [--runs 3]

Figures (median of ``--runs``):
- cluster start: etcd + 3 brokers started one after another, until each answers ApiVersions;
- CreateTopics (1 partition, RF=3) round trip on a cluster vs a single node (the etcd
  transaction and the watch back to the answering broker);
- leader failover, control plane only: SIGKILL of a partition's leader until a surviving
  broker's Metadata shows a new leader. Bounded below by ``broker.session.timeout.ms`` (the
  etcd lease TTL, rounded up to whole seconds by etcd) plus the controller's reaction;
- controller failover: SIGKILL of the active controller until another broker holds the key.
The data plane's figure (first acknowledged acks=all produce at the new leader) needs the
replica manager; this measures what precedes it.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from kafka.protocol.admin import CreateTopicsRequest

from broker.testing.local_cluster import LocalCluster
from broker.testing import SamsaBroker
from bench.rawclient import RawClient

CT = CreateTopicsRequest.CreatableTopic


def _create(bootstrap: str, name: str, rf: int) -> float:
    with RawClient(bootstrap) as c:
        t0 = time.perf_counter()
        r = c.request(19, 7, topics=[CT(name=name, num_partitions=1, replication_factor=rf, assignments=[],
                                        configs=[])], timeout_ms=10000, validate_only=False)
        took = time.perf_counter() - t0
    assert r.topics[0].error_code == 0, r
    return took


def _leader(bootstrap: str, topic: str) -> int:
    with RawClient(bootstrap) as c:
        r = c.request(3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    for t in r.topics:
        if t.name == topic:
            return t.partitions[0].leader_id
    return -1


def run_once(session_ms: int) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="samsa-bench-cluster-") as tmp:
        cluster = LocalCluster(tmp, brokers=3, overrides={"broker.session.timeout.ms": str(session_ms)})
        t0 = time.perf_counter()
        cluster.start()
        out["cluster start (s)"] = time.perf_counter() - t0
        try:
            boots = dict(zip(cluster.brokers, cluster.bootstrap_servers.split(",")))
            out["CreateTopics RF=3, cluster (ms)"] = statistics.median(
                _create(boots[1], f"c{i}", 3) for i in range(5)) * 1000
            leader = _leader(boots[1], "c0")
            survivor = next(b for b in boots if b != leader)
            t0 = time.perf_counter()
            cluster.kill(leader)
            while _leader(boots[survivor], "c0") in (leader, -1):
                time.sleep(0.01)
            out["leader failover, SIGKILL -> new leader in Metadata (s)"] = time.perf_counter() - t0
            ctl = cluster.controller()
            if ctl == leader or ctl not in cluster.brokers or cluster.brokers[ctl].proc is None:
                ctl = -1
            if ctl > 0:
                t0 = time.perf_counter()
                cluster.kill(ctl)
                while cluster.controller() in (ctl, -1):
                    time.sleep(0.01)
                out["controller failover, SIGKILL -> new controller (s)"] = time.perf_counter() - t0
        finally:
            cluster.stop_all()
        single = SamsaBroker(f"{tmp}/single").start()
        try:
            out["CreateTopics RF=1, single node (ms)"] = statistics.median(
                _create(single.bootstrap_servers, f"s{i}", 1) for i in range(5)) * 1000
        finally:
            single.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--session-ms", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    runs = [run_once(args.session_ms) for _ in range(args.runs)]
    print(f"broker.session.timeout.ms={args.session_ms}, {args.runs} run(s), median:")
    for key in runs[0]:
        values = [r[key] for r in runs if key in r]
        print(f"  {key}: {statistics.median(values):.3f}")


if __name__ == "__main__":
    main()
