"""OffsetFetch v1-v10.
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from coordinator.group.offsets import TopicPartitions
from protocol.api_keys import ApiKey

from broker.apis.shared.common import ZERO_UUID, coordinator_fields, topic_name_for
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles


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
