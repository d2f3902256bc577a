"""Followers' incremental fetch sessions (KIP-227) on a real 3-broker cluster: an idle partition,
which the followers' incremental fetches never name, stays in the ISR past
replica.lag.time.max.ms while another partition of the same leader is written.

The followers' fetches wait out replica.fetch.wait.max.ms at the leader (their
replica.fetch.min.bytes is more than a small write brings), so a follower copies a write to
the idle partition only up to half a second after it; meanwhile the leader's ISR check (every
lag / 2) would drop the follower unless the leader counted every incremental fetch as a fetch
of the idle partition at its cached offset, as Kafka does."""
from __future__ import annotations

import time

import pytest
from kafka.protocol.producer import ProduceRequest

from broker.testing.local_cluster import LocalCluster
from tests.support.cluster_support import create_topic
from tests.support.rawclient import RawClient
from tests.support.wire import value_batch

OVERRIDES = {"replica.lag.time.max.ms": "3000", "replica.fetch.wait.max.ms": "500",
             "replica.fetch.min.bytes": "1000000", "replica.fetch.backoff.ms": "100",
             "broker.session.timeout.ms": "6000", "log.cleaner.enable": "false"}

pytestmark = pytest.mark.parametrize("samsa_cluster", [{"overrides": OVERRIDES}], indirect=True, ids=["rf3"])


def produce(c: LocalCluster, leader: int, partition: int, value: bytes) -> int:
    td = ProduceRequest.TopicProduceData(name="fs", partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=bytes(value_batch([value])))])
    with RawClient(c.brokers[leader].bootstrap_servers, timeout=30) as client:
        resp = client.request(0, 9, transactional_id=None, acks=1, timeout_ms=10000, topic_data=[td])
    return resp.responses[0].partition_responses[0].error_code


@pytest.mark.slow  # ~25 s in CI's run
def test_idle_partition_stays_in_the_isr_past_the_lag_time(samsa_cluster: LocalCluster) -> None:
    c = samsa_cluster
    create_topic(c, "fs", partitions=2, assignment={0: [1, 2, 3], 1: [1, 2, 3]})
    c.wait_for(lambda: c.leader("fs", 0) == 1 and c.leader("fs", 1) == 1, what="broker 1 leads both")
    c.wait_for(lambda: all(tuple(sorted(c.image().partition("fs", p).isr)) == (1, 2, 3) for p in (0, 1)),
               what="full ISRs")
    epochs = {p: c.image().partition("fs", p).partition_epoch for p in (0, 1)}
    for round_ in range(4):
        # longer than the lag time with only partition 0 written: partition 1 is idle
        deadline = time.monotonic() + 4.0
        i = 0
        while time.monotonic() < deadline:
            assert produce(c, 1, 0, b"busy-%d-%d" % (round_, i)) == 0
            i += 1
            time.sleep(0.1)
        assert produce(c, 1, 1, b"idle-%d" % round_) == 0
        time.sleep(2.0)          # several ISR checks while the followers copy the idle write
        for p in (0, 1):
            reg = c.image().partition("fs", p)
            assert tuple(sorted(reg.isr)) == (1, 2, 3), f"fs-{p} ISR {reg.isr} in round {round_}"
            assert reg.partition_epoch == epochs[p], f"fs-{p}'s ISR changed in round {round_}"
