"""Produce v3-v13.

Quirks: acks=0 gets no response at all (the Java client fails on one), and when any partition
failed the connection is closed instead, as Kafka does, so the client notices; v13 names topics
by id (UNKNOWN_TOPIC_ID when unknown); batches are validated from their headers and CRC
and stored as sent (compression untouched); a retried idempotent batch is answered with
its original base offset; clients may not write to internal topics. A transactional batch
is verified with the transaction coordinator first (KIP-890, Kafka 3.6+'s
transaction.partition.verification.enable default): a partition that is not part of the
producer's ongoing transaction answers INVALID_TXN_STATE and nothing is appended.
Authorization: WRITE on each topic, and WRITE on the transactional id for transactional records
(acks=0: denied partitions close the connection, as Kafka).
"""
from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.producer import ProduceRequest, ProduceResponse

from coordinator.txn import coordinator as tx
from protocol import records as rb
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID, absent_partition_error, find_topic
from broker.common.connection_close import CloseConnection
from broker.log.manager import INTERNAL_TOPICS
from broker.network.dispatch import RequestContext, handles
from broker.replica.answers import absent_leader_answer, leader_endpoints, not_leader_answer, wait_for_replicas
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (TOPIC_DENIED, TXN_DENIED, Handler, allowed, authorizes, response_class, split_topics,
                                   topic_name)

TR = ProduceResponse.TopicProduceResponse
PR = TR.PartitionProduceResponse


def _error(index: int, code: int, message: str | None = None) -> Any:   # a PR
    return PR(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
              record_errors=[], error_message=message)


def _verify_transaction(ctx: RequestContext, transactional_id: str | None, topic: str, partition: int,
                        batch: rb.BatchHeader) -> int:
    """Is (topic, partition) in the ongoing transaction of the batch's producer? Answered within
    this step (no await), so the transaction cannot end between the check and the append. From
    Produce v12 (transactions v2 clients, KIP-890 part 2) the partition is added instead."""
    if not transactional_id:
        return ErrorCode.NONE        # Kafka verifies only requests that name their transaction
    if getattr(ctx.broker.txns.coordinator_for(transactional_id)[1], "_unloaded", False):
        return ErrorCode.NONE        # the coordinator is another broker of the cluster (not asked over the network)
    r: tx.AddPartitionsResult = ctx.broker.txns.call_now(transactional_id, tx.AddPartitionsToTxn(
        transactional_id=transactional_id, producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
        partitions=[(topic, partition)], verify_only=ctx.api_version < 12))
    code = r.error_for((topic, partition))
    if code == ErrorCode.PRODUCER_FENCED:
        code = ErrorCode.INVALID_PRODUCER_EPOCH       # Kafka's AddPartitionsToTxnManager mapping
    elif code == ErrorCode.CONCURRENT_TRANSACTIONS:
        code = ErrorCode.NOT_ENOUGH_REPLICAS          # (the previous transaction is completing): retriable
    return code


