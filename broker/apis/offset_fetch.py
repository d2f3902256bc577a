"""OffsetFetch v1-v10.

Quirks: v0-v7 ask for one group (null topics = all committed offsets, v2+), v8+ for several; v10
names topics by id; the metadata string and leader epoch are returned as stored.
Authorization: DESCRIBE on each group and on each topic (see the rule below).
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from coordinator.group.offsets import TopicPartitions
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID, coordinator_fields, topic_name_for
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (GROUP_DENIED, TOPIC_DENIED, Handler, allowed, authorizes, response_class,
                                   split_topics, topic_name)


@handles(ApiKey.OFFSET_FETCH)
async def offset_fetch(ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    if v >= 8:
        wanted = []
        for grp in req.groups:
            topics = None
            if grp.topics is not None:
                topics = [TopicPartitions(topic_name_for(ctx, t.name, getattr(t, "topic_id", None)) or "",
                                          list(t.partition_indexes)) for t in grp.topics]
            wanted.append(g.OffsetFetchGroup(grp.group_id, topics, getattr(grp, "member_id", None),
                                             getattr(grp, "member_epoch", -1)))
    else:
        topics = None if req.topics is None else [TopicPartitions(t.name, list(t.partition_indexes))
                                                  for t in req.topics]
        wanted = [g.OffsetFetchGroup(req.group_id, topics)]
    results: dict[int, g.OffsetFetchGroupResult] = {}   # by id() of the wanted group (a group id may repeat)
    by_partition: dict[int, list[g.OffsetFetchGroup]] = {}
    for w in wanted:
        by_partition.setdefault(ctx.broker.groups.coordinator_for(w.group_id or "")[0], []).append(w)
    for p, groups in by_partition.items():
        r: g.OffsetFetchResult = await ctx.broker.groups.call(p, g.OffsetFetch(
            groups=groups, require_stable=bool(getattr(req, "require_stable", False)), **coordinator_fields(ctx)))
        for gr, w in zip(r.groups, groups):
            results[id(w)] = gr
    resp = ctx.response(throttle_time_ms=0, topics=[], error_code=0, groups=[])
    if v >= 8:
        G = resp.OffsetFetchResponseGroup
        T = G.OffsetFetchResponseTopics
        for w in wanted:
            gr = results[id(w)]
            topics_out = []
            for t in gr.topics:
                topic = topic_catalog.topic(ctx.broker, t.name)
                topics_out.append(T(name=t.name, topic_id=topic.topic_id if topic else ZERO_UUID, partitions=[
                    T.OffsetFetchResponsePartitions(partition_index=p.partition_index,
                                                    committed_offset=p.committed_offset,
                                                    committed_leader_epoch=p.committed_leader_epoch,
                                                    metadata=p.metadata, error_code=p.error_code)
                    for p in t.partitions]))
            resp.groups.append(G(group_id=w.group_id, topics=topics_out, error_code=gr.error_code))
        return resp
    gr = results[id(wanted[0])]
    T = resp.OffsetFetchResponseTopic
    resp.topics = [T(name=t.name, partitions=[
        T.OffsetFetchResponsePartition(partition_index=p.partition_index, committed_offset=p.committed_offset,
                                       committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
                                       error_code=p.error_code) for p in t.partitions]) for t in gr.topics]
    resp.error_code = gr.error_code
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
def _denied_fetch_topics(T: Any, topics: list) -> list:
    """Kafka's answer for requested topics the principal may not DESCRIBE: every requested
    partition with offset -1 and TOPIC_AUTHORIZATION_FAILED (KafkaApis.fetchOffsetsForGroup)."""
    P = next(getattr(T, f) for f in ("OffsetFetchResponsePartitions", "OffsetFetchResponsePartition") if hasattr(T, f))
    ids = "topic_id" in T.fields
    return [T(name=t.name, **({"topic_id": getattr(t, "topic_id", None)} if ids else {}), partitions=[
        P(partition_index=i, committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=TOPIC_DENIED)
        for i in t.partition_indexes]) for t in topics]


def _describable(ctx: RequestScope, topics: list[Any]) -> list[Any]:
    return [t for t in topics if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name)]


@authorizes(ApiKey.OFFSET_FETCH)
async def authorize_offset_fetch(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    """KafkaApis.handleOffsetFetchRequest: DESCRIBE on each group (else the group answers
    GROUP_AUTHORIZATION_FAILED); named topics the principal may not DESCRIBE are not fetched and
    answer TOPIC_AUTHORIZATION_FAILED per partition; with all topics requested (null) they are
    left out. A group that failed otherwise (e.g. COORDINATOR_LOAD_IN_PROGRESS) gets no topics added."""
    if ctx.api_version >= 8:
        G = response_class(ApiKey.OFFSET_FETCH, "OffsetFetchResponseGroup")
        denied_groups = [grp for grp in req.groups if not allowed(ctx, Op.DESCRIBE, RT.GROUP, grp.group_id)]
        req.groups = [grp for grp in req.groups if grp not in denied_groups]
        denied_topics: list[list | None] = []   # per allowed group, in request order (as answered)
        for grp in req.groups:
            denied_topics.append(None)
            if grp.topics is not None:
                ok, denied = split_topics(ctx, grp.topics, Op.DESCRIBE,
                                    lambda t: topic_name(ctx, t.name, getattr(t, "topic_id", None)))
                for t in denied:
                    t.name = topic_name(ctx, t.name, getattr(t, "topic_id", None))
                grp.topics, denied_topics[-1] = ok, denied
        response = await handler(ctx, req) if req.groups else ctx.response(throttle_time_ms=0, groups=[])
        T = G.OffsetFetchResponseTopics
        for grp, group_denied in zip(response.groups, denied_topics):
            if group_denied is None:     # all topics were asked for: the undescribable are hidden
                grp.topics = _describable(ctx, grp.topics)
            elif not grp.error_code:
                grp.topics.extend(_denied_fetch_topics(T, group_denied))
        response.groups.extend(G(group_id=grp.group_id, topics=[], error_code=GROUP_DENIED) for grp in denied_groups)
        return response
    if not allowed(ctx, Op.DESCRIBE, RT.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, topics=[], error_code=GROUP_DENIED)
    if req.topics is None:
        response = await handler(ctx, req)
        response.topics = _describable(ctx, response.topics)
        return response
    ok, denied = split_topics(ctx, req.topics, Op.DESCRIBE, lambda t: t.name)
    req.topics = ok
    response = await handler(ctx, req)
    if denied and not response.error_code:
        response.topics.extend(_denied_fetch_topics(response_class(ApiKey.OFFSET_FETCH, "OffsetFetchResponseTopic"), denied))
    return response
