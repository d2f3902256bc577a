"""What a broker knows about one partition it hosts in a cluster (Kafka's Partition and
Replica classes, without IO): its role, the registration it last applied, and — as leader —
every follower's log end offset and last caught-up time, from which the high watermark and
the ISR changes follow. The replica manager and the Fetch/Produce handlers drive it; time
is passed in.

Rules, as Kafka's:
- a follower's fetch offset is its log end offset (LEO); it is *caught up* at a fetch whose
  offset reached the leader's LEO, or the leader's LEO at its previous fetch
  (``updateFetchState``);
- the high watermark is the smallest LEO in the ISR (the leader's own included, pending ISR
  additions counted — Kafka's maximal ISR) and never moves back while leading;
- a follower in the ISR is out of sync when its LEO differs from the leader's and it was last
  caught up more than ``replica.lag.time.max.ms`` ago (``isCaughtUp``); one outside the ISR
  joins when its LEO reached the high watermark and the start of the leader's epoch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class FollowerState:
    node_id: int
    leo: int = -1                  # unknown until it fetches
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = -1

    def update(self, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_leo >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.leo = fetch_offset
        self.last_fetch_ms = now_ms
        self.last_fetch_leader_leo = leader_leo


@dataclass
class ReplicaState:
    """Set as ``Partition.replica`` by the replica manager (None on a single node)."""
    node_id: int
    leader_id: int
    leader_epoch: int
    partition_epoch: int
    replicas: list[int]
    isr: list[int]
    leader_epoch_start_offset: int = 0
    followers: dict[int, FollowerState] = field(default_factory=dict)
    pending_isr: list[int] | None = None   # an AlterPartition in flight
    registration: Any = None

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.node_id

    def maximal_isr(self) -> set[int]:
        isr = set(self.isr)
        if self.pending_isr is not None:
            isr |= set(self.pending_isr)
        return isr

    def reset_followers(self, now_ms: int) -> None:
        """On becoming leader (Kafka's makeLeader): ISR members count as caught up now."""
        self.followers = {r: FollowerState(r, last_caught_up_ms=now_ms if r in self.isr else 0)
                          for r in self.replicas if r != self.node_id}

    def high_watermark(self, leader_leo: int) -> int:
        """The smallest LEO in the (maximal) ISR; an ISR member not heard from yet holds it at -1."""
        hw = leader_leo
        for r in self.maximal_isr():
            if r == self.node_id:
                continue
            f = self.followers.get(r)
            hw = min(hw, f.leo if f is not None else -1)
        return hw

    def out_of_sync(self, leader_leo: int, now_ms: int, max_lag_ms: int) -> list[int]:
        """ISR followers that are behind and have not caught up within ``max_lag_ms``."""
        lagging = []
        for r in self.isr:
            if r == self.node_id:
                continue
            f = self.followers.get(r)
            if f is None or (f.leo != leader_leo and now_ms - f.last_caught_up_ms > max_lag_ms):
                lagging.append(r)
        return lagging

    def may_join_isr(self, node_id: int, hw: int) -> bool:
        f = self.followers.get(node_id)
        return (f is not None and node_id not in self.isr and node_id in self.replicas
                and f.leo >= hw and f.leo >= self.leader_epoch_start_offset)
