"""The checker of a Jepsen-style run, after the cluster has healed and stopped: the history of what
clients were told, judged against the logs the three brokers left on disk (read with the project's
own partition log, broker.log.partition.Partition) and against a fresh read_committed reader.

Each rule adds a line to ``problems``; nothing is tolerated because of a fault. Rules:

- idempotent producers: every acknowledged record is in the final log exactly once, at the offset
  its acknowledgement gave, in the producer's order; no record (acknowledged or not) twice;
- consumers: every record the group read is the final log's record at that offset, and none is
  from a transaction that the log aborted;
- transactions: all-or-nothing for read_committed (both records of a pair or neither), committed
  ones fully there, aborted ones not there at all; the log's own markers agree;
- group offsets: OffsetFetch after the run returns the last commit the member was told succeeded;
- replicas: each workload partition's log is byte-identical on the three brokers;
- liveness: the groups read every acknowledged record once the cluster healed, and the cluster
  healed (every broker back in every ISR) after each fault.

It also computes, for each fault, the time to the next acknowledged write from its start and
from its end (``recovery``)."""
from __future__ import annotations

import os
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.log.partition import Partition, control_marker
from protocol import records as rb

from .workloads import IDEM_PREFIX, TXN_PREFIX, parse_value

LONG_MAX = 9223372036854775807
LOG_CONFIG: dict[str, Any] = {
    "index.interval.bytes": 4096, "segment.bytes": 1 << 30, "segment.ms": None, "max.message.bytes": 1 << 20,
    "message.timestamp.type": "CreateTime", "message.timestamp.after.max.ms": LONG_MAX,
    "message.timestamp.before.max.ms": LONG_MAX, "flush.messages": None, "cleanup.policy": "delete",
    "retention.ms": -1, "retention.bytes": -1, "delete.retention.ms": 86400000, "min.compaction.lag.ms": 0,
    "max.compaction.lag.ms": LONG_MAX, "min.cleanable.dirty.ratio": 0.5,
}


@dataclass
class LogRecord:
    offset: int
    value: bytes | None
    producer_id: int
    transactional: bool
    batch_base: int


@dataclass
class ReplicaLog:
    """One broker's copy of one partition: its bytes, data records and control markers."""
    broker: int
    log_start: int
    log_end: int
    data: bytes
    records: list[LogRecord] = field(default_factory=list)
    markers: list[tuple[int, int, int]] = field(default_factory=list)   # (offset, producer id, 0 abort / 1 commit)

    def fates(self) -> dict[int, str]:
        """Offset of each transactional record -> "committed", "aborted" or "open" (no marker
        yet), from the markers that follow it for its producer id."""
        pending: dict[int, list[int]] = defaultdict(list)
        fate: dict[int, str] = {}
        events: list[tuple[int, int, Any]] = [(r.offset, 0, r) for r in self.records if r.transactional]
        events += [(m[0], 1, m) for m in self.markers]
        for _, kind, item in sorted(events, key=lambda e: e[0]):
            if kind == 0:
                pending[item.producer_id].append(item.offset)
            else:
                _, pid, ctype = item
                for off in pending.pop(pid, []):
                    fate[off] = "committed" if ctype == 1 else "aborted"
        for offs in pending.values():
            for off in offs:
                fate[off] = "open"
        return fate


def read_replica(broker_dir: Path, broker: int, topic: str, partition: int) -> ReplicaLog | None:
    """The partition as broker ``broker`` stored it (None: no such directory), read with a CRC walk
    of the last segment, as after an unclean shutdown, so a torn tail shows."""
    directory = broker_dir / f"{topic}-{partition}"
    if not directory.is_dir():
        return None
    part = Partition(topic, partition, str(directory), LOG_CONFIG.get)
    part.open(False)
    try:
        data = part.read(part.log_start_offset, 1 << 31, part.log_end_offset) if part.log_end_offset > part.log_start_offset else b""
        log = ReplicaLog(broker, part.log_start_offset, part.log_end_offset, bytes(data))
    finally:
        part.close()
    for h in rb.iter_batches(log.data, validate=True):
        if h.is_control:
            ctype = control_marker(log.data, h)
            log.markers.append((h.base_offset, h.producer_id, -1 if ctype is None else ctype))
            continue
        for r in rb.iter_records(log.data, h):
            log.records.append(LogRecord(r.offset, r.value, h.producer_id, h.is_transactional, h.base_offset))
    return log


