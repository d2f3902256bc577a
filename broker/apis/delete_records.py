"""DeleteRecords v0-v2.

Kafka's rules: offset -1 means the high watermark; above it (or negative) answers
OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks 'delete' answers POLICY_VIOLATION; only
the leader moves the log start (NOT_LEADER_OR_FOLLOWER on a follower); the answer carries the new
low watermark (the log start offset), -1 with any error. The internal topics may not be truncated
(Samsa's rule).
Authorization: DELETE on each topic.
"""
from __future__ import annotations

from typing import Any

import structlog
from kafka.protocol.admin import DeleteRecordsRequest, DeleteRecordsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import absent_partition_error
from broker.log.manager import INTERNAL_TOPICS
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import TOPIC_DENIED, Handler, authorizes, response_class, topics_allowed

log = structlog.get_logger("samsa.topics")

DRT = DeleteRecordsResponse.DeleteRecordsTopicResult

DRP = DRT.DeleteRecordsPartitionResult

HIGH_WATERMARK = -1


@handles(ApiKey.DELETE_RECORDS)
async def delete_records(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    broker = ctx.broker
    logs = broker.logs
    topics = []
    moved = False
    for rt in req.topics:
        topic = logs.topics.get(rt.name)
        parts = []
        for rp in rt.partitions:
            idx = rp.partition_index
            # Kafka's order: internal topic, no local replica, not the leader, then the cleanup policy
            if rt.name in INTERNAL_TOPICS:
                code: int = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif (part := topic.partitions.get(idx) if topic is not None else None) is None:
                code = absent_partition_error(broker, rt.name, idx)
            elif part.replica is not None and not part.replica.is_leader:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER     # a cluster: the leader moves the log start
            elif "delete" not in part.policies():
                code = ErrorCode.POLICY_VIOLATION
            else:
                offset = part.high_watermark if rp.offset == HIGH_WATERMARK else rp.offset
                if offset < 0 or offset > part.high_watermark:
                    code = ErrorCode.OFFSET_OUT_OF_RANGE
                else:
                    assert topic is not None   # a partition was found in it
                    if offset > part.log_start_offset:
                        part.delete_records_before(offset)
                        moved = True
                        log.info("records deleted", topic=topic.name, partition=idx, log_start_offset=offset)
                    parts.append(DRP(partition_index=idx, low_watermark=part.log_start_offset, error_code=0))
                    continue
            parts.append(DRP(partition_index=idx, low_watermark=-1, error_code=code))
        topics.append(DRT(name=rt.name, partitions=parts))
    if moved:
        broker.appends.notify()  # fetches below the new start must now answer OFFSET_OUT_OF_RANGE
    return ctx.response(throttle_time_ms=0, topics=topics)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DELETE_RECORDS)
async def authorize_delete_records(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    TR = response_class(ApiKey.DELETE_RECORDS, "DeleteRecordsTopicResult")
    P = TR.DeleteRecordsPartitionResult
    return await topics_allowed(ctx, req, handler, Op.DELETE, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=p.partition_index, low_watermark=-1, error_code=TOPIC_DENIED) for p in t.partitions])
        for t in denied))
