"""AlterConfigs v0-v2.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.admin import AlterConfigsRequest, AlterConfigsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.apis.shared.config_changes import (apply_topic_configs, check_topic_resource, each_resource,
                                               non_topic_error, resource_response)
from broker.apis.shared.topic_rules import Reject
from broker.common.config_defs import TOPIC
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, alter_configs_allowed, authorizes


@handles(ApiKey.ALTER_CONFIGS)
async def alter_configs(ctx: RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse:
    out = []
    for res, duplicated in each_resource(req.resources):
        rtype, name = res.resource_type, res.resource_name
        try:
            if duplicated:
                raise Reject(ErrorCode.INVALID_REQUEST, "Duplicate resource.")
            if rtype != TOPIC:
                raise non_topic_error(rtype)
            check_topic_resource(name)
            new = {c.name: c.value for c in res.configs}
            await apply_topic_configs(ctx, name, new, bool(req.validate_only))
            out.append(resource_response(AlterConfigsResponse, rtype, name))
        except Reject as rej:
            out.append(resource_response(AlterConfigsResponse, rtype, name, rej.code, rej.message))
    return ctx.response(throttle_time_ms=0, responses=out)


# -- authorization ----------------------------------------------------------------------------
@authorizes(ApiKey.ALTER_CONFIGS)
def authorize_alter_configs(ctx: Any, req: Any, handler: Handler) -> Any:
    """ALTER_CONFIGS on each topic (or group), or on the cluster for broker resources."""
    return alter_configs_allowed(ctx, req, handler)
