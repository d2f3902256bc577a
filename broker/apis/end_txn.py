"""EndTxn v0-v5: commits or aborts the producer's transaction (the coordinator writes the
markers, broker/coordinator_runtime/txn_runtime.py).

Quirks: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH before v2. Transactions v2
(KIP-890 part 2, v5): every commit/abort bumps the producer epoch and the answer carries the next
producer id/epoch. Not done: a TV2 commit/abort at the last epoch (32766) keeps the epoch instead
of moving to a new producer id.
Authorization: WRITE on the transactional id.
"""
from __future__ import annotations

from typing import Any

from coordinator.txn import coordinator as tx
from protocol.answer_cache import AnswerCache
from protocol.api_keys import ApiKey
from protocol.messages import encode_response

from broker.common.services import RequestScope
from broker.apis.shared.transactions import fenced_for
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import TXN_DENIED, Handler, allowed, authorizes


# successful answers by version: before v5 a success answers only NONE (v5's carries the next
# transaction's producer id and epoch, new with every commit, and is never cached)
ANSWERS: AnswerCache[bytes] = AnswerCache(16)


@handles(ApiKey.END_TXN)
async def end_txn(ctx: RequestContext, req: Any) -> Any:
    r: tx.EndTxnResult = await ctx.broker.txns.call_for(req.transactional_id, tx.EndTxn(
        transactional_id=req.transactional_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
        committed=bool(req.committed), api_version=ctx.api_version))
    code = fenced_for(ctx.api_version, 2, r.error_code)
    version = ctx.api_version
    if code or version >= 5 or ctx.broker.authorizer is not None:
        return _answer(ctx, code, r)
    # A v0-v4 success: the answer is fixed by the version, so it is encoded once per version
    # (protocol/answer_cache.py). Not with an authorizer: its rule answers through the message.
    return ANSWERS.answer(version, ctx.correlation_id, lambda: bytes(encode_response(_answer(ctx, code, r), 0)))


def _answer(ctx: RequestContext, code: int, r: tx.EndTxnResult) -> Any:
    """The answer as a message (the producer id and epoch are read only from v5)."""
    return ctx.response(throttle_time_ms=0, error_code=code, producer_id=r.producer_id,
                        producer_epoch=r.producer_epoch)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.END_TXN)
async def authorize_end_txn(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=TXN_DENIED, producer_id=-1, producer_epoch=-1)
    return await handler(ctx, req)
