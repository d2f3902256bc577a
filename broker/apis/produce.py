"""Produce v3-v13.

Quirks: acks=0 gets no response at all (the Java client fails on one), and when any partition
failed the connection is closed instead, as Kafka does, so the client notices; v13 names topics
by id (UNKNOWN_TOPIC_ID when unknown); batches are validated from their headers and CRC
and stored as sent (compression untouched); a retried idempotent batch is answered with
its original base offset; clients may not write to internal topics. The first transactional
batch of a producer epoch on a partition is verified with the transaction coordinator first
(KIP-890, Kafka's ReplicaManager; ``transaction.partition.verification.enable``, default true),
in process or broker-to-broker (broker/replica/txn_verify.py), all partitions of the request
together; from Produce v12 (transactions v2) the partitions are added to the transaction instead,
whatever that setting. A partition that is not part of the producer's ongoing transaction answers
INVALID_TXN_STATE and nothing is appended; the append happens only under the verification guard
taken before the coordinator was asked (coordinator/txn/producer_state.py), so a verification
that raced with a marker or a fence cannot append. Coordinator errors are Kafka's produce errors:
PRODUCER_FENCED as INVALID_PRODUCER_EPOCH; an unreachable, loading or moved coordinator as
NOT_ENOUGH_REPLICAS (retriable), CONCURRENT_TRANSACTIONS too before v12 (from v12 it is retried
for up to 100 ms in the broker, then answered as itself).
Authorization: WRITE on each topic, and WRITE on the transactional id for transactional records
(acks=0: denied partitions close the connection, as Kafka).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import trio

from kafka.protocol.producer import ProduceRequest, ProduceResponse

from coordinator.txn.producer_state import VerificationGuard
from protocol import records as rb
from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.errors import ErrorCode
from protocol.answer_cache import AnswerCache, write_correlation_id
from protocol.messages import encode_response

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID, absent_partition_error, find_topic
from broker.common.connection_close import CloseConnection
from broker.log.manager import INTERNAL_TOPICS
from broker.log.partition import Partition
from broker.network.dispatch import RequestContext, handles
from broker.replica.txn_verify import verify_transaction
from broker.replica.answers import absent_leader_answer, leader_endpoints, not_leader_answer, wait_for_replicas
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (TOPIC_DENIED, TXN_DENIED, Handler, allowed, authorizes, response_class, split_topics,
                                   topic_name)

TR = ProduceResponse.TopicProduceResponse
PR = TR.PartitionProduceResponse


def _error(index: int, code: int, message: str | None = None) -> Any:   # a PR
    return PR(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
              record_errors=[], error_message=message)


# Kafka's add.partitions.to.txn.retry.backoff.ms / .max.ms: a transactions-v2 produce whose
# implicit add meets CONCURRENT_TRANSACTIONS (the previous transaction's markers are being written)
# is retried within the broker for this long before the error is answered
ADD_PARTITIONS_RETRY_BACKOFF_S = 0.02
ADD_PARTITIONS_RETRY_MAX_S = 0.1
_UNVERIFIED = (ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
               ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)


@dataclass(slots=True)
class _Append:
    """A partition of the request that passed every check before the append: what to append once
    its transaction is verified. ``guard`` is the verification guard taken before the coordinator
    was asked (None: its transaction was already ongoing here); ``error`` the verification's."""
    topic: Any
    index: int
    part: Partition
    data: Any
    batches: list[rb.BatchHeader]
    transactional: bool = False
    guard: VerificationGuard | None = None
    error: tuple[int, str | None] | None = None


def verification_enabled(broker: Any) -> bool:
    """``transaction.partition.verification.enable`` (Kafka's default: true)."""
    value = broker.config.get("transaction.partition.verification.enable", True)
    return str(value).strip().lower() != "false" if isinstance(value, str) else bool(value)


def _verification_error(code: int, api_version: int) -> tuple[int, str | None]:
    """Kafka's ReplicaManager: the coordinator's answer as a Produce error. Errors older clients
    might not retry become NOT_ENOUGH_REPLICAS (retriable, no metadata refresh);
    CONCURRENT_TRANSACTIONS stays itself for transactions v2 (Produce v12+)."""
    if code == ErrorCode.PRODUCER_FENCED:
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    elif code == ErrorCode.TRANSACTION_ABORTABLE and api_version < 12:
        code = ErrorCode.INVALID_TXN_STATE
    if code == ErrorCode.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    if code in _UNVERIFIED or (code == ErrorCode.CONCURRENT_TRANSACTIONS and api_version < 12):
        return (ErrorCode.NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to the "
                f"transaction. Underlying error: {ErrorCode(code).name}")
    return code, None


