"""OffsetForLeaderEpoch v2-v4.

From the partition's leader epoch cache (Kafka's endOffsetFor): the largest epoch at or below the
requested one and where it ends; -1/-1 for an epoch newer than any known. In a cluster only the
leader answers (followers ask it before fetching, to truncate); the current leader epoch is
checked as in ListOffsets (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
Authorization: DESCRIBE on each topic.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import leader_partition
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import TOPIC_DENIED, Handler, authorizes, response_class, topics_allowed

OT = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult

OP = OT.EpochEndOffset


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH)
async def offset_for_leader_epoch(ctx: RequestContext, req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    """From the partition's leader epoch cache (Kafka's endOffsetFor): the largest epoch at or
    below the requested one and where it ends; -1/-1 for an epoch newer than any known. In a
    cluster only the leader answers (followers ask it before fetching, to truncate)."""
    logs = ctx.broker.logs
    topics = []
    for rt in req.topics:
        topic = logs.topics.get(rt.topic)
        parts = []
        for rp in rt.partitions:
            part, err = leader_partition(ctx, topic, rt.topic, rp.partition, rp)
            if err:
                parts.append(OP(error_code=err, partition=rp.partition, leader_epoch=-1, end_offset=-1))
                continue
            assert part is not None   # no error: the partition was found
            epoch, end = part.epochs.end_offset_for(rp.leader_epoch, part.log_end_offset)
            parts.append(OP(error_code=0, partition=rp.partition, leader_epoch=epoch, end_offset=end))
        topics.append(OT(topic=rt.topic, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=topics)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.OFFSET_FOR_LEADER_EPOCH)
async def authorize_offset_for_leader_epoch(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    TR = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderTopicResult")
    E = TR.EpochEndOffset
    return await topics_allowed(ctx, req, handler, Op.DESCRIBE, lambda denied: (TR(topic=t.topic, partitions=[
        E(error_code=TOPIC_DENIED, partition=p.partition, leader_epoch=-1, end_offset=-1) for p in t.partitions])
        for t in denied), name_of=lambda t: t.topic)
