"""Classic consumer-group APIs: FindCoordinator v0-v6, JoinGroup v0-v9, SyncGroup v0-v5,
Heartbeat v0-v4, LeaveGroup v0-v5, DescribeGroups v0-v6, ListGroups v0-v5, DeleteGroups v0-v2.

Quirks: FindCoordinator v4+ batches keys; key type 1 locates the transaction coordinator
(the ``__transaction_state`` partition of the id, created on first use). JoinGroup v0 has no rebalance timeout
(the session timeout is used); LeaveGroup v0-v2 name one member and return one error.
DescribeGroups reports authorized operations as "not requested" (-2147483648) because
kafka-python rejects any other bitmask for classic groups. Results come from the pure
coordinator (coordinator/group/coordinator.py); this module only converts them.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafka.protocol.consumer import JoinGroupResponse
from kafka.protocol.metadata import FindCoordinatorResponse

from coordinator.group import coordinator as g
from protocol.errors import ErrorCode

from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles
from broker.security.acl import GROUP_OPERATIONS
from broker.apis.shared.common import coordinator_fields, partition_racks_view, topics_view

GROUP_KEY, TRANSACTION_KEY = 0, 1


@handles(ApiKey.FIND_COORDINATOR)
async def find_coordinator(ctx: RequestContext, req: Any) -> Any:
    if ctx.broker.cluster is not None:  # cluster mode: the leader of the key's internal partition
        from broker.coordinator_runtime.placement import find_coordinator as cluster_find_coordinator
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


@handles(ApiKey.HEARTBEAT)
async def heartbeat(ctx: RequestContext, req: Any) -> Any:
    request = g.Heartbeat(group_id=req.group_id, generation_id=req.generation_id, member_id=req.member_id,
                          group_instance_id=req.group_instance_id, **coordinator_fields(ctx))
    r: g.HeartbeatResult = await ctx.broker.groups.call_for(req.group_id, request)
    return ctx.response(throttle_time_ms=0, error_code=r.error_code)


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


async def _per_partition(ctx: RequestContext, group_ids: list[str], make: Any) -> dict[str, Any]:
    """Split a multi-group request by coordinator partition; results by group id."""
    by_partition: dict[int, list[str]] = defaultdict(list)
    for gid in group_ids:
        by_partition[ctx.broker.groups.coordinator_for(gid or "")[0]].append(gid)
    results: dict[str, Any] = {}
    for p, gids in by_partition.items():
        results[p] = await ctx.broker.groups.call(p, make(gids))
    return results


@handles(ApiKey.DESCRIBE_GROUPS)
async def describe_groups(ctx: RequestContext, req: Any) -> Any:
    results = await _per_partition(ctx, list(req.groups),
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


@handles(ApiKey.LIST_GROUPS)
async def list_groups(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.groups
    listed = []
    error = ErrorCode.NONE
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


@handles(ApiKey.DELETE_GROUPS)
async def delete_groups(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups    # KIP-932 share groups are deleted here too (Admin.deleteShareGroups)
    by_group = {gid: shares.delete(gid, ctx.broker.now_ms()) for gid in req.groups_names if shares.has(gid)}
    results = await _per_partition(ctx, [gid for gid in req.groups_names if gid not in by_group],
                                   lambda gids: g.DeleteGroups(groups=gids, **coordinator_fields(ctx)))
    by_group.update({x.group_id: x.error_code for r in results.values() for x in r.results})
    resp = ctx.response(throttle_time_ms=0, results=[])
    resp.results = [resp.DeletableGroupResult(group_id=gid, error_code=by_group[gid]) for gid in req.groups_names]
    return resp
