"""Heartbeat v0-v4 (classic consumer groups).

Authorization: READ on the group.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from coordinator.group import coordinator as g
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import coordinator_fields
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import Handler, authorizes, group_allowed


@handles(ApiKey.HEARTBEAT)
async def heartbeat(ctx: RequestContext, req: Any) -> Any:
    request = g.Heartbeat(group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
                          group_instance_id=req.group_instance_id, **coordinator_fields(ctx))
    r: g.HeartbeatResult = await ctx.broker.groups.call_for(req.group_id, request)
    return ctx.response(throttle_time_ms=0, error_code=r.error_code)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.HEARTBEAT)
def authorize_heartbeat(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return group_allowed(ctx, req, handler, Op.READ)
