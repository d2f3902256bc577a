"""Storage benchmark: `python -m bench.storage` (see bench/README.md, "Storage").

Sections (``--only``):
- ``throughput``: produce (acks=1) then consume, 1 KB records, over 1, 100 and 10,000 partitions,
  Samsa and tansu side by side; plus Samsa with ``samsa.fsync.on.acks.all=true`` at acks=all.
- ``recovery``: Samsa only (tansu's memory engine keeps nothing across a kill): fill a
  partition, kill -9, time the restart to the first Metadata answer (ApiVersions is answered
  while the broker still loads); the same after a
  clean shutdown, and an empty broker's start as the floor. Reported as seconds per GB above it.
- ``compaction``: Samsa only (tansu does not compact): a compacted topic with many updates per
  key; MB of log the cleaner read per second of cleaning, from its own ``log cleaned`` lines.

Every figure gets a freshly started broker; brokers run one after another and are all killed on
exit (bench/brokers.py). MB = 10^6 bytes.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import confluent_kafka  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench import brokers, workloads  # noqa: E402
from bench.brokers import BrokerKind, BrokerUnavailable, RunningBroker  # noqa: E402

SECTIONS = ("throughput", "recovery", "compaction")


@dataclass
class Row:
    figure: str
    values: dict[str, str] = field(default_factory=dict)
    note: str = ""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.storage", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma list: {','.join(SECTIONS)}")
    ap.add_argument("--brokers", default="tansu,samsa", help="comma list: tansu,samsa (throughput only)")
    ap.add_argument("--partitions", default="1,100,10000", help="partition counts for throughput")
    ap.add_argument("--mb", type=float, default=64.0, help="MB produced (and consumed) per throughput run")
    ap.add_argument("--recovery-mb", type=float, default=512.0, help="MB in the log before the kill -9")
    ap.add_argument("--compaction-mb", type=float, default=96.0, help="MB written to the compacted topic")
    ap.add_argument("--keys", type=int, default=5000, help="distinct keys in the compacted topic")
    ap.add_argument("--quick", action="store_true", help="small sizes (~1 min): 16 MB, 128 MB, 32 MB")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    ap.add_argument("--max-seconds", type=float, default=180.0, help="cap per produce/consume loop")
    args = ap.parse_args(argv)
    if args.quick:
        args.mb, args.recovery_mb, args.compaction_mb = 16.0, 128.0, 32.0
    return args


def samsa_kind(**props: str) -> BrokerKind:
    kind = brokers.samsa_kind(brokers.default_samsa_python())
    for k, v in props.items():
        kind.env["KAFKA_" + k.upper().replace("_", "__").replace(".", "_").replace("-", "___")] = v
    return kind


def kinds(names: list[str]) -> dict[str, BrokerKind]:
    out: dict[str, BrokerKind] = {}
    for name in names:
        if name == "samsa":
            out["samsa"] = samsa_kind()
        elif name == "tansu":
            binary = brokers.find_tansu()
            if binary:
                out["tansu"] = brokers.tansu_kind(binary)
            else:
                print("tansu not found: its column is skipped", file=sys.stderr)
    return out


# -- throughput ------------------------------------------------------------------------------

def throughput(args: argparse.Namespace, rows: list[Row]) -> None:
    columns = kinds(args.brokers.split(","))
    if "samsa" in columns:
        columns["samsa fsync acks=all"] = samsa_kind(**{"samsa.fsync.on.acks.all": "true"})
    records = int(args.mb * 1e6 / workloads.RECORD_SIZE)
    for n in (int(x) for x in args.partitions.split(",")):
        parts = f"{n:,} partition{'s' if n != 1 else ''}"
        prow = Row(f"produce, {parts} (MB/s)")
        crow = Row(f"consume, {parts} (MB/s)")
        for name, kind in columns.items():
            acks = "all" if "fsync" in name else "1"
            try:
                with RunningBroker(kind, start_timeout=60) as b:
                    topic = f"bench-{n}"
                    workloads.create_topic(b.bootstrap, topic, n, timeout=120)
                    t = workloads.produce_records(b.bootstrap, topic, n, records, acks, args.max_seconds)
                    prow.values[name] = f"{t.mb_per_s:.1f}"
                    if t.note:
                        prow.note += f"{name}: {t.note}. "
                    if "fsync" in name:
                        continue
                    c = workloads.consume_throughput(b.bootstrap, topic, n, t.records + min(200, records),
                                                     args.max_seconds)
                    crow.values[name] = f"{c.mb_per_s:.1f}"
                    if c.note:
                        crow.note += f"{name}: {c.note}. "
            except (BrokerUnavailable, workloads.WorkloadError, confluent_kafka.KafkaException) as e:
                prow.values.setdefault(name, "n/a")
                crow.values.setdefault(name, "n/a")
                prow.note += f"{name}: {str(e).splitlines()[0][:160]}. "
            print(f"  {prow.figure}: {prow.values}  {crow.figure}: {crow.values}", flush=True)
        rows += [prow, crow]


# -- recovery --------------------------------------------------------------------------------

class SamsaProcess:
    """Samsa on a data directory that outlives the process (for kill -9 and restart)."""

    def __init__(self, data_dir: str, **props: str) -> None:
        self.data_dir = data_dir
        self.port = brokers.free_port()
        self.bootstrap = f"{brokers.HOST}:{self.port}"
        self.kind = samsa_kind(**props)
        self.log = open(os.path.join(data_dir, "broker.log"), "ab")
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 600.0) -> float:
        argv, env = self.kind.command(self.port, self.data_dir)
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, env=env, cwd=self.kind.cwd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        brokers._LIVE[self.proc.pid] = self.proc
        while time.perf_counter() - t0 < timeout:
            if self.proc.poll() is not None:
                raise BrokerUnavailable(f"samsa exited with {self.proc.returncode}")
            try:
                with socket.create_connection((brokers.HOST, self.port), timeout=timeout) as s:
                    brokers.api_versions_v0(s, 1)
                    brokers.metadata_all_topics(s, 2)   # ApiVersions is answered while it still recovers
                    return time.perf_counter() - t0
            except (OSError, ConnectionError):
                time.sleep(0.002)
        raise BrokerUnavailable("samsa did not answer in time")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(120)
        if self.proc is not None:
            brokers._LIVE.pop(self.proc.pid, None)
        self.proc = None


def fill(bootstrap: str, topic: str, partitions: int, mb: float, acks: str = "1") -> int:
    records = int(mb * 1e6 / workloads.RECORD_SIZE)
    t = workloads.produce_records(bootstrap, topic, partitions, records, acks, 600.0, warmup=0)
    return t.records


def recovery(args: argparse.Namespace, rows: list[Row]) -> None:
    tmp = tempfile.mkdtemp(prefix="bench-storage-")
    try:
        os.makedirs(os.path.join(tmp, "empty"))
        empty = SamsaProcess(os.path.join(tmp, "empty"))
        floor = min(_restart_time(empty) for _ in range(2))   # an empty broker's start: the floor
        for partitions in (1, 8):
            d = os.path.join(tmp, f"p{partitions}")
            os.makedirs(d)
            b = SamsaProcess(d)
            b.start()
            workloads.create_topic(b.bootstrap, "fill", partitions)
            fill(b.bootstrap, "fill", partitions, args.recovery_mb)
            size = sum(f.stat().st_size for f in Path(d).rglob("*.log"))
            gb = size / 1e9
            b.stop(signal.SIGKILL)
            os.system("sync")
            unclean = b.start()
            b.stop()
            clean = b.start()
            b.stop()
            rows.append(Row(f"restart after kill -9, {args.recovery_mb:.0f} MB in {partitions} partition(s) (s)",
                            {"samsa": f"{unclean:.2f}"},
                            f"{(unclean - floor) / gb:.2f} s per GB above an empty start ({floor:.2f} s); "
                            "segments before the last of each partition load from their index files, the last "
                            "ones are CRC-checked whole; page cache warm, as after a process crash"))
            rows.append(Row(f"restart after clean shutdown, {partitions} partition(s) (s)", {"samsa": f"{clean:.2f}"},
                            f"{(clean - floor) / gb:.2f} s per GB above the floor"))
            print(f"  recovery {partitions}: unclean {unclean:.2f}s clean {clean:.2f}s floor {floor:.2f}s "
                  f"({size / 1e6:.0f} MB on disk)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _restart_time(b: SamsaProcess) -> float:
    t = b.start()
    b.stop()
    return t


# -- compaction ------------------------------------------------------------------------------

_CLEANED = re.compile(r"log cleaned.*?mb_read=([0-9.]+).*?partition=(\S+).*?seconds=([0-9.]+)")


def compaction(args: argparse.Namespace, rows: list[Row]) -> None:
    tmp = tempfile.mkdtemp(prefix="bench-compact-")
    try:
        b = SamsaProcess(tmp, **{"log.cleaner.backoff.ms": "200"})
        b.start()
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("compacted", 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": str(8 << 20)})])["compacted"].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5, "acks": "1"})
        value = bytes(range(256)) * 4
        n = int(args.compaction_mb * 1e6 / len(value))
        t0 = time.perf_counter()
        for i in range(n):
            while True:
                try:
                    p.produce("compacted", key=b"key-%d" % (i % args.keys), value=value, partition=0)
                    break
                except BufferError:
                    p.poll(0.005)
            if i % 1000 == 0:
                p.poll(0)
        p.flush(120)
        produce_s = time.perf_counter() - t0
        del p
        deadline = time.monotonic() + 300
        passes: list[tuple[float, float]] = []
        while time.monotonic() < deadline:
            text = open(os.path.join(tmp, "broker.log"), errors="replace").read()
            passes = [(float(m.group(1)), float(m.group(3))) for m in _CLEANED.finditer(text)
                      if m.group(2) == "compacted-0"]
            log_mb = sum(f.stat().st_size for f in Path(tmp).rglob("compacted-0/*.log")) / 1e6
            if passes and log_mb < args.compaction_mb / 3:
                break
            time.sleep(0.5)
        b.stop()
        mb = sum(m for m, _ in passes)
        secs = sum(s for _, s in passes)
        rows.append(Row("log compaction (MB of log read per second of cleaning)",
                        {"samsa": f"{mb / secs:.1f}" if secs else "n/a"},
                        f"{len(passes)} passes over {mb:.0f} MB in {secs:.1f} s; {args.keys} keys, 1 KB values, "
                        f"produced at {args.compaction_mb / produce_s:.1f} MB/s meanwhile; "
                        f"log {args.compaction_mb:.0f} MB -> {log_mb:.1f} MB"))
        print(f"  compaction: {mb:.0f} MB in {secs:.2f}s over {len(passes)} passes", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- report ----------------------------------------------------------------------------------

def render(rows: list[Row], columns: list[str], header: str) -> str:
    lines = [header, "", "| figure | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for r in rows:
        lines.append(f"| {r.figure} | " + " | ".join(r.values.get(c, "") for c in columns) + " |")
    notes = [f"- {r.figure}: {r.note.strip()}" for r in rows if r.note.strip()]
    if notes:
        lines += ["", "Notes:", ""] + notes
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    brokers.install_cleanup()
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    rows: list[Row] = []
    started = time.time()
    for s in sections:
        print(f"{s} ...", flush=True)
        {"throughput": throughput, "recovery": recovery, "compaction": compaction}[s](args, rows)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=brokers.REPO_ROOT).stdout.strip()
    except OSError:
        commit = "?"
    columns = [c for c in ("tansu", "samsa", "samsa fsync acks=all") if any(c in r.values for r in rows)]
    header = (f"Command: `python -m bench.storage {' '.join(argv if argv is not None else sys.argv[1:])}` "
              f"({time.strftime('%Y-%m-%d')}, {time.time() - started:.0f} s, samsa at {commit})\n\n"
              f"- machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
              f"load average at start {os.getloadavg()[0]:.2f}\n"
              f"- client: confluent-kafka {confluent_kafka.__version__}, librdkafka {confluent_kafka.libversion()[0]}, "
              "1 KB records, no compression")
    text = render(rows, columns, header)
    print()
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
