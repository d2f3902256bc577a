"""ListGroups v0-v5: the classic, consumer (KIP-848) and share (KIP-932) groups this broker
coordinates, filtered by state (v4+) and type (v5+).

Authorization: every group with DESCRIBE on the cluster, else the groups the principal may DESCRIBE.
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import coordinator_fields
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import Handler, allowed, authorizes, cluster


@handles(ApiKey.LIST_GROUPS)
async def list_groups(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.groups
    listed = []
    error: int = ErrorCode.NONE
    for p in shell.owned_partitions():
        r: g.ListGroupsResult = await shell.call(p, g.ListGroups(
            states_filter=list(req.states_filter or []), types_filter=list(req.types_filter or []),
            **coordinator_fields(ctx)))
        error = error or r.error_code
        listed.extend(r.groups)
    resp = ctx.response(throttle_time_ms=0, error_code=error, groups=[])
    resp.groups = [resp.ListedGroup(group_id=x.group_id, protocol_type=x.protocol_type, group_state=x.group_state,
                                    group_type=x.group_type) for x in listed]
    resp.groups += [resp.ListedGroup(group_id=gid, protocol_type="share", group_state=state, group_type="share")
                    for gid, state in ctx.broker.share_groups.listed(req.states_filter, req.types_filter)]
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.LIST_GROUPS)
async def authorize_list_groups(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    response = await handler(ctx, req)
    if not cluster(ctx, Op.DESCRIBE):
        response.groups = [g for g in response.groups if allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id)]
    return response
