"""DeleteAcls v1-v3 (v0 is gone from Kafka 4).

Quirks: without an authorizer every answer is SECURITY_DISABLED, as Kafka's; deleted ACLs are
RemoveAccessControlEntryRecords in the metadata log, written before the answer; an ACL matched by
several filters is removed once and listed under each. While the metadata store is unreachable
the answer waits, then is REQUEST_TIMED_OUT.
Authorization: ALTER on the cluster.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import DeleteAclsRequest, DeleteAclsResponse

from coordinator.metadata.image import MetadataImage
from coordinator.metadata.records import RemoveAccessControlEntryRecord
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.acls import SECURITY_DISABLED_MESSAGE, WRITE_TIMEOUT_MS
from broker.metadata.store import MetadataUnavailable
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, acl_filter_matches
from broker.security.authz import (CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE, Handler, authorizes, on_cluster,
                                   response_class)
from broker.security.writes import write_decided


@handles(ApiKey.DELETE_ACLS)
async def delete_acls(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse:
    FR = DeleteAclsResponse.DeleteAclsFilterResult
    M = FR.DeleteAclsMatchingAcl
    if ctx.broker.authorizer is None:
        return ctx.response(throttle_time_ms=0, filter_results=[
            FR(error_code=ErrorCode.SECURITY_DISABLED, error_message=SECURITY_DISABLED_MESSAGE, matching_acls=[])
            for _ in req.filters])

    def decide(image: MetadataImage) -> tuple[list[RemoveAccessControlEntryRecord], list[Any]]:
        removed: set[str] = set()
        results: list[Any] = []   # FR messages
        records: list[RemoveAccessControlEntryRecord] = []
        for f in req.filters:
            matches = []
            for acl_id, acl in image.acls.items():
                if acl_filter_matches(acl, f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                                      f.principal_filter, f.host_filter, f.operation, f.permission_type):
                    matches.append(M(error_code=0, error_message=None, resource_type=acl.resource_type,
                                     resource_name=acl.resource_name, pattern_type=acl.pattern_type,
                                     principal=acl.principal, host=acl.host, operation=acl.operation,
                                     permission_type=acl.permission_type))
                    if acl_id not in removed:
                        removed.add(acl_id)
                        records.append(RemoveAccessControlEntryRecord(acl_id))
            results.append(FR(error_code=0, error_message=None, matching_acls=matches))
        return records, results

    try:
        results = await write_decided(ctx.broker.metadata, decide, WRITE_TIMEOUT_MS)
    except MetadataUnavailable as exc:
        results = [FR(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=f"the cluster metadata store is "
                      f"unavailable: {exc}", matching_acls=[]) for _ in req.filters]
    return ctx.response(throttle_time_ms=0, filter_results=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DELETE_ACLS)
def authorize_delete_acls(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    R = response_class(ApiKey.DELETE_ACLS, "DeleteAclsFilterResult")
    return on_cluster(ctx, req, handler, Op.ALTER, lambda: ctx.response(throttle_time_ms=0, filter_results=[
        R(error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE, matching_acls=[]) for _ in req.filters]))
