"""AlterConfigs v0-v2 (the ConfigDef logic is broker/common/config_defs.py).

Kafka's rules, as its controller applies them: a resource named twice answers INVALID_REQUEST
once; values are validated with Kafka's types, ranges and messages (INVALID_CONFIG); the new
configs replace all of the topic's overrides; an unknown topic answers "The topic 'x' does not
exist." after validation. Samsa has no dynamic broker configs: altering BROKER or BROKER_LOGGER
resources answers INVALID_REQUEST. Topic config changes are live (partitions read their configs
through ``LogManager.topic_config_value``); in a cluster they are ConfigRecords in the metadata log.
Authorization: ALTER_CONFIGS on each topic (or group), on the cluster for broker resources.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import AlterConfigsRequest, AlterConfigsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.config_changes import (ConfigRejected, apply_topic_configs, check_topic_resource, each_resource,
                                               non_topic_error, resource_response)
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
                raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Duplicate resource.")
            if rtype != TOPIC:
                raise non_topic_error(rtype)
            check_topic_resource(name)
            new = {c.name: c.value for c in res.configs}
            await apply_topic_configs(ctx, name, new, bool(req.validate_only))
            out.append(resource_response(AlterConfigsResponse, rtype, name))
        except ConfigRejected as rej:
            out.append(resource_response(AlterConfigsResponse, rtype, name, rej.code, rej.message))
    return ctx.response(throttle_time_ms=0, responses=out)


# -- authorization ----------------------------------------------------------------------------
@authorizes(ApiKey.ALTER_CONFIGS)
def authorize_alter_configs(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    """ALTER_CONFIGS on each topic (or group), or on the cluster for broker resources."""
    return alter_configs_allowed(ctx, req, handler)
