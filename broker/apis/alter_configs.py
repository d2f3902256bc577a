"""AlterConfigs v0-v2 (the ConfigDef logic is broker/common/config_defs.py).

Kafka's rules, as its controller applies them: a resource named twice answers INVALID_REQUEST
once; values are validated with Kafka's types, ranges and messages (INVALID_CONFIG); the new
configs replace all of the topic's overrides; an unknown topic answers "The topic 'x' does not
exist." after validation. Topic config changes are live (partitions read their configs through
``LogManager.topic_config_value``); in a cluster they are ConfigRecords in the metadata log.
A BROKER resource ("" for the cluster-wide default, else this broker's id) takes Kafka's dynamic
broker configs (KIP-226): the request's configs replace all of the resource's, after Kafka's
checks (duplicate keys, null values, the node id, DynamicBrokerConfig.validateConfigs: INVALID_REQUEST
with Kafka's message); they are ConfigRecords in the metadata log, applied at once on every broker
they concern (broker/metadata/dynamic_broker_configs.py). A GROUP resource takes Kafka's group
configs (KIP-848; Kafka's broker passes GROUP through ConfigAdminManager.preprocess and its
controller accepts it): the request's configs replace all of the group's, after the same duplicate-key
and null-value checks (INVALID_REQUEST), then as IncrementalAlterConfigs checks them (INVALID_CONFIG).
BROKER_LOGGER answers INVALID_REQUEST.
Authorization: ALTER_CONFIGS on each topic (or group), on the cluster for broker resources.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import AlterConfigsRequest, AlterConfigsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.config_changes import (ConfigRejected, apply_broker_configs, apply_group_configs,
                                               apply_topic_configs, check_broker_resource, check_topic_resource, each_resource,
                                               non_topic_error, resource_response)
from broker.common.config_defs import BROKER, GROUP, TOPIC
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
            if rtype in (BROKER, GROUP):
                keys = [c.name for c in res.configs]
                if len(set(keys)) != len(keys):
                    raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
                nulls = [c.name for c in res.configs if c.value is None]
                if nulls:
                    raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
                new_configs = {c.name: c.value for c in res.configs}
                if rtype == GROUP:
                    await apply_group_configs(ctx, name, new_configs, bool(req.validate_only))
                else:
                    check_broker_resource(ctx, name)
                    await apply_broker_configs(ctx, name, new_configs, bool(req.validate_only))
                out.append(resource_response(AlterConfigsResponse, rtype, name))
                continue
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
