"""ShareAcknowledge v1-v2 (KIP-932): acknowledges records acquired by ShareFetch. v2 (Kafka 4.2,
KIP-1222) adds RENEW (type 4): the member's acquisition locks on those records start again for the
group's ``share.record.lock.duration.ms``, answered as AcquisitionLockTimeoutMs; the records are not
delivered again.

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
from broker.metadata.group_configs import share_group_settings
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, authorizes, share_records_allowed


@handles(ApiKey.SHARE_ACKNOWLEDGE)
async def share_acknowledge(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    group_id, member_id, epoch = req.group_id or "", req.member_id or "", req.share_session_epoch
    resp = ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, responses=[],
                        node_endpoints=[], acquisition_lock_timeout_ms=shares.lock_duration_ms)
    if not group_id or not member_id:
        resp.error_code, resp.error_message = ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set."
        return resp
    code = shares.sessions.acknowledge(group_id, member_id, epoch)
    if code:
        resp.error_code = code
        return resp
    lock_ms = share_group_settings(ctx.broker, group_id).record_lock_duration_ms
    resp.acquisition_lock_timeout_ms = lock_ms
    for t in req.topics:         # RENEW extends locks by the group's duration
        for p in t.partitions:
            sp = shares.existing(group_id, t.topic_id, p.partition_index)
            if sp is not None:
                sp.lock_duration_ms = lock_ms
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
