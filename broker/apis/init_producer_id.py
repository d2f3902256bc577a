"""InitProducerId v0-v6: idempotent producers (aiokafka sends v0, kafka-python v4, the Java
client v5) get a producer id here; a non-null transactional id goes to the transaction
coordinator.

Quirks (Kafka's): KIP-360 epoch bump for an idempotent producer that sends its id and epoch (a
new id when the epoch would overflow); PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH
before v4; an empty transactional id is INVALID_REQUEST; ``enable_2pc`` (KIP-939) is refused with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED since two-phase commit is off.
Authorization: WRITE on the transactional id, or IDEMPOTENT_WRITE on the cluster or WRITE on any
topic (KIP-679) for an idempotent producer.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from coordinator.txn import coordinator as tx
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.transactions import fenced_for
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import CLUSTER_DENIED, TXN_DENIED, Handler, allowed, authorizer_of, authorizes, cluster


@handles(ApiKey.INIT_PRODUCER_ID)
async def init_producer_id(ctx: RequestContext, req: InitProducerIdRequest) -> InitProducerIdResponse:
    if req.transactional_id is not None:
        return await init_transactional_producer_id(ctx, req)
    producer_ids = ctx.broker.producer_ids
    assert producer_ids is not None   # set at start-up, before the listeners open
    if req.producer_id is not None and req.producer_id >= 0:
        # KIP-360 epoch bump for an idempotent producer: same id, next epoch
        epoch = (req.producer_epoch + 1) if 0 <= req.producer_epoch < 32767 else 0
        pid = req.producer_id if epoch else producer_ids.allocate()
        return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)
    pid = producer_ids.allocate()
    return ctx.response(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)


async def init_transactional_producer_id(ctx: RequestContext, req: Any) -> Any:
    """InitProducerId for a non-null transactional id (called by the InitProducerId handler)."""
    def answer(code: int, pid: int = -1, epoch: int = -1) -> Any:
        return ctx.response(throttle_time_ms=0, error_code=fenced_for(ctx.api_version, 4, code),
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


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.INIT_PRODUCER_ID)
async def authorize_init_producer_id(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    txn_id = req.transactional_id
    if txn_id:
        ok, code = allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, txn_id), TXN_DENIED
    else:
        auth = authorizer_of(ctx)
        ok = cluster(ctx, Op.IDEMPOTENT_WRITE) or auth.authorize_any(ctx.principal, ctx.client_host, Op.WRITE,
                                                                      RT.TOPIC)
        code = CLUSTER_DENIED
    if ok:
        return await handler(ctx, req)
    return ctx.response(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)
