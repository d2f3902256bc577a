"""OffsetDelete v0: deletes a group's committed offsets.

Quirks: partitions of topics that do not exist answer UNKNOWN_TOPIC_OR_PARTITION; a group error
(e.g. a group still subscribed) answers no topics.
Authorization: DELETE on the group, READ on each topic.
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from coordinator.group.offsets import TopicPartitions
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import coordinator_fields
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (GROUP_DENIED, TOPIC_DENIED, Handler, allowed, authorizes, response_class,
                                   topics_allowed)


@handles(ApiKey.OFFSET_DELETE)
async def offset_delete(ctx: RequestContext, req: Any) -> Any:
    rejected: dict[tuple[str, int], int] = {}
    topics = []
    for t in req.topics:
        topic = topic_catalog.topic(ctx.broker, t.name)
        keep = []
        for p in t.partitions:
            if topic is None or not topic.has_partition(p.partition_index):
                rejected[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                keep.append(p.partition_index)
        if keep:
            topics.append(TopicPartitions(t.name, keep))
    r: g.OffsetDeleteResult = await ctx.broker.groups.call_for(
        req.group_id, g.OffsetDelete(group_id=req.group_id, topics=topics, **coordinator_fields(ctx)))
    errors = {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}
    resp = ctx.response(throttle_time_ms=0, error_code=r.error_code, topics=[])
    T = resp.OffsetDeleteResponseTopic
    if r.error_code == ErrorCode.NONE:
        resp.topics = [T(name=t.name, partitions=[T.OffsetDeleteResponsePartition(
            partition_index=p.partition_index,
            error_code=rejected.get((t.name, p.partition_index), errors.get((t.name, p.partition_index), 0)))
            for p in t.partitions]) for t in req.topics]
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.OFFSET_DELETE)
async def authorize_offset_delete(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    if not allowed(ctx, Op.DELETE, RT.GROUP, req.group_id):
        return ctx.response(error_code=GROUP_DENIED, throttle_time_ms=0, topics=[])
    TR = response_class(ApiKey.OFFSET_DELETE, "OffsetDeleteResponseTopic")
    P = TR.OffsetDeleteResponsePartition
    return await topics_allowed(ctx, req, handler, Op.READ, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=p.partition_index, error_code=TOPIC_DENIED) for p in t.partitions]) for t in denied),
        error_code=0)
