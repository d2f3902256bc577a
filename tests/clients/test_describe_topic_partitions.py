"""DescribeTopicPartitions v0: cursor paging exactly as Kafka's handler does it, errors, and the
Java Admin's describeTopics (which uses it when advertised) on a topic larger than one page."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing import SamsaBroker, running_broker
from protocol.messages import REQUESTS
from tests.support.rawclient import RawClient

DTP, CREATE_TOPICS = 75, 19
Req = REQUESTS[DTP]


@pytest.fixture(scope="module")
def dbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("dtp") / "data", overrides={
        "max.request.partition.size.limit": "5"}) as b:
        yield b


def create(c: RawClient, name: str, partitions: int) -> None:
    C = REQUESTS[CREATE_TOPICS]
    r = c.request(CREATE_TOPICS, 5, topics=[C.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                                                             assignments=[], configs=[])],
                  timeout_ms=5000, validate_only=False)
    assert r.topics[0].error_code == 0


def page(c: RawClient, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None) -> Any:
    return c.request(DTP, 0, topics=[Req.TopicRequest(name=n) for n in names], response_partition_limit=limit,
                     cursor=None if cursor is None else Req.Cursor(topic_name=cursor[0], partition_index=cursor[1]))


def summary(r: Any) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    cur = None if r.next_cursor is None else (r.next_cursor.topic_name, r.next_cursor.partition_index)
    return [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in r.topics], cur


def test_paging_follows_kafkas_cursor_rules(dbroker: SamsaBroker) -> None:
    pre = f"d{uuid.uuid4().hex[:6]}"
    a, b, c_ = f"{pre}-a", f"{pre}-b", f"{pre}-c"
    with RawClient(dbroker.bootstrap_servers) as c:
        create(c, a, 3)
        create(c, b, 4)
        create(c, c_, 2)
        # the broker's limit (5) caps the client's (100)
        assert summary(page(c, [c_, a, b], limit=100)) == ([(a, 0, [0, 1, 2]), (b, 0, [0, 1])], (b, 2))
        assert summary(page(c, [c_, a, b], limit=100, cursor=(b, 2))) == ([(b, 0, [2, 3]), (c_, 0, [0, 1])], None)
        # a page that ends exactly at a topic's end points at the next topic's partition 0
        assert summary(page(c, [a, b], limit=3)) == ([(a, 0, [0, 1, 2])], (b, 0))
        assert summary(page(c, [a], limit=0)) == ([(a, 0, [0])], (a, 1))          # at least one partition
        # unknown / invalid names, cursor errors
        assert summary(page(c, [a, f"{pre}-zz", "bad/name"])) == (
            [("bad/name", 17, []), (a, 0, [0, 1, 2]), (f"{pre}-zz", 3, [])], None)
        assert [t.error_code for t in page(c, [a], cursor=(b, 0)).topics] == [42]
        assert [t.error_code for t in page(c, [a], cursor=(a, -1)).topics] == [42]
        r = page(c, [a])
        t = r.topics[0]
        assert (t.is_internal, t.partitions[0].leader_id, t.partitions[0].replica_nodes, t.partitions[0].isr_nodes) == \
            (False, 1, [1], [1])


@pytest.mark.java
def test_java_admin_describe_topics_pages_through_describe_topic_partitions(dbroker: SamsaBroker) -> None:
    from tests.support.javaclient import java_available, last, run_java
    if not java_available():
        pytest.skip("java and javac (a JDK) are not on PATH")
    name = f"big-{uuid.uuid4().hex[:6]}"
    with RawClient(dbroker.bootstrap_servers) as c:
        create(c, name, 12)          # more than one page (limit 5)
    lines = run_java("4.3.0", dbroker.bootstrap_servers, "admin-describe-topics", "--topic", name)
    d = last(lines, "topic")
    assert d["name"] == name and [p["partition"] for p in d["partitions"]] == list(range(12))
