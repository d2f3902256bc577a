"""Share groups (KIP-932) beside a consumer group on the same data, same broker, same run, and
what persisting share-group state costs.

    .venv/bin/python -m bench.share_groups [--records 20000] [--value-bytes 100] [--repeat 1]

One Samsa broker process (share groups on, ``__share_group_state`` with one partition), one topic
with one partition holding ``--records`` records. Then, each from offset 0 of that data:

* a consumer group: one confluent-kafka ``Consumer`` (auto commit), until it has every record;
* a share group of 1 and of 4 members: confluent-kafka 2.16's ``ShareConsumer`` in implicit
  acknowledgement mode (each poll acknowledges the records of the previous one; close
  acknowledges the last), one thread each, until the members together have every record and
  have closed, so every record was fetched (ShareFetch) and acknowledged (ACCEPT).

The clients are librdkafka (C): their poll loops release the GIL and cost little next to a
Python broker, so records/s measures the broker. For each run: records/s, the broker's CPU
seconds (utime + stime of its process, from /proc) per record, and for share groups the share
coordinator's WriteShareGroupState calls and share-state records committed (from /metrics:
``kafka_server_share_coordinator_metrics_write_total``, ``samsa_share_coordinator_records_written_total``)
per second and per 1000 acknowledged records. The load average is printed with the figures: the
machine may be shared.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from broker.testing import SamsaBroker, free_port

TOPIC = "bench-share"
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Result:
    label: str
    records: int
    seconds: float
    cpu_seconds: float
    writes: float = 0.0
    state_records: float = 0.0
    redelivered: int = 0

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    def row(self) -> str:
        share = (f"{self.writes / self.seconds:9.0f} {1000 * self.writes / self.records:9.1f} "
                 f"{1000 * self.state_records / self.records:9.1f}" if self.writes else f"{'-':>9} {'-':>9} {'-':>9}")
        return (f"{self.label:<22} {self.records:>8} {self.seconds:8.2f} {self.rate:10.0f} "
                f"{1e6 * self.cpu_seconds / self.records:10.1f} {share} {self.redelivered:>6}")


HEADER = (f"{'run':<22} {'records':>8} {'seconds':>8} {'records/s':>10} {'cpu us/rec':>10} "
          f"{'writes/s':>9} {'wr/1k ack':>9} {'rec/1k ack':>9} {'redeliv':>6}")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the broker process (fields 14 and 15 of /proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def share_counters(url: str) -> tuple[float, float]:
    """(WriteShareGroupState calls, share-state records) the share coordinator committed so far."""
    text = httpx.get(url + "/metrics", timeout=10).text
    writes = records = 0.0
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "kafka_server_share_coordinator_metrics_write_total":
                writes = s.value
            elif s.name == "samsa_share_coordinator_records_written_total":
                records += s.value
    return writes, records


def produce(bootstrap: str, records: int, value_bytes: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": 1})
    value = b"x" * value_bytes
    for _ in range(records):
        while True:
            try:
                p.produce(TOPIC, value, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    assert p.flush(60) == 0


def consumer_group(bootstrap: str, records: int) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-cg-" + uuid.uuid4().hex[:6],
                  "auto.offset.reset": "earliest", "enable.auto.commit": True})
    c.subscribe([TOPIC])
    got = 0
    deadline = time.monotonic() + 300
    try:
        while got < records and time.monotonic() < deadline:
            got += sum(1 for m in c.consume(1000, 1.0) if m.error() is None)
    finally:
        c.close()
    return got


def share_group(bootstrap: str, records: int, members: int) -> tuple[int, int]:
    """``members`` ShareConsumers (implicit acknowledgement) in one new group until together they
    have every offset; (distinct offsets, deliveries beyond the first)."""
    from confluent_kafka import ShareConsumer

    group = "bench-sg-" + uuid.uuid4().hex[:6]
    seen: set[int] = set()
    deliveries = [0]
    lock = threading.Lock()
    done = threading.Event()

    def member() -> None:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "implicit"})
        c.subscribe([TOPIC])
        deadline = time.monotonic() + 300
        try:
            while not done.is_set() and time.monotonic() < deadline:
                offsets = [m.offset() for m in c.poll(0.5) if m.error() is None]
                with lock:
                    deliveries[0] += len(offsets)
                    seen.update(offsets)
                    if len(seen) >= records:
                        done.set()
            c.poll(0)       # acknowledges the last records polled (implicit mode)
        finally:
            c.close()

    threads = [threading.Thread(target=member, daemon=True) for _ in range(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(seen), deliveries[0] - len(seen)


def measure(label: str, broker: SamsaBroker, url: str, run) -> Result:  # type: ignore[no-untyped-def]
    assert broker.proc is not None
    pid = broker.proc.pid
    w0, r0 = share_counters(url)
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    out = run()
    seconds, cpu = time.perf_counter() - t0, cpu_seconds(pid) - c0
    time.sleep(0.5)     # the last acknowledgements' writes are committed before close returns
    w1, r1 = share_counters(url)
    got, redelivered = out if isinstance(out, tuple) else (out, 0)
    return Result(label, got, seconds, cpu, w1 - w0, r1 - r0, redelivered)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    url = f"http://127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory(prefix="bench-share-") as tmp:
        broker = SamsaBroker(Path(tmp) / "data", control=False, overrides={
            "group.share.enable": "true", "samsa.share.auto.offset.reset": "earliest",
            "group.initial.rebalance.delay.ms": "0", "samsa.http.listener": url,
            "share.coordinator.state.topic.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1", "log.level": "WARNING"}).start()
        try:
            broker.create_topic(TOPIC, 1)
            produce(broker.bootstrap_servers, args.records, args.value_bytes)
            print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  "
                  f"({os.cpu_count()} CPUs; {args.records} records of {args.value_bytes} B, one partition)")
            print(HEADER)
            for _ in range(args.repeat):
                for label, run in (
                        ("consumer group", lambda: consumer_group(broker.bootstrap_servers, args.records)),
                        ("share group, 1 member", lambda: share_group(broker.bootstrap_servers, args.records, 1)),
                        ("share group, 4 members", lambda: share_group(broker.bootstrap_servers, args.records, 4))):
                    print(measure(label, broker, url, run).row(), flush=True)
            print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
