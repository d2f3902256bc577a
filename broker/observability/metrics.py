"""Prometheus metrics (``/metrics`` on ``samsa.http.listener``), named as Kafka's JMX metrics come
out of the Prometheus JMX exporter and, for consumer-group lag, as kafka_exporter names it, so
existing dashboards work unchanged.

Cost on the hot path: per request a few additions to plain ints (a count, a histogram bucket
found by bisection, a sum), and per produce/fetch a few per topic (messages from the batch
headers' record counts, never per record); they become Prometheus families only when scraped. Everything else (log sizes and offsets, group lag, connections, controller and
replica-manager gauges) is computed when scraped. Without ``samsa.http.listener`` the broker
has no BrokerMetrics at all and the hooks are a ``None`` check.
"""
from __future__ import annotations

import time
from bisect import bisect_left
from typing import TYPE_CHECKING
from collections.abc import Iterator

from kafka.protocol.api_key import ApiKey
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString
from prometheus_client.registry import Collector

from broker.metadata import topic_catalog

from . import introspect

if TYPE_CHECKING:
    from broker.common.services import BrokerServices
    from broker.observability.history import History

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Kafka's request-time histograms are in milliseconds; these buckets span a local broker's range
LATENCY_BUCKETS_MS = (0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)


class _RequestStats:
    """One API's request counts by version and its latency histogram, as plain numbers: the event
    loop is one thread, so nothing needs prometheus_client's per-increment locks."""
    __slots__ = ("by_version", "buckets", "total_ms")

    def __init__(self) -> None:
        self.by_version: dict[int, int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS_MS) + 1)   # the last one is +Inf
        self.total_ms = 0.0


# the per-topic counters: index in BrokerMetrics.topics[topic]
MESSAGES_IN, BYTES_IN, BYTES_OUT, PRODUCE_REQUESTS, FETCH_REQUESTS = range(5)
_TOPIC_COUNTERS = (
    ("kafka_server_brokertopicmetrics_messagesin", "Records appended, by topic (BrokerTopicMetrics MessagesInPerSec)"),
    ("kafka_server_brokertopicmetrics_bytesin",
     "Record-batch bytes appended by produce requests, by topic (BytesInPerSec)"),
    ("kafka_server_brokertopicmetrics_bytesout", "Record-batch bytes sent in fetch answers, by topic (BytesOutPerSec)"),
    ("kafka_server_brokertopicmetrics_totalproducerequests",
     "Produce requests naming the topic (TotalProduceRequestsPerSec)"),
    ("kafka_server_brokertopicmetrics_totalfetchrequests", "Fetch requests naming the topic (TotalFetchRequestsPerSec)"),
)


