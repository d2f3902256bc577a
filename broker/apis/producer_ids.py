"""InitProducerId v0-v6 for idempotent producers (aiokafka sends v0, kafka-python v4,
the Java client v5). Transactional ids are answered with COORDINATOR_NOT_AVAILABLE until
the transaction coordinator exists, so clients fail clearly instead of misbehaving."""
from __future__ import annotations

from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from protocol.errors import ErrorCode

from ..dispatch import RequestContext, handles


@handles(22)
async def init_producer_id(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    if req.transactional_id:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                            producer_id=-1, producer_epoch=-1)
    if req.producer_id is not None and req.producer_id >= 0:
        # KIP-360 epoch bump for an idempotent producer: same id, next epoch
        epoch = (req.producer_epoch + 1) if 0 <= req.producer_epoch < 32767 else 0
        pid = req.producer_id if epoch else ctx.broker.producer_ids.allocate()
        return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)
    pid = ctx.broker.producer_ids.allocate()
    return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
