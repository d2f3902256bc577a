"""DescribeClientQuotas v0-v1.

Samsa enforces no client quotas and stores none (AlterClientQuotas is not advertised), so the
answer is Kafka's for a cluster without quota configs: no entries (an empty list, not null).
The filter is still validated as Kafka's ClientQuotaCache does: an empty or duplicate entity
type is INVALID_REQUEST, a type other than user, client-id and ip is UNSUPPORTED_VERSION
("Custom entity type ... not supported"), and ip combined with user or client-id is
INVALID_REQUEST; a match type outside 0-2 is INVALID_REQUEST.
Authorization: DESCRIBE_CONFIGS on the cluster.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import DescribeClientQuotasRequest, DescribeClientQuotasResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import Handler, authorizes, cluster_denied, on_cluster

ENTITY_TYPES = ("user", "client-id", "ip")
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def _filter_error(req: DescribeClientQuotasRequest) -> tuple[int, str] | None:
    seen: set[str] = set()
    for c in req.components:
        if c.entity_type in seen:
            return ErrorCode.INVALID_REQUEST, f"Duplicate {c.entity_type} filter component entity type"
        if not c.entity_type:
            return ErrorCode.INVALID_REQUEST, "Unexpected empty filter component entity type"
        if c.entity_type not in ENTITY_TYPES:
            return ErrorCode.UNSUPPORTED_VERSION, f"Custom entity type {c.entity_type} not supported"
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            return ErrorCode.INVALID_REQUEST, f"Unknown match type {c.match_type}"
        seen.add(c.entity_type)
    if "ip" in seen and len(seen) > 1:
        return (ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination, IP filter component "
                                           "should not be used with user or clientId filter component.")
    return None


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS)
async def describe_client_quotas(ctx: RequestContext, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    err = _filter_error(req)
    if err is not None:
        return ctx.response(throttle_time_ms=0, error_code=err[0], error_message=err[1], entries=None)
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, entries=[])


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_CLIENT_QUOTAS)   # DescribeClientQuotas: DESCRIBE_CONFIGS on the cluster; denied: null entries (getErrorResponse)
def authorize_describe_client_quotas(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return on_cluster(ctx, req, handler, Op.DESCRIBE_CONFIGS, lambda: cluster_denied(ctx, entries=None))
