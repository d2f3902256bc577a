"""IncrementalAlterConfigs v0-v1 (the ConfigDef logic is broker/common/config_defs.py).

Kafka's rules, as its controller applies them: SET/DELETE/APPEND/SUBTRACT (the last two only on
LIST configs, else INVALID_CONFIG); duplicate keys, null values outside DELETE and unknown
operations answer INVALID_REQUEST; the resulting overrides are validated as AlterConfigs'
(INVALID_CONFIG), then an unknown topic answers "The topic 'x' does not exist.". A BROKER resource
("" for the cluster-wide default, else this broker's id) takes Kafka's dynamic broker configs: the
operations apply to the resource's stored configs (APPEND/SUBTRACT only on LIST properties, Kafka's
prepareIncrementalConfigs), the result is checked as AlterConfigs checks it and stored as
ConfigRecords in the metadata log. A GROUP resource takes Kafka's group configs
(coordinator/group/group_config.py: SET and DELETE, checked as Kafka's GroupConfig checks them,
INVALID_CONFIG otherwise), stored as GROUP ConfigRecords (broker/metadata/group_configs.py); the group
need not exist; an empty group name answers INVALID_REQUEST "Default group resources are not
allowed." as Kafka's controller does. BROKER_LOGGER answers INVALID_REQUEST.
Authorization: ALTER_CONFIGS on each topic (or group), on the cluster for broker resources.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.config_changes import (ConfigRejected, apply_broker_configs, apply_group_configs,
                                               apply_topic_configs, check_broker_resource, check_topic_resource, config_topic,
                                               each_resource, non_topic_error, resource_response)
from broker.common.config import TOPIC_CONFIG_DEFS
from broker.common.config_defs import BROKER, GROUP, TOPIC, broker_default, render_config
from broker.common.dynamic_config_defs import dynamic_kind
from broker.metadata.dynamic_broker_configs import stored_broker_configs
from broker.metadata.topology import TopicConfigs
from broker.network.dispatch import RequestContext, handles
from broker.security.authz import Handler, alter_configs_allowed, authorizes

# IncrementalAlterConfigs operations
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

_OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _list_parts(value: str | None) -> list[str]:
    return [p for p in (value or "").split(",") if p]


def _incremental(topic: TopicConfigs | None, configs: list) -> dict[str, str | None]:
    """The overrides after applying SET/DELETE/APPEND/SUBTRACT (Kafka's incrementalAlterConfigResource)."""
    current = dict(topic.configs) if topic is not None else {}
    new: dict[str, str | None] = dict(current)
    for c in configs:
        op = c.config_operation
        if op == SET:
            new[c.name] = c.value
        elif op == DELETE:
            new.pop(c.name, None)
        else:  # APPEND / SUBTRACT
            d = TOPIC_CONFIG_DEFS.get(c.name)
            if d is None or d.kind != "list":
                raise ConfigRejected(ErrorCode.INVALID_CONFIG,
                              f"Can't {_OP_NAMES[op]} to key {c.name} because its type is not LIST.")
            base = new.get(c.name)
            parts = _list_parts(base if base is not None else render_config("list", d.default))
            values = (c.value or "").split(",")
            if op == APPEND:
                parts += [v for v in dict.fromkeys(values) if v not in parts]
            else:
                parts = [p for p in parts if p not in values]
            new[c.name] = ",".join(parts)
    return new


def _incremental_broker(current: dict[str, str], configs: list) -> dict[str, str]:
    """Kafka's ConfigAdminManager.prepareIncrementalConfigs on a BROKER resource's stored configs."""
    new = dict(current)
    for c in configs:
        op = c.config_operation
        if op == SET:
            new[c.name] = c.value
        elif op == DELETE:
            new.pop(c.name, None)
        else:
            kind = dynamic_kind(c.name)
            if kind is None:
                raise ConfigRejected(ErrorCode.INVALID_CONFIG, f"Unknown config name: {c.name}")
            verb = "append" if op == APPEND else "subtract"
            if kind != "list":
                raise ConfigRejected(ErrorCode.INVALID_CONFIG,
                                     f"Config value {verb} is not allowed for config key: {c.name}")
            base = new.get(c.name)
            if base is None:
                base = render_config("list", broker_default(c.name)) or ""
            if op == APPEND:
                parts = _list_parts(base)
                parts += [v for v in (c.value or "").split(",") if v not in parts]
            else:
                parts = base.split(",")
                for v in (c.value or "").split(","):
                    if v in parts:
                        parts.remove(v)
            new[c.name] = ",".join(parts)
    return new


async def _alter_group(ctx: RequestContext, group_id: str, configs: list, validate_only: bool) -> None:
    """Kafka's group configs: SET/DELETE on the stored overrides (no LIST configs, so APPEND/SUBTRACT
    are INVALID_CONFIG), the result checked and stored as ``apply_group_configs`` does."""
    from broker.metadata.group_configs import stored_group_configs

    new = stored_group_configs(ctx.broker, group_id)
    for c in configs:
        if c.config_operation == SET:
            new[c.name] = c.value
        elif c.config_operation == DELETE:
            new.pop(c.name, None)
        else:
            raise ConfigRejected(ErrorCode.INVALID_CONFIG,
                                 f"Can't {_OP_NAMES[c.config_operation]} to key {c.name} because its type is not LIST.")
    await apply_group_configs(ctx, group_id, new, validate_only)


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def incremental_alter_configs(ctx: RequestContext,
                                    req: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    out = []
    for res, duplicated in each_resource(req.resources):
        rtype, name = res.resource_type, res.resource_name
        try:
            if duplicated:
                raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Duplicate resource.")
            keys = [c.name for c in res.configs]
            if len(set(keys)) != len(keys):
                raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
            nulls = [c.name for c in res.configs if c.config_operation != DELETE and c.value is None]
            if nulls:
                raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
            bad_ops = [c.config_operation for c in res.configs if c.config_operation not in _OP_NAMES]
            if bad_ops:
                raise ConfigRejected(ErrorCode.INVALID_REQUEST, f"Unknown operation type {bad_ops[0]}")
            if rtype == BROKER:
                check_broker_resource(ctx, name)
                configs = _incremental_broker(stored_broker_configs(ctx.broker, name), list(res.configs))
                await apply_broker_configs(ctx, name, configs, bool(req.validate_only))
                out.append(resource_response(IncrementalAlterConfigsResponse, rtype, name))
                continue
            if rtype == GROUP:
                await _alter_group(ctx, name, list(res.configs), bool(req.validate_only))
                out.append(resource_response(IncrementalAlterConfigsResponse, rtype, name))
                continue
            if rtype != TOPIC:
                raise non_topic_error(rtype)
            check_topic_resource(name)
            new = _incremental(config_topic(ctx, name), list(res.configs))
            await apply_topic_configs(ctx, name, new, bool(req.validate_only))
            out.append(resource_response(IncrementalAlterConfigsResponse, rtype, name))
        except ConfigRejected as rej:
            out.append(resource_response(IncrementalAlterConfigsResponse, rtype, name, rej.code, rej.message))
    return ctx.response(throttle_time_ms=0, responses=out)


# -- authorization ----------------------------------------------------------------------------
@authorizes(ApiKey.INCREMENTAL_ALTER_CONFIGS)
def authorize_incremental_alter_configs(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    """ALTER_CONFIGS on each topic (or group), or on the cluster for broker resources."""
    return alter_configs_allowed(ctx, req, handler)
