"""The nemesis of a Jepsen-style run: faults drawn from a seed, one at a time, each followed by a
wait for the cluster to heal (every broker back in every workload partition's ISR).

The seed fixes the sequence of (fault, target, durations); the broker a target names (e.g. "the
leader of jt-1") is looked up when the fault starts. Link cuts (leader cut from peers and etcd, a
follower cut, the controller cut from etcd) need the cluster's ``partition``/``isolate``/``heal``
(issue 20); a cluster object without them leaves those faults out of the draw, and the run's
``available`` and ``skipped`` lists say so."""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from broker.testing.local_cluster import LocalCluster

from .history import History

PROCESS_FAULTS = ("kill-leader", "pause-leader", "restart-etcd")
CUT_FAULTS = ("cut-leader", "cut-follower", "cut-controller-from-etcd")


def can_cut_links(cluster: LocalCluster) -> bool:
    return all(callable(getattr(cluster, name, None)) for name in ("partition", "isolate", "heal"))


@dataclass
class Target:
    """A partition whose leader (or follower) a fault picks: a workload partition or the
    coordinator partition of the group / transactional id."""
    label: str
    topic: str
    partition: int


class Nemesis:
    def __init__(self, cluster: LocalCluster, history: History, rng: random.Random, targets: list[Target],
                 workload_partitions: list[tuple[str, int]], session_timeout_s: float) -> None:
        self.c = cluster
        self.history = history
        self.rng = rng
        self.targets = targets
        self.workload_partitions = workload_partitions
        self.session_timeout_s = session_timeout_s
        self.available = list(PROCESS_FAULTS) + (list(CUT_FAULTS) if can_cut_links(cluster) else [])
        self.skipped = [f for f in CUT_FAULTS if f not in self.available]
        self.ran: list[dict[str, Any]] = []     # one per fault: name, target, node, start, end, healed

    # -- the cluster's state ---------------------------------------------------------------------
    def _isr_full(self) -> bool:
        try:
            image = self.c.image()
        except Exception:   # etcd restarting
            return False
        for topic, p in self.workload_partitions:
            reg = image.partition(topic, p)
            if reg is None or reg.leader < 0 or sorted(reg.isr) != sorted(self.c.brokers):
                return False
        return True

    def wait_healed(self, timeout: float) -> float | None:
        """Seconds until every broker runs and is in every workload partition's ISR (None: not
        within ``timeout``)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            alive = all(b.proc is not None and b.proc.poll() is None for b in self.c.brokers.values())
            if alive and self.c.etcd.proc is not None and self._isr_full():
                return time.monotonic() - t0
            time.sleep(0.2)
        return None

    def heal_everything(self) -> None:
        """Undo whatever a fault may have left (a failed step must not leave the cluster broken)."""
        if can_cut_links(self.c):
            self.c.heal()   # type: ignore[attr-defined]
        for n, b in self.c.brokers.items():
            if b.proc is not None and b.proc.poll() is None:
                self.c.resume(n)
        if self.c.etcd.proc is None:
            self.c.start_etcd()
        for n, b in self.c.brokers.items():
            if b.proc is None or b.proc.poll() is not None:
                b.proc = None
                self.c.start_broker(n)

    # -- one fault --------------------------------------------------------------------------------
    def _leader(self, t: Target) -> int:
        return self.c.leader(t.topic, t.partition)

    def _follower(self, t: Target, pick: float) -> int:
        reg = self.c.image().partition(t.topic, t.partition)
        if reg is None:
            return -1
        followers = sorted(n for n in reg.replicas if n != reg.leader)
        return followers[int(pick * len(followers))] if followers else -1

    def run_one(self, fault: str, target: Target, hold: float, pick: float = 0.0) -> dict[str, Any]:
        """Inflict ``fault`` on ``target`` for ``hold`` seconds (``pick``, in [0, 1), chooses among
        followers, drawn beforehand so the seed's draws do not depend on the cluster's state)."""
        c = self.c
        node = -1
        label = {"restart-etcd": "etcd", "cut-controller-from-etcd": "controller"}.get(fault, target.label)
        record: dict[str, Any] = {"fault": fault, "target": label, "hold_s": round(hold, 2)}
        if fault in ("kill-leader", "pause-leader", "cut-leader"):
            node = self._leader(target)
        elif fault == "cut-follower":
            node = self._follower(target, pick)
        elif fault == "cut-controller-from-etcd":
            node = c.controller()
        record["node"] = node
        if fault != "restart-etcd" and node not in c.brokers:
            record["skipped"] = f"no broker to act on (got {node})"
            self.history.add("nemesis", "fault-skipped", **record)
            return record
        record["start"] = self.history.add("nemesis", "fault-start", **record)["t"]
        if fault == "kill-leader":
            c.kill(node)
            time.sleep(hold)
            t = time.monotonic()
            c.start_broker(node)
            record["restart_s"] = round(time.monotonic() - t, 2)   # until it answers again
        elif fault == "pause-leader":
            c.pause(node)
            time.sleep(hold)
            c.resume(node)
        elif fault == "restart-etcd":
            c.restart_etcd(down_s=hold)
        elif fault == "cut-leader":
            c.isolate(node, peers=True, etcd=True)   # type: ignore[attr-defined]
            time.sleep(hold)
            c.heal()   # type: ignore[attr-defined]
        elif fault == "cut-follower":
            c.isolate(node, peers=True, etcd=True)   # type: ignore[attr-defined]
            time.sleep(hold)
            c.heal()   # type: ignore[attr-defined]
        elif fault == "cut-controller-from-etcd":
            c.isolate(node, peers=False, etcd=True)   # type: ignore[attr-defined]
            time.sleep(hold)
            c.heal()   # type: ignore[attr-defined]
        else:
            raise ValueError(fault)
        record["end"] = self.history.add("nemesis", "fault-end", **record)["t"]
        return record

    def hold_for(self, fault: str) -> float:
        """How long the fault lasts: a pause always outlasts the broker session timeout."""
        if fault == "pause-leader":
            return self.session_timeout_s + self.rng.uniform(1.0, 3.0)
        if fault == "restart-etcd":
            return self.rng.uniform(0.5, 3.0)
        if fault == "kill-leader":
            return self.rng.uniform(1.0, 5.0)
        return self.rng.uniform(self.session_timeout_s + 1.0, self.session_timeout_s + 5.0)

    def run(self, duration: float, heal_timeout: float = 90.0) -> None:
        """Faults until ``duration`` seconds have passed, each followed by healing and a quiet spell."""
        self.history.add("nemesis", "available", faults=self.available, skipped=self.skipped)
        end = time.monotonic() + duration
        while time.monotonic() < end:
            fault = self.rng.choice(self.available)
            target = self.rng.choice(self.targets)
            hold = self.hold_for(fault)
            quiet = self.rng.uniform(1.0, 4.0)
            pick = self.rng.random()
            try:
                record = self.run_one(fault, target, hold, pick)
            except Exception as exc:   # recorded; the cluster is healed below either way
                record = {"fault": fault, "target": target.label, "error": repr(exc)}
                self.history.add("nemesis", "fault-error", **record)
                self.heal_everything()
            self.ran.append(record)
            healed = self.wait_healed(heal_timeout)
            record["healed_after_s"] = None if healed is None else round(healed, 2)
            self.history.add("nemesis", "healed" if healed is not None else "not-healed", fault=fault,
                             target=record.get("target"), after_s=record["healed_after_s"])
            if healed is None:
                self.heal_everything()
            time.sleep(quiet)
