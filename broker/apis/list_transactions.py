"""ListTransactions v0-v2.

Quirks: unknown state filters are echoed in ``unknown_state_filters``; v1 adds the duration
filter, v2 the transactional id pattern (an invalid regular expression answers
INVALID_REGULAR_EXPRESSION).
Authorization: transactions whose id the principal may not DESCRIBE are left out.
"""
from __future__ import annotations

import re
from typing import Any

from coordinator.txn import coordinator as tx
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import Handler, allowed, authorizes

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
    error: int = ErrorCode.NONE
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


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.LIST_TRANSACTIONS)
async def authorize_list_transactions(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    response = await handler(ctx, req)
    response.transaction_states = [s for s in response.transaction_states
                                   if allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, s.transactional_id)]
    return response