def read_all_replicas(cluster_dir: Path, brokers: list[int], partitions: list[tuple[str, int]]
                      ) -> dict[str, dict[int, ReplicaLog | None]]:
    return {f"{t}-{p}": {b: read_replica(cluster_dir / f"broker-{b}", b, t, p) for b in brokers}
            for t, p in partitions}


def _first_difference(a: ReplicaLog, b: ReplicaLog) -> str:
    ba = {h.base_offset: a.data[h.position:h.position + h.size] for h in rb.iter_batches(a.data, validate=False)}
    bb = {h.base_offset: b.data[h.position:h.position + h.size] for h in rb.iter_batches(b.data, validate=False)}
    for off in sorted(set(ba) | set(bb)):
        if ba.get(off) != bb.get(off):
            return (f"first differing batch at offset {off}: broker {a.broker} "
                    f"{'has ' + str(len(ba[off])) + ' bytes' if off in ba else 'has none'}, broker {b.broker} "
                    f"{'has ' + str(len(bb[off])) + ' bytes' if off in bb else 'has none'}")
    return "same batches, different framing"


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    recovery: list[dict[str, Any]] = field(default_factory=list)

    def problem(self, text: str) -> None:
        self.problems.append(text)


def check(events: list[dict[str, Any]], replicas: dict[str, dict[int, ReplicaLog | None]],
          final_read: dict[str, list[tuple[int, bytes]]], final_unfinished: list[str],
          committed_at_end: dict[str, dict[str, int]], group_caught_up: dict[str, bool],
          max_examples: int = 8) -> Report:
    """``committed_at_end``: per consumer workload (its process name), what OffsetFetch answered
    for its group after the run; ``group_caught_up``: whether it read every acknowledged record."""
    rep = Report()
    ex = max_examples

    # -- replicas byte-identical; the reference log is the first broker's copy -----------------------
    final: dict[str, ReplicaLog] = {}
    for tp, copies in sorted(replicas.items()):
        present = {b: log for b, log in copies.items() if log is not None}
        missing = sorted(b for b, log in copies.items() if log is None)
        if missing:
            rep.problem(f"replicas: {tp} has no log on broker(s) {missing}")
        if not present:
            continue
        ref = present[min(present)]
        final[tp] = ref
        for b, log in sorted(present.items()):
            if b == ref.broker:
                continue
            if (log.log_start, log.log_end) != (ref.log_start, ref.log_end) or log.data != ref.data:
                rep.problem(f"replicas: {tp} differs between brokers {ref.broker} and {b}: offsets "
                            f"[{ref.log_start}, {ref.log_end}) vs [{log.log_start}, {log.log_end}); "
                            f"{_first_difference(ref, log)}")
    rep.stats["log_end_offsets"] = {tp: log.log_end for tp, log in final.items()}

    by_offset = {tp: {r.offset: r for r in log.records} for tp, log in final.items()}
    fates = {tp: log.fates() for tp, log in final.items()}

    # -- idempotent producers -----------------------------------------------------------------------
    acks: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    sent: dict[str, int] = defaultdict(int)
    for e in events:
        if e["type"] == "ack":
            acks[e["process"]][e["seq"]] = e
        elif e["type"] == "send":
            sent[e["process"]] += 1
    occurrences: dict[str, dict[int, list[tuple[str, int]]]] = defaultdict(lambda: defaultdict(list))
    for tp, log in final.items():
        for r in log.records:
            parsed = parse_value(r.value)
            if parsed and parsed[0] == IDEM_PREFIX:
                occurrences[parsed[1]][parsed[2]].append((tp, r.offset))
    idem_stats = {}
    for producer in sorted(set(acks) | set(sent)):
        acked = acks[producer]
        occ = occurrences.get(producer, {})
        dups = {seq: where for seq, where in occ.items() if len(where) > 1}
        lost = sorted(seq for seq in acked if seq not in occ)
        moved = [(seq, f"{e['topic']}-{e['partition']}@{e['offset']}", occ[seq])
                 for seq, e in sorted(acked.items())
                 if seq in occ and len(occ[seq]) == 1 and occ[seq][0] != (f"{e['topic']}-{e['partition']}", e["offset"])]
        in_log = sorted((occ[seq][0], seq) for seq in acked if seq in occ and len(occ[seq]) == 1)
        order = [seq for _, seq in in_log]
        inversions = [(a, b) for a, b in zip(order, order[1:]) if a > b]
        if lost:
            rep.problem(f"idempotent {producer}: {len(lost)} acknowledged records lost, seqs {lost[:ex]}")
        if dups:
            rep.problem(f"idempotent {producer}: {len(dups)} records stored more than once, e.g. "
                        f"{dict(list(sorted(dups.items()))[:ex])}")
        if moved:
            rep.problem(f"idempotent {producer}: {len(moved)} acknowledged at an offset that holds another record "
                        f"in the final log, e.g. (seq, acked at, found at) {moved[:ex]}")
        if inversions:
            rep.problem(f"idempotent {producer}: acknowledged records out of order, e.g. {inversions[:ex]}")
        idem_stats[producer] = {"sent": sent[producer], "acked": len(acked), "in_log": len(occ)}
    rep.stats["idempotent"] = idem_stats

    # -- transactions -------------------------------------------------------------------------------
    outcome: dict[int, str] = {}
    for e in events:
        if e["type"] in ("txn-committed", "txn-aborted", "txn-unknown"):
            outcome[e["n"]] = e["type"][4:]
    visible: dict[int, set[str]] = defaultdict(set)
    for tp, recs in final_read.items():
        for _, value in recs:
            parsed = parse_value(value)
            if parsed and parsed[0] == TXN_PREFIX:
                if parsed[1] in visible[parsed[2]]:
                    rep.problem(f"transactions: read_committed reader read txn {parsed[2]} side {parsed[1]} twice")
                visible[parsed[2]].add(parsed[1])
    log_fate: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for tp, log in final.items():
        for r in log.records:
            parsed = parse_value(r.value)
            if parsed and parsed[0] == TXN_PREFIX:
                log_fate[parsed[2]][parsed[1]].append(f"{tp}@{r.offset}:{fates[tp].get(r.offset, 'not transactional')}")
    half, lost_commits, visible_aborts, log_half = [], [], [], []
    for n in sorted(set(outcome) | set(visible)):
        seen = visible.get(n, set())
        where = {side: places for side, places in log_fate.get(n, {}).items()}
        if len(seen) == 1:
            half.append((n, outcome.get(n, "no outcome"), sorted(seen), where))
        if outcome.get(n) == "committed" and seen != {"a", "b"}:
            lost_commits.append((n, sorted(seen), where))
        if outcome.get(n) == "aborted" and seen:
            visible_aborts.append((n, sorted(seen), where))
        committed_sides = {side for side, places in where.items() if any(p.endswith(":committed") for p in places)}
        if len(committed_sides) == 1:
            log_half.append((n, where))
    if half:
        rep.problem(f"transactions: {len(half)} read half by read_committed (txn, outcome told, sides read, "
                    f"log): {half[:ex]}")
    if lost_commits:
        rep.problem(f"transactions: {len(lost_commits)} committed but not fully visible to read_committed: "
                    f"{lost_commits[:ex]}")
    if visible_aborts:
        rep.problem(f"transactions: {len(visible_aborts)} aborted but visible to read_committed: {visible_aborts[:ex]}")
    if log_half:
        rep.problem(f"transactions: {len(log_half)} with one side committed by the log's markers and not the "
                    f"other: {log_half[:ex]}")
    if final_unfinished:
        rep.problem(f"transactions: the read_committed reader never reached the high watermark of "
                    f"{final_unfinished} (last stable offset stuck behind an open transaction?)")
    counts: dict[str, int] = defaultdict(int)
    for o in outcome.values():
        counts[o] += 1
    rep.stats["transactions"] = {**counts, "visible_whole": sum(1 for s in visible.values() if s == {"a", "b"})}

    # -- the group's reads and commits --------------------------------------------------------------
    reads = [e for e in events if e["type"] == "read"]
    disagree, read_aborted = [], []
    for e in reads:
        tp = f"{e['topic']}-{e['partition']}"
        r = by_offset.get(tp, {}).get(e["offset"])
        got = None if r is None or r.value is None else r.value.decode(errors="replace")
        if got != e["value"]:
            disagree.append((e["process"], tp, e["offset"], e["value"], got))
        elif r is not None and r.transactional and fates[tp].get(r.offset) != "committed":
            read_aborted.append((e["process"], tp, e["offset"], e["value"], fates[tp].get(r.offset)))
    for tp, recs in final_read.items():      # the fresh read_committed reader's reads too
        for off, value in recs:
            r = by_offset.get(tp, {}).get(off)
            if r is None or r.value != value:
                disagree.append(("final reader", tp, off, value.decode(errors="replace") if value else None,
                                 None if r is None or r.value is None else r.value.decode(errors="replace")))
    final_values = {value for recs in final_read.values() for _, value in recs}
    unreadable = sorted((p, seq) for p, a in acks.items() for seq, e in a.items()
                        if e["value"].encode() not in final_values)
    if unreadable:
        rep.problem(f"consumers: {len(unreadable)} acknowledged records not returned to a read_committed reader "
                    f"reading to the high watermark, e.g. {unreadable[:ex]}")
    if disagree:
        rep.problem(f"consumers: {len(disagree)} reads disagree with the final log (reader, partition, offset, "
                    f"read, log): {disagree[:ex]}")
    if read_aborted:
        rep.problem(f"consumers: {len(read_aborted)} read_committed reads of records the log did not commit: "
                    f"{read_aborted[:ex]}")
    for process in sorted(committed_at_end):
        _check_group(rep, process, [e for e in events if e["process"] == process], committed_at_end[process],
                     group_caught_up.get(process, False), acks, ex)
    rep.stats["groups"] = {p: {"reads": sum(1 for e in events if e["process"] == p and e["type"] == "read"),
                               "commits": sum(1 for e in events if e["process"] == p and e["type"] == "commit"),
                               "commit_failures": sum(1 for e in events if e["process"] == p
                                                      and e["type"] == "commit-failed")}
                           for p in sorted(committed_at_end)}

    stuck = [e for e in events if e["type"] == "not-healed"]
    if stuck:
        rep.problem(f"healing: the cluster did not get every broker back into every ISR in time after: {stuck}")
    crashed = [e for e in events if e["type"] == "crashed"]
    if crashed:
        rep.problem(f"workloads crashed: {crashed}")
    rep.recovery = recovery_times(events)
    return rep


