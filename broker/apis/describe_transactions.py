"""DescribeTransactions v0: the state of transactional ids, from their coordinators.

Authorization: DESCRIBE on each transactional id (denied ones answer
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); topics the principal may not DESCRIBE are left out.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from coordinator.txn import coordinator as tx
from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import TXN_DENIED, Handler, allowed, authorizes, response_class


@handles(ApiKey.DESCRIBE_TRANSACTIONS)
async def describe_transactions(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.txns
    by_partition: dict[int, list[str]] = defaultdict(list)
    for tid in req.transactional_ids:
        by_partition[shell.coordinator_for(tid or "")[0]].append(tid)
    described: dict[str, tx.DescribedTransaction] = {}
    for p, ids in by_partition.items():
        r: tx.DescribeTransactionsResult = await shell.call(p, tx.DescribeTransactions(transactional_ids=ids))
        for d in r.transactions:
            described[d.transactional_id] = d
    resp = ctx.response(throttle_time_ms=0, transaction_states=[])
    TS = resp.TransactionState
    for tid in req.transactional_ids:
        d = described[tid or ""]
        resp.transaction_states.append(TS(
            error_code=d.error_code, transactional_id=tid, transaction_state=d.state,
            transaction_timeout_ms=d.timeout_ms, transaction_start_time_ms=d.start_time_ms,
            producer_id=d.producer_id, producer_epoch=d.producer_epoch,
            topics=[TS.TopicData(topic=t, partitions=ps) for t, ps in d.topics]))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_TRANSACTIONS)
async def authorize_describe_transactions(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    denied = [t for t in req.transactional_ids if not allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, t)]
    req.transactional_ids = [t for t in req.transactional_ids if t not in denied]
    response = await handler(ctx, req) if req.transactional_ids else ctx.response(throttle_time_ms=0,
                                                                                   transaction_states=[])
    for state in response.transaction_states:
        state.topics = [t for t in state.topics if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.topic)]
    S = response_class(ApiKey.DESCRIBE_TRANSACTIONS, "TransactionState")
    response.transaction_states.extend(
        S(error_code=TXN_DENIED, transactional_id=t, transaction_state="", transaction_timeout_ms=0,
          transaction_start_time_ms=0, producer_id=0, producer_epoch=0, topics=[]) for t in denied)   # schema defaults
    return response
