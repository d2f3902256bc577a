"""AddOffsetsToTxn v0-v4: adds the group's ``__consumer_offsets`` partition to the producer's
transaction (creating the topic on first use).

Quirks: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH before v2. Transactions v2
clients skip it (TxnOffsetCommit v5 adds the partition itself).
Authorization: WRITE on the transactional id, then READ on the group.
"""
from __future__ import annotations

from typing import Any

from coordinator.txn import coordinator as tx
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.apis.shared.transactions import fenced_for
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, TXN_DENIED, Handler, allowed, authorizes


@handles(ApiKey.ADD_OFFSETS_TO_TXN)
async def add_offsets_to_txn(ctx: RequestContext, req: Any) -> Any:
    groups = ctx.broker.groups
    offsets_partition, _ = groups.coordinator_for(req.group_id or "")    # creates __consumer_offsets
    r: tx.AddPartitionsResult = await ctx.broker.txns.call_for(req.transactional_id, tx.AddOffsetsToTxn(
        transactional_id=req.transactional_id, producer_id=req.producer_id, producer_epoch=req.producer_epoch,
        group_id=req.group_id, offsets_partition=offsets_partition, api_version=ctx.api_version))
    return ctx.response(throttle_time_ms=0, error_code=fenced_for(ctx.api_version, 2, r.error_code))


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.ADD_OFFSETS_TO_TXN)
async def authorize_add_offsets_to_txn(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=TXN_DENIED)
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_DENIED)
    return await handler(ctx, req)
