"""LeaveGroup v0-v5.

Quirks: v0-v2 name one member and return one error; v3+ name several, each answered.
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


@handles(ApiKey.LEAVE_GROUP)
async def leave_group(ctx: RequestContext, req: Any) -> Any:
    if ctx.api_version >= 3:
        members = [g.LeaveGroupMember(m.member_id, m.group_instance_id, getattr(m, "reason", None))
                   for m in req.members]
    else:
        members = [g.LeaveGroupMember(req.member_id)]
    r: g.LeaveGroupResult = await ctx.broker.groups.call_for(
        req.group_id, g.LeaveGroup(group_id=req.group_id, members=members, **coordinator_fields(ctx)))
    if ctx.api_version < 3:
        return ctx.response(throttle_time_ms=0, error_code=r.legacy_error_code)
    resp = ctx.response(throttle_time_ms=0, error_code=r.error_code, members=[])
    resp.members = [resp.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                        error_code=m.error_code) for m in r.members]
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.LEAVE_GROUP)
def authorize_leave_group(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return group_allowed(ctx, req, handler, Op.READ, members=[])
