"""Transactions seen from outside: a confluent-kafka transactional producer, what a
read_committed / read_uncommitted consumer reads, the high watermarks, and DescribeTransactions
over a RawClient. For topics with ``PARTITIONS`` partitions (the brokers' ``num.partitions``)."""
from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.rawclient import RawClient

PARTITIONS = 3
DESCRIBE_TXNS = 65


def txn_producer(bootstrap: str, tid: str, **conf: Any) -> Producer:
    """A confluent-kafka transactional producer, its transactions initialised."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5, **conf})
    p.init_transactions(20)
    return p


def read_all(bootstrap: str, topic: str, isolation: str, expect: int | None = None,
             timeout: float = 15.0) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record the application sees, from offset 0."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:8]}", "isolation.level": isolation,
                  "enable.auto.commit": False, "auto.offset.reset": "error"})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        rows: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + timeout
        quiet_until = None
        while time.monotonic() < deadline:
            msgs = c.consume(1000, 0.3)
            for m in msgs:
                assert m.error() is None, m.error()
                rows.append((m.partition(), m.offset(), m.value()))
            if expect is not None and len(rows) >= expect:
                if quiet_until is None:
                    quiet_until = time.monotonic() + 0.5      # make sure nothing else arrives
                elif time.monotonic() >= quiet_until:
                    break
    finally:
        c.close()
    return sorted(rows)


def watermarks(bootstrap: str, topic: str) -> list[int]:
    """The high watermark of each of the topic's ``PARTITIONS`` partitions."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wm-{uuid.uuid4().hex[:8]}"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)]
    finally:
        c.close()


def describe_txn(c: RawClient, tid: str) -> Any:
    """DescribeTransactions v0 for one transactional id: its state."""
    return c.request(DESCRIBE_TXNS, 0, transactional_ids=[tid]).transaction_states[0]
