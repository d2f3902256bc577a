"""DescribeCluster v0-v2.

Kafka's rules: the brokers and controller of the broker's Topology (broker/metadata/topology.py;
a single node is the only broker and the controller, never fenced), each with its endpoint on
the listener of the connection (as in Metadata); v1+ asks for an endpoint type and
a broker answers only BROKERS (1): CONTROLLERS (2) is MISMATCHED_ENDPOINT_TYPE, anything
else UNSUPPORTED_ENDPOINT_TYPE (both INVALID_REQUEST in v0). Cluster authorized operations
are -2147483648 (not computed) unless asked for; when asked, a broker without an
authorizer grants every operation a cluster supports, as Kafka does.
The unfenced brokers are answered (v2's ``include_fenced_brokers`` adds the fenced).
Authorization: none beyond KIP-430's authorized operations (0 without DESCRIBE on the cluster).
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, authorizes, with_authorized_operations

BROKERS, CONTROLLERS = 1, 2
_ENDPOINT_NAMES = {BROKERS: "BROKER", CONTROLLERS: "CONTROLLER"}

# AclOperation codes Kafka supports on the CLUSTER resource: CREATE, ALTER, DESCRIBE,
# CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
CLUSTER_OPERATIONS = frozenset({5, 7, 8, 9, 10, 11, 12})


@handles(ApiKey.DESCRIBE_CLUSTER)
async def describe_cluster(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
    v = ctx.api_version
    endpoint = req.endpoint_type if v >= 1 else BROKERS
    if endpoint not in _ENDPOINT_NAMES:
        return ctx.response(throttle_time_ms=0,
                            error_code=ErrorCode.INVALID_REQUEST if v == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                            error_message=f"Unsupported endpoint type {endpoint}", endpoint_type=BROKERS,
                            cluster_id="", controller_id=-1, brokers=[], authorized_operations=None)
    if endpoint != BROKERS:
        return ctx.response(throttle_time_ms=0,
                            error_code=ErrorCode.INVALID_REQUEST if v == 0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                            error_message=f"The request was sent to an endpoint of type BROKER, but we wanted "
                                          f"an endpoint of type {_ENDPOINT_NAMES[endpoint]}",
                            endpoint_type=BROKERS, cluster_id="", controller_id=-1, brokers=[],
                            authorized_operations=None)
    topology = ctx.broker.topology
    include_fenced = bool(getattr(req, "include_fenced_brokers", False))
    brokers = []
    for b in topology.brokers():
        if b.fenced and not include_fenced:
            continue
        ep = b.endpoint(ctx.listener)
        if ep is None:
            continue
        brokers.append(DescribeClusterResponse.DescribeClusterBroker(broker_id=b.id, host=ep.host, port=ep.port,
                                                                     rack=b.rack, is_fenced=b.fenced))
    ops = set(CLUSTER_OPERATIONS) if req.include_cluster_authorized_operations else None
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=BROKERS,
                        cluster_id=ctx.broker.cluster_id, controller_id=topology.controller_id, brokers=brokers,
                        authorized_operations=ops)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_CLUSTER)
async def authorize_describe_cluster(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    return with_authorized_operations(ctx, req, await handler(ctx, req))
