"""The leader-side rules of broker/replica/state.py, with time passed in: follower caught-up
tracking, HW = min LEO over the (maximal) ISR, ISR shrink and expand decisions."""
from __future__ import annotations

from broker.replica.state import FollowerState, ReplicaState


def leader(isr=(1, 2, 3), now=1000) -> ReplicaState:
    rs = ReplicaState(node_id=1, leader_id=1, leader_epoch=3, partition_epoch=7, replicas=[1, 2, 3], isr=list(isr))
    rs.reset_followers(now)
    return rs


def test_hw_is_the_smallest_isr_leo() -> None:
    rs = leader()
    assert rs.high_watermark(10) == -1               # followers not heard from hold it
    rs.followers[2].update(10, 10, 1100)
    rs.followers[3].update(6, 10, 1100)
    assert rs.high_watermark(10) == 6
    rs.isr = [1, 2]                                   # 3 left the ISR: it no longer holds the HW
    assert rs.high_watermark(10) == 10
    rs.pending_isr = [1, 2, 3]                        # an expansion in flight counts (maximal ISR)
    assert rs.high_watermark(10) == 6


def test_caught_up_time_follows_kafka_update_fetch_state() -> None:
    f = FollowerState(2)
    f.update(5, 10, 100)          # behind: not caught up
    assert f.last_caught_up_ms == 0
    f.update(10, 12, 200)         # reached the leader's LEO of its previous fetch: caught up then
    assert f.last_caught_up_ms == 100
    f.update(12, 12, 300)         # at the leader's LEO: caught up now
    assert f.last_caught_up_ms == 300


def test_shrink_only_lagging_followers_past_the_max_lag() -> None:
    rs = leader(now=1000)
    rs.followers[2].update(10, 10, 1000)
    rs.followers[3].update(4, 10, 1000)
    assert rs.out_of_sync(10, 1500, 1000) == []        # within the lag
    assert rs.out_of_sync(10, 2100, 1000) == [3]       # 3 behind for more than the lag
    rs.followers[3].update(10, 10, 2000)
    assert rs.out_of_sync(10, 5000, 1000) == []        # at the log end: in sync however long ago
    assert rs.out_of_sync(11, 5000, 1000) == [2, 3]


def test_expand_at_the_hw_and_epoch_start() -> None:
    rs = leader(isr=(1, 2))
    rs.leader_epoch_start_offset = 8
    rs.followers[3].update(6, 10, 1)
    assert not rs.may_join_isr(3, 6)                   # below the leader epoch's start
    rs.followers[3].update(9, 10, 2)
    assert not rs.may_join_isr(3, 10)                  # below the HW
    assert rs.may_join_isr(3, 9)
    assert not rs.may_join_isr(2, 0)                   # already in
