"""DescribeProducers v0: the active producers of partitions this broker leads (Kafka's
activeProducerState).

Quirks: a partition without a local replica, or of which this broker is a follower, answers
NOT_LEADER_OR_FOLLOWER; a producer's current transaction start offset is -1 when none is open.
Authorization: READ on each topic.
"""
from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import absent_partition_error
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import DENIED_MESSAGES, TOPIC_DENIED, Handler, authorizes, response_class, topics_allowed


@handles(ApiKey.DESCRIBE_PRODUCERS)
async def describe_producers(ctx: RequestContext, req: Any) -> Any:
    resp = ctx.response(throttle_time_ms=0, topics=[])
    TR = resp.TopicResponse
    PR = TR.PartitionResponse
    for t in req.topics:
        parts = []
        for idx in t.partition_indexes:
            part = ctx.broker.logs.partition(t.name, idx)
            # Kafka's activeProducerState: no local replica, or a follower: NOT_LEADER_OR_FOLLOWER
            err = absent_partition_error(ctx.broker, t.name, idx) if part is None else \
                ErrorCode.NOT_LEADER_OR_FOLLOWER if part.replica is not None and not part.replica.is_leader else 0
            if err:
                parts.append(PR(partition_index=idx, error_code=err, error_message=None, active_producers=[]))
                continue
            assert part is not None   # an absent partition answers an error
            producers = [PR.ProducerState(
                producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                coordinator_epoch=e.coordinator_epoch, current_txn_start_offset=part.ongoing_txns.get(pid, -1))
                for pid, e in sorted(part.producers.producers.items())]
            parts.append(PR(partition_index=idx, error_code=0, error_message=None, active_producers=producers))
        resp.topics.append(TR(name=t.name, partitions=parts))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_PRODUCERS)
async def authorize_describe_producers(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    TR = response_class(ApiKey.DESCRIBE_PRODUCERS, "TopicResponse")
    P = TR.PartitionResponse
    return await topics_allowed(ctx, req, handler, Op.READ, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=i, error_code=TOPIC_DENIED, error_message=DENIED_MESSAGES[TOPIC_DENIED], active_producers=[])
        for i in t.partition_indexes]) for t in denied))
