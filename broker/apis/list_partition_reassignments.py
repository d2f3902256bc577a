"""ListPartitionReassignments v0 (KIP-455).

Kafka's rules: answers the ongoing reassignments (all with null topics), leaving out partitions
not being moved, as the broker's Topology (broker/metadata/topology.py) has them (on a single
node nothing is ever ongoing).
Authorization: DESCRIBE on the cluster.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse

from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import Handler, authorizes, cluster_denied, on_cluster, response_class

LT = ListPartitionReassignmentsResponse.OngoingTopicReassignment

LP = LT.OngoingPartitionReassignment


@handles(ApiKey.LIST_PARTITION_REASSIGNMENTS)
async def list_partition_reassignments(ctx: RequestContext, req: ListPartitionReassignmentsRequest) -> Any:
    ongoing = ctx.broker.topology.ongoing_reassignments()
    wanted = (None if req.topics is None else {t.name: set(t.partition_indexes) for t in req.topics})
    topics = []
    for name, parts in ongoing.items():
        if wanted is not None and name not in wanted:
            continue
        entries = [LP(partition_index=p, replicas=list(reg.replicas), adding_replicas=list(reg.adding_replicas),
                      removing_replicas=list(reg.removing_replicas))
                   for p, reg in parts.items() if wanted is None or p in wanted[name]]
        if entries:
            topics.append(LT(name=name, partitions=entries))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, topics=topics)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.LIST_PARTITION_REASSIGNMENTS)   # ListPartitionReassignments: DESCRIBE on the cluster; denied: the asked partitions echoed
def authorize_list_partition_reassignments(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    T = response_class(ApiKey.LIST_PARTITION_REASSIGNMENTS, "OngoingTopicReassignment")
    P = T.OngoingPartitionReassignment
    return on_cluster(ctx, req, handler, Op.DESCRIBE, lambda: cluster_denied(ctx, topics=[
        T(name=t.name, partitions=[P(partition_index=i, replicas=[], adding_replicas=[], removing_replicas=[])
                                   for i in t.partition_indexes]) for t in req.topics or []]))
