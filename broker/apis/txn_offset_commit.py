"""TxnOffsetCommit v0-v5.

Quirks (Kafka's): first verifies, under a verification guard, that the group's
``__consumer_offsets`` partition is in the producer's transaction (KIP-890: a wrong epoch answers
INVALID_PRODUCER_EPOCH, a partition not added INVALID_TXN_STATE; in a cluster the transaction
coordinator on another broker is asked), then the group coordinator validates the member and
stores the offsets as pending until the transaction's marker. A topic that does not exist answers
UNKNOWN_TOPIC_OR_PARTITION (Kafka checks the topic, not the partition). v5 (transactions v2)
adds the group's partition itself: no AddOffsetsToTxn before it.
Authorization: WRITE on the transactional id, READ on the group, READ on each topic.
"""
from __future__ import annotations

from typing import Any

from coordinator.group import coordinator as g
from coordinator.group.offsets import OffsetCommitPartition, OffsetCommitTopic
from coordinator.hashing import partition_for_group
from coordinator.txn import coordinator as tx
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import coordinator_fields
from broker.apis.shared.transactions import PRODUCER_FENCED
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.replica.txn_verify import verify_transaction
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (GROUP_DENIED, TOPIC_DENIED, TXN_DENIED, Handler, allowed, authorizes,
                                   denied_offset_topics, topics_allowed)


@handles(ApiKey.TXN_OFFSET_COMMIT)
async def txn_offset_commit(ctx: RequestContext, req: Any) -> Any:
    errors: dict[tuple[str, int], int] = {}
    topics: list[OffsetCommitTopic] = []
    for t in req.topics:
        if topic_catalog.topic(ctx.broker, t.name) is None:   # Kafka checks the topic, not the partition
            for p in t.partitions:
                errors[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        topics.append(OffsetCommitTopic(t.name, [
            OffsetCommitPartition(p.partition_index, p.committed_offset, getattr(p, "committed_leader_epoch", -1),
                                  p.committed_metadata) for p in t.partitions]))
    verify_errors = await _verify_offsets_partition(ctx, req, topics) if topics else {}
    errors.update(verify_errors)
    if topics and not verify_errors:
        r: g.TxnOffsetCommitResult = await ctx.broker.groups.call_for(req.group_id, g.TxnOffsetCommit(
            group_id=req.group_id, transactional_id=req.transactional_id, producer_id=req.producer_id,
            producer_epoch=req.producer_epoch, topics=topics,
            generation_id=getattr(req, "generation_id", -1), member_id=getattr(req, "member_id", "") or "",
            group_instance_id=getattr(req, "group_instance_id", None), **coordinator_fields(ctx)))
        for t in r.topics:
            for p in t.partitions:
                errors[(t.name, p.partition_index)] = p.error_code
    resp = ctx.response(throttle_time_ms=0, topics=[])
    T = resp.TxnOffsetCommitResponseTopic
    resp.topics = [T(name=t.name, partitions=[T.TxnOffsetCommitResponsePartition(
        partition_index=p.partition_index, error_code=errors.get((t.name, p.partition_index), 0))
        for p in t.partitions]) for t in req.topics]
    return resp


GUARD_ATTEMPTS = 3     # verifications of one commit whose guard a marker cleared (below)


async def _verify_offsets_partition(ctx: RequestContext, req: Any,
                                    topics: list[OffsetCommitTopic]) -> dict[tuple[str, int], int]:
    """KIP-890 verification of the group's partition in the producer's transaction; an error
    applies to every partition of the commit (empty when verified). The transaction coordinator
    is asked — in process, or the broker leading the transactional id's partition
    (broker/replica/txn_verify.py) — under a verification guard on the offsets partition, as
    Kafka's coordinator partition writer does: if the transaction ended meanwhile (its marker
    reached the partition) or the producer moved on, the guard is gone and the offsets are not
    written (INVALID_TXN_STATE), so no transactional batch is left without its marker. The
    caller steps the group coordinator right after this returns, without yielding."""
    if not req.group_id:
        return {}        # the group coordinator answers INVALID_GROUP_ID
    groups = ctx.broker.groups
    groups.ensure_topic()
    offsets_partition = partition_for_group(req.group_id, groups.num_partitions)
    add = ctx.api_version >= 5    # v5 (transactions v2): no AddOffsetsToTxn before, the partition is added here
    part = ctx.broker.logs.partition(tx.OFFSETS_TOPIC, offsets_partition)
    for _attempt in range(GUARD_ATTEMPTS):
        guard = part.producers.start_verification(req.producer_id, req.producer_epoch) if part is not None else None
        errors = await verify_transaction(ctx.broker, req.transactional_id or "", req.producer_id,
                                          req.producer_epoch, [(tx.OFFSETS_TOPIC, offsets_partition)], add)
        code = errors[(tx.OFFSETS_TOPIC, offsets_partition)]
        if code == PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH       # Kafka's AddPartitionsToTxnManager mapping
        if code == ErrorCode.NONE and part is not None and \
                not part.producers.verified(req.producer_id, req.producer_epoch, guard):
            # A marker reached the partition while the coordinator was asked. With transactions v2
            # the previous transaction's marker carries the epoch this one uses, and the
            # coordinator holds an add that meets those markers in flight until they settle
            # (txn_runtime.py) where Kafka answers CONCURRENT_TRANSACTIONS at once: that marker
            # clears this guard. Ask again under a new guard: if this transaction is the one
            # that ended, the coordinator refuses (a bumped epoch); else the offsets are safe.
            code = ErrorCode.INVALID_TXN_STATE
            continue
        break
    if code == ErrorCode.NONE:
        return {}
    return {(t.name, p.partition_index): code for t in topics for p in t.partitions}


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.TXN_OFFSET_COMMIT)
async def authorize_txn_offset_commit(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    code = None
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.transactional_id):
        code = TXN_DENIED
    elif not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        code = GROUP_DENIED
    if code is not None:
        return ctx.response(throttle_time_ms=0, topics=denied_offset_topics(
            ApiKey.TXN_OFFSET_COMMIT, req.topics, code, "TxnOffsetCommitResponseTopic", "TxnOffsetCommitResponsePartition"))
    return await topics_allowed(ctx, req, handler, Op.READ, lambda denied: denied_offset_topics(
        ApiKey.TXN_OFFSET_COMMIT, denied, TOPIC_DENIED, "TxnOffsetCommitResponseTopic", "TxnOffsetCommitResponsePartition"))
