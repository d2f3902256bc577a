"""ReadShareGroupStateSummary v0-v1 (KIP-932; between brokers): a share partition's state epoch,
leader epoch and start offset without its batches (DescribeShareGroupOffsets, lag).

Quirks: v1 adds DeliveryCompleteCount (KIP-1226, Kafka 4.2). Answered by the share coordinator of
the share partition's ``__share_group_state`` partition (NOT_COORDINATOR elsewhere); a share
partition never initialized answers success with start offset -1, as Kafka; a leader epoch older
than the recorded one is FENCED_LEADER_EPOCH (-1: not checked).
Authorization: CLUSTER_ACTION on the cluster.
"""
from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from coordinator.share_state import coordinator as sc
from protocol.api_keys import ApiKey
from protocol.schema_messages import ReadShareGroupStateSummaryResponse

from broker.apis.shared.share_state import error_of, per_partition
from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import CLUSTER_DENIED, Handler, authorizes, cluster, whole_request

R = ReadShareGroupStateSummaryResponse.ReadStateSummaryResult
P = R.PartitionResult


@handles(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)
async def read_share_group_state_summary(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.share_coordinator

    async def step(key: Any, pd: Any) -> Any:
        return await shell.call_key(key, sc.ReadStateSummary(key=key, leader_epoch=pd.leader_epoch))

    def answer(partition: int, result: Any) -> Any:
        code, message = error_of(result)
        if code or isinstance(result, tuple):
            return P(partition=partition, error_code=code, error_message=message, state_epoch=0, leader_epoch=-1,
                     start_offset=-1, delivery_complete_count=-1)
        return P(partition=partition, error_code=0, error_message=None, state_epoch=result.state_epoch,
                 leader_epoch=result.leader_epoch, start_offset=result.start_offset,
                 delivery_complete_count=result.delivery_complete_count)

    return await per_partition(ctx, req, R, step, answer)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)   # between brokers: CLUSTER_ACTION on the cluster
def authorize_read_share_group_state_summary(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return whole_request(ctx, req, handler, cluster(ctx, Op.CLUSTER_ACTION), CLUSTER_DENIED)
