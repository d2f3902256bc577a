"""WriteTxnMarkers v1-v2 (between brokers): a transaction coordinator asks each partition's
leader to write the COMMIT/ABORT marker of a producer's transaction.

Quirks: only the partition's leader writes (NOT_LEADER_OR_FOLLOWER otherwise, the coordinator
retries at the new leader); a marker on ``__consumer_offsets`` also settles the producer's
pending transactional offset commits there; as in Kafka the answer waits until the markers
are replicated to the ISR (acks=all) when the partition has followers.
Authorization: CLUSTER_ACTION on the cluster.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.producer import WriteTxnMarkersResponse

from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.replica.marker_writes import write_markers
from broker.security.acl import Operation as Op
from broker.security.authz import CLUSTER_DENIED, Handler, authorizes, cluster, whole_request

MR = WriteTxnMarkersResponse.WritableTxnMarkerResult
TR = MR.WritableTxnMarkerTopicResult
PR = TR.WritableTxnMarkerPartitionResult


@handles(ApiKey.WRITE_TXN_MARKERS)
async def write_txn_markers(ctx: RequestContext, req: Any) -> Any:
    results = []
    for marker in req.markers:
        wanted = [(t.name, i) for t in marker.topics for i in t.partition_indexes]
        codes = await write_markers(ctx.broker, marker.producer_id, marker.producer_epoch, marker.transaction_result,
                                    marker.coordinator_epoch, wanted)
        topics = [TR(name=t.name, partitions=[PR(partition_index=i, error_code=codes[(t.name, i)])
                                              for i in t.partition_indexes]) for t in marker.topics]
        results.append(MR(producer_id=marker.producer_id, topics=topics))
    return ctx.response(markers=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.WRITE_TXN_MARKERS)   # WriteTxnMarkers (between brokers): CLUSTER_ACTION on the cluster
def authorize_write_txn_markers(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return whole_request(ctx, req, handler, cluster(ctx, Op.CLUSTER_ACTION), CLUSTER_DENIED)
