"""DescribeGroups v0-v6.

Quirks: authorized operations are "not requested" (-2147483648) unless asked for, because
kafka-python rejects any other bitmask for classic groups; without an authorizer every group
operation is granted when asked, as Kafka's AuthHelper answers.
Authorization: DESCRIBE on each group (denied ones answer GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import call_per_coordinator_partition, coordinator_fields
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import GROUP_OPERATIONS, Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, Handler, allowed, authorizer_of, authorizes, response_class


@handles(ApiKey.DESCRIBE_GROUPS)
async def describe_groups(ctx: RequestContext, req: Any) -> Any:
    results = await call_per_coordinator_partition(ctx, list(req.groups),
                                   lambda gids: g.DescribeGroups(groups=gids, **coordinator_fields(ctx)))
    described = {d.group_id: d for r in results.values() for d in r.groups}
    resp = ctx.response(throttle_time_ms=0, groups=[])
    DG = resp.DescribedGroup
    for gid in req.groups:
        d = described[gid]
        resp.groups.append(DG(
            error_code=d.error_code, error_message=d.error_message, group_id=d.group_id,
            group_state=d.group_state, protocol_type=d.protocol_type, protocol_data=d.protocol_data,
            members=[DG.DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                             client_id=m.client_id, client_host=m.client_host,
                                             member_metadata=m.member_metadata,
                                             member_assignment=m.member_assignment) for m in d.members],
            # without an authorizer Kafka (AuthHelper.authorizedOperations) answers every group operation
            authorized_operations=set(GROUP_OPERATIONS) if req.include_authorized_operations and not d.error_code
            else None))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_GROUPS)
async def authorize_describe_groups(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    denied = [grp for grp in req.groups if not allowed(ctx, Op.DESCRIBE, RT.GROUP, grp)]
    req.groups = [grp for grp in req.groups if grp not in denied]
    response = await handler(ctx, req) if req.groups else ctx.response(throttle_time_ms=0, groups=[])
    if getattr(req, "include_authorized_operations", False):
        auth = authorizer_of(ctx)
        for grp in response.groups:
            if not grp.error_code:   # KafkaApis: described groups only
                grp.authorized_operations = auth.authorized_operations(ctx.principal, ctx.client_host, RT.GROUP,
                                                                     grp.group_id, GROUP_OPERATIONS)
    if not denied:
        return response
    D = response_class(ApiKey.DESCRIBE_GROUPS, "DescribedGroup")
    response.groups.extend(D(error_code=GROUP_DENIED, error_message=None, group_id=grp, group_state="",
                             protocol_type="", protocol_data="", members=[], authorized_operations=None)
                           for grp in denied)
    return response
