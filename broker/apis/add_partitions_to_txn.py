"""AddPartitionsToTxn v0-v5.

Quirks (Kafka's): PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH before v2; a request
naming an unknown topic or partition adds nothing: those partitions answer
UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED; v4+ (between brokers: the
leaders' and group coordinators' KIP-890 checks, broker/replica/txn_verify.py) batches several
transactions, stepped concurrently; ``verify_only`` checks membership instead of adding, and
v5 with ``verify_only`` false adds the partitions (transactions v2, a Produce v12+ implicitly
adding its partitions). An unknown partition fails its transaction in every version. With
transactions v2 (protocol/features.py) producers add partitions implicitly through Produce
(broker/apis/produce.py) and the group's partition through TxnOffsetCommit v5.
Authorization: WRITE on the transactional id and on each topic (a denied topic fails the whole
request, the others OPERATION_NOT_ATTEMPTED); v4+ needs CLUSTER_ACTION.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any
from collections.abc import Callable

import trio

from coordinator.txn import coordinator as tx
from protocol.answer_cache import AnswerCache
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.errors import ErrorCode
from protocol.messages import encode_response

from broker.common.services import RequestScope
from broker.apis.shared.transactions import fenced_for
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (CLUSTER_DENIED, TOPIC_DENIED, TXN_DENIED, Handler, allowed, authorizes, cluster,
                                   response_class)


def _partition_exists(ctx: RequestContext, topic: str, partition: int) -> bool:
    return topic_catalog.has_partition(ctx.broker, topic, partition)   # the cluster's, not only local logs


async def _add_partitions(ctx: RequestContext, tid: str, pid: int, epoch: int, topics: Any,
                          verify_only: bool) -> dict[tuple[str, int], int]:
    """Errors per (topic, partition) for one transaction of the request."""
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    missing = {tp for tp in wanted if not _partition_exists(ctx, *tp)}
    if missing:   # KafkaApis: the whole transaction fails, verify_only or not
        return {tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in missing else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted}
    r: tx.AddPartitionsResult = await ctx.broker.txns.call_for(tid, tx.AddPartitionsToTxn(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, partitions=wanted,
        verify_only=verify_only, api_version=ctx.api_version))
    return {tp: fenced_for(ctx.api_version, 2, r.error_for(tp)) for tp in wanted}


def _topic_results(resp_cls: Any, errors: dict[tuple[str, int], int]) -> list:
    TR = resp_cls.AddPartitionsToTxnTopicResult
    PR = TR.AddPartitionsToTxnPartitionResult
    by_topic: dict[str, list] = defaultdict(list)
    for (topic, p), code in errors.items():   # (build: TR(...)/PR(...) without kafka-python's per-field walk)
        by_topic[topic].append(build(PR, None, {"partition_index": p, "partition_error_code": code}))
    return [build(TR, None, {"name": t, "results_by_partition": parts}) for t, parts in by_topic.items()]


def _response(ctx: RequestContext) -> Any:
    """An answer of the request's version with no result yet (v0-v3 fill the per-topic list,
    v4+ the per-transaction one)."""
    return ctx.response(throttle_time_ms=0, error_code=0, results_by_transaction=[],
                        results_by_topic_v3_and_below=[])


def _v3_answer(ctx: RequestContext, errors: dict[tuple[str, int], int]) -> Any:
    """The v0-v3 answer: each partition's error, grouped by topic."""
    resp = _response(ctx)
    resp.results_by_topic_v3_and_below = _topic_results(resp, errors)
    return resp


# successful v0-v3 answers by (version, the request's topics and partitions): a producer adds the
# same partitions transaction after transaction
ANSWERS: AnswerCache[bytes] = AnswerCache(4096)


@handles(ApiKey.ADD_PARTITIONS_TO_TXN)
async def add_partitions_to_txn(ctx: RequestContext, req: Any) -> Any:
    if ctx.api_version < 4:
        topics = req.v3_and_below_topics
        errors = await _add_partitions(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                       req.v3_and_below_producer_epoch, topics, False)
        if ctx.broker.authorizer is not None or any(errors.values()):
            return _v3_answer(ctx, errors)
        # Every partition added: the answer is fixed by the version and the topics and partitions
        # named, so it is encoded once per such request (protocol/answer_cache.py). Not with an
        # authorizer: its rule answers through the message.
        key = (ctx.api_version, tuple([(t.name, tuple(t.partitions)) for t in topics]))
        return ANSWERS.answer(key, ctx.correlation_id, lambda: bytes(encode_response(_v3_answer(ctx, errors), 0)))
    resp = _response(ctx)
    # the broker-originated form (Kafka's AddPartitionsToTxnManager batches the transactions of
    # every produce waiting for this coordinator): the transactions are stepped concurrently, each
    # answered once its own records (if any) are committed
    results: list[Any] = [None] * len(req.transactions)

    async def one(i: int, t: Any) -> None:
        errors = await _add_partitions(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                                       bool(t.verify_only))
        results[i] = resp.AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                                   topic_results=_topic_results(resp, errors))

    async with trio.open_nursery() as nursery:
        for i, t in enumerate(req.transactions):
            nursery.start_soon(one, i, t)
    resp.results_by_transaction = results
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.ADD_PARTITIONS_TO_TXN)
async def authorize_add_partitions_to_txn(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    if ctx.api_version >= 4:   # the broker-to-broker verification form
        if cluster(ctx, Op.CLUSTER_ACTION):
            return await handler(ctx, req)
        return ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, results_by_transaction=[])
    TR = response_class(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTopicResult")
    P = TR.AddPartitionsToTxnPartitionResult
    topics = req.v3_and_below_topics

    def answer(code_of: Callable[[str], int]) -> Any:
        return ctx.response(throttle_time_ms=0, results_by_topic_v3_and_below=[
            TR(name=t.name, results_by_partition=[P(partition_index=p, partition_error_code=code_of(t.name))
                                                  for p in t.partitions]) for t in topics])
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.v3_and_below_transactional_id):
        return answer(lambda _: TXN_DENIED)
    denied = {t.name for t in topics if not allowed(ctx, Op.WRITE, RT.TOPIC, t.name)}
    if denied:   # Kafka adds nothing then: the others are OPERATION_NOT_ATTEMPTED
        return answer(lambda n: TOPIC_DENIED if n in denied else ErrorCode.OPERATION_NOT_ATTEMPTED)
    return await handler(ctx, req)