@handles(ApiKey.PRODUCE)
async def produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None:
    broker = ctx.broker
    now = broker.now_ms()
    acks = req.acks
    responses = []
    appended = False
    written = []
    metrics = broker.metrics
    replicated: list = []  # acks=all on partitions with followers: (partition, required offset, answer)
    for td in req.topic_data:
        tid = getattr(td, "topic_id", None)
        by_id = ctx.api_version >= 13
        topic = find_topic(broker, None if by_id else td.name, tid if by_id else None)
        parts = []
        if metrics is not None and topic is not None:
            metrics.produce_request(topic.name)
        for pd in td.partition_data:
            if acks not in (0, 1, -1):
                parts.append(_error(pd.index, ErrorCode.INVALID_REQUIRED_ACKS))
                continue
            if topic.internal if topic is not None else td.name in INTERNAL_TOPICS:
                parts.append(_error(pd.index, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                    f"Cannot append to internal topic {topic.name if topic else td.name}"))
                continue
            part = topic.partitions.get(pd.index) if topic is not None else None
            if part is None:
                # no local replica: NOT_LEADER_OR_FOLLOWER when the cluster has the partition
                name, topic_id = (None, tid) if by_id else (td.name, None)
                err = absent_partition_error(broker, name, pd.index, topic_id)
                parts.append(absent_leader_answer(ctx, name, topic_id, pd.index, _error(pd.index, err)))
                continue
            assert topic is not None   # a partition was found in it
            if part.replica is not None:      # a cluster: only the leader appends (broker/replica/)
                err = broker.replicas.check_produce(part, acks)
                if err:
                    parts.append(not_leader_answer(ctx, part, _error(pd.index, err)))
                    continue
            data = pd.records or b""  # not copied: Partition.append writes it with stamped heads
            try:
                batches = list(rb.iter_batches(data))
            except rb.InvalidBatch as exc:
                parts.append(_error(pd.index, exc.error_code, str(exc)))
                continue
            if any(b.is_control for b in batches):
                parts.append(_error(pd.index, ErrorCode.INVALID_RECORD, "Clients may not write control records"))
                continue
            if batches[0].is_transactional:
                err = _verify_transaction(ctx, req.transactional_id, topic.name, pd.index, batches[0])
                if err:
                    parts.append(_error(pd.index, err, "Partition is not part of an ongoing transaction"
                                        if err == ErrorCode.INVALID_TXN_STATE else None))
                    continue
            result = part.append(data, batches, now)
            if result.error:
                parts.append(_error(pd.index, result.error, result.message))
                continue
            appended = True
            written.append(part)
            if metrics is not None:   # per batch header, never per record
                metrics.produced(topic.name, sum(b.record_count for b in batches), len(data))
            parts.append(PR(index=pd.index, error_code=0, base_offset=result.base_offset,
                            log_append_time_ms=result.log_append_time, log_start_offset=result.log_start_offset,
                            record_errors=[], error_message=None))
            if part.replica is not None and part.replica.followers:
                broker.replicas.leader_appended(part)
                if acks == -1:
                    replicated.append((part, part.log_end_offset, parts[-1]))
        responses.append(TR(name=td.name if not by_id else None,
                            topic_id=tid if tid is not None else ZERO_UUID, partition_responses=parts))
    if appended:
        broker.appends.notify()
        # fsync before answering when samsa.fsync.on.acks.all (acks=all) or flush.messages asks for it
        await broker.logs.after_append(written, acks)
    if replicated:
        await wait_for_replicas(ctx, replicated, req.timeout_ms)
    if acks == 0:
        failed = [(t.name or t.topic_id, p.index, p.error_code) for t in responses for p in t.partition_responses
                  if p.error_code]
        if failed:   # no answer is expected: Kafka closes the connection so the client notices
            raise CloseConnection(f"acks=0 produce failed (topic, partition, error code): {failed}")
        return None
    endpoints = leader_endpoints(ctx, responses, "partition_responses", ProduceResponse) \
        if broker.replicas.active else []
    return ctx.response(responses=responses, throttle_time_ms=0, node_endpoints=endpoints)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
def _first_batch_transactional(records: Any) -> bool:
    """Kafka's RequestUtils.flags: the first batch's transactional attribute (header bytes only)."""
    return bool(records) and len(records) > rb.OFF_ATTRIBUTES + 1 and records[rb.OFF_MAGIC] == 2 and \
        bool(struct.unpack_from(">h", records, rb.OFF_ATTRIBUTES)[0] & rb.TRANSACTIONAL_MASK)


@authorizes(ApiKey.PRODUCE)
async def authorize_produce(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    """KafkaApis.handleProduceRequest: a request with transactional records (first batch of any
    partition) needs WRITE on its transactional id (none named: denied), else every partition
    answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then WRITE on each topic."""
    TR = response_class(ApiKey.PRODUCE, "TopicProduceResponse")
    PR = TR.PartitionProduceResponse
    txn_id = getattr(req, "transactional_id", None)
    transactional = any(_first_batch_transactional(p.records) for t in req.topic_data for p in t.partition_data)
    if transactional and (txn_id is None or not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, txn_id)):
        ok: list[Any] = []
        denied, code = list(req.topic_data), TXN_DENIED
    else:
        ok, denied = split_topics(ctx, req.topic_data, Op.WRITE, lambda t: topic_name(ctx, t.name, getattr(t, "topic_id", None)))
        code = TOPIC_DENIED
    if not denied:
        return await handler(ctx, req)
    req.topic_data = ok
    if req.acks == 0:   # the allowed partitions are still written; then Kafka closes (no answer is due)
        if ok:
            await handler(ctx, req)
        raise CloseConnection(f"acks=0 produce denied on {[t.name or t.topic_id for t in denied]}: "
                              f"error code {code}")
    response = await handler(ctx, req) if ok else ctx.response(responses=[], throttle_time_ms=0)
    response.responses.extend(
        TR(name=t.name, topic_id=getattr(t, "topic_id", None),
           partition_responses=[PR(index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                                   log_start_offset=-1, record_errors=[], error_message=None)
                                for p in t.partition_data])
        for t in denied)
    return response
