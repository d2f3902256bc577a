"""Group placement on ``__consumer_offsets``: Java's ``String.hashCode`` and Kafka's ``Utils.abs``.

Clients compute nothing here, but the coordinator for a group must be the leader of the partition
Kafka would pick (``abs(groupId.hashCode) % offsets.topic.num.partitions``), or tools that reason
about placement (and offsets migrated from a real cluster) disagree with us.
"""
from __future__ import annotations

from functools import lru_cache

_INT_MIN = -(1 << 31)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: like ``Math.abs`` but maps ``Integer.MIN_VALUE`` to 0 (never negative)."""
    return 0 if n == _INT_MIN else abs(n)


@lru_cache(maxsize=8192)
def partition_for_group(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition (and so the coordinator) that owns ``group_id``.
    Cached: every group and transactional request asks, and the Java hash is a Python loop
    over the id's characters (bounded, so a client inventing ids cannot grow it)."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return kafka_abs(java_string_hash(group_id)) % num_partitions
