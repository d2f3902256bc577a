"""What replication adds to Produce and Fetch answers: the current leader for
NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH partitions (KIP-951: ``current_leader`` and the
leaders' ``node_endpoints``, where the version has them) and the acks=all wait."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from ..log.partition import Partition
    from broker.network.dispatch import RequestContext

LEADER_HINT_ERRORS = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def not_leader_answer(ctx: RequestContext, part: Partition, answer: Any) -> Any:
    """Fill ``current_leader`` of a partition answer (Produce v10+, Fetch v12+) when it has the field."""
    cls = getattr(type(answer), "LeaderIdAndEpoch", None)
    if cls is not None:
        leader_id, epoch = ctx.broker.replicas.current_leader(part)
        answer.current_leader = cls(leader_id=leader_id, leader_epoch=epoch)
    return answer


def absent_leader_answer(ctx: RequestContext, topic: str | None, topic_id: Any, index: int, answer: Any) -> Any:
    """``current_leader`` (where the version has it) for a NOT_LEADER_OR_FOLLOWER answer about a
    partition with no local replica: the leader and epoch the metadata image names, as Kafka's
    KafkaApis fills it from its metadata cache."""
    cls = getattr(type(answer), "LeaderIdAndEpoch", None)
    leader = image_leader(ctx, topic, topic_id, index)
    if cls is not None and leader is not None:
        answer.current_leader = cls(leader_id=leader[0], leader_epoch=leader[1])
    return answer


def image_leader(ctx: RequestContext, topic: str | None, topic_id: Any, index: int) -> tuple[int, int] | None:
    """(leader id, leader epoch) of a partition as the metadata image names it; None when the
    image does not have it (or on a single node, which has no image)."""
    image = ctx.broker.replicas.image
    if topic is None and image is not None:
        from broker.metadata.topic_catalog import topic_by_id

        known = topic_by_id(ctx.broker, topic_id)
        topic = known.name if known is not None else None
    t = image.topics.get(topic) if image is not None and topic is not None else None
    reg = t.partitions.get(index) if t is not None else None
    return (reg.leader, reg.leader_epoch) if reg is not None else None


def leader_endpoints(ctx: RequestContext, topics: list, partitions_attr: str, response_cls: Any) -> list:
    """``node_endpoints`` for the leaders named in ``current_leader`` fields of an answer."""
    replicas = ctx.broker.replicas
    if not replicas.active:
        return []
    ids = set()
    for t in topics:
        for p in getattr(t, partitions_attr):
            cl = getattr(p, "current_leader", None)
            if cl is not None and cl.leader_id >= 0:
                ids.add(cl.leader_id)
    out = []
    for node_id in sorted(ids):
        ep = replicas.endpoint(node_id)
        if ep is not None:
            out.append(response_cls.NodeEndpoint(node_id=node_id, host=ep[0], port=ep[1], rack=None))
    return out


async def wait_for_replicas(ctx: RequestContext, replicated: list[tuple[Partition, int, Any]],
                            timeout_ms: int) -> None:
    """acks=all on partitions with followers: answer once the ISR has the records; set each
    partition answer's error (NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER,
    REQUEST_TIMED_OUT) where it did not get there."""
    codes = await ctx.broker.replicas.wait_for_acks([(p, required) for p, required, _ in replicated],
                                                    timeout_ms / 1000)
    for (part, _, answer), code in zip(replicated, codes):
        if code:
            answer.error_code = code
            if code in LEADER_HINT_ERRORS:
                not_leader_answer(ctx, part, answer)


def replica_id_of(ctx: RequestContext, req: Any) -> int:
    """The fetching broker's id: ``replica_id`` up to Fetch v14, ``replica_state`` from v15
    (KIP-903); -1 for consumers."""
    if ctx.api_version >= 15:
        state = getattr(req, "replica_state", None)
        return state.replica_id if state is not None else -1
    return req.replica_id


def follower_fetched(ctx: RequestContext, req: Any, topics: list | None = None) -> None:
    """A follower's fetch reports its log end offset for each partition (once per request,
    before the answer is collected, so the answer carries the HW it moved). ``topics`` (a fetch
    session's partitions, with their cached fetch offsets) replaces the request's topics: an
    incremental request leaves out the partitions whose offset did not move."""
    broker = ctx.broker
    replica_id = replica_id_of(ctx, req)
    now = broker.now_ms()
    by_id = ctx.api_version >= 13
    for ft in req.topics if topics is None else topics:
        topic = broker.logs.topics_by_id.get(ft.topic_id) if by_id else broker.logs.topics.get(ft.topic)
        if topic is None:
            continue
        for fp in ft.partitions:
            part = topic.partitions.get(fp.partition)
            if part is not None and part.replica is not None:
                broker.replicas.follower_fetched(part, replica_id, fp.fetch_offset, now)