async def _verify_transactions(ctx: RequestContext, transactional_id: str, appends: list[_Append],
                               enabled: bool) -> bool:
    """Kafka's maybeSendPartitionsToTransactionCoordinator for every partition of the request at
    once: a partition whose producer epoch has no transaction ongoing here takes a verification
    guard and is checked (transactions v1) or added (v2, Produce v12+) with the coordinator, one
    request per producer. ``enabled``: ``verification_enabled``, as the request read it. Sets each
    failed partition's ``error``; True when it awaited."""
    tv2 = ctx.api_version >= 12
    if not (tv2 or enabled):
        return False
    by_producer: dict[tuple[int, int], list[_Append]] = {}
    for a in appends:
        if not a.transactional:
            continue
        first = a.batches[0]
        a.guard = a.part.producers.start_verification(first.producer_id, first.producer_epoch)
        if a.guard is not None:
            by_producer.setdefault((first.producer_id, first.producer_epoch), []).append(a)
    if not by_producer:
        return False
    for (producer_id, epoch), group in by_producer.items():
        partitions = [(a.topic.name, a.index) for a in group]
        # (the retry budget only matters for transactions v2: an older Produce asks once)
        deadline = trio.current_time() + ADD_PARTITIONS_RETRY_MAX_S if tv2 else 0.0
        while True:
            errors = await verify_transaction(ctx.broker, transactional_id, producer_id, epoch, partitions, tv2)
            if not (tv2 and ErrorCode.CONCURRENT_TRANSACTIONS in errors.values()) or \
                    trio.current_time() + ADD_PARTITIONS_RETRY_BACKOFF_S > deadline:
                break
            await trio.sleep(ADD_PARTITIONS_RETRY_BACKOFF_S)
        for a in group:
            code = errors.get((a.topic.name, a.index), ErrorCode.NONE)
            if code:
                a.error = _verification_error(code, ctx.api_version)
    return True


@handles(ApiKey.PRODUCE)
async def produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None:
    """Checks every partition, verifies the transactional ones with their coordinator (all
    together, the only await before the appends), then appends; each append happens only if its
    partition is still led here and its verification guard still holds."""
    broker = ctx.broker
    acks = req.acks
    metrics = broker.metrics
    topics: list[tuple[Any, list[Any]]] = []   # (topic data, answers and _Appends in request order)
    appends: list[_Append] = []
    by_id = ctx.api_version >= 13
    for td in req.topic_data:
        # (no topic_id before v13: kafka-python's default for it, None, without its __getattr__)
        tid = td.topic_id if by_id else None
        topic = find_topic(broker, None if by_id else td.name, tid if by_id else None)
        parts: list[Any] = []
        topics.append((td, parts))
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
            a = _Append(topic, pd.index, part, data, batches,
                        transactional=bool(req.transactional_id) and batches[0].is_transactional)
            parts.append(a)
            appends.append(a)
    # Kafka verifies only requests that name their transaction; the setting is read once per
    # request, so the verification and the append-time check follow the same reading
    guarded = bool(req.transactional_id) and verification_enabled(broker)
    awaited = bool(req.transactional_id) and await _verify_transactions(ctx, req.transactional_id, appends, guarded)
    now = broker.now_ms()
    appended = False
    written = []
    replicated: list = []  # acks=all on partitions with followers: (partition, required offset, answer)
    responses = []
    version = ctx.api_version
    for td, parts in topics:
        for i, a in enumerate(parts):
            if isinstance(a, _Append):
                parts[i] = _append(ctx, a, acks, now, awaited, guarded)
                if parts[i].error_code == 0:
                    appended = True
                    written.append(a.part)
                    part = a.part
                    if part.replica is not None and part.replica.followers and acks == -1:
                        replicated.append((part, part.log_end_offset, parts[i]))
        tid = td.topic_id if by_id else None
        responses.append(build(TR, version, {"name": None if by_id else td.name,
                                             "topic_id": tid if tid is not None else ZERO_UUID,
                                             "partition_responses": parts}))
    if appended:   # (each append already woke the fetches and moved a leader-only ISR's HW)
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
    if not endpoints and broker.authorizer is None:
        # Not with an authorizer: its rule (authorize_produce) adds denied topics to the message.
        frame = _success_frame(ctx, req, responses)
        if frame is not None:
            return frame
    return ctx.response(responses=responses, throttle_time_ms=0, node_endpoints=endpoints)


# Successful answers by (version, the topics and partitions answered), encoded once: a success
# differs from the next of the same shape only in each partition's offsets (base offset, log append
# time, log start offset from v5), fixed-width fields at fixed places, written into a copy with the
# correlation id (as protocol/answer_cache.py does for answers fixed by their shape). A producer
# sends the same topics and partitions request after request; its answer's encoding was a tenth of
# a transactional Produce's broker CPU. A shape is cached from its second success (``SEEN``): a
# producer of many partitions may send a different subset each time, and making a template costs
# more than encoding one answer.
ANSWERS_LIMIT = 4096
ANSWERS: AnswerCache[tuple[bytes, tuple[int, ...]]] = AnswerCache(ANSWERS_LIMIT)
SEEN: set[tuple[Any, ...]] = set()
_OFFSETS = struct.Struct(">qqq")      # base_offset, log_append_time_ms, log_start_offset (v5+)
_OFFSETS_V3 = struct.Struct(">qq")    # base_offset, log_append_time_ms (v3-v4)


