"""Faults and the clock on each broker of ``samsa_cluster`` (issue 14): every broker of the
3-broker cluster has its own control endpoint, so a fault armed on the partition leader fires
there and nowhere else, and an idempotent producer rides through it (real processes, librdkafka).
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker.testing.local_cluster import find_etcd
from tests.support.cluster_support import create_topic_at, metadata, wait_for

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")


def read_partition(bootstrap: str, topic: str, expect: int, timeout: float = 20.0) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of partition 0 from offset 0, until ``expect`` records and a quiet pause."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[tuple[int, bytes, bytes]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                if len(out) >= expect:
                    break
                continue
            assert m.error() is None, m.error()
            out.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    return out


def test_not_leader_armed_on_the_leader_fires_there_only_and_the_record_is_stored_once(samsa_cluster) -> None:
    c = samsa_cluster
    topic = f"faulty-{uuid.uuid4().hex[:8]}"
    boots = c.bootstrap_servers.split(",")
    r = create_topic_at(boots[0], topic, partitions=1, rf=3)
    assert r.error_code == 0
    # every broker knows the partition with its full ISR, so acks=all needs no waiting on followers
    for b in boots:
        wait_for(lambda b=b: (p := metadata(b)["topics"].get(topic, {}).get(0)) and p[0] in (1, 2, 3)
                 and sorted(p[3]) == [1, 2, 3], what=f"{topic}-0 with leader and ISR on {b}")
    leader = c.leader(topic, 0)
    assert leader in c.brokers
    others = [n for n in c.brokers if n != leader]
    for n in c.brokers:
        assert c.brokers[n].faults.log() == [] and c.brokers[n].faults.armed() == []

    c.brokers[leader].faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic=topic)
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "enable.idempotence": True, "acks": "all",
                  "retries": 10, "retry.backoff.ms": 50, "message.timeout.ms": 30000})
    delivered: list = []
    p.produce(topic, key=b"k-once", value=b"v-once", partition=0,
              on_delivery=lambda err, msg: delivered.append((err, msg.offset() if err is None else None)))
    assert p.flush(40) == 0
    assert delivered == [(None, 0)]

    assert read_partition(c.bootstrap_servers, topic, expect=1) == [(0, b"k-once", b"v-once")]
    fired = c.brokers[leader].faults.log()
    assert [(f["kind"], f["api"], f["topics"]) for f in fired] == [("fail", "Produce", [topic])] * 2
    assert c.brokers[leader].faults.armed() == []          # the count is used up
    for n in others:
        assert c.brokers[n].faults.log() == [], f"broker {n} fired faults armed on broker {leader}"

    # each broker's clock is its own: readable everywhere, and advancing one moves only that one
    t0 = time.time() * 1000
    before = {n: b.clock.now_ms() for n, b in c.brokers.items()}
    for n, t in before.items():
        assert abs(t - t0) < 5000, f"broker {n} clock {t} far from wall time {t0}"
    moved = others[0]
    assert c.brokers[moved].clock.advance(1000) >= before[moved] + 1000
    after = {n: b.clock.now_ms() for n, b in c.brokers.items()}
    wall_elapsed = time.time() * 1000 - t0
    assert after[moved] - before[moved] >= 1000
    for n in c.brokers:
        if n != moved:      # no more than the wall time that passed between the two readings
            assert after[n] - before[n] <= wall_elapsed + 50, (n, before[n], after[n], wall_elapsed)
