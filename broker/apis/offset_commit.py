"""OffsetCommit v2-v10.

Quirks: v10 names topics by id; commits for partitions that do not exist answer
UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id) as Kafka does, the rest go to the group's
coordinator (existence is the cluster's, broker/metadata/topic_catalog.py: in cluster mode a topic
with no replica on the coordinator's broker is committed like any other); the commit's metadata
string and leader epoch are stored as given.
Authorization: READ on the group (else every partition answers GROUP_AUTHORIZATION_FAILED), READ
on each topic.
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from coordinator.group.offsets import OffsetCommitPartition, OffsetCommitTopic
from protocol.answer_cache import AnswerCache
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.errors import ErrorCode
from protocol.messages import encode_response

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID, coordinator_fields, topic_name_for
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (GROUP_DENIED, TOPIC_DENIED, Handler, allowed, authorizes, denied_offset_topics,
                                   topic_name, topics_allowed)

# successful answers by (version, the request's topics and partitions); a consumer commits the same
# partitions again and again, and a broker's clients name few distinct sets
ANSWERS: AnswerCache[bytes] = AnswerCache(4096)


@handles(ApiKey.OFFSET_COMMIT)
async def offset_commit(ctx: RequestContext, req: Any) -> Any:
    by_id = ctx.api_version >= 10
    # the topics by name, made again only when they change (topic_catalog.topic would build a
    # catalog entry on each call; every commit asks)
    catalog = topic_catalog.all_topics(ctx.broker)
    topics: list[OffsetCommitTopic] = []
    rejected: dict[tuple[int, int], int] = {}
    # topic_id only from v10, retention_time_ms only in v2-v4 (reading a field absent from the version
    # costs kafka-python a failed lookup, ~1 us each)
    names = [topic_name_for(ctx, t.name, t.topic_id) for t in req.topics] if by_id else [t.name for t in req.topics]
    for i, t in enumerate(req.topics):
        name = names[i]
        topic = catalog.get(name) if name else None
        keep = []
        for p in t.partitions:
            if topic is None or not topic.has_partition(p.partition_index):
                rejected[(i, p.partition_index)] = (ErrorCode.UNKNOWN_TOPIC_ID if by_id and topic is None
                                                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            keep.append(OffsetCommitPartition(p.partition_index, p.committed_offset,
                                              getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
        if keep:
            assert name is not None   # partitions are kept only in a topic found by its name
            topics.append(OffsetCommitTopic(name, keep))
    # the errors other than NONE, by (name, partition); a topic without a name had every
    # partition rejected, its lookups miss
    errors: dict[tuple[str | None, int], int] = {}
    if topics:
        r: g.OffsetCommitResult = await ctx.broker.groups.call_for(req.group_id, g.OffsetCommit(
            group_id=req.group_id, topics=topics, generation_id=req.generation_id_or_member_epoch,
            member_id=req.member_id or "", group_instance_id=req.group_instance_id,
            retention_time_ms=req.retention_time_ms if 2 <= ctx.api_version <= 4 else -1, **coordinator_fields(ctx)))
        for rt in r.topics:
            for rp in rt.partitions:
                if rp.error_code:
                    errors[(rt.name, rp.partition_index)] = rp.error_code
    if rejected or errors or ctx.broker.authorizer is not None:
        return _answer(ctx, req, names, by_id, rejected, errors)
    # Every partition committed: the answer is fixed by the version and the topics and partitions
    # named, so it is encoded once per such request (protocol/answer_cache.py). Not when an
    # authorizer is set: its rule (authorize_offset_commit) adds denied topics to the answer object.
    key = (ctx.api_version, tuple((t.name, t.topic_id if by_id else None, tuple([p.partition_index for p in t.partitions]))
                                  for t in req.topics))
    return ANSWERS.answer(key, ctx.correlation_id,
                          lambda: bytes(encode_response(_answer(ctx, req, names, by_id, rejected, errors), 0)))


def _answer(ctx: RequestContext, req: Any, names: list[str | None], by_id: bool,
            rejected: dict[tuple[int, int], int], errors: dict[tuple[str | None, int], int]) -> Any:
    """The answer as a message: each partition's error from ``rejected`` (by the topic's place in
    the request), else from ``errors`` (by name), else NONE."""
    resp = ctx.response(throttle_time_ms=0, topics=[])
    RT = resp.OffsetCommitResponseTopic
    RP = RT.OffsetCommitResponsePartition
    NONE = ErrorCode.NONE
    for i, t in enumerate(req.topics):   # (build: RT(...)/RP(...) without kafka-python's per-field walk)
        name = names[i]
        parts = [build(RP, None, {
            "partition_index": p.partition_index,
            "error_code": rejected.get((i, p.partition_index)) or errors.get((name, p.partition_index), NONE)})
            for p in t.partitions]
        resp.topics.append(build(RT, None, {"name": t.name, "topic_id": (t.topic_id if by_id else None) or ZERO_UUID,
                                            "partitions": parts}))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.OFFSET_COMMIT)
async def authorize_offset_commit(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, topics=denied_offset_topics(
            ApiKey.OFFSET_COMMIT, req.topics, GROUP_DENIED, "OffsetCommitResponseTopic", "OffsetCommitResponsePartition"))
    return await topics_allowed(ctx, req, handler, Op.READ, lambda denied: denied_offset_topics(
        ApiKey.OFFSET_COMMIT, denied, TOPIC_DENIED, "OffsetCommitResponseTopic", "OffsetCommitResponsePartition"),
        name_of=lambda t: topic_name(ctx, t.name, getattr(t, "topic_id", None)))
