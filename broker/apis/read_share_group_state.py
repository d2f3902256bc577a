"""ReadShareGroupState v0 (KIP-932; between brokers): a share partition's (new) leader reads its
state — start offset, state epoch and the state batches (acknowledged / archived ranges and the
delivery counts of available ones).

Quirks: answered by the share coordinator of the share partition's ``__share_group_state``
partition (NOT_COORDINATOR elsewhere); a share partition never initialized is INVALID_REQUEST
("Read operation on uninitialized share partition not allowed.", as Kafka); a leader epoch older
than the recorded one is FENCED_LEADER_EPOCH, a newer one is recorded (a ShareUpdate, committed
before the answer) so the previous leader's writes are fenced from then on.
Authorization: CLUSTER_ACTION on the cluster.
"""
from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from coordinator.share_state import coordinator as sc
from protocol.api_keys import ApiKey
from protocol.schema_messages import ReadShareGroupStateResponse

from broker.apis.shared.share_state import error_of, per_partition
from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import CLUSTER_DENIED, Handler, authorizes, cluster, whole_request

R = ReadShareGroupStateResponse.ReadStateResult
P = R.PartitionResult


@handles(ApiKey.READ_SHARE_GROUP_STATE)
async def read_share_group_state(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.share_coordinator

    async def step(key: Any, pd: Any) -> Any:
        return await shell.call_key(key, sc.ReadState(key=key, leader_epoch=pd.leader_epoch))

    def answer(partition: int, result: Any) -> Any:
        code, message = error_of(result)
        state = None if isinstance(result, tuple) else result.state
        if code or state is None:
            return P(partition=partition, error_code=code, error_message=message, state_epoch=0,
                     start_offset=-1, state_batches=[])
        return P(partition=partition, error_code=0, error_message=None, state_epoch=state.state_epoch,
                 start_offset=state.start_offset,
                 state_batches=[P.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                             delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                                for b in state.batches])

    return await per_partition(ctx, req, R, step, answer)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.READ_SHARE_GROUP_STATE)   # between brokers: CLUSTER_ACTION on the cluster
def authorize_read_share_group_state(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return whole_request(ctx, req, handler, cluster(ctx, Op.CLUSTER_ACTION), CLUSTER_DENIED)
