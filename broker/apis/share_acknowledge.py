"""ShareAcknowledge v1 (KIP-932): acknowledges records acquired by ShareFetch.

Quirks: epoch -1 closes the share session and releases the member's remaining acquired records;
partitions answered NOT_LEADER_OR_FOLLOWER name the current leader and its endpoint.
Authorization: READ on the group and on each topic.
"""
from __future__ import annotations

import uuid
from typing import Any
from collections.abc import Awaitable

from coordinator.share.partition import FINAL_SESSION_EPOCH
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.share_partitions import acknowledge, current_leader, node_endpoints
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, authorizes, share_records_allowed


@handles(ApiKey.SHARE_ACKNOWLEDGE)
async def share_acknowledge(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    group_id, member_id, epoch = req.group_id or "", req.member_id or "", req.share_session_epoch
    resp = ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, responses=[],
                        node_endpoints=[])
    if not group_id or not member_id:
        resp.error_code, resp.error_message = ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set."
        return resp
    code = shares.sessions.acknowledge(group_id, member_id, epoch)
    if code:
        resp.error_code = code
        return resp
    acks = await acknowledge(ctx, group_id, member_id, req.topics)
    if epoch == FINAL_SESSION_EPOCH:
        shares.release(group_id, member_id)
    T = resp.ShareAcknowledgeTopicResponse
    P = T.PartitionData
    by_topic: dict[uuid.UUID, list] = {}
    for (tid, index), code in sorted(acks.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        by_topic.setdefault(tid, []).append(P(partition_index=index, error_code=code, error_message=None,
                                              current_leader=current_leader(ctx, tid, index, P.LeaderIdAndEpoch)))
    resp.responses = [T(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()]
    resp.node_endpoints = node_endpoints(ctx, resp.responses, type(resp))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.SHARE_ACKNOWLEDGE)   # ShareAcknowledge: READ on the group and on each topic
def authorize_share_acknowledge(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return share_records_allowed(ctx, req, handler, ApiKey.SHARE_ACKNOWLEDGE, "ShareAcknowledgeTopicResponse", {})