def _check_group(rep: Report, process: str, events: list[dict[str, Any]], committed_at_end: dict[str, int],
                 caught_up: bool, acks: dict[str, dict[int, dict[str, Any]]], ex: int) -> None:
    """OffsetFetch returns the last acknowledged commit of each partition, or one attempted after it
    whose answer was lost (it may or may not have been written); the member read everything."""
    last_commit: dict[str, int] = {}
    maybe: dict[str, set[int]] = defaultdict(set)
    for e in events:
        if e["type"] == "commit":
            last_commit.update(e["offsets"])
            for tp in e["offsets"]:
                maybe[tp] = set()
        elif e["type"] == "commit-failed":
            for tp, off in e.get("attempted", {}).items():
                maybe[tp].add(off)
    wrong = {tp: (off, sorted(maybe[tp]), committed_at_end.get(tp)) for tp, off in last_commit.items()
             if committed_at_end.get(tp) != off and committed_at_end.get(tp) not in maybe[tp]}
    if wrong:
        rep.problem(f"group offsets ({process}): OffsetFetch after the run returns neither the last acknowledged "
                    f"commit nor one attempted after it (partition: (acknowledged, attempted since, fetched)): {wrong}")
    if not caught_up:
        read_values = {e["value"] for e in events if e["type"] == "read"}
        unread = [(p, seq) for p, a in acks.items() for seq, e in a.items() if e["value"] not in read_values]
        behind = [e for e in events if e["type"] == "behind"]
        where = "".join(f"\n    {thread} was at:\n" + textwrap.indent("".join(stack[-8:]), "      ")
                        for e in behind[-1:] for thread, stack in e.get("stacks", {}).items())
        rep.problem(f"liveness ({process}): the group did not read {len(unread)} acknowledged records within 90 s "
                    f"of healing, e.g. {sorted(unread)[:ex]}{where}")


