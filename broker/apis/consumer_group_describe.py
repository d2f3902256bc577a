"""ConsumerGroupDescribe v0-v1 (v1: MemberType, always 1 = consumer member since classic
members never join consumer groups here).

Quirks: topics are named by the cluster's current ids (a deleted topic's partitions are left out);
authorized operations are "not requested" unless asked for (then, without an authorizer, every
group operation).
Authorization: DESCRIBE on each group (denied ones answer GROUP_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

import uuid
from typing import Any

from coordinator.group import consumer as cg
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import coordinator_fields
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import GROUP_OPERATIONS, Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, Handler, allowed, authorizer_of, authorizes, response_class

_AUTHORIZED_OPERATIONS_OMITTED = -2147483648

_ALL_GROUP_OPERATIONS = sum(1 << op for op in GROUP_OPERATIONS)   # an int32 in this response


@handles(ApiKey.CONSUMER_GROUP_DESCRIBE)
async def consumer_group_describe(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.groups
    by_partition: dict[int, list[str]] = {}
    for gid in req.group_ids:
        by_partition.setdefault(shell.coordinator_for(gid or "")[0], []).append(gid)
    described: dict[str, cg.DescribedConsumerGroup] = {}
    for p, gids in by_partition.items():
        r: cg.ConsumerGroupDescribeResult = await shell.call(
            p, cg.ConsumerGroupDescribe(groups=gids, **coordinator_fields(ctx)))
        described.update({d.group_id: d for d in r.groups})
    topics = {t.topic_id: t for t in topic_catalog.all_topics(ctx.broker).values()}
    resp = ctx.response(throttle_time_ms=0, groups=[])
    DG = resp.DescribedGroup

    def assignment(a: dict[uuid.UUID, frozenset[int]]) -> Any:
        return DG.Member.Assignment(topic_partitions=[
            DG.Member.Assignment.TopicPartitions(topic_id=tid, topic_name=topics[tid].name, partitions=sorted(ps))
            for tid, ps in sorted(a.items(), key=lambda kv: str(kv[0])) if tid in topics and ps])

    for gid in req.group_ids:
        d = described[gid or ""]
        resp.groups.append(DG(
            error_code=d.error_code, error_message=d.error_message, group_id=gid, group_state=d.group_state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch, assignor_name=d.assignor_name,
            members=[DG.Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                               member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                               subscribed_topic_names=m.subscribed_topic_names,
                               subscribed_topic_regex=m.subscribed_topic_regex,
                               assignment=assignment(m.assignment),
                               target_assignment=assignment(m.target_assignment),
                               member_type=m.member_type) for m in d.members],
            # without an authorizer Kafka (AuthHelper.authorizedOperations) answers every group operation
            authorized_operations=_ALL_GROUP_OPERATIONS if getattr(req, "include_authorized_operations", False)
            and not d.error_code else _AUTHORIZED_OPERATIONS_OMITTED))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.CONSUMER_GROUP_DESCRIBE)   # ConsumerGroupDescribe: DESCRIBE on each group; denied ones answer GROUP_AUTHORIZATION_FAILED
async def authorize_consumer_group_describe(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    response = await handler(ctx, req)
    G = response_class(ApiKey.CONSUMER_GROUP_DESCRIBE, "DescribedGroup")
    response.groups = [g if allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id) else
                       G(error_code=GROUP_DENIED, error_message=None, group_id=g.group_id, group_state="",
                         group_epoch=0, assignment_epoch=0, assignor_name="", members=[],   # schema defaults
                         authorized_operations=-2147483648)
                       for g in response.groups]
    if getattr(req, "include_authorized_operations", False):   # KafkaApis: the allowed groups' own
        auth = authorizer_of(ctx)
        for g in response.groups:
            if g.error_code == 0:
                ops = auth.authorized_operations(ctx.principal, ctx.client_host, RT.GROUP, g.group_id,
                                                 GROUP_OPERATIONS)
                g.authorized_operations = sum(1 << op for op in ops)   # an int32 here, Kafka's bit field
    return response
