"""AlterShareGroupOffsets v0 (KIP-932; the Admin's alterShareGroupOffsets, kafka-share-groups.sh
--reset-offsets): each named share partition starts afresh at the given offset.

Quirks: as Kafka's GroupCoordinatorService, the share group must exist (GROUP_ID_NOT_FOUND) and have
no members (NON_EMPTY_GROUP), a top-level error; each share partition is then initialized through
``broker.share_persister`` with the next state epoch (its current one + 1), which fences the
leader's older state (a share partition this broker has loaded is dropped at once, so its next
fetch reads the new state rather than serving the old one until its next write is fenced): an unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION in it.
Authorization: READ on the group (else GROUP_AUTHORIZATION_FAILED for the request), READ on each
topic (else TOPIC_AUTHORIZATION_FAILED in its partitions).
"""
from __future__ import annotations

from typing import Any

from coordinator.share.persister import SharePartitionKey
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.schema_messages import AlterShareGroupOffsetsResponse

from broker.apis.shared.share_offsets import authorize_offsets_change, refused
from broker.common.services import RequestScope
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import TOPIC_DENIED, Handler, authorizes

T = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
P = T.AlterShareGroupOffsetsResponsePartition
UNKNOWN = "This server does not host this topic-partition."


@handles(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
async def alter_share_group_offsets(ctx: RequestContext, req: Any) -> Any:
    broker = ctx.broker
    if (refusal := refused(ctx, req.group_id)) is not None:
        return refusal
    responses = []
    for topic in req.topics:
        t = topic_catalog.topic(broker, topic.topic_name)
        results = []
        for p in topic.partitions:
            if t is None or not t.has_partition(p.partition_index):
                results.append(P(partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 error_message=UNKNOWN))
                continue
            key = SharePartitionKey(req.group_id, t.topic_id, p.partition_index)
            summary = await broker.share_persister.read_summary(key)
            err = summary.error_code or await broker.share_persister.initialize_state(
                key, summary.state_epoch + 1, p.start_offset)
            if not err:     # the state this broker has loaded is fenced: the next fetch reads the new one
                broker.share_groups.drop((req.group_id, t.topic_id, p.partition_index))
            results.append(P(partition_index=p.partition_index, error_code=err, error_message=None))
        responses.append(T(topic_name=topic.topic_name, topic_id=t.topic_id if t else topic_catalog.ZERO_UUID,
                           partitions=results))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, responses=responses)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.ALTER_SHARE_GROUP_OFFSETS)   # READ on the group; READ on each topic
async def authorize_alter_share_group_offsets(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    return await authorize_offsets_change(ctx, req, handler, Op.READ, lambda t: T(
        topic_name=t.topic_name, topic_id=topic_catalog.ZERO_UUID, partitions=[
            P(partition_index=p.partition_index, error_code=TOPIC_DENIED, error_message=None) for p in t.partitions]))
