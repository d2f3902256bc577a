"""Committed offsets: OffsetCommit v2-v10, OffsetFetch v1-v10, OffsetDelete v0.

Quirks: v10 of OffsetCommit/OffsetFetch names topics by id; commits for partitions that do
not exist answer UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id) as Kafka does, the
rest go to the group's coordinator (existence is the cluster's, broker/metadata/topic_catalog.py: in
cluster mode a topic with no replica on the coordinator's broker is committed like any other); OffsetFetch v0-v7 asks for one group (null topics =
all committed offsets, v2+), v8+ for several; the commit's metadata string and leader
epoch are returned as stored.
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from coordinator.group.offsets import OffsetCommitPartition, OffsetCommitTopic, TopicPartitions
from protocol.errors import ErrorCode

from broker.metadata import topic_catalog
from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles
from broker.apis.shared.common import ZERO_UUID, coordinator_fields


def _name_for(ctx: RequestContext, name: str | None, topic_id: Any) -> str | None:
    if ctx.api_version >= 10:
        topic = topic_catalog.topic_by_id(ctx.broker, topic_id)
        return topic.name if topic else None
    return name


@handles(ApiKey.OFFSET_COMMIT)
async def offset_commit(ctx: RequestContext, req: Any) -> Any:
    by_id = ctx.api_version >= 10
    topics: list[OffsetCommitTopic] = []
    rejected: dict[tuple[int, int], int] = {}
    # topic_id only from v10 (reading an absent field costs kafka-python a failed lookup)
    names = [_name_for(ctx, t.name, t.topic_id if by_id else None) for t in req.topics]
    for i, t in enumerate(req.topics):
        name = names[i]
        topic = topic_catalog.topic(ctx.broker, name) if name else None
        keep = []
        for p in t.partitions:
            if topic is None or not topic.has_partition(p.partition_index):
                rejected[(i, p.partition_index)] = (ErrorCode.UNKNOWN_TOPIC_ID if by_id and topic is None
                                                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            keep.append(OffsetCommitPartition(p.partition_index, p.committed_offset,
                                              getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
        if keep:
            topics.append(OffsetCommitTopic(name, keep))
    errors: dict[tuple[str, int], int] = {}
    if topics:
        r: g.OffsetCommitResult = await ctx.broker.groups.call_for(req.group_id, g.OffsetCommit(
            group_id=req.group_id, topics=topics, generation_id=req.generation_id_or_member_epoch,
            member_id=req.member_id or "", group_instance_id=req.group_instance_id,
            retention_time_ms=req.retention_time_ms if req.retention_time_ms is not None else -1, **coordinator_fields(ctx)))
        errors = {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}
    resp = ctx.response(throttle_time_ms=0, topics=[])
    RT = resp.OffsetCommitResponseTopic
    for i, t in enumerate(req.topics):
        name = names[i]
        parts = [RT.OffsetCommitResponsePartition(
            partition_index=p.partition_index,
            error_code=rejected.get((i, p.partition_index), errors.get((name, p.partition_index), ErrorCode.NONE)))
            for p in t.partitions]
        resp.topics.append(RT(name=t.name, topic_id=(t.topic_id if by_id else None) or ZERO_UUID, partitions=parts))
    return resp


@handles(ApiKey.OFFSET_FETCH)
async def offset_fetch(ctx: RequestContext, req: Any) -> Any:
    v = ctx.api_version
    if v >= 8:
        wanted = []
        for grp in req.groups:
            topics = None
            if grp.topics is not None:
                topics = [TopicPartitions(_name_for(ctx, t.name, getattr(t, "topic_id", None)) or "",
                                          list(t.partition_indexes)) for t in grp.topics]
            wanted.append(g.OffsetFetchGroup(grp.group_id, topics, getattr(grp, "member_id", None),
                                             getattr(grp, "member_epoch", -1)))
    else:
        topics = None if req.topics is None else [TopicPartitions(t.name, list(t.partition_indexes))
                                                  for t in req.topics]
        wanted = [g.OffsetFetchGroup(req.group_id, topics)]
    results: dict[str, g.OffsetFetchGroupResult] = {}
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


@handles(ApiKey.OFFSET_DELETE)
async def offset_delete(ctx: RequestContext, req: Any) -> Any:
    rejected: dict[tuple[str, int], int] = {}
    topics = []
    for t in req.topics:
        topic = topic_catalog.topic(ctx.broker, t.name)
        keep = []
        for p in t.partitions:
            if topic is None or not topic.has_partition(p.partition_index):
                rejected[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                keep.append(p.partition_index)
        if keep:
            topics.append(TopicPartitions(t.name, keep))
    r: g.OffsetDeleteResult = await ctx.broker.groups.call_for(
        req.group_id, g.OffsetDelete(group_id=req.group_id, topics=topics, **coordinator_fields(ctx)))
    errors = {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}
    resp = ctx.response(throttle_time_ms=0, error_code=r.error_code, topics=[])
    T = resp.OffsetDeleteResponseTopic
    if r.error_code == ErrorCode.NONE:
        resp.topics = [T(name=t.name, partitions=[T.OffsetDeleteResponsePartition(
            partition_index=p.partition_index,
            error_code=rejected.get((t.name, p.partition_index), errors.get((t.name, p.partition_index), 0)))
            for p in t.partitions]) for t in req.topics]
    return resp

