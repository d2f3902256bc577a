"""What several container-tier modules share: the command that builds the Samsa image (the README
shows the same one; tests/container/test_container_image.py checks it) and reading a partition
back from a broker in a container."""
from __future__ import annotations

import time

from kafka import KafkaConsumer, TopicPartition

BUILD = "docker build --network=host -t samsa ."


def read_all(bootstrap: str, topic: str, partition: int = 0) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record of one partition up to its end offset, read with
    kafka-python (no group) from a broker in a container."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="earliest")
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        out: list[tuple[int, bytes, bytes]] = []
        deadline = time.monotonic() + 20
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"read {len(out)} of {end} records in 20 s"
            for recs in consumer.poll(timeout_ms=500).values():
                out.extend((r.offset, r.key, r.value) for r in recs)
        return out
    finally:
        consumer.close()
