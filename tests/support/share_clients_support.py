"""Helpers of the share-group client tests (tests/clients/test_share_*, tests/cluster/test_cluster_share_state.py):
producing records in small batches (a share fetch acquires whole batches), waiting until a share group's
members have their assignments, a topic's id, and confluent-kafka's ``ShareConsumer`` polled until done."""
from __future__ import annotations

import time
from typing import Any


def produce_values(bootstrap: str, topic: str, values: list[str], per_batch: int = 1) -> None:
    """``values`` to partition 0 in batches of ``per_batch`` (kafka-python, one flush per batch)."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=1000, max_in_flight_requests_per_connection=1)
    try:
        for i in range(0, len(values), per_batch):
            for v in values[i:i + per_batch]:
                p.send(topic, value=v.encode(), partition=0)
            p.flush(timeout=20)
    finally:
        p.close(timeout=5)


def wait_for_members(bootstrap: str, group: str, count: int, timeout: float = 60) -> None:
    """Until ShareGroupDescribe shows ``count`` members, each with its assignment."""
    from tests.support.rawclient import RawClient

    deadline = time.monotonic() + timeout
    with RawClient(bootstrap) as c:
        while time.monotonic() < deadline:
            [g] = c.request(77, 1, group_ids=[group], include_authorized_operations=False).groups
            if g.error_code == 0 and len(g.members) == count and all(m.assignment.topic_partitions
                                                                    for m in g.members):
                time.sleep(1)       # their first share fetches
                return
            time.sleep(0.2)
    raise AssertionError(f"share group {group} never had {count} members")


def topic_id_of(bootstrap: str, name: str) -> Any:
    """The topic's id, from a Metadata v12 request."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    from tests.support.rawclient import RawClient

    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=name)],
                          allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    with RawClient(bootstrap) as c:
        resp = c.call(req, MetadataResponse, 12)
    return resp.topics[0].topic_id


def share_consumer(bootstrap: str, group: str, topic: str, explicit: bool) -> Any:
    """A subscribed confluent-kafka ``ShareConsumer`` (explicit or implicit acknowledgement)."""
    import confluent_kafka as ck

    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit" if explicit else "implicit"})
    c.subscribe([topic])
    return c


def poll_until(c: Any, done: Any, timeout: float, idle: float | None = None) -> list[Any]:
    """Poll until ``done(records)`` or the timeout; with ``idle``, also stop that long after the
    last record."""
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    while time.monotonic() < deadline and not done(out):
        if idle is not None and out and time.monotonic() - last > idle:
            break
        for m in c.poll(1.0):
            if m.error() is None:
                out.append(m)
                last = time.monotonic()
    return out


def consume_released(bootstrap: str, group: str, topic: str, timeout: float = 60, idle: float = 6) -> list[Any]:
    """What a new implicit-acknowledgement ShareConsumer of ``group`` gets until ``idle`` seconds
    pass without a record (or ``timeout``): the records that came back, e.g. after a restart."""
    c = share_consumer(bootstrap, group, topic, explicit=False)
    try:
        return poll_until(c, lambda rs: False, timeout, idle=idle)
    finally:
        c.close()
