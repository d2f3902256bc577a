"""ElectLeaders v0-v2 (preferred and unclean leader election, KIP-460).

Kafka's rules: v0 is always PREFERRED; v1+ carries ``election_type`` (0 PREFERRED, 1 UNCLEAN;
anything else is INVALID_REQUEST for the whole request, top-level error from v1). Null
``topic_partitions`` means every partition, and then partitions answering ELECTION_NOT_NEEDED are
left out of the answer. Per partition: UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED (the
preferred replica already leads / the partition has a live leader),
PREFERRED_LEADER_NOT_AVAILABLE (the first replica is not live or not in the ISR),
ELIGIBLE_LEADERS_NOT_AVAILABLE (unclean: no live replica).
The broker's Topology (broker/metadata/topology.py) decides each partition: a single node leads
every partition it has, so every election there is not needed; in a cluster the decisions are
coordinator/metadata/controller.py's, written with the partition epoch they were decided on (a
lost race is decided again on the new image).
Authorization: ALTER on the cluster.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import ElectLeadersRequest, ElectLeadersResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, alter_cluster_allowed, authorizes

R = ElectLeadersResponse.ReplicaElectionResult
PR = R.PartitionResult


def _requested(ctx: RequestContext, req: Any) -> tuple[list[tuple[str, int]], bool]:
    if req.topic_partitions is not None:
        return [(tp.topic, p) for tp in req.topic_partitions for p in tp.partitions], False
    topics = ctx.broker.topology.topics()
    return [(name, p) for name, t in list(topics.items()) for p in range(t.partition_count)], True


@handles(ApiKey.ELECT_LEADERS)
async def elect_leaders(ctx: RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse:
    v = ctx.api_version
    election_type = req.election_type if v >= 1 else 0
    if election_type not in (0, 1):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, replica_election_results=[])
    wanted, everything = _requested(ctx, req)
    by_topic: dict[str, list[Any]] = {}   # PR messages
    for topic, partition in wanted:
        code, message = await ctx.broker.topology.elect_leader(topic, partition, election_type)
        if everything and code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        by_topic.setdefault(topic, []).append(PR(partition_id=partition, error_code=code, error_message=message))
    results = [R(topic=t, partition_result=parts) for t, parts in by_topic.items()]
    return ctx.response(throttle_time_ms=0, error_code=0, replica_election_results=results)


# -- authorization ----------------------------------------------------------------------------
@authorizes(ApiKey.ELECT_LEADERS)
def authorize_elect_leaders(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    """ALTER on the cluster (else every partition answers CLUSTER_AUTHORIZATION_FAILED)."""
    return alter_cluster_allowed(ctx, req, handler)
