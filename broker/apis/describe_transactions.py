"""DescribeTransactions v0.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from coordinator.txn import coordinator as tx
from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles


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