class BrokerMetrics:
    """The counters the request path updates (plain ints: a dict lookup and an addition each),
    turned into Prometheus families only when ``/metrics`` is scraped."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests: dict[int, _RequestStats] = {}
        self.topics: dict[str, list[int]] = {}
        self.connections_created: dict[str, int] = {}
        self.connections_closed: dict[str, int] = {}
        self.open_connections: dict[str, int] = {}
        self.history: History | None = None       # the console's samples (broker/observability/history.py)
        self.registry.register(_CounterCollector(self))
        self.registry.register(_ScrapeCollector(broker))

    # -- the request path ---------------------------------------------------------------------
    def request_done(self, api_key: int, version: int, started: float) -> None:
        ms = (time.perf_counter() - started) * 1000.0
        stats = self.requests.get(api_key)
        if stats is None:
            stats = self.requests[api_key] = _RequestStats()
        stats.by_version[version] = stats.by_version.get(version, 0) + 1
        stats.buckets[bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
        stats.total_ms += ms

    def _topic(self, topic: str) -> list[int]:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = [0, 0, 0, 0, 0]
        return counters

    def produced(self, topic: str, records: int, size: int) -> None:
        c = self._topic(topic)
        c[MESSAGES_IN] += records
        c[BYTES_IN] += size

    def produce_request(self, topic: str) -> None:
        self._topic(topic)[PRODUCE_REQUESTS] += 1

    def fetched(self, by_topic: dict[str, int]) -> None:
        for topic, size in by_topic.items():
            c = self._topic(topic)
            c[FETCH_REQUESTS] += 1
            c[BYTES_OUT] += size

    def topic_deleted(self, topic: str) -> None:
        """Drop a deleted topic's series (Kafka removes its BrokerTopicMetrics too)."""
        self.topics.pop(topic, None)

    def connection_opened(self, listener: str) -> None:
        self.connections_created[listener] = self.connections_created.get(listener, 0) + 1
        self.open_connections[listener] = self.open_connections.get(listener, 0) + 1

    def connection_closed(self, listener: str) -> None:
        self.connections_closed[listener] = self.connections_closed.get(listener, 0) + 1
        self.open_connections[listener] = self.open_connections.get(listener, 1) - 1

    # -- scraping -----------------------------------------------------------------------------
    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _CounterCollector(Collector):
    """The request-path counters as Prometheus counter and histogram families."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.metrics
        for i, (name, doc) in enumerate(_TOPIC_COUNTERS):
            fam = CounterMetricFamily(name, doc, labels=["topic"])
            for topic, counters in sorted(m.topics.items()):
                fam.add_metric([topic], counters[i])
            yield fam
        requests = CounterMetricFamily("kafka_network_requestmetrics_requests",
                                       "Requests answered, by API and version (RequestMetrics RequestsPerSec)",
                                       labels=["request", "version"])
        latency = HistogramMetricFamily("kafka_network_requestmetrics_totaltimems",
                                        "Time from a request's arrival to its answer, in ms "
                                        "(RequestMetrics TotalTimeMs)", labels=["request"])
        for key, stats in sorted(m.requests.items()):
            name = _api_name(key)
            for version, n in sorted(stats.by_version.items()):
                requests.add_metric([name, str(version)], n)
            cumulative, buckets = 0, []
            for bound, n in zip((*map(floatToGoString, LATENCY_BUCKETS_MS), "+Inf"), stats.buckets):
                cumulative += n
                buckets.append((bound, cumulative))
            latency.add_metric([name], buckets, stats.total_ms)
        yield requests
        yield latency
        for name, doc, values in (
                ("kafka_server_socket_server_metrics_connection_creation", "Connections accepted, by listener",
                 m.connections_created),
                ("kafka_server_socket_server_metrics_connection_close", "Connections closed, by listener",
                 m.connections_closed)):
            fam = CounterMetricFamily(name, doc, labels=["listener"])
            for listener, n in sorted(values.items()):
                fam.add_metric([listener], n)
            yield fam


class _ScrapeCollector(Collector):
    """Gauges computed from the broker's state when ``/metrics`` is scraped."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker

    def collect(self) -> Iterator[Metric]:
        broker = self.broker
        parts = introspect.partitions(broker)
        labels = ["topic", "partition"]

        def per_partition(name: str, doc: str, attr: str) -> GaugeMetricFamily:
            fam = GaugeMetricFamily(name, doc, labels=labels)
            for p in parts:
                fam.add_metric([p.topic, str(p.partition)], getattr(p, attr))
            return fam

        yield per_partition("kafka_log_log_size", "Bytes of the partition's log segments (Log Size)", "size_bytes")
        yield per_partition("kafka_log_log_logstartoffset", "First offset of the partition's log", "log_start_offset")
        yield per_partition("kafka_log_log_logendoffset", "Offset the next record gets", "log_end_offset")
        yield per_partition("kafka_log_log_numlogsegments", "Segments of the partition's log", "segments")
        yield _replicas(parts)
        # kafka_exporter's names for the same offsets
        yield per_partition("kafka_topic_partition_current_offset", "High watermark (kafka_exporter)",
                            "high_watermark")
        yield per_partition("kafka_topic_partition_oldest_offset", "Log start offset (kafka_exporter)",
                            "log_start_offset")
        topics = GaugeMetricFamily("kafka_topic_partitions", "Partitions of the topic (kafka_exporter)",
                                   labels=["topic"])
        counts: dict[str, int] = {}
        for p in parts:
            counts[p.topic] = counts.get(p.topic, 0) + 1
        for t, n in counts.items():
            topics.add_metric([t], n)
        yield topics

        # a single node leads every partition and is the active controller; in a cluster these
        # come from the metadata image (leader, replicas, committed ISR) and the controller key
        node = broker.node_id
        led = [p for p in parts if p.leader == node]
        yield _gauge("kafka_server_replicamanager_underreplicatedpartitions",
                     "Partitions led here whose ISR is smaller than their replica set",
                     sum(1 for p in led if len(p.isr) < len(p.replicas)))
        yield _gauge("kafka_server_replicamanager_partitioncount", "Partitions with a replica on this broker",
                     len(parts))
        yield _gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads", len(led))
        yield _gauge("kafka_server_replicamanager_offlinereplicacount", "Offline replicas", 0)
        is_controller = broker.topology.is_active_controller
        yield _gauge("kafka_controller_kafkacontroller_activecontrollercount",
                     "1 on the broker that is the active controller", 1 if is_controller else 0)
        # as Kafka, the cluster-wide counts are the active controller's (0 elsewhere: dashboards sum them)
        topic_count, partition_count, offline = _global_counts(broker) if is_controller else (0, 0, 0)
        yield _gauge("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader",
                     offline)
        yield _gauge("kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster", topic_count)
        yield _gauge("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster",
                     partition_count)
        yield _gauge("kafka_brokers", "Live brokers in the cluster (kafka_exporter)",
                     sum(1 for b in introspect.brokers(broker) if b.alive))
        for name, doc, value in (
                ("kafka_cluster_partition_insyncreplicascount", "In-sync replicas of a partition led here",
                 lambda p: len(p.isr)),
                ("kafka_cluster_partition_underreplicated", "1 when a partition led here lacks in-sync replicas",
                 lambda p: 1 if len(p.isr) < len(p.replicas) else 0)):
            fam = GaugeMetricFamily(name, doc, labels=labels)
            for p in led:
                fam.add_metric([p.topic, str(p.partition)], value(p))
            yield fam

        metrics = broker.metrics
        conns = GaugeMetricFamily("kafka_server_socket_server_metrics_connection_count",
                                  "Open client connections, by listener", labels=["listener"])
        for listener in broker.config.listeners:
            conns.add_metric([listener.name], (metrics.open_connections.get(listener.name, 0) if metrics else 0))
        yield conns

        lag = GaugeMetricFamily("kafka_consumergroup_lag", "High watermark less the committed offset",
                                labels=["consumergroup", "topic", "partition"])
        current = GaugeMetricFamily("kafka_consumergroup_current_offset", "Committed offset",
                                    labels=["consumergroup", "topic", "partition"])
        lag_sum = GaugeMetricFamily("kafka_consumergroup_lag_sum", "Lag summed over the group's partitions",
                                    labels=["consumergroup", "topic"])
        members = GaugeMetricFamily("kafka_consumergroup_members", "Members of the group",
                                    labels=["consumergroup"])
        for view in introspect.groups(broker):
            members.add_metric([view.group_id], len(view.members))
            sums: dict[str, int] = {}
            unknown: set[str] = set()
            for o in view.offsets:
                if o.high_watermark < 0 and topic_catalog.has_partition(broker, o.topic, o.partition):
                    # the partition exists but has no replica on the coordinator's broker (a cluster):
                    # no lag (nor a topic sum) rather than a wrong one
                    current.add_metric([view.group_id, o.topic, str(o.partition)], o.committed)
                    unknown.add(o.topic)
                    continue
                lag.add_metric([view.group_id, o.topic, str(o.partition)], o.lag)
                current.add_metric([view.group_id, o.topic, str(o.partition)], o.committed)
                sums[o.topic] = sums.get(o.topic, 0) + o.lag
            for t, s in sums.items():
                if t not in unknown:
                    lag_sum.add_metric([view.group_id, t], s)
        yield lag
        yield current
        yield lag_sum
        yield members
        yield from _share_groups(broker)


