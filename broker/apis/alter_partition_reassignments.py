"""AlterPartitionReassignments v0-v1 (KIP-455).

Kafka's rules: per partition, a replica list moves the partition to those replicas (the
replicas become target + the ones to remove, ``adding``/``removing`` set, and the controller
completes the move once every target replica is in the ISR; at once when they already are);
a null list cancels (NO_REASSIGNMENT_IN_PROGRESS when none is ongoing). Targets must name
registered brokers once each (INVALID_REPLICA_ASSIGNMENT); v1's
``allow_replication_factor_change=false`` refuses a different replica count
(INVALID_REPLICATION_FACTOR). The broker's Topology (broker/metadata/topology.py) decides: a
single node's only replica is itself (moving to [itself] does nothing, any other broker is not
registered); a cluster's decisions are coordinator/metadata/controller.py's, written with the
partition epoch.
Authorization: ALTER on the cluster.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse

from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, alter_cluster_allowed, authorizes

AT = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
AP = AT.ReassignablePartitionResponse


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
async def alter_partition_reassignments(ctx: RequestContext, req: AlterPartitionReassignmentsRequest) -> Any:
    allow = bool(getattr(req, "allow_replication_factor_change", True)) if ctx.api_version >= 1 else True
    responses = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            target = list(p.replicas) if p.replicas is not None else None
            code, message = await ctx.broker.topology.reassign(t.name, p.partition_index, target, allow)
            parts.append(AP(partition_index=p.partition_index, error_code=code, error_message=message))
        responses.append(AT(name=t.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, allow_replication_factor_change=allow, error_code=0,
                        error_message=None, responses=responses)


# -- authorization ----------------------------------------------------------------------------
@authorizes(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
def authorize_alter_partition_reassignments(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    """ALTER on the cluster (else every partition answers CLUSTER_AUTHORIZATION_FAILED)."""
    return alter_cluster_allowed(ctx, req, handler)