def _success_frame(ctx: RequestContext, req: ProduceRequest, responses: list[Any]) -> bytes | None:
    """The framed answer when every partition succeeded, from the template of its shape; None
    when one did not (the answer is encoded as a message then)."""
    for t in responses:
        for p in t.partition_responses:
            if p.error_code:
                return None
    version = ctx.api_version
    by_id = version >= 13
    key = (version, tuple([(td.topic_id if by_id else td.name, tuple([pd.index for pd in td.partition_data]))
                           for td in req.topic_data]))
    hit = ANSWERS.get(key)
    if hit is None:
        if key not in SEEN:
            if len(SEEN) >= ANSWERS_LIMIT:
                SEEN.clear()
            SEEN.add(key)
            return None
        hit = _template(ctx, responses)
        if hit is None:
            return None
        ANSWERS.put(key, hit)
    template, positions = hit
    frame = bytearray(template)
    write_correlation_id(frame, ctx.correlation_id)
    i = 0
    if version >= 5:
        pack = _OFFSETS.pack_into
        for t in responses:
            for p in t.partition_responses:
                pack(frame, positions[i], p.base_offset, p.log_append_time_ms, p.log_start_offset)
                i += 1
    else:
        pack = _OFFSETS_V3.pack_into
        for t in responses:
            for p in t.partition_responses:
                pack(frame, positions[i], p.base_offset, p.log_append_time_ms)
                i += 1
    return bytes(frame)


def _template(ctx: RequestContext, responses: list[Any]) -> tuple[bytes, tuple[int, ...]] | None:
    """A success answer of this shape encoded, and where each partition's offsets start in it:
    found by encoding it with every offset 0 and with every offset -1, the bytes that differ.
    None if they are not where they must be (then nothing is cached)."""
    version = ctx.api_version
    fields = 3 if version >= 5 else 2

    def encoded(value: int) -> bytes:
        topics = [build(TR, version, {
            "name": t.name, "topic_id": t.topic_id if version >= 13 else ZERO_UUID,
            "partition_responses": [build(PR, version, {
                "index": p.index, "error_code": 0, "base_offset": value, "log_append_time_ms": value,
                "log_start_offset": value, "record_errors": [], "error_message": None})
                for p in t.partition_responses]}) for t in responses]
        return bytes(encode_response(ctx.response(responses=topics, throttle_time_ms=0, node_endpoints=[]), 0))
    zeros, ones = encoded(0), encoded(-1)
    if len(zeros) != len(ones):
        return None
    differ = [i for i in range(len(zeros)) if zeros[i] != ones[i]]
    width = 8 * fields
    starts = tuple(differ[::width])
    if differ != [s + k for s in starts for k in range(width)] or \
            len(starts) != sum(len(t.partition_responses) for t in responses):
        return None
    return zeros, starts


def _append(ctx: RequestContext, a: _Append, acks: int, now: int, awaited: bool, guarded: bool) -> Any:
    """One partition's append after verification (no await from the guard check to the append)."""
    broker, part = ctx.broker, a.part
    if a.error is not None:
        return _error(a.index, *a.error)
    if awaited:   # the cluster may have moved on during the verification
        if broker.logs.partition(a.topic.name, a.index) is not part:
            return _error(a.index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if part.replica is not None:
            err = broker.replicas.check_produce(part, acks)
            if err:
                return not_leader_answer(ctx, part, _error(a.index, err))
    if a.transactional and guarded:
        first = a.batches[0]
        if not part.producers.verified(first.producer_id, first.producer_epoch, a.guard):
            # a marker, a fence or a newer verification since: Kafka's append-time check
            return _error(a.index, ErrorCode.INVALID_TXN_STATE, "Record was not part of an ongoing transaction")
    result = part.append(a.data, a.batches, now)
    if result.error:
        return _error(a.index, result.error, result.message)
    if broker.metrics is not None:   # per batch header, never per record
        broker.metrics.produced(a.topic.name, sum(b.record_count for b in a.batches), len(a.data))
    # (build: PR(...) made from a plan, its in-version fields set, so encoding reads no default
    # through kafka-python's __getattr__)
    return build(PR, ctx.api_version, {"index": a.index, "error_code": 0, "base_offset": result.base_offset,
                                       "log_append_time_ms": result.log_append_time,
                                       "log_start_offset": result.log_start_offset, "record_errors": [],
                                       "error_message": None})


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
