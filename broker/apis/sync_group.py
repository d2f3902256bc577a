"""SyncGroup v0-v5: the leader's assignment to every member.

Quirks: protocol type and name are checked from v5 only.
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


@handles(ApiKey.SYNC_GROUP)
async def sync_group(ctx: RequestContext, req: Any) -> Any:
    request = g.SyncGroup(group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
                          group_instance_id=req.group_instance_id,
                          protocol_type=req.protocol_type if ctx.api_version >= 5 else None,
                          protocol_name=req.protocol_name if ctx.api_version >= 5 else None,
                          assignments=[(a.member_id, bytes(a.assignment)) for a in req.assignments],
                          **coordinator_fields(ctx))
    r: g.SyncGroupResult = await ctx.broker.groups.call_for(req.group_id, request)
    return ctx.response(throttle_time_ms=0, error_code=r.error_code, protocol_type=r.protocol_type,
                        protocol_name=r.protocol_name, assignment=r.assignment)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.SYNC_GROUP)
def authorize_sync_group(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return group_allowed(ctx, req, handler, Op.READ, protocol_type=None, protocol_name=None, assignment=b"")
