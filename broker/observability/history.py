"""What the console's charts draw: a small ring buffer of samples taken every
``samsa.http.console.sample.interval.ms`` (5 s by default) for the last ``HISTORY_SAMPLES``
samples (10 minutes at the default).

A sample is cheap and off the request path: it copies the per-topic counters the request path
already keeps (broker/observability/metrics.py: messages in, bytes in, bytes out — this broker's,
as Kafka's BrokerTopicMetrics are per broker) and the consumer groups' lag per partition as the
console's overview computes it (cluster_view.gather: in a cluster, every group, with lag against
each partition's leader's high watermark). Rates are differences between consecutive samples.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog
import trio

from . import cluster_view
from .metrics import BYTES_IN, BYTES_OUT, MESSAGES_IN

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

log = structlog.get_logger("samsa.console")

SAMPLE_INTERVAL = "samsa.http.console.sample.interval.ms"
HISTORY_SAMPLES = 120


@dataclass(slots=True)
class Sample:
    at_ms: int
    topics: dict[str, tuple[int, int, int]] = field(default_factory=dict)        # messages in, bytes in, bytes out
    lag: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)     # group -> (topic, partition) -> lag


class History:
    """The last samples, oldest first."""

    def __init__(self, size: int = HISTORY_SAMPLES) -> None:
        self.samples: collections.deque[Sample] = collections.deque(maxlen=size)

    def add(self, sample: Sample) -> None:
        self.samples.append(sample)

    def topic_rates(self, topic: str) -> dict[str, list[tuple[int, float]]]:
        """Per second between consecutive samples: messages in, bytes in, bytes out."""
        out: dict[str, list[tuple[int, float]]] = {"messages in/s": [], "bytes in/s": [], "bytes out/s": []}
        prev: Sample | None = None
        for s in self.samples:
            if prev is not None and topic in s.topics:
                before = prev.topics.get(topic, (0, 0, 0))
                dt = max(s.at_ms - prev.at_ms, 1) / 1000
                for name, now, was in zip(out, s.topics[topic], before):
                    out[name].append((s.at_ms, max(0, now - was) / dt))
            prev = s
        return out

    def group_lag(self, group: str) -> dict[str, list[tuple[int, float]]]:
        """Lag per partition ("topic-partition") and in total, at each sample that saw the group."""
        series: dict[str, list[tuple[int, float]]] = {}
        total: list[tuple[int, float]] = []
        for s in self.samples:
            lags = s.lag.get(group)
            if lags is None:
                continue
            for (t, p), lag in sorted(lags.items()):
                series.setdefault(f"{t}-{p}", []).append((s.at_ms, float(lag)))
            total.append((s.at_ms, float(sum(lags.values()))))
        return {"total": total, **series} if total else {}


async def take_sample(broker: Broker) -> Sample:
    sample = Sample(broker.now_ms())
    metrics = broker.metrics
    if metrics is not None:
        sample.topics = {t: (c[MESSAGES_IN], c[BYTES_IN], c[BYTES_OUT]) for t, c in metrics.topics.items()}
    view = await cluster_view.gather(broker)
    sample.lag = {g.group_id: {(o.topic, o.partition): o.lag for o in g.offsets} for g in view.groups}
    return sample


async def run_sampler(broker: Broker, history: History) -> None:
    """Sample until cancelled (the HTTP listener's nursery owns this task)."""
    interval = int(broker.config.get(SAMPLE_INTERVAL) or 5000) / 1000
    while True:
        try:
            history.add(await take_sample(broker))
        except Exception:   # a sample is best effort: a broker restarting its groups must not stop the charts
            log.debug("console sample failed", exc_info=True)
        await trio.sleep(interval)
