"""ConsumerGroupHeartbeat v0-v1 (KIP-848 consumer groups; the state machine is
coordinator/group/consumer.py).

Quirks: the heartbeat carries the cluster's current (non-internal) topics
(broker/metadata/topic_catalog.py) to the pure coordinator, which compares them with the group's
subscription metadata on every heartbeat (topic creation, deletion and partition growth reach the
target assignment at once); v1 adds the subscribed topic regex; a group id of a share group answers
GROUP_ID_NOT_FOUND (KIP-932: consumer and share groups share one id space).
Authorization: READ on the group.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from coordinator.group import consumer as cg
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import (coordinator_fields, group_heartbeat_answer, other_group_type_answer,
                                       partition_racks_view, topics_view)
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, Handler, allowed, authorizes, whole_request

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


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.CONSUMER_GROUP_HEARTBEAT)   # ConsumerGroupHeartbeat: READ on the group
def authorize_consumer_group_heartbeat(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return whole_request(ctx, req, handler, allowed(ctx, Op.READ, RT.GROUP, req.group_id), GROUP_DENIED)
