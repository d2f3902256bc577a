"""Helpers shared by the tests that run a real cluster (the samsa_cluster fixture: etcd and
Samsa broker processes): broker settings for fast tests, raw Metadata / CreateTopics /
DescribeLogDirs / FindCoordinator against one broker, polling, and the console's HTML tables."""
from __future__ import annotations

import time
import uuid
from html.parser import HTMLParser
from typing import Any

from kafka.protocol.admin import CreateTopicsRequest

from broker.testing import free_port
from broker.testing.local_cluster import LocalCluster
from coordinator.hashing import partition_for_group
from protocol.messages import REQUESTS
from tests.support.rawclient import RawClient

# replication that reacts in a fraction of a second, and no log cleaner
FAST_REPLICATION = {"replica.fetch.wait.max.ms": "200", "replica.fetch.backoff.ms": "100", "log.cleaner.enable": "false"}
FAST_GROUPS = {**FAST_REPLICATION,
               "offsets.topic.num.partitions": "6", "group.initial.rebalance.delay.ms": "0",
               "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "6000",
               "group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "500"}
CT = CreateTopicsRequest.CreatableTopic
CTA = CT.CreatableReplicaAssignment
OCT = REQUESTS[8].OffsetCommitRequestTopic
OCP = OCT.OffsetCommitRequestPartition


def create_topic(c: LocalCluster, name: str, partitions: int = 1, rf: int = 3,
                 assignment: dict[int, list[int]] | None = None) -> None:
    """Create ``name`` through the Admin API (``assignment``: explicit replicas per partition) and
    wait until every partition has a leader in the cluster's metadata."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(name, -1, -1, replica_assignments=assignment) if assignment
                             else NewTopic(name, partitions, rf)])
    finally:
        admin.close()
    c.wait_for(lambda: all(c.leader(name, p) >= 0 for p in range(partitions)), what=f"leaders of {name}")


def metadata(bootstrap: str) -> dict:
    """What one broker's Metadata v12 says: brokers, controller, cluster id and, per topic and
    partition, (leader, leader epoch, replicas, ISR)."""
    with RawClient(bootstrap) as c:
        r = c.request(3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return {"brokers": sorted(b.node_id for b in r.brokers), "controller": r.controller_id,
            "cluster_id": r.cluster_id,
            "topics": {t.name: {p.partition_index: (p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                                                    tuple(p.isr_nodes))
                                for p in t.partitions} for t in r.topics}}


def create_topic_at(bootstrap: str, name: str, partitions: int = 1, rf: int = 3, assignments=None):
    """CreateTopics v7 for one topic, sent to the broker at ``bootstrap`` (``assignments``: the replicas
    of each partition, in order); returns the topic's result as answered, without waiting for leaders."""
    with RawClient(bootstrap) as c:
        t = CT(name=name, num_partitions=-1 if assignments else partitions,
               replication_factor=-1 if assignments else rf,
               assignments=[CTA(partition_index=i, broker_ids=a) for i, a in enumerate(assignments or [])],
               configs=[])
        return c.request(19, 7, topics=[t], timeout_ms=10000, validate_only=False).topics[0]


def wait_for(predicate, timeout: float = 30.0, what: str = "condition"):
    """Poll ``predicate`` until it returns something true (returned); a connection error counts as
    not yet, since brokers come and go in these tests."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (OSError, ConnectionError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def commit_topic(partition: int, offset: int, metadata: str, name: str | None = None,
                 topic_id: uuid.UUID | None = None) -> Any:
    """An OffsetCommit request topic with one partition (by name, or by topic id from v10)."""
    return OCT(name=name, topic_id=topic_id or uuid.UUID(int=0), partitions=[OCP(
        partition_index=partition, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=metadata)])


def one_broker(c: LocalCluster) -> str:
    """One broker's address (a raw client talks to one broker; any of them answers these)."""
    return c.brokers[min(c.brokers)].bootstrap_servers


def coordinator_of(c: LocalCluster, group: str) -> int:
    """The group's coordinator (FindCoordinator v3), once __consumer_offsets has a leader."""
    def ask() -> int | None:
        with RawClient(one_broker(c)) as rc:
            r = rc.request(10, 3, key=group, key_type=0)
        return r.node_id if r.error_code == 0 else None
    return c.wait_for(ask, timeout=30, what=f"a coordinator for {group}")


def log_dirs(bootstrap: str) -> dict[str, dict[int, int]]:
    """DescribeLogDirs v4 of one broker (one log dir): {topic: {partition: size}}, internal topics left out."""
    with RawClient(bootstrap) as c:
        r = c.request(35, 4, topics=None)
    assert r.error_code == 0 and len(r.results) == 1 and r.results[0].error_code == 0
    return {t.name: {p.partition_index: p.partition_size for p in t.partitions}
            for t in r.results[0].topics if not t.name.startswith("__")}


def http_overrides() -> dict[int, dict[str, str]]:
    """``samsa.http.listener`` on a free port for each broker of a 3-broker cluster."""
    return {n: {"samsa.http.listener": f"http://127.0.0.1:{free_port()}"} for n in (1, 2, 3)}


def url(c: LocalCluster, node: int) -> str:
    """The HTTP listener's base URL of broker ``node``."""
    return c.brokers[node].overrides["samsa.http.listener"]


def console_page(c: LocalCluster, node: int, path: str) -> tuple[str, dict[str, list[list[str]]]]:
    """Broker ``node``'s console page ``path``: its HTML and its tables (:class:`ConsoleTables`)."""
    import httpx

    resp = httpx.get(url(c, node) + path, timeout=15)
    assert resp.status_code == 200, resp.text
    parser = ConsoleTables()
    parser.feed(resp.text)
    return resp.text, parser.tables


def key_led_by(c: LocalCluster, topic: str, prefix: str, node: int, partitions: int) -> str:
    """A group / transactional id whose coordinator (leader of its partition of the internal
    ``topic``, which has ``partitions``) is ``node``."""
    for i in range(1000):
        key = f"{prefix}-{i}"
        if c.leader(topic, partition_for_group(key, partitions)) == node:
            return key
    raise AssertionError(f"no {prefix} key led by {node}")


class ConsoleTables(HTMLParser):
    """The console's tables as {class: [[cell text, ...], ...]} (body rows only)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "table":
            self._table = dict(attrs).get("class") or ""
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._row:
                self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