def recovery_times(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each fault: seconds from its start, and from its end, to the next acknowledged
    idempotent write (any partition, and the faulted partition when it is one the idempotent
    producers write) and to the next committed transaction."""
    acks = sorted((e["t"], f"{e['topic']}-{e['partition']}") for e in events if e["type"] == "ack" and not e.get("late"))
    commit_t = sorted(e["t"] for e in events if e["type"] == "txn-committed")

    def after(ts: list[float], t: float) -> float | None:
        nxt = next((x for x in ts if x > t), None)
        return None if nxt is None else round(nxt - t, 3)

    ack_t = [t for t, _ in acks]
    out = []
    for e in events:
        if e["type"] != "fault-end":
            continue
        on_target = [t for t, tp in acks if tp == e["target"]]
        # the longest stretch without an acknowledgement on the faulted partition, from the fault's
        # start to 30 s after its end (an ack just after the start may have been replicated before)
        window = [e["start"], *(t for t in on_target if e["start"] < t < e["t"] + 30)]
        gap = max((b - a for a, b in zip(window, window[1:])), default=None) if on_target else None
        out.append({"fault": e["fault"], "target": e["target"], "node": e["node"], "start": e["start"],
                    "end": e["t"], "ack_after_start_s": after(ack_t, e["start"]),
                    "ack_after_end_s": after(ack_t, e["t"]),
                    "target_ack_after_start_s": after(on_target, e["start"]) if on_target else None,
                    "target_ack_after_end_s": after(on_target, e["t"]) if on_target else None,
                    "target_longest_gap_s": None if gap is None else round(gap, 3),
                    "commit_after_start_s": after(commit_t, e["start"]),
                    "commit_after_end_s": after(commit_t, e["t"])})
    return out


def format_recovery(rows: list[dict[str, Any]]) -> str:
    """A table: any ack / the faulted partition's ack (and its longest gap without one) / a
    committed transaction, each from the fault's start and from its end ("-": the target is not
    an idempotent producer's partition)."""
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    lines = [f"{'fault':<26}{'target':<20}{'node':>5}{'start':>7}{'held':>6} | {'ack from start/end':>18} | "
             f"{'target ack start/end/gap':>24} | {'txn commit start/end':>20}"]
    for r in rows:
        lines.append(f"{r['fault']:<26}{r['target']:<20}{r['node']:>5}{r['start']:>7.1f}{r['end'] - r['start']:>6.1f} | "
                     f"{f(r['ack_after_start_s']) + ' / ' + f(r['ack_after_end_s']):>18} | "
                     f"{f(r['target_ack_after_start_s']) + ' / ' + f(r['target_ack_after_end_s']) + ' / ' + f(r['target_longest_gap_s']):>24} | "
                     f"{f(r['commit_after_start_s']) + ' / ' + f(r['commit_after_end_s']):>20}")
    return os.linesep.join(lines)
