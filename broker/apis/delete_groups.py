"""DeleteGroups v0-v2 (share groups too: Admin.deleteShareGroups uses it).

Authorization: DELETE on each group (denied ones answer GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import call_per_coordinator_partition, coordinator_fields
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, Handler, allowed, answer_allowed, authorizes, response_class


@handles(ApiKey.DELETE_GROUPS)
async def delete_groups(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups    # KIP-932 share groups are deleted here too (Admin.deleteShareGroups)
    by_group = {gid: await shares.delete(gid, ctx.broker.now_ms()) for gid in req.groups_names if shares.has(gid)}
    results = await call_per_coordinator_partition(ctx, [gid for gid in req.groups_names if gid not in by_group],
                                   lambda gids: g.DeleteGroups(groups=gids, **coordinator_fields(ctx)))
    by_group.update({x.group_id: x.error_code for r in results.values() for x in r.results})
    resp = ctx.response(throttle_time_ms=0, results=[])
    resp.results = [resp.DeletableGroupResult(group_id=gid, error_code=by_group[gid]) for gid in req.groups_names]
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DELETE_GROUPS)
async def authorize_delete_groups(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    denied = [g for g in req.groups_names if not allowed(ctx, Op.DELETE, RT.GROUP, g)]
    R = response_class(ApiKey.DELETE_GROUPS, "DeletableGroupResult")
    return await answer_allowed(ctx, req, handler, "groups_names", [g for g in req.groups_names if g not in denied],
                                 denied, "results", lambda denied: (R(group_id=g, error_code=GROUP_DENIED)
                                                                    for g in denied))
