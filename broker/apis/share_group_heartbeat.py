"""ShareGroupHeartbeat v1 (KIP-932).

Quirks: the heartbeat carries the cluster's current topics; a group id of a classic or consumer
group answers GROUP_ID_NOT_FOUND, as Kafka. The group configs ``share.session.timeout.ms`` and
``share.heartbeat.interval.ms`` (broker/metadata/group_configs.py) are read on every heartbeat.
Persistence (Kafka's): NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when the group's
``__consumer_offsets`` partition is not coordinated here; otherwise the heartbeat's share-group records
are written there and the answer leaves once they are committed (a write that fails answers its
error, e.g. COORDINATOR_NOT_AVAILABLE, and the group is reloaded from the log).
Authorization: READ on the group, DESCRIBE on every subscribed topic.
"""
from __future__ import annotations

import dataclasses
import uuid
from typing import Any
from collections.abc import Awaitable

from coordinator.share.group import ShareGroupHeartbeat
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import coordinator_fields, group_heartbeat_answer, other_group_type_answer
from broker.metadata import topic_catalog
from broker.metadata.group_configs import share_group_settings
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, TOPIC_DENIED, Handler, allowed, authorizes, whole_request


def _topics_view(ctx: RequestContext) -> dict[str, tuple[uuid.UUID, int]]:
    return {name: (t.topic_id, t.partition_count) for name, t in topic_catalog.all_topics(ctx.broker).items()
            if not t.internal}


@handles(ApiKey.SHARE_GROUP_HEARTBEAT)
async def share_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    fields = coordinator_fields(ctx)
    request = ShareGroupHeartbeat(
        group_id=req.group_id or "", member_id=req.member_id or "", member_epoch=req.member_epoch,
        rack_id=req.rack_id,
        subscribed_topic_names=None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
        client_id=fields["client_id"], client_host=fields["client_host"], topics=_topics_view(ctx))
    if request.group_id not in shares.coordinator.groups and request.group_id \
            and ctx.broker.groups.coordinator_for(request.group_id)[1].has_group(request.group_id):
        return other_group_type_answer(ctx, request.group_id, request.member_epoch, "share")
    if request.group_id:
        code = shares.coordinator_error(request.group_id)
        if code:
            return group_heartbeat_answer(ctx, shares.coordinator.unavailable(request, code))
        settings = share_group_settings(ctx.broker, request.group_id)
        shares.coordinator.configure(request.group_id, settings.session_timeout_ms, settings.heartbeat_interval_ms)
    r = shares.coordinator.heartbeat(request, ctx.broker.now_ms())
    code = await shares.write_records(request.group_id)
    shares.settle_departures()
    if code and not r.error_code:
        r = dataclasses.replace(r, error_code=code, error_message=None, assignment=None)
    return group_heartbeat_answer(ctx, r)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.SHARE_GROUP_HEARTBEAT)   # ShareGroupHeartbeat: READ on the group, DESCRIBE on every subscribed topic (v1)
def authorize_share_group_heartbeat(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        return whole_request(ctx, req, handler, False, GROUP_DENIED)
    topics = req.subscribed_topic_names or []
    return whole_request(ctx, req, handler, all(allowed(ctx, Op.DESCRIBE, RT.TOPIC, t) for t in topics),
                          TOPIC_DENIED)
