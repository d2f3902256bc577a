"""KIP-848 consumer-group APIs: ConsumerGroupHeartbeat v0-v1, ConsumerGroupDescribe v0-v1 (v1: MemberType,
always 1 = consumer member since classic members never join consumer groups here).

Quirks: the heartbeat carries the cluster's current (non-internal) topics (broker/metadata/topic_catalog.py) to the pure coordinator,
which compares them with the group's subscription metadata on every heartbeat (topic creation,
deletion and partition growth reach the target assignment at once); ConsumerGroupDescribe names
topics by the cluster's current ids (a deleted topic's partitions are left out) and reports
authorized operations as "not requested". Results come from coordinator/group/consumer.py; this
module only converts them.
"""
from __future__ import annotations

import uuid
from typing import Any

from coordinator.group import consumer as cg

from broker.metadata import topic_catalog
from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles
from broker.security.acl import GROUP_OPERATIONS
from broker.apis.shared.common import (coordinator_fields, group_heartbeat_answer, other_group_type_answer, partition_racks_view,
                     topics_view)

_AUTHORIZED_OPERATIONS_OMITTED = -2147483648
_ALL_GROUP_OPERATIONS = sum(1 << op for op in GROUP_OPERATIONS)   # an int32 in this response


_topics_view = topics_view


@handles(ApiKey.CONSUMER_GROUP_HEARTBEAT)
async def consumer_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    owned = None if req.topic_partitions is None else [
        (tp.topic_id, list(tp.partitions)) for tp in req.topic_partitions]
    request = cg.ConsumerGroupHeartbeat(
        group_id=req.group_id or "", member_id=req.member_id or "", member_epoch=req.member_epoch,
        instance_id=req.instance_id, rack_id=req.rack_id, rebalance_timeout_ms=req.rebalance_timeout_ms,
        subscribed_topic_names=None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
        subscribed_topic_regex=getattr(req, "subscribed_topic_regex", None) if ctx.api_version >= 1 else None,
        server_assignor=req.server_assignor, topic_partitions=owned, topics=_topics_view(ctx),
        partition_racks=partition_racks_view(ctx),
        **coordinator_fields(ctx))
    if (req.group_id or "") in ctx.broker.share_groups.coordinator.groups:   # KIP-932: ids are shared with them
        return other_group_type_answer(ctx, req.group_id, req.member_epoch, "consumer")
    r: cg.ConsumerGroupHeartbeatResult = await ctx.broker.groups.call_for(req.group_id or "", request)
    return group_heartbeat_answer(ctx, r)


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
