"""What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share: a topic's configs as the
broker's Topology holds them (broker/metadata/topology.py), Kafka's answers for
resources that cannot be altered, and validating and storing a topic's new overrides.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Iterable

import structlog

from protocol.errors import ErrorCode

from broker.common.config import ConfigError
from broker.common.config_defs import BROKER_LOGGER, INTEGER_PATTERN, RESOURCE_NAMES, validate_topic_configs
from broker.log.manager import topic_name_error
from broker.metadata.topology import TopicConfigs
from broker.network.dispatch import RequestContext

log = structlog.get_logger("samsa.configs")

DYNAMIC_LOG_LEVELS_UNSUPPORTED = (
    "Samsa does not support changing broker log levels at runtime: set SAMSA_LOG_LEVEL and restart.")


def config_topic(ctx: RequestContext, name: str) -> TopicConfigs | None:
    """The topic's name, overrides and internal flag, as the broker's Topology holds them (the
    log manager's on a single node, the image's ConfigRecords in a cluster)."""
    return ctx.broker.topology.topic_configs(name)


# -- AlterConfigs and IncrementalAlterConfigs ---------------------------------------------
class ConfigRejected(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def non_topic_error(rtype: int) -> ConfigRejected:
    """The answer for a resource type neither a topic nor a broker (BROKER is
    ``apply_broker_configs``'s)."""
    if rtype == BROKER_LOGGER:
        return ConfigRejected(ErrorCode.INVALID_REQUEST, DYNAMIC_LOG_LEVELS_UNSUPPORTED)
    if rtype in RESOURCE_NAMES and rtype != 0:
        return ConfigRejected(ErrorCode.INVALID_REQUEST, f"Unexpected resource type {RESOURCE_NAMES[rtype]}.")
    return ConfigRejected(ErrorCode.UNSUPPORTED_VERSION, f"Unknown resource type {rtype}.")


def check_topic_resource(name: str) -> None:
    if not name:
        raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    err = topic_name_error(name)
    if err:
        raise ConfigRejected(ErrorCode.INVALID_TOPIC_EXCEPTION, err)


async def apply_topic_configs(ctx: RequestContext, name: str, new: dict[str, str | None],
                               validate_only: bool) -> None:
    """Validate a topic's complete new overrides, check the topic exists, then store them."""
    try:
        validate_topic_configs(new, ctx.broker.config)
    except ConfigError as exc:
        raise ConfigRejected(ErrorCode.INVALID_CONFIG, str(exc)) from None
    topic = config_topic(ctx, name)
    if topic is None:
        raise ConfigRejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    if not validate_only and new != topic.configs:
        rej = await ctx.broker.topology.alter_topic_configs(name, {k: v for k, v in new.items() if v is not None})
        if rej is not None:
            raise ConfigRejected(rej.code, rej.message)


def check_broker_resource(ctx: RequestContext, name: str) -> None:
    """Kafka's ConfigAdminManager.validateResourceNameIsCurrentNodeId: a BROKER resource is the
    cluster-wide default ("") or this broker (a client sends a broker's resource to that broker)."""
    if not name:
        return
    if not INTEGER_PATTERN.match(name):
        raise ConfigRejected(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
    node = ctx.broker.node_id
    if int(name) != node:
        raise ConfigRejected(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node}, but received {name}")


async def apply_broker_configs(ctx: RequestContext, name: str, new: dict[str, str], validate_only: bool) -> None:
    """Validate a BROKER resource's complete new dynamic configs as Kafka's DynamicBrokerConfig
    does (a refusal is INVALID_REQUEST with its message, KAFKA-13609), then store them as
    ConfigRecords in the metadata log (broker/metadata/dynamic_broker_configs.py)."""
    from broker.common.dynamic_config_defs import validate_dynamic_broker_configs
    from broker.metadata.dynamic_broker_configs import alter_broker_configs

    try:
        validate_dynamic_broker_configs(new, per_broker=bool(name))
    except ConfigError as exc:
        raise ConfigRejected(ErrorCode.INVALID_REQUEST, str(exc)) from None
    if not validate_only:
        rej = await alter_broker_configs(ctx.broker, name, new)
        if rej is not None:
            raise ConfigRejected(rej.code, rej.message)


async def apply_group_configs(ctx: RequestContext, name: str, new: dict[str, str], validate_only: bool) -> None:
    """A GROUP resource's complete new configs, checked as Kafka's controller checks them
    (ControllerConfigurationValidator: no default group, then GroupConfigManager.validate,
    INVALID_CONFIG with its message), stored as GROUP ConfigRecords (broker/metadata/group_configs.py)."""
    from coordinator.group.group_config import validate
    from broker.metadata.group_configs import BrokerProps, alter_group_configs

    if not name:
        raise ConfigRejected(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    error = validate(new, BrokerProps(ctx.broker))
    if error:
        raise ConfigRejected(ErrorCode.INVALID_CONFIG, error)
    if not validate_only:
        rej = await alter_group_configs(ctx.broker, name, new)
        if rej is not None:
            raise ConfigRejected(rej.code, rej.message)


def resource_response(cls: Any, rtype: int, name: str, code: int = 0, message: str | None = None) -> Any:
    return cls.AlterConfigsResourceResponse(error_code=code, error_message=message, resource_type=rtype,
                                            resource_name=name)


def each_resource(resources: list) -> Iterable[tuple[Any, bool]]:
    """Each distinct (type, name) resource once, flagged when the request names it twice
    (Kafka answers a duplicated resource once, with INVALID_REQUEST)."""
    counts: dict[tuple[int, str], int] = {}
    for r in resources:
        key = (r.resource_type, r.resource_name)
        counts[key] = counts.get(key, 0) + 1
    done: set[tuple[int, str]] = set()
    for r in resources:
        key = (r.resource_type, r.resource_name)
        if key not in done:
            done.add(key)
            yield r, counts[key] > 1
