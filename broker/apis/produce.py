"""Produce v3-v13.

Quirks: acks=0 gets no response at all (the Java client fails on one); v13 names topics
by id (UNKNOWN_TOPIC_ID when unknown); batches are validated from their headers and CRC
and stored as sent (compression untouched); a retried idempotent batch is answered with
its original base offset; clients may not write to internal topics.
"""
from __future__ import annotations

from kafka.protocol.producer import ProduceRequest, ProduceResponse

from protocol import records as rb
from protocol.errors import ErrorCode

from ..dispatch import RequestContext, handles
from .common import ZERO_UUID, find_topic

TR = ProduceResponse.TopicProduceResponse
PR = TR.PartitionProduceResponse


def _error(index: int, code: int, message: str | None = None) -> PR:
    return PR(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
              record_errors=[], error_message=message)


@handles(0)
async def produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None:
    broker = ctx.broker
    now = broker.now_ms()
    acks = req.acks
    responses = []
    appended = False
    written = []
    for td in req.topic_data:
        tid = getattr(td, "topic_id", None)
        by_id = ctx.api_version >= 13
        topic = find_topic(broker, None if by_id else td.name, tid if by_id else None)
        parts = []
        for pd in td.partition_data:
            if acks not in (0, 1, -1):
                parts.append(_error(pd.index, ErrorCode.INVALID_REQUIRED_ACKS))
                continue
            if topic is None:
                parts.append(_error(pd.index, ErrorCode.UNKNOWN_TOPIC_ID if by_id
                                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            if topic.internal:
                parts.append(_error(pd.index, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                    f"Cannot append to internal topic {topic.name}"))
                continue
            if not 0 <= pd.index < len(topic.partitions):
                parts.append(_error(pd.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            part = topic.partitions[pd.index]
            data = bytearray(pd.records or b"")
            try:
                batches = list(rb.iter_batches(data))
            except rb.InvalidBatch as exc:
                parts.append(_error(pd.index, exc.error_code, str(exc)))
                continue
            if any(b.is_control for b in batches):
                parts.append(_error(pd.index, ErrorCode.INVALID_RECORD, "Clients may not write control records"))
                continue
            result = part.append(data, batches, now)
            if result.error:
                parts.append(_error(pd.index, result.error, result.message))
                continue
            appended = True
            written.append(part)
            parts.append(PR(index=pd.index, error_code=0, base_offset=result.base_offset,
                            log_append_time_ms=result.log_append_time, log_start_offset=result.log_start_offset,
                            record_errors=[], error_message=None))
        responses.append(TR(name=td.name if not by_id else None,
                            topic_id=tid if tid is not None else ZERO_UUID, partition_responses=parts))
    if appended:
        broker.appends.notify()
        # fsync before answering when samsa.fsync.on.acks.all (acks=all) or flush.messages asks for it
        await broker.logs.after_append(written, acks)
    if acks == 0:
        return None
    return ctx.response(responses=responses, throttle_time_ms=0, node_endpoints=[])
