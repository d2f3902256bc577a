"""Transactions: InitProducerId with a transactional id, AddPartitionsToTxn v0-v5,
AddOffsetsToTxn v0-v4, EndTxn v0-v5, TxnOffsetCommit v0-v5, DescribeTransactions v0,
ListTransactions v0-v2, DescribeProducers v0.

Quirks (Kafka's): PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH to clients that predate
it (InitProducerId < v4, AddPartitionsToTxn/AddOffsetsToTxn/EndTxn < v2); AddPartitionsToTxn with
an unknown topic or partition adds nothing: those partitions answer UNKNOWN_TOPIC_OR_PARTITION
and the others OPERATION_NOT_ATTEMPTED; v4+ batches several transactions (and ``verify_only``
checks membership instead of adding). TxnOffsetCommit first verifies, without yielding, that the
group's ``__consumer_offsets`` partition is in the producer's transaction (KIP-890: a wrong epoch
answers INVALID_PRODUCER_EPOCH, a partition not added INVALID_TXN_STATE), then the group
coordinator validates the member and stores the offsets as pending. Transactions v2 (KIP-890
part 2; clients use it when ``transaction.version`` 2 is finalized, see protocol/features.py):
EndTxn v5 bumps the producer epoch on every commit/abort and answers the next producer id/epoch,
TxnOffsetCommit v5 adds the group's partition itself (no AddOffsetsToTxn), Produce v12+ adds
partitions implicitly (broker/apis/produce.py). Not done: a TV2 commit/abort at the last epoch
(32766) keeps the epoch instead of moving to a new producer id.
WriteTxnMarkers is not offered either: this node writes its own markers.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from coordinator.group import coordinator as g
from coordinator.txn import coordinator as tx
from coordinator.hashing import partition_for_group
from coordinator.group.offsets import OffsetCommitPartition, OffsetCommitTopic
from protocol.errors import ErrorCode

from broker.metadata import topic_catalog
from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles
from broker.apis.shared.common import absent_partition_error, coordinator_fields

PRODUCER_FENCED = ErrorCode.PRODUCER_FENCED


def _fenced_for(version: int, first_version_with_fenced: int, code: int) -> int:
    """Clients older than the version that introduced PRODUCER_FENCED get INVALID_PRODUCER_EPOCH."""
    if code == PRODUCER_FENCED and version < first_version_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


# ---------------------------------------------------------------------------- InitProducerId

async def init_transactional_producer_id(ctx: RequestContext, req: Any) -> Any:
    """InitProducerId for a non-null transactional id (called by the InitProducerId handler)."""
    def answer(code: int, pid: int = -1, epoch: int = -1) -> Any:
        return ctx.response(throttle_time_ms=0, error_code=_fenced_for(ctx.api_version, 4, code),
                            producer_id=pid, producer_epoch=epoch)

    if getattr(req, "enable_2pc", False):
        # two-phase commit (KIP-939) needs transaction.two.phase.commit.enable, which is off
        return answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if req.transactional_id == "":
        return answer(ErrorCode.INVALID_REQUEST)
    r: tx.InitProducerIdResult = await ctx.broker.txns.call_for(req.transactional_id, tx.InitProducerId(
        transactional_id=req.transactional_id, transaction_timeout_ms=req.transaction_timeout_ms,
        producer_id=getattr(req, "producer_id", -1), producer_epoch=getattr(req, "producer_epoch", -1),
        api_version=ctx.api_version))
    return answer(r.error_code, r.producer_id, r.producer_epoch)


# ---------------------------------------------------------------------------- AddPartitionsToTxn

def _partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    return topic_catalog.has_partition(ctx.broker, topic, partition)   # the cluster's, not only local logs


async def _add_partitions(ctx: RequestContext, tid: str, pid: int, epoch: int, topics: Any,
                          verify_only: bool) -> dict[tuple[str, int], int]:
    """Errors per (topic, partition) for one transaction of the request."""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    missing = {tp for tp in wanted if not _partition_exists(ctx, *tp)}
    if missing and not verify_only:
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in missing else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted}
    r: tx.AddPartitionsResult = await ctx.broker.txns.call_for(tid, tx.AddPartitionsToTxn(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, partitions=wanted,
        verify_only=verify_only, api_version=ctx.api_version))
    return {tp: _fenced_for(ctx.api_version, 2, r.error_for(tp)) for tp in wanted}


def _topic_results(resp_cls: Any, errors: dict[tuple[str, int], int]) -> list:
    TR = resp_cls.AddPartitionsToTxnTopicResult
    by_topic: dict[str, list] = defaultdict(list)
    for (topic, p), code in errors.items():
        by_topic[topic].append(TR.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=code))
    return [TR(name=t, results_by_partition=parts) for t, parts in by_topic.items()]


@handles(ApiKey.ADD_PARTITIONS_TO_TXN)
async def add_partitions_to_txn(ctx: RequestContext, req: Any) -> Any:
    resp = ctx.response(throttle_time_ms=0, error_code=0, results_by_transaction=[],
                        results_by_topic_v3_and_below=[])
    if ctx.api_version < 4:
        errors = await _add_partitions(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                       req.v3_and_below_producer_epoch, req.v3_and_below_topics, False)
        resp.results_by_topic_v3_and_below = _topic_results(resp, errors)
        return resp
    for t in req.transactions:
        errors = await _add_partitions(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                                       bool(t.verify_only))
        resp.results_by_transaction.append(resp.AddPartitionsToTxnResult(
            transactional_id=t.transactional_id, topic_results=_topic_results(resp, errors)))
    return resp


# ---------------------------------------------------------------------------- AddOffsetsToTxn

@handles(ApiKey.ADD_OFFSETS_TO_TXN)
async def add_offsets_to_txn(ctx: RequestContext, req: Any) -> Any:
    groups = ctx.broker.groups
    offsets_partition, _ = groups.coordinator_for(req.group_id or "")    # creates __consumer_offsets
    r: tx.AddPartitionsResult = await ctx.broker.txns.call_for(req.transactional_id, tx.AddOffsetsToTxn(
        transactional_id=req.transactional_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
        group_id=req.group_id, offsets_partition=offsets_partition, api_version=ctx.api_version))
    return ctx.response(throttle_time_ms=0, error_code=_fenced_for(ctx.api_version, 2, r.error_code))


# ---------------------------------------------------------------------------- EndTxn

@handles(ApiKey.END_TXN)
async def end_txn(ctx: RequestContext, req: Any) -> Any:
    r: tx.EndTxnResult = await ctx.broker.txns.call_for(req.transactional_id, tx.EndTxn(
        transactional_id=req.transactional_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
        committed=bool(req.committed), api_version=ctx.api_version))
    return ctx.response(throttle_time_ms=0, error_code=_fenced_for(ctx.api_version, 2, r.error_code),
                        producer_id=r.producer_id, producer_epoch=r.producer_epoch)


# ---------------------------------------------------------------------------- TxnOffsetCommit

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


async def _verify_offsets_partition(ctx: RequestContext, req: Any,
                                    topics: list[OffsetCommitTopic]) -> dict[tuple[str, int], int]:
    """KIP-890 verification of the group's partition in the producer's transaction; an error
    applies to every partition of the commit (empty when verified). In a cluster whose
    transaction coordinator for the id is another broker, that broker is asked
    (broker/replica/txn_verify.py)."""
    if not req.group_id:
        return {}        # the group coordinator answers INVALID_GROUP_ID
    offsets_partition = partition_for_group(req.group_id, ctx.broker.groups.num_partitions)
    ctx.broker.groups.ensure_topic()
    add = ctx.api_version >= 5    # v5 (transactions v2): no AddOffsetsToTxn before, the partition is added here
    remote = None
    if ctx.broker.cluster is not None:
        from broker.replica.txn_verify import remote_transaction_coordinator
        remote = remote_transaction_coordinator(ctx.broker, req.transactional_id or "")
    if remote is not None:
        from broker.replica.txn_verify import verify_remotely
        code = await verify_remotely(ctx.broker, remote, req.transactional_id, req.producer_id, req.producer_epoch,
                                     tx.OFFSETS_TOPIC, offsets_partition, add)
    else:
        r: tx.AddPartitionsResult = ctx.broker.txns.call_now(req.transactional_id, tx.AddPartitionsToTxn(
            transactional_id=req.transactional_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
            partitions=[(tx.OFFSETS_TOPIC, offsets_partition)], verify_only=not add))
        code = r.error_for((tx.OFFSETS_TOPIC, offsets_partition))
    if code == ErrorCode.NONE:
        return {}
    if code == PRODUCER_FENCED:
        code = ErrorCode.INVALID_PRODUCER_EPOCH       # Kafka's AddPartitionsToTxnManager mapping
    return {(t.name, p.partition_index): code for t in topics for p in t.partitions}


# ---------------------------------------------------------------------------- DescribeTransactions

@handles(ApiKey.DESCRIBE_TRANSACTIONS)
async def describe_transactions(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.txns
    by_partition: dict[int, list[str]] = defaultdict(list)
    for tid in req.transactional_ids:
        by_partition[shell.coordinator_for(tid or "")[0]].append(tid)
    described: dict[str, tx.DescribedTransaction] = {}
    for p, ids in by_partition.items():
        r: tx.DescribeTransactionsResult = await shell.call(p, tx.DescribeTransactions(transactional_ids=ids))
        for d in r.transactions:
            described[d.transactional_id] = d
    resp = ctx.response(throttle_time_ms=0, transaction_states=[])
    TS = resp.TransactionState
    for tid in req.transactional_ids:
        d = described[tid or ""]
        resp.transaction_states.append(TS(
            error_code=d.error_code, transactional_id=tid, transaction_state=d.state,
            transaction_timeout_ms=d.timeout_ms, transaction_start_time_ms=d.start_time_ms,
            producer_id=d.producer_id, producer_epoch=d.producer_epoch,
            topics=[TS.TopicData(topic=t, partitions=ps) for t, ps in d.topics]))
    return resp


# ---------------------------------------------------------------------------- ListTransactions

INVALID_REGULAR_EXPRESSION = 128     # Kafka's Errors.INVALID_REGULAR_EXPRESSION (not in kafka-python)


@handles(ApiKey.LIST_TRANSACTIONS)
async def list_transactions(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.txns
    unknown: list[str] = list(dict.fromkeys(s for s in (req.state_filters or []) if tx.TxnState.from_name(s) is None))
    pattern = (getattr(req, "transactional_id_pattern", None) if ctx.api_version >= 2 else None) or None
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error:
            return ctx.response(throttle_time_ms=0, error_code=INVALID_REGULAR_EXPRESSION,
                                unknown_state_filters=[], transaction_states=[])
    listed: list[tx.ListedTransaction] = []
    error = ErrorCode.NONE
    for p in shell.owned_partitions():
        r: tx.ListTransactionsResult = await shell.call(p, tx.ListTransactions(
            state_filters=list(req.state_filters or []), producer_id_filters=list(req.producer_id_filters or []),
            duration_filter_ms=getattr(req, "duration_filter", -1) if ctx.api_version >= 1 else -1,
            transactional_id_pattern=pattern))
        error = error or r.error_code
        listed.extend(r.transactions)
    resp = ctx.response(throttle_time_ms=0, error_code=error, unknown_state_filters=unknown, transaction_states=[])
    resp.transaction_states = [resp.TransactionState(transactional_id=t.transactional_id, producer_id=t.producer_id,
                                                     transaction_state=t.state) for t in listed]
    return resp


# ---------------------------------------------------------------------------- DescribeProducers

@handles(ApiKey.DESCRIBE_PRODUCERS)
async def describe_producers(ctx: RequestContext, req: Any) -> Any:
    resp = ctx.response(throttle_time_ms=0, topics=[])
    TR = resp.TopicResponse
    PR = TR.PartitionResponse
    for t in req.topics:
        parts = []
        for idx in t.partition_indexes:
            part = ctx.broker.logs.partition(t.name, idx)
            # Kafka's activeProducerState: no local replica, or a follower: NOT_LEADER_OR_FOLLOWER
            err = absent_partition_error(ctx.broker, t.name, idx) if part is None else \
                ErrorCode.NOT_LEADER_OR_FOLLOWER if part.replica is not None and not part.replica.is_leader else 0
            if err:
                parts.append(PR(partition_index=idx, error_code=err, error_message=None, active_producers=[]))
                continue
            producers = [PR.ProducerState(
                producer_id=pid, producer_epoch=e.epoch, last_sequence=e.last_seq, last_timestamp=e.last_timestamp,
                coordinator_epoch=e.coordinator_epoch, current_txn_start_offset=part.ongoing_txns.get(pid, -1))
                for pid, e in sorted(part.producers.producers.items())]
            parts.append(PR(partition_index=idx, error_code=0, error_message=None, active_producers=producers))
        resp.topics.append(TR(name=t.name, partitions=parts))
    return resp
