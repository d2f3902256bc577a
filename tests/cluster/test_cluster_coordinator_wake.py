"""Issue 20, item 1: a coordinator's write to its replicated internal partition wakes the
followers' fetches parked at the leader (every append does), so it is answered as soon as
it is replicated — not when those fetches time out.

The cluster parks follower fetches for 20 s (``replica.fetch.wait.max.ms``), above the
coordinators' own write timeout (``offsets.commit.timeout.ms``, 5 s): without the wake every
commit and every transaction step here would wait for a parked fetch to time out and answer
COORDINATOR_NOT_AVAILABLE, then succeed on a retry ~20 s later. So each operation must finish
well inside one fetch wait (10 s, against the ~ms it takes when woken): a bound on a wake-up that
either happens or costs 20 s, not a speed target (those are in bench/). The first write to a new
partition is not timed: a follower learns of a new partition while its fetch to that leader is
parked, and asks for it only in its next fetch (as Kafka's fetcher threads do)."""
from __future__ import annotations

import time
import uuid

import pytest

from broker.testing.local_cluster import find_etcd
from tests.support.cluster_support import create_topic

OVERRIDES = {"replica.fetch.wait.max.ms": "20000", "replica.lag.time.max.ms": "60000",
             "group.initial.rebalance.delay.ms": "0",
             "offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}

WITHIN_ONE_FETCH_WAIT_S = 10   # half of replica.fetch.wait.max.ms

pytestmark = [
    pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or Debian's etcd-server)"),
    pytest.mark.parametrize("samsa_cluster", [{"overrides": OVERRIDES}], indirect=True, ids=["rf3"]),
]


@pytest.mark.slow  # ~21 s in CI's run
def test_offset_commits_and_transactions_are_answered_once_replicated_not_after_the_fetch_wait(samsa_cluster) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    c = samsa_cluster
    topic = f"wake-{uuid.uuid4().hex[:6]}"
    create_topic(c, topic, partitions=2, rf=3)
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": f"g-{topic}",
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)   # creates __consumer_offsets
        for offset in range(1, 6):
            started = time.monotonic()
            consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            assert time.monotonic() - started < WITHIN_ONE_FETCH_WAIT_S, f"commit {offset} waited for a parked fetch"
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset == 5
    finally:
        consumer.close()

    producer = Producer({"bootstrap.servers": c.bootstrap_servers, "transactional.id": f"tx-{topic}",
                         "transaction.timeout.ms": 10000})
    producer.init_transactions(30)                  # creates __transaction_state
    producer.begin_transaction()                    # the first writes to the new partitions, untimed
    producer.produce(topic, b"warm-up", partition=1)
    producer.commit_transaction(30)
    for i in range(3):
        started = time.monotonic()
        producer.begin_transaction()
        producer.produce(topic, f"v{i}".encode(), partition=1)
        try:
            producer.commit_transaction(WITHIN_ONE_FETCH_WAIT_S)
        except KafkaException as exc:    # a transaction stuck behind a parked fetch times out here
            pytest.fail(f"transaction {i} did not commit within {WITHIN_ONE_FETCH_WAIT_S} s: {exc}")
        assert time.monotonic() - started < WITHIN_ONE_FETCH_WAIT_S, f"transaction {i} waited for a parked fetch"

    reader = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": f"r-{topic}",
                       "isolation.level": "read_committed", "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, 1, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < 4 and time.monotonic() < deadline:
            m = reader.poll(0.5)
            if m is not None and not m.error():
                values.append(m.value())
    finally:
        reader.close()
    assert values == [b"warm-up", b"v0", b"v1", b"v2"]
