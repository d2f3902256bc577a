"""ListOffsets v1-v11.

Quirks: latest (-1) is the log end offset (last offset + 1, never "last batch + 1") for a
non-consumer replica id (-2, debugging tools; Kafka gives it no isolation level), else the HW or
the last stable offset for read_committed; earliest (-2) the log start offset; max
timestamp (-3, v7+) the record with the largest timestamp; -4/-5 (tiered storage) answer
as earliest/latest since nothing is tiered; a timestamp finds the first record with a
timestamp >= target, exact inside batches, else offset -1. Answers carry the partition's current
leader epoch. As Kafka, offsets at or above the last fetchable offset (HW, or LSO for
read_committed) are never answered, and a new leader whose HW still lags its epoch's start
answers OFFSET_NOT_AVAILABLE.
Authorization: DESCRIBE on each topic.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import leader_partition
from broker.log.partition import Partition
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import TOPIC_DENIED, Handler, authorizes, response_class, topics_allowed

LT = ListOffsetsResponse.ListOffsetsTopicResponse
LP = LT.ListOffsetsPartitionResponse
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2


@handles(ApiKey.LIST_OFFSETS)
async def list_offsets(ctx: RequestContext, req: ListOffsetsRequest) -> ListOffsetsResponse:
    logs = ctx.broker.logs
    topics = []
    for rt in req.topics:
        topic = logs.topics.get(rt.name)
        parts = []
        for rp in rt.partitions:
            part, err = leader_partition(ctx, topic, rt.name, rp.partition_index, rp,
                                         any_replica=req.replica_id == DEBUGGING_REPLICA_ID)
            if err:
                parts.append(LP(partition_index=rp.partition_index, error_code=err, timestamp=-1, offset=-1,
                                leader_epoch=-1))
                continue
            assert part is not None   # no error: the partition was found
            ts = rp.timestamp
            epoch = part.leader_epoch
            # a non-consumer replica id (a follower, or -2 for debugging tools) gets no isolation
            # level: "latest" is the log end offset, as Kafka's ReplicaManager answers it
            fetchable = part.log_end_offset if req.replica_id != CONSUMER_REPLICA_ID else \
                part.last_stable_offset if req.isolation_level == 1 else part.high_watermark
            if ts in (LATEST, LATEST_TIERED):
                found = (fetchable, -1)
            elif ts in (EARLIEST, EARLIEST_LOCAL):
                found = (part.log_start_offset, -1)
            else:
                at = part.max_timestamp_offset() if ts == MAX_TIMESTAMP else part.offset_for_timestamp(ts)
                if at is None or at[0] >= fetchable:
                    found, epoch = (-1, -1), -1   # Kafka answers only offsets below the last fetchable one
                else:
                    found = at
            if req.replica_id == CONSUMER_REPLICA_ID and hw_lagging(part) and (ts in (LATEST, LATEST_TIERED) or found[0] < 0):
                parts.append(LP(partition_index=rp.partition_index, error_code=ErrorCode.OFFSET_NOT_AVAILABLE,
                                timestamp=-1, offset=-1, leader_epoch=-1))
                continue
            parts.append(LP(partition_index=rp.partition_index, error_code=0, timestamp=found[1], offset=found[0],
                            leader_epoch=epoch, old_style_offsets=[found[0]]))
        topics.append(LT(name=rt.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, topics=topics)


def hw_lagging(part: Partition) -> bool:
    """A new leader's high watermark below the offset its leader epoch started at: the ISR has
    not confirmed what the previous leader committed yet, so "latest" (and a lookup finding
    nothing below it) is not known. Kafka's Partition.fetchOffsetForTimestamp answers the
    retriable OFFSET_NOT_AVAILABLE then, and the client retries."""
    replica = part.replica
    return replica is not None and replica.leader_epoch_start_offset > part.high_watermark


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.LIST_OFFSETS)
async def authorize_list_offsets(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    TR = response_class(ApiKey.LIST_OFFSETS, "ListOffsetsTopicResponse")
    P = TR.ListOffsetsPartitionResponse
    return await topics_allowed(ctx, req, handler, Op.DESCRIBE, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=p.partition_index, error_code=TOPIC_DENIED, old_style_offsets=[], timestamp=-1,
          offset=-1, leader_epoch=-1) for p in t.partitions]) for t in denied))
