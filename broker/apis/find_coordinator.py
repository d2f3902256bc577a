"""FindCoordinator v0-v6.

Quirks: v4+ batches keys; key type 1 locates the transaction coordinator (the
``__transaction_state`` partition of the id, created on first use); key type 2 (SHARE, between
brokers) the share coordinator of a share partition (``"<group>:<topic id>:<partition>"``, its
``__share_group_state`` partition; a key not of that form is INVALID_REQUEST); Kafka fills error_message with
"NONE" on success. In a cluster the coordinator is the leader of the key's internal partition
(broker/coordinator_runtime/placement.py), COORDINATOR_NOT_AVAILABLE while it has no live leader.
Authorization: DESCRIBE on the group or transactional id (v0-v3 answer Kafka's message); CLUSTER_ACTION
on the cluster for key type 2, as Kafka.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import FindCoordinatorResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.coordinator_runtime.placement import GROUP_KEY, SHARE_KEY, TRANSACTION_KEY, locate_coordinator, share_key_error
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (CLUSTER_DENIED, DENIED_MESSAGES, GROUP_DENIED, TXN_DENIED, Handler, allowed,
                                   answer_allowed, authorizes, cluster, response_class, whole_request)


@handles(ApiKey.FIND_COORDINATOR)
async def find_coordinator(ctx: RequestContext, req: Any) -> Any:
    if ctx.broker.cluster is not None:  # cluster mode: the leader of the key's internal partition
        return await cluster_find_coordinator(ctx, req)
    adv = ctx.advertised
    key_type = req.key_type or GROUP_KEY

    # Kafka fills error_message with Errors.message() even on success, which for NONE is "NONE".
    def locate(key: str) -> tuple[int, str | None]:
        if key_type == GROUP_KEY:
            ctx.broker.groups.coordinator_for(key or "")
            return ErrorCode.NONE, "NONE"
        if key_type == TRANSACTION_KEY:
            ctx.broker.txns.coordinator_for(key or "")
            return ErrorCode.NONE, "NONE"
        if key_type == SHARE_KEY:
            if (reason := share_key_error(key)) is not None:
                return ErrorCode.INVALID_REQUEST, reason
            ctx.broker.share_coordinator.coordinator_for(key)
            return ErrorCode.NONE, "NONE"
        return ErrorCode.INVALID_REQUEST, f"Unknown coordinator type {key_type}"

    if ctx.api_version >= 4:
        coords = []
        for key in req.coordinator_keys:
            err, msg = locate(key)
            ok = err == ErrorCode.NONE
            coords.append(FindCoordinatorResponse.Coordinator(
                key=key, node_id=ctx.broker.node_id if ok else -1, host=adv.host if ok else "",
                port=adv.port if ok else -1, error_code=err, error_message=msg))
        return ctx.response(throttle_time_ms=0, coordinators=coords)
    err, msg = locate(req.key)
    ok = err == ErrorCode.NONE
    return ctx.response(throttle_time_ms=0, error_code=err, error_message=msg,
                        node_id=ctx.broker.node_id if ok else -1, host=adv.host if ok else "",
                        port=adv.port if ok else -1)


async def cluster_find_coordinator(ctx: RequestContext, req: Any) -> Any:
    key_type = req.key_type or GROUP_KEY
    if ctx.api_version >= 4:
        from kafka.protocol.metadata import FindCoordinatorResponse

        coords = []
        for key in req.coordinator_keys:
            err, msg, node, host, port = await locate_coordinator(ctx, key_type, key)
            coords.append(FindCoordinatorResponse.Coordinator(key=key, node_id=node, host=host, port=port,
                                                              error_code=err, error_message=msg))
        return ctx.response(throttle_time_ms=0, coordinators=coords)
    err, msg, node, host, port = await locate_coordinator(ctx, key_type, req.key)
    return ctx.response(throttle_time_ms=0, error_code=err, error_message=msg, node_id=node, host=host, port=port)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.FIND_COORDINATOR)
async def authorize_find_coordinator(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    if req.key_type == SHARE_KEY:    # Kafka: the share coordinator is found by brokers only
        return await whole_request(ctx, req, handler, cluster(ctx, Op.CLUSTER_ACTION), CLUSTER_DENIED)
    rtype, code = (RT.TRANSACTIONAL_ID, TXN_DENIED) if req.key_type == 1 else (RT.GROUP, GROUP_DENIED)
    if ctx.api_version < 4:
        if allowed(ctx, Op.DESCRIBE, rtype, req.key):
            return await handler(ctx, req)
        return ctx.response(throttle_time_ms=0, error_code=code, error_message=DENIED_MESSAGES[code], node_id=-1,
                            host="", port=-1, coordinators=[])   # Kafka's v0-3 answer carries error.message()
    denied = [k for k in req.coordinator_keys if not allowed(ctx, Op.DESCRIBE, rtype, k)]
    C = response_class(ApiKey.FIND_COORDINATOR, "Coordinator")
    return await answer_allowed(
        ctx, req, handler, "coordinator_keys", [k for k in req.coordinator_keys if k not in denied], denied,
        "coordinators", lambda denied: (C(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None)
                                        for k in denied))
