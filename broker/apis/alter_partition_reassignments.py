"""AlterPartitionReassignments v0-v1 (KIP-455).

Kafka's rules: per partition, a replica list moves the partition to those replicas (the
replicas become target + the ones to remove, ``adding``/``removing`` set, and the controller
completes the move once every target replica is in the ISR; at once when they already are);
a null list cancels (NO_REASSIGNMENT_IN_PROGRESS when none is ongoing). Targets must name
registered brokers once each (INVALID_REPLICA_ASSIGNMENT); v1's
``allow_replication_factor_change=false`` refuses a different replica count
(INVALID_REPLICATION_FACTOR). A single node's only replica is itself: moving to [itself] does
nothing, any other broker is not registered.
The decisions are coordinator/metadata/controller.py's, written with the partition epoch.
Authorization: ALTER on the cluster.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.admin import AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.metadata.partition_change import write_decision
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, alter_cluster_allowed, authorizes

AT = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
AP = AT.ReassignablePartitionResponse


def _single_node(ctx: RequestContext, topic: str, partition: int, target: list[int] | None) -> tuple[int, str | None]:
    t = ctx.broker.logs.topics.get(topic)
    if t is None or not 0 <= partition < len(t.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}."
    if target is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, (f"Unable to cancel reassignment for {topic}-{partition}: "
                                                       "no reassignment in progress.")
    for b in target:
        if b != ctx.broker.node_id:
            return (ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"The manual partition assignment includes broker {b}, but no such broker is registered.")
    if len(target) != 1:
        return (ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                f"The manual partition assignment includes the broker {ctx.broker.node_id} more than once."
                if target else "The manual partition assignment includes an empty replica list.")
    return 0, None


async def _cluster(ctx: RequestContext, topic: str, partition: int, target: list[int] | None,
                   allow_rf_change: bool) -> tuple[int, str | None]:
    from coordinator.metadata.controller import reassign_decision

    return await write_decision(ctx, lambda image: reassign_decision(image, topic, partition, target, allow_rf_change))


@handles(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
async def alter_partition_reassignments(ctx: RequestContext, req: AlterPartitionReassignmentsRequest) -> Any:
    allow = bool(getattr(req, "allow_replication_factor_change", True)) if ctx.api_version >= 1 else True
    responses = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            target = list(p.replicas) if p.replicas is not None else None
            if ctx.broker.cluster is not None:
                code, message = await _cluster(ctx, t.name, p.partition_index, target, allow)
            else:
                code, message = _single_node(ctx, t.name, p.partition_index, target)
                if code == 0 and not allow and target is not None and len(target) != 1:
                    code = ErrorCode.INVALID_REPLICATION_FACTOR
            parts.append(AP(partition_index=p.partition_index, error_code=code, error_message=message))
        responses.append(AT(name=t.name, partitions=parts))
    return ctx.response(throttle_time_ms=0, allow_replication_factor_change=allow, error_code=0,
                        error_message=None, responses=responses)


# -- authorization ----------------------------------------------------------------------------
@authorizes(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
def authorize_alter_partition_reassignments(ctx: Any, req: Any, handler: Handler) -> Any:
    """ALTER on the cluster (else every partition answers CLUSTER_AUTHORIZATION_FAILED)."""
    return alter_cluster_allowed(ctx, req, handler)
