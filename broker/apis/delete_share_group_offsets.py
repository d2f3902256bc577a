"""DeleteShareGroupOffsets v0 (KIP-932; the Admin's deleteShareGroupOffsets, kafka-share-groups.sh
--delete-offsets): the share group's state for every partition of each named topic goes.

Quirks: as Kafka's GroupCoordinatorService, the share group must exist (GROUP_ID_NOT_FOUND) and have
no members (NON_EMPTY_GROUP), a top-level error; each partition's state is deleted through
``broker.share_persister`` (DeleteShareGroupState); an unknown topic answers
UNKNOWN_TOPIC_OR_PARTITION; a topic's answer is its first partition's error.
Authorization: DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the request), READ on each
topic (else TOPIC_AUTHORIZATION_FAILED for it).
"""
from __future__ import annotations

from typing import Any

from coordinator.share.persister import SharePartitionKey
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema_messages import DeleteShareGroupOffsetsResponse

from broker.apis.shared.share_offsets import authorize_offsets_change, refused
from broker.common.services import RequestScope
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import TOPIC_DENIED, Handler, authorizes

T = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic
UNKNOWN = "This server does not host this topic-partition."


@handles(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
async def delete_share_group_offsets(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    if (refusal := refused(ctx, req.group_id)) is not None:
        return refusal
    responses = []
    for topic in req.topics:
        t = topic_catalog.topic(broker, topic.topic_name)
        if t is None:
            responses.append(T(topic_name=topic.topic_name, topic_id=topic_catalog.ZERO_UUID,
                               error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=UNKNOWN))
            continue
        err = 0
        for p in range(t.partition_count):
            code = await broker.share_persister.delete_state(SharePartitionKey(req.group_id, t.topic_id, p))
            if not code:    # nor served from this broker's memory any longer
                broker.share_groups.drop((req.group_id, t.topic_id, p))
            err = err or code
        responses.append(T(topic_name=topic.topic_name, topic_id=t.topic_id, error_code=err, error_message=None))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, responses=responses)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DELETE_SHARE_GROUP_OFFSETS)   # DELETE on the group; READ on each topic
async def authorize_delete_share_group_offsets(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    return await authorize_offsets_change(ctx, req, handler, Op.DELETE, lambda t: T(
        topic_name=t.topic_name, topic_id=topic_catalog.ZERO_UUID, error_code=TOPIC_DENIED, error_message=None))
