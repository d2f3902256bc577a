"""Cluster mode's topic configs: read from the metadata image, written as ConfigRecords to the
metadata log (the config APIs use them when ``ctx.broker.cluster`` is set), and the wait while
the metadata store is unreachable that every cluster-mode change shares (``while_unavailable``).
"""
from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode

from broker.log.manager import INTERNAL_TOPICS
from broker.network.dispatch import RequestContext


async def while_unavailable(timeout_ms: int, fn: Any, *args: Any) -> Any:
    """Metadata changes wait while etcd is unreachable, up to the request's timeout (then
    MetadataUnavailable: the caller answers REQUEST_TIMED_OUT, as Kafka does when its controller
    does not answer in time)."""
    import trio

    from broker.metadata.store import MetadataUnavailable

    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    while True:
        try:
            return await fn(*args)
        except MetadataUnavailable:
            if trio.current_time() + 0.25 >= deadline:
                raise
            await trio.sleep(0.25)


# -- topic configs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) --------------------
class TopicConfigView:
    """What the config APIs read of a topic, from the image: its ConfigRecords."""

    def __init__(self, name: str, configs: dict[str, str]) -> None:
        self.name = name
        self.configs = configs
        self.internal = name in INTERNAL_TOPICS


def topic_config_view(ctx: RequestContext, name: str) -> TopicConfigView | None:
    image = ctx.broker.cluster.image
    if name not in image.topics:
        return None
    return TopicConfigView(name, dict(image.topic_configs(name)))


async def alter_topic_configs(ctx: RequestContext, name: str, new: dict[str, str]) -> tuple[int, str] | None:
    """Write the difference between the image's overrides and ``new`` as ConfigRecords
    (value None deletes), in one batch; an error (code, message) or None."""
    from coordinator.metadata.records import TOPIC_RESOURCE, ConfigRecord

    from broker.metadata.store import MetadataUnavailable

    cluster = ctx.broker.cluster
    current = dict(cluster.image.topic_configs(name))
    records = [ConfigRecord(TOPIC_RESOURCE, name, k, v) for k, v in sorted(new.items()) if current.get(k) != v]
    records += [ConfigRecord(TOPIC_RESOURCE, name, k, None) for k in sorted(current) if k not in new]
    if not records:
        return None
    try:
        await while_unavailable(30000, cluster.store.append, records)
    except MetadataUnavailable as exc:
        return ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata store is unavailable: {exc}"
    return None
