"""One Jepsen-style run on a started 3-broker cluster: create the workload topics, start the
workloads, let the nemesis draw faults from the seed for ``duration`` seconds, heal, let every
client finish, stop the cluster and check. Writes the history (JSON lines) and a JSON artefact with
the faults that ran, the recovery times and the checker's findings."""
from __future__ import annotations

import json
import random
import shutil
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.testing.local_cluster import LocalCluster
from coordinator.hashing import partition_for_group

from .checker import Report, check, format_recovery, read_all_replicas
from .history import History
from .nemesis import Nemesis, Target
from .workloads import (GroupConsumer, IdempotentProducer, JavaIdempotentProducer, KafkaPythonGroupConsumer,
                        TransactionalProducer, committed_offsets, read_committed_all, txn_value)

IDEM_TOPIC = "jepsen-idem"
TXN_TOPIC = "jepsen-txn"
JAVA_TOPIC = "jepsen-java"     # the Java client's producers (one partition)
PRODUCERS = 3           # p0..p2, producer i writes partition i of IDEM_TOPIC

# a session and replica lag short enough that a fault is noticed within seconds, groups that form
# at once, no cleaner (the checker reads every record back)
OVERRIDES = {"replica.lag.time.max.ms": "1500", "min.insync.replicas": "2", "broker.session.timeout.ms": "3000",
             "replica.fetch.wait.max.ms": "200", "replica.fetch.backoff.ms": "100",
             "group.initial.rebalance.delay.ms": "0", "log.cleaner.enable": "false",
             "offsets.topic.num.partitions": "6", "transaction.state.log.num.partitions": "6"}
SESSION_TIMEOUT_S = 3.0
COORDINATOR_PARTITIONS = 6


@dataclass
class Run:
    seed: int
    report: Report
    history_path: Path
    artefact_path: Path
    faults: list[dict[str, Any]]
    available: list[str]
    skipped: list[str]
    elapsed_s: float
    workloads: list[str]

    def summary(self) -> str:
        ran = [f"{f['fault']}({f.get('target')}→{f.get('node')})" + (" SKIPPED" if "skipped" in f else "")
               + (" ERROR" if "error" in f else "") for f in self.faults]
        lines = [f"jepsen seed={self.seed}: {len(self.faults)} faults in {self.elapsed_s:.0f}s; available: "
                 f"{self.available}; not available on this branch: {self.skipped or 'none'}",
                 f"workloads: {', '.join(self.workloads)}",
                 "faults ran: " + ", ".join(ran),
                 f"stats: {json.dumps(self.report.stats)}",
                 "time to the next acknowledged write / committed transaction (s):",
                 format_recovery(self.report.recovery),
                 f"history: {self.history_path}", f"artefact: {self.artefact_path}"]
        if self.report.problems:
            lines.append(f"PROBLEMS ({len(self.report.problems)}), replay with SAMSA_JEPSEN_SEED={self.seed}:")
            lines += ["  - " + p for p in self.report.problems]
        return "\n".join(lines)


def _txn_coordinator(c: LocalCluster, txn_id: str) -> int:
    """The transaction coordinator of ``txn_id`` (FindCoordinator v3, key type 1; the first one
    creates __transaction_state)."""
    from tests.support.cluster_support import one_broker
    from tests.support.rawclient import RawClient

    def ask() -> int | None:
        with RawClient(one_broker(c)) as rc:
            r = rc.request(10, 3, key=txn_id, key_type=1)
        return r.node_id if r.error_code == 0 else None
    return c.wait_for(ask, timeout=60, what=f"a transaction coordinator for {txn_id}")


def _create_topics(c: LocalCluster, java: bool, txn_id: str) -> None:
    """The transactional topic's two partitions are led by the transaction coordinator's broker
    (issue 20's half transaction needs that broker cut off while it leads both), the idempotent
    producers' partitions are spread by the cluster."""
    from tests.support.cluster_support import create_topic

    create_topic(c, IDEM_TOPIC, partitions=PRODUCERS, rf=3)
    coordinator = _txn_coordinator(c, txn_id)
    others = sorted(n for n in c.brokers if n != coordinator)
    create_topic(c, TXN_TOPIC, partitions=2, assignment={0: [coordinator, *others], 1: [coordinator, *others[::-1]]})
    if java:
        create_topic(c, JAVA_TOPIC, partitions=1, rf=3)


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return bool(predicate())


def _stacks(worker: threading.Thread) -> dict[str, list[str]]:
    """The current stack of ``worker`` and of every client IO thread (kafka-python's
    ``kafka-io-<client id>``), for a workload that fell behind: a liveness failure then says
    whether the client waits on the broker, on itself, or not at all."""
    frames = sys._current_frames()
    threads = [t for t in threading.enumerate() if t is worker or t.name.startswith("kafka-io-")]
    return {t.name: traceback.format_stack(frames[t.ident]) for t in threads if t.ident in frames}


