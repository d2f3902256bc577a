"""DescribeAcls v1-v3 (v0 is gone from Kafka 4).

Quirks: without an authorizer the answer is SECURITY_DISABLED, as Kafka's; the ACLs are the
metadata image's, grouped by resource pattern.
Authorization: DESCRIBE on the cluster.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import DescribeAclsRequest, DescribeAclsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.acls import SECURITY_DISABLED_MESSAGE
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import AclBinding, Operation as Op, acl_filter_matches
from broker.security.authz import Handler, authorizes, cluster_denied, on_cluster


@handles(ApiKey.DESCRIBE_ACLS)
async def describe_acls(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    if ctx.broker.authorizer is None:
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.SECURITY_DISABLED, error_message=SECURITY_DISABLED_MESSAGE,
                            resources=[])
    matched: dict[tuple[int, str, int], list[AclBinding]] = {}
    for acl in ctx.broker.metadata.image.acls.values():
        if acl_filter_matches(acl, req.resource_type_filter, req.resource_name_filter, req.pattern_type_filter,
                              req.principal_filter, req.host_filter, req.operation, req.permission_type):
            matched.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(acl)
    Res = DescribeAclsResponse.DescribeAclsResource
    A = Res.AclDescription
    resources = [Res(resource_type=rt, resource_name=rn, pattern_type=pt,
                     acls=[A(principal=a.principal, host=a.host, operation=a.operation,
                             permission_type=a.permission_type) for a in acls])
                 for (rt, rn, pt), acls in matched.items()]
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, resources=resources)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_ACLS)
def authorize_describe_acls(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return on_cluster(ctx, req, handler, Op.DESCRIBE, lambda: cluster_denied(ctx, resources=[]))
