"""DescribeShareGroupOffsets v0-v1 (KIP-932; the Admin's listShareGroupOffsets,
kafka-share-groups.sh --describe): each share partition's start offset and leader epoch as the
share coordinator holds them (ReadShareGroupStateSummary through ``broker.share_persister``).

Quirks: v1 adds Lag (KIP-1226): high watermark - start offset - delivery-complete count where this
broker hosts the partition and the state knows the count, else -1. Null topics describe the topics
the group subscribes to, or every topic for a group without members (an unknown share group:
GROUP_ID_NOT_FOUND); share partitions never initialized are left out then (Kafka keeps the list of
initialized ones in the group's records; here the share coordinator is asked), and answered with start offset -1 when named. An unknown topic
or partition answers UNKNOWN_TOPIC_OR_PARTITION in its partitions.
Authorization: DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED for the group), DESCRIBE on
each topic (else TOPIC_AUTHORIZATION_FAILED in its partitions).
"""
from __future__ import annotations

from typing import Any

from coordinator.share.persister import SharePartitionKey
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema_messages import DescribeShareGroupOffsetsResponse

from broker.apis.shared.share_offsets import GROUP_ID_NOT_FOUND_MESSAGE
from broker.common.services import RequestScope
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, TOPIC_DENIED, Handler, allowed, authorizes

G = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
T = G.DescribeShareGroupOffsetsResponseTopic
P = T.DescribeShareGroupOffsetsResponsePartition
UNKNOWN = "This server does not host this topic-partition."


def _partition(index: int, code: int, message: str | None = None) -> Any:
    return P(partition_index=index, start_offset=-1, leader_epoch=-1, lag=-1, error_code=code, error_message=message)


async def _describe_group(ctx: RequestContext, group_id: str, topics: Any) -> Any:
    broker = ctx.broker
    wanted: list[tuple[str, list[int] | None]]
    if topics is None:
        group = broker.share_groups.coordinator.groups.get(group_id)
        if group is None:
            return G(group_id=group_id, topics=[], error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                     error_message=GROUP_ID_NOT_FOUND_MESSAGE.format(group_id))
        names = sorted({n for m in group.members.values() for n in m.subscribed} | set(group.subscribed_metadata))
        if not names:   # an empty group (e.g. after a reset): every topic, its initialized share partitions
            names = sorted(n for n, t in topic_catalog.all_topics(broker).items() if not t.internal)
        wanted = [(n, None) for n in names]
    else:
        wanted = [(t.topic_name, list(t.partitions)) for t in topics]
    out = []
    for name, partitions in wanted:
        t = topic_catalog.topic(broker, name)
        if t is None:
            out.append(T(topic_name=name, topic_id=topic_catalog.ZERO_UUID,
                         partitions=[_partition(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN)
                                     for p in partitions or ()]))
            continue
        results = []
        for p in (partitions if partitions is not None else range(t.partition_count)):
            if not t.has_partition(p):
                results.append(_partition(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN))
                continue
            s = await broker.share_persister.read_summary(SharePartitionKey(group_id, t.topic_id, p))
            if s.error_code:
                results.append(_partition(p, s.error_code, s.error_message))
            elif s.start_offset >= 0 or partitions is not None:
                results.append(P(partition_index=p, start_offset=s.start_offset, leader_epoch=s.leader_epoch,
                                 lag=_lag(ctx, name, p, s), error_code=0, error_message=None))
        if results or partitions is not None:
            out.append(T(topic_name=name, topic_id=t.topic_id, partitions=results))
    return G(group_id=group_id, topics=out, error_code=0, error_message=None)


def _lag(ctx: RequestContext, topic: str, partition: int, s: Any) -> int:
    """KIP-1226's share-partition lag, where this broker hosts the partition."""
    part = ctx.broker.logs.partition(topic, partition)
    if part is None or s.start_offset < 0 or s.delivery_complete_count < 0:
        return -1
    return max(0, part.high_watermark - s.start_offset - s.delivery_complete_count)


@handles(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
async def describe_share_group_offsets(ctx: RequestContext, req: Any) -> Any:
    groups = [await _describe_group(ctx, g.group_id, g.topics) for g in req.groups]
    return ctx.response(throttle_time_ms=0, groups=groups)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)   # DESCRIBE on each group and on each topic
async def authorize_describe_share_group_offsets(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    denied_groups = {g.group_id for g in req.groups if not allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id)}
    denied_topics: dict[str, list[int]] = {}
    for g in req.groups:
        kept = []
        for t in g.topics or ():
            if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.topic_name):
                kept.append(t)
            else:
                denied_topics.setdefault(f"{g.group_id}\0{t.topic_name}", list(t.partitions))
        if g.topics is not None:
            g.topics = kept
    req.groups = [g for g in req.groups if g.group_id not in denied_groups]
    response = await handler(ctx, req)
    for key, partitions in denied_topics.items():
        group_id, name = key.split("\0")
        for g in response.groups:
            if g.group_id == group_id:
                g.topics.append(T(topic_name=name, topic_id=topic_catalog.ZERO_UUID,
                                  partitions=[_partition(p, TOPIC_DENIED) for p in partitions]))
    response.groups += [G(group_id=g, topics=[], error_code=GROUP_DENIED, error_message=None)
                        for g in sorted(denied_groups)]
    return response