def run(c: LocalCluster, seed: int, duration: float, out_dir: Path, java: str | None = None) -> Run:
    """``java``: the kafka-clients version of an extra idempotent producer (None: librdkafka only)."""
    t_start = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    history = History(out_dir / f"jepsen-seed{seed}-history.jsonl")
    artefact = out_dir / f"jepsen-seed{seed}.json"
    rng = random.Random(seed)
    history.add("run", "seed", seed=seed, duration=duration, java=java)
    group = f"jepsen-group-{seed}"
    txn_id = f"jepsen-txn-{seed}"
    _create_topics(c, java is not None, txn_id)
    workload_partitions = [(IDEM_TOPIC, i) for i in range(PRODUCERS)] + [(TXN_TOPIC, 0), (TXN_TOPIC, 1)]
    if java:
        workload_partitions.append((JAVA_TOPIC, 0))
    targets = [Target(f"{t}-{p}", t, p) for t, p in workload_partitions]
    targets.append(Target("group-coordinator", "__consumer_offsets", partition_for_group(group, COORDINATOR_PARTITIONS)))
    targets.append(Target("kp-group-coordinator", "__consumer_offsets",
                          partition_for_group(f"{group}-kp", COORDINATOR_PARTITIONS)))
    targets.append(Target("txn-coordinator", "__transaction_state", partition_for_group(txn_id, COORDINATOR_PARTITIONS)))

    boot = c.bootstrap_servers
    producers = [IdempotentProducer(f"p{i}", history, boot, IDEM_TOPIC, i) for i in range(PRODUCERS)]
    txn = TransactionalProducer("txn", history, boot, TXN_TOPIC, txn_id, random.Random(seed * 7919 + 1))
    if java:
        producers.append(JavaIdempotentProducer("java", history, boot, JAVA_TOPIC, version=java))
    topics = sorted({t for t, _ in workload_partitions})
    consumers = {"group": (group, GroupConsumer("group", history, boot, group, topics)),
                 "kp-group": (f"{group}-kp", KafkaPythonGroupConsumer("kp-group", history, boot, f"{group}-kp", topics))}
    workloads = [*producers, txn, *(w for _, w in consumers.values())]
    for w in workloads:
        w.start()
    nemesis = Nemesis(c, history, rng, targets, workload_partitions + [(t.topic, t.partition) for t in targets[-3:]],
                      SESSION_TIMEOUT_S)
    try:
        time.sleep(3.0)                          # a fault-free start: everyone connected and writing
        nemesis.run(duration)
        nemesis.heal_everything()
        healed = nemesis.wait_healed(120)
        history.add("run", "healed" if healed is not None else "not-healed", after_s=healed)
        time.sleep(3.0)                          # writes after healing
    finally:
        for w in [*producers, txn]:
            w.stop(240)
    # the group reads on until it has everything acknowledged (bounded: liveness is a finding)
    wanted = {e["value"].encode() for e in history.of("ack")}
    wanted |= {txn_value(e["n"], s) for e in history.of("txn-committed") for s in "ab"}
    caught_up: dict[str, bool] = {}
    committed: dict[str, dict[str, int]] = {}
    deadline = time.monotonic() + 90
    for name, (group_id, consumer) in consumers.items():
        done = _wait(lambda: wanted <= consumer.read_values or consumer.crashed is not None,
                     max(1.0, deadline - time.monotonic()))
        caught_up[name] = done and consumer.crashed is None
        if caught_up[name]:
            history.add(name, "caught-up", missing=0)
        else:   # where the client waits: its workload thread and its IO threads
            history.add(name, "behind", missing=len(wanted - consumer.read_values), stacks=_stacks(consumer))
    for name, (group_id, consumer) in consumers.items():
        consumer.stop(60)
        committed[name] = committed_offsets(boot, group_id, workload_partitions)
    final, unfinished = read_committed_all(boot, workload_partitions)
    history.add("run", "final-read", counts={k: len(v) for k, v in final.items()}, unfinished=unfinished)
    # replicas in sync, then a clean stop so the logs on disk are final
    nemesis.wait_healed(60)
    time.sleep(2.0)
    c.stop_all()
    history.add("run", "stopped")
    for log in [*(c.data_dir / f"broker-{n}.log" for n in sorted(c.brokers)), c.etcd.log_path]:
        if log.exists():
            shutil.copy(log, out_dir / log.name)
    replicas = read_all_replicas(c.data_dir, sorted(c.brokers), workload_partitions)
    history.close()
    report = check(history.events, replicas, final, unfinished, committed, caught_up)
    names = [f"librdkafka {PRODUCERS} idempotent producers", "librdkafka transactional pairs",
             "librdkafka read_committed group", "kafka-python read_committed group"] + ([f"Java {java} idempotent producer"] if java else [])
    result = Run(seed, report, history.path, artefact, nemesis.ran, nemesis.available, nemesis.skipped,
                 time.monotonic() - t_start, names)
    artefact.write_text(json.dumps({"seed": seed, "duration": duration, "elapsed_s": round(result.elapsed_s, 1),
                                    "available": nemesis.available, "not_available": nemesis.skipped, "workloads": names,
                                    "faults": nemesis.ran, "recovery": report.recovery, "stats": report.stats,
                                    "problems": report.problems, "history": str(history.path)},
                                   indent=2, default=str))
    return result
