"""InitProducerId v0-v6 for idempotent producers (aiokafka sends v0, kafka-python v4,
the Java client v5). A non-null transactional id goes to the transaction coordinator
(broker/apis/transactions.py)."""
from __future__ import annotations

from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles
from broker.apis.add_partitions_to_txn import init_transactional_producer_id


@handles(ApiKey.INIT_PRODUCER_ID)
async def init_producer_id(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    if req.transactional_id is not None:
        return await init_transactional_producer_id(ctx, req)
    if req.producer_id is not None and req.producer_id >= 0:
        # KIP-360 epoch bump for an idempotent producer: same id, next epoch
        epoch = (req.producer_epoch + 1) if 0 <= req.producer_epoch < 32767 else 0
        pid = req.producer_id if epoch else ctx.broker.producer_ids.allocate()
        return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)
    pid = ctx.broker.producer_ids.allocate()
    return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
