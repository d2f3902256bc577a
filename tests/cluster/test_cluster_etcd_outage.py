"""etcd down on a real cluster (etcd and three Samsa broker processes, the samsa_cluster fixture):
the brokers keep serving produce and fetch for the partitions they lead with the ISR they have,
metadata changes wait, and once etcd is back the brokers reconnect and a topic can be created.

The outage lasts longer than ``broker.session.timeout.ms``: nothing may be decided from a lease
the brokers cannot renew while etcd itself is gone (no ISR shrink, no election, no fencing)."""
from __future__ import annotations

import time

import pytest

from broker.testing.local_cluster import LocalCluster, find_etcd
from tests.support.cluster_support import create_topic

pytestmark = [
    pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or Debian's etcd-server)"),
    pytest.mark.parametrize("samsa_cluster", [{"overrides": {
        "min.insync.replicas": "2", "replica.lag.time.max.ms": "1500", "broker.session.timeout.ms": "3000",
        "replica.fetch.wait.max.ms": "200", "log.cleaner.enable": "false"}}], indirect=True, ids=["rf3"]),
]

TOPIC = "outage"
PARTITIONS = 3


def read_exactly(c: LocalCluster, topic: str, partitions: int, ends: dict[int, int]) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of [0, ends[p]) per partition as (offset, value), read without a group
    (assign + seek: Metadata and Fetch only, nothing that needs the metadata store)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=c.bootstrap_servers, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        deadline = time.monotonic() + 30
        while any(len(got[p]) < ends[p] for p in got):
            assert time.monotonic() < deadline, f"records did not arrive: {({p: len(v) for p, v in got.items()})} of {ends}"
            for tp, recs in consumer.poll(timeout_ms=500).items():
                got[tp.partition].extend((r.offset, r.value) for r in recs)
    finally:
        consumer.close()
    return got


@pytest.mark.slow
def test_produce_and_fetch_go_on_while_etcd_is_down(samsa_cluster: LocalCluster) -> None:
    from kafka import KafkaProducer

    c = samsa_cluster
    create_topic(c, TOPIC, PARTITIONS)
    image_before = c.image()
    regs = {p: image_before.partition(TOPIC, p) for p in range(PARTITIONS)}
    assert all(sorted(r.isr) == [1, 2, 3] for r in regs.values())
    # the producer id comes from etcd (a producer-id block): get it before the outage
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all", enable_idempotence=True,
                             linger_ms=0, retries=2**31 - 1, request_timeout_ms=5000)
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    try:
        for p in range(PARTITIONS):
            v = f"before-{p}".encode()
            producer.send(TOPIC, value=v, partition=p).get(timeout=20)
            sent[p].append(v)

        c.stop_etcd()
        down_at = time.monotonic()
        i = 0
        # longer than broker.session.timeout.ms (3 s): leases cannot be renewed, nothing is decided
        while time.monotonic() - down_at < 6.0:
            p = i % PARTITIONS
            v = f"down-{i}".encode()
            md = producer.send(TOPIC, value=v, partition=p).get(timeout=10)
            assert md.offset == len(sent[p])      # acknowledged with acks=all at the next offset
            sent[p].append(v)
            i += 1
        assert i >= 30
        ends = {p: len(v) for p, v in sent.items()}
        got = read_exactly(c, TOPIC, PARTITIONS, ends)   # still down: fetch from the leaders
        assert got == {p: list(enumerate(v)) for p, v in sent.items()}
        assert not c.etcd.healthy()

        c.start_etcd()
        # brokers reconnect: a topic can be created and the producer goes on
        create_topic(c, "after-outage", 2)
        for p in range(PARTITIONS):
            v = f"after-{p}".encode()
            assert producer.send(TOPIC, value=v, partition=p).get(timeout=20).offset == len(sent[p])
            sent[p].append(v)
    finally:
        producer.close(timeout=5)
    image = c.image()
    assert [b.id for b in image.live_brokers()] == [1, 2, 3]
    for p in range(PARTITIONS):
        reg = image.partition(TOPIC, p)
        # the outage changed no leader, epoch or ISR: nothing was guessed
        assert (reg.leader, reg.leader_epoch, sorted(reg.isr)) == (regs[p].leader, regs[p].leader_epoch, [1, 2, 3])
    got = read_exactly(c, TOPIC, PARTITIONS, {p: len(v) for p, v in sent.items()})
    assert got == {p: list(enumerate(v)) for p, v in sent.items()}


@pytest.mark.slow
def test_isr_shrink_waits_for_etcd(samsa_cluster: LocalCluster) -> None:
    """A follower hangs while etcd is down: the leader may not drop it from the ISR on its own, so
    acks=all stays unanswered (the HW waits for the hung ISR member) until etcd is back and the
    shrink is committed there; then the record is acknowledged once, at the next offset."""
    from kafka import KafkaProducer

    c = samsa_cluster
    create_topic(c, "isr-wait", 1)
    reg = c.image().partition("isr-wait", 0)
    assert sorted(reg.isr) == [1, 2, 3]
    controller = c.controller()
    followers = [r for r in reg.replicas if r != reg.leader]
    hung = next((r for r in followers if r != controller), followers[0])
    other = next(r for r in followers if r != hung)
    producer = KafkaProducer(bootstrap_servers=c.bootstrap_servers, acks="all", enable_idempotence=True,
                             linger_ms=0, retries=2**31 - 1, request_timeout_ms=3000)
    try:
        assert producer.send("isr-wait", value=b"first", partition=0).get(timeout=20).offset == 0
        c.stop_etcd()
        c.pause(hung)
        try:
            future = producer.send("isr-wait", value=b"second", partition=0)
            # 3x replica.lag.time.max.ms (1.5 s): a leader deciding alone would have answered
            time.sleep(4.5)
            assert not future.is_done, f"acknowledged while etcd was down: {future.value or future.exception}"
            c.start_etcd()
            # committed in etcd (the leader's AlterPartition or the controller fencing the hung broker)
            assert future.get(timeout=30).offset == 1
            shrunk = c.image().partition("isr-wait", 0)
            assert hung not in shrunk.isr and {reg.leader, other} <= set(shrunk.isr)
        finally:
            c.resume(hung)
        c.wait_for(lambda: sorted(c.image().partition("isr-wait", 0).isr) == [1, 2, 3], timeout=40,
                   what=f"broker {hung} back in the ISR")
        assert producer.send("isr-wait", value=b"third", partition=0).get(timeout=20).offset == 2
    finally:
        producer.close(timeout=5)
    got = read_exactly(c, "isr-wait", 1, {0: 3})
    assert got == {0: [(0, b"first"), (1, b"second"), (2, b"third")]}
