"""Share-group state survives a broker restart (issue 21), with confluent-kafka 2.16's ``ShareConsumer``
against a served broker with a data dir: 20 records, 10 accepted and 10 released, restart -> exactly
the 10 released come back (delivery count 2), none of the accepted; records acquired but never
acknowledged when the broker is killed come back too, the accepted ones before them never (delivery count 1: as in Kafka, acquiring
writes nothing, so the acquisition's count is not persisted)."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker, running_broker
from tests.support.groups_support import unique
from tests.support.share_clients_support import consume_released, poll_until, share_consumer

ck = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.skipif(not hasattr(ck, "ShareConsumer"), reason="confluent-kafka without ShareConsumer")

SHARE_PROPS = {
    "group.share.enable": "true",
    "samsa.share.auto.offset.reset": "earliest",
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "100",
    "num.partitions": "1",
}


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides=SHARE_PROPS) as broker:
        yield broker


def produce_one_batch(bootstrap: str, topic: str, count: int) -> None:
    """``count`` records in one batch (one ShareFetch acquires them all)."""
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 500, "batch.num.messages": count})
    for i in range(count):
        p.produce(topic, value=f"v{i}".encode(), partition=0)
    assert p.flush(30) == 0


def test_released_records_come_back_after_a_restart_and_accepted_ones_never(own_broker):
    bs = own_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_one_batch(bs, topic, 20)
    c = share_consumer(bs, group, topic, explicit=True)
    try:
        got = poll_until(c, lambda rs: len(rs) >= 20, 60)
        assert sorted((m.offset(), m.delivery_count()) for m in got) == [(o, 1) for o in range(20)]
        for m in got:
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT if m.offset() < 10 else ck.AcknowledgeType.RELEASE)
        c.commit_sync(30)
    finally:
        c.close()
    own_broker.restart()
    again = consume_released(own_broker.bootstrap_servers, group, topic)
    assert sorted((m.offset(), m.delivery_count()) for m in again) == [(o, 2) for o in range(10, 20)]


HOLDER = textwrap.dedent("""
    import sys, time, confluent_kafka as ck
    c = ck.ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                          "share.acknowledgement.mode": "explicit"})
    c.subscribe([sys.argv[3]])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < int(sys.argv[4]) and time.monotonic() < deadline:
        got += [m for m in c.poll(1.0) if m.error() is None]
    print("held", len(got), flush=True)
    time.sleep(600)     # holds the records (never acknowledged) until killed
""")


def test_records_acquired_and_never_acknowledged_come_back_after_the_broker_is_killed(own_broker):
    bs = own_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_one_batch(bs, topic, 10)
    c = share_consumer(bs, group, topic, explicit=True)
    try:        # the first ten accepted
        first = poll_until(c, lambda rs: len(rs) >= 10, 60)
        assert sorted(m.offset() for m in first) == list(range(10))
        for m in first:
            c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        c.commit_sync(30)
    finally:
        c.close()
    produce_one_batch(bs, topic, 10)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, bs, group, topic, "10"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().split() == ["held", "10"]
        holder.kill()
        holder.wait(10)
        own_broker.restart(sig=signal.SIGKILL)      # the records are still acquired by the dead member
    finally:
        if holder.poll() is None:
            holder.kill()
    again = consume_released(own_broker.bootstrap_servers, group, topic)
    assert sorted((m.offset(), m.delivery_count()) for m in again) == [(o, 1) for o in range(10, 20)]
