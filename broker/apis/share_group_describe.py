"""ShareGroupDescribe v1 (KIP-932).

Quirks: authorized operations are reported as "not requested". A group whose ``__consumer_offsets``
partition is not coordinated here answers NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it
loads); members whose session expired are removed first and that change is written (and committed)
before the answer, as any change of a share group (broker/coordinator_runtime/share_runtime.py).
Authorization: DESCRIBE on each group (denied ones answer GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from typing import Any

from coordinator.share.group import ASSIGNOR_NAME, ShareGroupDescribe
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, Handler, allowed, authorizes, response_class

_AUTHORIZED_OPERATIONS_OMITTED = -2147483648


@handles(ApiKey.SHARE_GROUP_DESCRIBE)
async def share_group_describe(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    described = []
    for gid in [g or "" for g in req.group_ids]:    # one at a time: each group's records, then its answer
        code = shares.coordinator_error(gid) if gid else 0
        if code:
            described += shares.coordinator.unavailable(ShareGroupDescribe([gid]), code)
            continue
        (d,) = shares.coordinator.describe([gid], ctx.broker.now_ms())
        code = await shares.write_records(gid)
        described.append(shares.coordinator.unavailable(ShareGroupDescribe([gid]), code)[0] if code else d)
    shares.settle_departures()
    topics = {t.topic_id: t for t in topic_catalog.all_topics(ctx.broker).values()}
    resp = ctx.response(throttle_time_ms=0, groups=[])
    DG = resp.DescribedGroup
    for d in described:
        resp.groups.append(DG(
            error_code=d.error_code, error_message=d.error_message, group_id=d.group_id, group_state=d.group_state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch, assignor_name=ASSIGNOR_NAME,
            members=[DG.Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                               client_id=m.client_id, client_host=m.client_host,
                               subscribed_topic_names=list(m.subscribed),
                               assignment=DG.Member.Assignment(topic_partitions=[
                                   DG.Member.Assignment.TopicPartitions(topic_id=tid, topic_name=topics[tid].name,
                                                                        partitions=sorted(ps))
                                   for tid, ps in sorted(m.assignment.items(), key=lambda kv: str(kv[0]))
                                   if tid in topics and ps]))
                     for m in d.members],
            authorized_operations=_AUTHORIZED_OPERATIONS_OMITTED))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.SHARE_GROUP_DESCRIBE)   # ShareGroupDescribe: DESCRIBE on each group; denied ones answer GROUP_AUTHORIZATION_FAILED
async def authorize_share_group_describe(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    response = await handler(ctx, req)
    G = response_class(ApiKey.SHARE_GROUP_DESCRIBE, "DescribedGroup")
    response.groups = [g if allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id) else
                       G(error_code=GROUP_DENIED, error_message=None, group_id=g.group_id, group_state="",
                         group_epoch=-1, assignment_epoch=-1, assignor_name="", members=[],
                         authorized_operations=-2147483648)
                       for g in response.groups]
    return response
