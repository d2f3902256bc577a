"""JoinGroup v0-v9 (classic consumer groups; the state machine is coordinator/group/).

Quirks: v0 has no rebalance timeout (the session timeout is used); the protocol name is "" rather
than null before v7; the join carries the cluster's topics and partition racks for server-side
assignment. Results come from the pure coordinator; this module only converts them.
Authorization: READ on the group.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.consumer import JoinGroupResponse

from coordinator.group import coordinator as g
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import coordinator_fields, partition_racks_view, topics_view
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import Handler, authorizes, group_allowed


@handles(ApiKey.JOIN_GROUP)
async def join_group(ctx: RequestContext, req: Any) -> Any:
    request = g.JoinGroup(group_id=req.group_id, session_timeout_ms=req.session_timeout_ms,
                          rebalance_timeout_ms=req.rebalance_timeout_ms if ctx.api_version >= 1 else -1,
                          member_id=req.member_id or "", group_instance_id=req.group_instance_id,
                          protocol_type=req.protocol_type,
                          protocols=[(p.name, bytes(p.metadata)) for p in req.protocols],
                          reason=req.reason, topics=topics_view(ctx),
                          partition_racks=partition_racks_view(ctx), **coordinator_fields(ctx))
    r: g.JoinGroupResult = await ctx.broker.groups.call_for(req.group_id, request)
    members = [JoinGroupResponse.JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                                      metadata=m.metadata) for m in r.members]
    protocol_name = r.protocol_name
    if protocol_name is None and ctx.api_version < 7:
        protocol_name = ""
    return ctx.response(throttle_time_ms=0, error_code=r.error_code, generation_id=r.generation_id,
                        protocol_type=r.protocol_type, protocol_name=protocol_name, leader=r.leader,
                        skip_assignment=r.skip_assignment, member_id=r.member_id, members=members)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.JOIN_GROUP)
def authorize_join_group(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return group_allowed(ctx, req, handler, Op.READ, generation_id=-1, protocol_type=None, protocol_name=None,
                        leader="", skip_assignment=False, member_id=req.member_id or "", members=[])
