"""DescribeGroups v0-v6.
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from protocol.api_keys import ApiKey

from broker.apis.shared.common import call_per_coordinator_partition, coordinator_fields
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import GROUP_OPERATIONS


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
