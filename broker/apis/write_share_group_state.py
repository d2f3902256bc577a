"""WriteShareGroupState v0-v1 (KIP-932; between brokers): a share partition's leader writes the
state batches that changed since its last write, and its start offset (-1: unchanged).

Quirks: v1 adds DeliveryCompleteCount (KIP-1226, Kafka 4.2; -1 for v0). Answered by the share
coordinator of the share partition's ``__share_group_state`` partition (NOT_COORDINATOR
elsewhere); never initialized is INVALID_REQUEST ("Write operation on uninitialized share partition
not allowed."); an older leader epoch is FENCED_LEADER_EPOCH, an older state epoch
FENCED_STATE_EPOCH (-1 for either skips that check, as Kafka 4.3); batches are merged into the
held state (newer ones override the offsets they cover, those below the start offset go); the
answer waits until the ShareUpdate (or, every
``share.coordinator.snapshot.update.records.per.snapshot`` updates, ShareSnapshot) is committed.
Authorization: CLUSTER_ACTION on the cluster.
"""
from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from coordinator.share.persister import PersisterStateBatch
from coordinator.share_state import coordinator as sc
from protocol.api_keys import ApiKey
from protocol.schema_messages import WriteShareGroupStateResponse

from broker.apis.shared.share_state import error_of, per_partition
from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import CLUSTER_DENIED, Handler, authorizes, cluster, whole_request

R = WriteShareGroupStateResponse.WriteStateResult
P = R.PartitionResult


@handles(ApiKey.WRITE_SHARE_GROUP_STATE)
async def write_share_group_state(ctx: RequestContext, req: Any) -> Any:
    shell = ctx.broker.share_coordinator
    v1 = ctx.api_version >= 1

    async def step(key: Any, pd: Any) -> Any:
        batches = tuple(PersisterStateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                        for b in pd.state_batches)
        return await shell.call_key(key, sc.WriteState(
            key=key, state_epoch=pd.state_epoch, leader_epoch=pd.leader_epoch, start_offset=pd.start_offset,
            batches=batches, delivery_complete_count=pd.delivery_complete_count if v1 else -1))

    def answer(partition: int, result: Any) -> Any:
        code, message = error_of(result)
        return P(partition=partition, error_code=code, error_message=message)

    return await per_partition(ctx, req, R, step, answer)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.WRITE_SHARE_GROUP_STATE)   # between brokers: CLUSTER_ACTION on the cluster
def authorize_write_share_group_state(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return whole_request(ctx, req, handler, cluster(ctx, Op.CLUSTER_ACTION), CLUSTER_DENIED)
