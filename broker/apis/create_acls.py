"""CreateAcls v1-v3 (v0 is gone from Kafka 4).

Quirks: without an authorizer every answer is SECURITY_DISABLED, as Kafka's; creations are
validated as Kafka's AclControlManager does (no ANY/MATCH/UNKNOWN values, principal
``Type:name``, a PREFIXED wildcard is refused, CLUSTER is named ``kafka-cluster``); created ACLs
are AccessControlEntryRecords in the metadata log (the local log, or etcd in a cluster: every
broker enforces them once applied), written before the answer; an identical ACL already present
(also one another broker just created) adds nothing. While the metadata store is unreachable the
answer waits, then is REQUEST_TIMED_OUT.
Authorization: ALTER on the cluster.
"""
from __future__ import annotations

import uuid
from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import CreateAclsRequest, CreateAclsResponse

from coordinator.metadata.image import MetadataImage
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.acls import SECURITY_DISABLED_MESSAGE, WRITE_TIMEOUT_MS
from broker.metadata.store import MetadataUnavailable
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import (CLUSTER_NAME, AclBinding, Operation, Operation as Op, PatternType, Permission,
                                 ResourceType)
from broker.security.authz import (CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE, Handler, authorizes, on_cluster,
                                   response_class)
from broker.security.writes import write_decided


def _creation_error(acl: AclBinding) -> str | None:
    if acl.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN) or acl.resource_type not in \
            ResourceType._value2member_map_:
        return "Invalid resource type"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return "Invalid pattern type"
    if acl.operation in (Operation.ANY, Operation.UNKNOWN) or acl.operation not in Operation._value2member_map_:
        return "Invalid operation"
    if acl.permission_type not in (Permission.ALLOW, Permission.DENY):
        return "Invalid permission type"
    if not acl.resource_name:
        return "Resource name should not be empty"
    if acl.pattern_type == PatternType.PREFIXED and acl.resource_name == "*":
        return "Prefixed wildcard resource names are not supported"
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is " + CLUSTER_NAME
    if ":" not in acl.principal or not acl.principal.split(":", 1)[1]:
        return f"Could not parse principal from `{acl.principal}` (no colon is present separating the " \
               "principal type from the principal name)"
    if not acl.host:
        return "Invalid host"
    return None


@handles(ApiKey.CREATE_ACLS)
async def create_acls(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    R = CreateAclsResponse.AclCreationResult
    if ctx.broker.authorizer is None:
        return ctx.response(throttle_time_ms=0, results=[
            R(error_code=ErrorCode.SECURITY_DISABLED, error_message=SECURITY_DISABLED_MESSAGE) for _ in req.creations])
    acls = [AclBinding(str(uuid.uuid4()), c.resource_type, c.resource_name, c.resource_pattern_type, c.principal,
                       c.host, c.operation, c.permission_type) for c in req.creations]
    errors = [_creation_error(acl) for acl in acls]

    def decide(image: MetadataImage) -> tuple[list[AclBinding], None]:
        existing = {a.binding() for a in image.acls.values()}
        records: list[AclBinding] = []
        for acl, err in zip(acls, errors):
            if err is None and acl.binding() not in existing:
                existing.add(acl.binding())
                records.append(acl)
        return records, None

    failure = None
    try:
        await write_decided(ctx.broker.metadata, decide, WRITE_TIMEOUT_MS)
    except MetadataUnavailable as exc:
        failure = f"the cluster metadata store is unavailable: {exc}"
    results = [R(error_code=ErrorCode.INVALID_REQUEST, error_message=err) if err else
               R(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=failure) if failure else
               R(error_code=0, error_message=None) for err in errors]
    return ctx.response(throttle_time_ms=0, results=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.CREATE_ACLS)
def authorize_create_acls(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    R = response_class(ApiKey.CREATE_ACLS, "AclCreationResult")
    return on_cluster(ctx, req, handler, Op.ALTER, lambda: ctx.response(throttle_time_ms=0, results=[
        R(error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE) for _ in req.creations]))
