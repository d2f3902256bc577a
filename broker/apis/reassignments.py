"""ListPartitionReassignments v0.

A single node never moves replicas, so no reassignment is ever ongoing. As Kafka's
ReplicationControlManager answers: null topics lists every ongoing reassignment, named topics
that do not exist are skipped without an error, topics without an ongoing reassignment are left
out; so the answer is always an empty list with error 0. (AlterPartitionReassignments is not
advertised.)
"""
from __future__ import annotations

from kafka.protocol.admin import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse

from ..dispatch import RequestContext, handles


@handles(46)
async def list_partition_reassignments(ctx: RequestContext,
                                       req: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, topics=[])
