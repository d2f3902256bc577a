"""What TLS costs: produce and consume MB/s over a PLAINTEXT and an SSL listener of the same
Samsa broker (and SASL_SSL with SCRAM-SHA-512, whose cost is only at connection time).

    .venv/bin/python -m bench.tls_cost [--mb 64] [--repeat 1]

One broker, fresh topics per figure, confluent-kafka (librdkafka) clients with 1 KB records as
in bench/README.md. Fetch answers on TLS connections are read from the segment files and
encrypted in Python (ssl), where PLAINTEXT sends them with sendfile: consume shows that.
Certificates are made at start (bench/tls.py).
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.tls import SecureBroker, make_pki, tls_overrides

RECORD = 1000


def produce(conf: dict, topic: str, mb: int) -> float:
    p = Producer({**conf, "linger.ms": 5, "enable.idempotence": False, "acks": 1})
    value = b"x" * RECORD
    for _ in range(200):
        p.produce(topic, value)
    p.flush(30)
    n = mb * 1_000_000 // RECORD
    t0 = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.005)
    p.flush(120)
    return n * RECORD / 1e6 / (time.perf_counter() - t0)


def consume(conf: dict, topic: str, total: int) -> float:
    c = Consumer({**conf, "group.id": "bench-" + uuid.uuid4().hex[:6], "enable.auto.commit": False,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})
    c.list_topics(topic, timeout=10)
    got = 0
    t0 = time.perf_counter()
    c.assign([TopicPartition(topic, 0, 0)])
    while got < total:
        for m in c.consume(1000, 1.0):
            if not m.error():
                got += 1
    elapsed = time.perf_counter() - t0
    c.close()
    return got * RECORD / 1e6 / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="samsa-tls-bench-") as tmp:
        pki = make_pki(Path(tmp) / "pki")
        broker = SecureBroker(Path(tmp) / "data", ["SSL", "SASL_SSL"], {
            **tls_overrides(pki), "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "samsa.scram.bootstrap.credentials": "SCRAM-SHA-512=[name=bench,password=bench-secret]"}).start()
        try:
            confs = {
                "PLAINTEXT": {"bootstrap.servers": broker.bootstrap_servers},
                "SSL": {"bootstrap.servers": broker.bootstrap("SSL"), "security.protocol": "SSL",
                        "ssl.ca.location": str(pki.ca)},
                "SASL_SSL": {"bootstrap.servers": broker.bootstrap("SASL_SSL"), "security.protocol": "SASL_SSL",
                             "ssl.ca.location": str(pki.ca), "sasl.mechanisms": "SCRAM-SHA-512",
                             "sasl.username": "bench", "sasl.password": "bench-secret"},
            }
            results: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in confs}
            for _ in range(args.repeat):
                for name, conf in confs.items():
                    topic = f"bench-{name.lower()}-{uuid.uuid4().hex[:6]}"
                    results[name][0].append(produce(conf, topic, args.mb))
                    results[name][1].append(consume(conf, topic, args.mb * 1_000_000 // RECORD + 200))
            base_p = statistics.median(results["PLAINTEXT"][0])
            base_c = statistics.median(results["PLAINTEXT"][1])
            print("| listener | produce MB/s | vs PLAINTEXT | consume MB/s | vs PLAINTEXT |")
            print("|---|---|---|---|---|")
            for name, (p, c) in results.items():
                mp, mc = statistics.median(p), statistics.median(c)
                print(f"| {name} | {mp:.1f} | {mp / base_p:.2f} | {mc:.1f} | {mc / base_c:.2f} |")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