def _share_groups(broker: BrokerServices) -> Iterator[Metric]:
    """Share groups (KIP-932), for the share partitions this broker leads and has loaded, and the
    share coordinator's writes.

    Kafka's names where Kafka has the metric: ``kafka.server:type=SharePartitionMetrics,
    name=InFlightMessageCount,group=,topic=,partition=`` and ``kafka.server:type=share-coordinator-metrics,
    name=write-total`` (WriteShareGroupState calls; per second is Prometheus' ``rate()``). Kafka's broker
    has no per-share-partition start offset, acquired count or lag metric, so those are ``samsa_``:
    the lag is KIP-1226's (the one DescribeShareGroupOffsets v1 answers), computed from the live
    state rather than the persisted one: high watermark - start offset - the in-flight records at or
    after the start offset that are ACKNOWLEDGED or ARCHIVED (delivery complete)."""
    from coordinator.share.partition import RecordState

    labels = ["group", "topic", "partition"]
    in_flight = GaugeMetricFamily("kafka_server_sharepartitionmetrics_inflightmessagecount",
                                  "Records in the share partition's in-flight window, any state (InFlightMessageCount)",
                                  labels=labels)
    start = GaugeMetricFamily("samsa_share_partition_start_offset",
                              "Share-partition start offset: the first record not yet delivery complete",
                              labels=labels)
    acquired = GaugeMetricFamily("samsa_share_partition_acquired_records",
                                 "Records acquired by a share consumer and not yet acknowledged", labels=labels)
    lag = GaugeMetricFamily("samsa_share_partition_lag",
                            "High watermark - start offset - delivery-complete records in flight (KIP-1226)",
                            labels=labels)
    share_groups = getattr(broker, "share_groups", None)
    done = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    for (group, topic_id, index), sp in sorted((getattr(share_groups, "partitions", None) or {}).items(),
                                               key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        t = topic_catalog.topic_by_id(broker, topic_id)
        if t is None:
            continue
        values = [group, t.name, str(index)]
        window = [r for off, r in sp.records.items() if off >= sp.start_offset]
        in_flight.add_metric(values, len(window))
        start.add_metric(values, sp.start_offset)
        acquired.add_metric(values, sum(1 for r in window if r.state == RecordState.ACQUIRED))
        part = broker.logs.partition(t.name, index)
        if part is not None:
            complete = sum(1 for r in window if r.state in done)
            lag.add_metric(values, max(0, part.high_watermark - sp.start_offset - complete))
    yield in_flight
    yield start
    yield acquired
    yield lag
    shell = getattr(broker, "share_coordinator", None)
    writes = CounterMetricFamily("kafka_server_share_coordinator_metrics_write",
                                 "WriteShareGroupState calls the share coordinator committed (write-total)")
    writes.add_metric([], getattr(shell, "writes_total", 0))
    yield writes
    records = CounterMetricFamily("samsa_share_coordinator_records_written",
                                  "Share-state records the share coordinator committed to __share_group_state",
                                  labels=["type"])
    for kind, n in sorted((getattr(shell, "records_written", None) or {}).items()):
        records.add_metric([kind], n)
    yield records


def _replicas(parts: list[introspect.PartitionView]) -> GaugeMetricFamily:
    fam = GaugeMetricFamily("kafka_cluster_partition_replicascount", "Replicas of the partition",
                            labels=["topic", "partition"])
    for p in parts:
        fam.add_metric([p.topic, str(p.partition)], len(p.replicas))
    return fam


def _global_counts(broker: BrokerServices) -> tuple[int, int, int]:
    """(topics, partitions, partitions without a live leader) of the whole cluster."""
    topology = broker.topology
    live = topology.live_broker_ids()
    topics = topology.topics()
    states = [p for name in list(topics) for p in topology.partitions(name)]
    return len(topics), len(states), sum(1 for p in states if p.leader not in live)


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


__all__ = ["BrokerMetrics", "CONTENT_TYPE"]
