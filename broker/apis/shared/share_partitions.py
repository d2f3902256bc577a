"""What ShareFetch and ShareAcknowledge share (KIP-932): the led local partition of a topic id, applying
acknowledgement batches, and the current leader and node endpoints answered with NOT_LEADER_OR_FOLLOWER.
"""
from __future__ import annotations

import uuid
from typing import Any

from protocol.errors import ErrorCode

from broker.metadata.topic_catalog import absent_partition_error
from broker.network.dispatch import RequestContext
from broker.replica.answers import image_leader


# -- ShareFetch / ShareAcknowledge -----------------------------------------------------------------------
def local_partition(ctx: RequestContext, topic_id: uuid.UUID, index: int) -> tuple[Any, int]:
    """(the partition, 0) or (None, Kafka's error code)."""
    topic = ctx.broker.logs.topics_by_id.get(topic_id)
    part = topic.partitions.get(index) if topic is not None else None
    if part is None:   # no local replica: NOT_LEADER_OR_FOLLOWER if the cluster has the partition
        return None, absent_partition_error(ctx.broker, None, index, topic_id)
    if part.replica is not None and not part.replica.is_leader:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    return part, ErrorCode.NONE


async def acknowledge(ctx: RequestContext, group_id: str, member_id: str, topics: Any) -> dict[tuple[uuid.UUID, int], int]:
    """Apply every partition's acknowledgement batches, each answered once its state is written
    (broker/coordinator_runtime/share_runtime.py); error code per (topic id, partition)."""
    shares = ctx.broker.share_groups
    now = ctx.broker.now_ms()
    out: dict[tuple[uuid.UUID, int], int] = {}
    for t in topics:
        for p in t.partitions:
            batches = [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in p.acknowledgement_batches]
            if not batches:
                continue
            part, code = local_partition(ctx, t.topic_id, p.partition_index)
            if part is not None:
                code = await shares.acknowledge(group_id, t.topic_id, p.partition_index, member_id, batches, now,
                                               renew=ctx.api_version >= 2)  # RENEW (KIP-1222) from v2
            out[(t.topic_id, p.partition_index)] = code
    return out


async def load_share_partitions(ctx: RequestContext, group_id: str,
                                tps: list[tuple[uuid.UUID, int]]) -> None:
    """Load (read or initialize from the persister) the share partitions of the session that this
    broker leads, before acquiring from them; those that fail keep their error in
    ``share_groups.load_errors`` for the fetch's answer."""
    shares = ctx.broker.share_groups
    for tid, index in tps:
        part, code = local_partition(ctx, tid, index)
        if part is not None:
            await shares.load(group_id, tid, index, part)


def current_leader(ctx: RequestContext, topic_id: uuid.UUID, index: int, cls: Any) -> Any:
    """The partition's current leader (another broker's after NOT_LEADER_OR_FOLLOWER in a cluster)."""
    topic = ctx.broker.logs.topics_by_id.get(topic_id)
    part = topic.partitions.get(index) if topic is not None else None
    if part is None:   # hosted elsewhere: the leader the metadata image names
        leader_id, epoch = image_leader(ctx, None, topic_id, index) or (-1, -1)
        return cls(leader_id=leader_id, leader_epoch=epoch)
    if part.replica is not None:
        leader_id, epoch = ctx.broker.replicas.current_leader(part)
        return cls(leader_id=leader_id, leader_epoch=epoch)
    return cls(leader_id=ctx.broker.node_id, leader_epoch=part.leader_epoch)


def node_endpoints(ctx: RequestContext, responses: list, response_cls: Any) -> list:
    """NodeEndpoints of the leaders named by partitions answered NOT_LEADER_OR_FOLLOWER."""
    replicas = ctx.broker.replicas
    ids = sorted({p.current_leader.leader_id for t in responses for p in t.partitions
                  if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and p.current_leader.leader_id >= 0})
    out = []
    for node_id in ids if replicas.active else ():
        ep = replicas.endpoint(node_id)
        if ep is not None:
            out.append(response_cls.NodeEndpoint(node_id=node_id, host=ep[0], port=ep[1], rack=None))
    return out
