"""InitializeShareGroupState v0 (KIP-932; between brokers): the group coordinator (or
AlterShareGroupOffsets) sets a share partition's state afresh at a start offset and state epoch.

Quirks: answered by the share coordinator of the share partition's ``__share_group_state``
partition (NOT_COORDINATOR elsewhere, the caller finds it with FindCoordinator key type 2); an older
state epoch than the recorded one is FENCED_STATE_EPOCH; the answer waits until the ShareSnapshot
it wrote is committed. An empty group id is INVALID_REQUEST.
Authorization: CLUSTER_ACTION on the cluster.
"""
from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from coordinator.share_state import coordinator as sc
from protocol.api_keys import ApiKey
from protocol.schema_messages import InitializeShareGroupStateResponse

from broker.apis.shared.share_state import error_of, per_partition
from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import CLUSTER_DENIED, Handler, authorizes, cluster, whole_request

R = InitializeShareGroupStateResponse.InitializeStateResult
P = R.PartitionResult


@handles(ApiKey.INITIALIZE_SHARE_GROUP_STATE)
async def initialize_share_group_state(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.share_coordinator

    async def step(key: Any, pd: Any) -> Any:
        return await shell.call_key(key, sc.InitializeState(key=key, state_epoch=pd.state_epoch,
                                                            start_offset=pd.start_offset))

    def answer(partition: int, result: Any) -> Any:
        code, message = error_of(result)
        return P(partition=partition, error_code=code, error_message=message)

    return await per_partition(ctx, req, R, step, answer)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.INITIALIZE_SHARE_GROUP_STATE)   # between brokers: CLUSTER_ACTION on the cluster
def authorize_initialize_share_group_state(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return whole_request(ctx, req, handler, cluster(ctx, Op.CLUSTER_ACTION), CLUSTER_DENIED)
