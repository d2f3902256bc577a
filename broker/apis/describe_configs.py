"""DescribeConfigs v1-v4 (the ConfigDef logic is broker/common/config_defs.py).

Kafka's rules, as its ConfigHelper applies them:
- a topic lists every topic config Kafka 4 has; an override is TOPIC_CONFIG (1), a value
  that comes from a broker property set in the file or a ``KAFKA_*`` variable is
  STATIC_BROKER_CONFIG (4), anything else DEFAULT_CONFIG (5). Synonyms follow Kafka's
  chain, including its quirk that a topic config whose primary broker property
  (``log.retention.ms``, ``log.roll.ms``, ``log.flush.interval.ms``) is unset reports no
  synonyms and DEFAULT_CONFIG even when ``log.retention.hours`` is set;
- a topic config without an override takes the broker's value at the highest level that sets
  it: a dynamic per-broker config (DYNAMIC_BROKER_CONFIG, 2), the dynamic cluster-wide default
  (DYNAMIC_DEFAULT_BROKER_CONFIG, 3), the static property, Kafka's default; its synonyms list
  each level in that order (ConfigHelper.configSynonyms);
- a broker (resource name = its node id) lists its properties, the dynamic ones included, with
  the same sources; read-only unless Kafka can change it dynamically
  (broker/common/dynamic_config_defs.py); "" lists the cluster-wide dynamic defaults, with only
  their DYNAMIC_DEFAULT_BROKER_CONFIG synonyms; a name Kafka does not know is typed UNKNOWN and
  treated as sensitive (value null);
- ``configuration_keys`` null or empty means all keys; an unknown topic answers
  UNKNOWN_TOPIC_OR_PARTITION in that resource only; documentation from v3.
- a group (GROUP, 32) lists Kafka's group configs (coordinator/group/group_config.py): an override
  is GROUP_CONFIG (8), anything else the broker property it defaults to (STATIC_BROKER_CONFIG when
  set, else DEFAULT_CONFIG); the group need not exist.
In a cluster a topic's configs are the metadata image's ConfigRecords.
Authorization: DESCRIBE_CONFIGS on each topic (or group), on the cluster for broker resources.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Iterable

import structlog
from kafka.protocol.admin import DescribeConfigsRequest, DescribeConfigsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.config_changes import config_topic
from broker.common.config import BROKER_DEFAULTS, TOPIC_CONFIG_DEFS, TOPIC_CONFIGS, BrokerConfig
from broker.common.config_defs import (BROKER, BROKER_DOCS, BROKER_LOGGER, CONFIG_TYPE_IDS, DEFAULT_CONFIG,
                                       DYNAMIC_BROKER_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG,
                                       DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_ONLY_DEFAULTS, EXTRA_BROKER_DEFAULTS,
                                       INTEGER_PATTERN,
                                       GROUP, RESOURCE_NAMES, STATIC_BROKER_CONFIG, TOPIC, broker_kind, broker_value,
                                       render_config, synonym_chain, topic_config_entries)
from broker.common.dynamic_config_defs import ALL_DYNAMIC_CONFIGS
from broker.log.manager import topic_name_error
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import (DENIED_MESSAGES, Handler, authorizes, config_denied_code, configs_allowed,
                                   response_class)

DR = DescribeConfigsResponse.DescribeConfigsResult

DC = DR.DescribeConfigsResourceResult

DS = DC.DescribeConfigsSynonym


def _wanted(keys: list[str] | None, names: Iterable[str]) -> list[str]:
    names = sorted(names)
    if not keys:
        return names
    want = set(keys)
    return [n for n in names if n in want]


def _describe_topic(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool, docs: bool) -> Any:
    logs = ctx.broker.logs
    topic = config_topic(ctx, name)
    if topic is None:
        return DR(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None, resource_type=TOPIC,
                  resource_name=name, configs=[])

    def live(n: str) -> Any:
        # what the partitions actually use
        return logs.topic_config_value(topic, n) if n in TOPIC_CONFIGS else None

    entries = topic_config_entries(ctx.broker.config, topic.configs, _wanted(keys, TOPIC_CONFIG_DEFS), live,
                                   topic.internal)
    configs = [DC(name=n, value=v, read_only=False, config_source=src, is_sensitive=False,
                  synonyms=[DS(name=sn, value=sv, source=ss) for sn, sv, ss in syns] if synonyms else [],
                  config_type=CONFIG_TYPE_IDS[kind], documentation=TOPIC_CONFIG_DEFS[n].doc if docs else None)
               for n, v, src, syns, kind in entries]
    return DR(error_code=0, error_message=None, resource_type=TOPIC, resource_name=name, configs=configs)


def _broker_entry(config: BrokerConfig, name: str, synonyms: bool, docs: bool, per_broker: bool = True) -> Any:
    """Kafka's ConfigHelper.createBrokerConfigEntry: the value at the highest level that sets it,
    its synonyms in Kafka's order (dynamic per broker, dynamic default, static, default; only the
    dynamic default ones on the "" resource), read-only unless Kafka can change it dynamically."""
    kind = broker_kind(name)
    read_only = name not in ALL_DYNAMIC_CONFIGS
    if kind is None or kind == "password":
        # Kafka treats properties it does not know as possibly sensitive
        syns = [(name, None, source) for layer, source in (
            (config.dynamic_broker, DYNAMIC_BROKER_CONFIG), (config.dynamic_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
            (config.raw, STATIC_BROKER_CONFIG)) if name in layer]
        if not per_broker:
            syns = [x for x in syns if x[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
        return DC(name=name, value=None, read_only=read_only, config_source=syns[0][2] if syns else DEFAULT_CONFIG,
                  is_sensitive=True, synonyms=[DS(name=a, value=b, source=c) for a, b, c in syns] if synonyms else [],
                  config_type=CONFIG_TYPE_IDS.get(kind, 0) if kind is not None else 0, documentation=None)
    if not per_broker:
        value: str | None = config.dynamic_default[name]
    else:
        configured = config.configured(name)
        value = configured if configured is not None and kind == "string" else \
            render_config(kind, broker_value(config, name))
    chain = synonym_chain(config, name)
    if not per_broker:
        chain = [x for x in chain if x[2] == DYNAMIC_DEFAULT_BROKER_CONFIG]
    return DC(name=name, value=value, read_only=read_only, config_source=chain[0][2] if chain else DEFAULT_CONFIG,
              is_sensitive=False, synonyms=[DS(name=a, value=b, source=c) for a, b, c in chain] if synonyms else [],
              config_type=CONFIG_TYPE_IDS.get(kind, 0), documentation=BROKER_DOCS.get(name) if docs else None)


def _describe_broker(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool, docs: bool) -> Any:
    config = ctx.broker.config
    if name == "":
        # the cluster-wide dynamic defaults (ConfigHelper: currentDynamicDefaultConfigs)
        configs = [_broker_entry(config, n, synonyms, docs, per_broker=False)
                   for n in _wanted(keys, config.dynamic_default)]
        return DR(error_code=0, error_message=None, resource_type=BROKER, resource_name=name, configs=configs)
    err = _broker_id_error(ctx, name, allow_empty=True)
    if err:
        return DR(error_code=ErrorCode.INVALID_REQUEST, error_message=err, resource_type=BROKER,
                  resource_name=name, configs=[])
    names = (set(BROKER_DEFAULTS) | set(EXTRA_BROKER_DEFAULTS) | set(DYNAMIC_ONLY_DEFAULTS) | set(config.raw)
             | set(config.dynamic_default) | set(config.dynamic_broker))
    configs = [_broker_entry(config, n, synonyms, docs) for n in _wanted(keys, names)]
    return DR(error_code=0, error_message=None, resource_type=BROKER, resource_name=name, configs=configs)


GROUP_CONFIG = 8       # DescribeConfigs' ConfigSource.GROUP_CONFIG


def _describe_group(ctx: RequestContext, name: str, keys: list[str] | None, synonyms: bool, docs: bool) -> Any:
    """Kafka's ConfigHelper for GROUP resources: every group config, its override or default."""
    from coordinator.group.group_config import GROUP_CONFIG_DEFS, default_value
    from broker.metadata.group_configs import BrokerProps, stored_group_configs

    if not name:
        return DR(error_code=ErrorCode.INVALID_REQUEST, error_message="Group name must not be empty.",
                  resource_type=GROUP, resource_name=name, configs=[])
    overrides = stored_group_configs(ctx.broker, name)
    props = BrokerProps(ctx.broker)
    configs = []
    for n in _wanted(keys, GROUP_CONFIG_DEFS):
        d = GROUP_CONFIG_DEFS[n]
        default = str(default_value(d, props))
        default_source = STATIC_BROKER_CONFIG if d.default_property and not ctx.broker.config.is_default(
            d.default_property) else DEFAULT_CONFIG
        chain = ([(n, overrides[n], GROUP_CONFIG)] if n in overrides else []) + \
            [(d.default_property or n, default, default_source)]
        configs.append(DC(name=n, value=chain[0][1], read_only=False, config_source=chain[0][2], is_sensitive=False,
                          synonyms=[DS(name=a, value=b, source=c) for a, b, c in chain] if synonyms else [],
                          config_type=CONFIG_TYPE_IDS[d.kind], documentation=d.doc if docs else None))
    return DR(error_code=0, error_message=None, resource_type=GROUP, resource_name=name, configs=configs)


def _log_level_name() -> str:
    try:
        level = structlog.get_logger().get_effective_level()  # type: ignore[attr-defined]
    except Exception:
        level = 20
    return {10: "DEBUG", 20: "INFO", 30: "WARN", 40: "ERROR", 50: "FATAL"}.get(level, "INFO")


def _describe_broker_logger(ctx: RequestContext, name: str, keys: list[str] | None) -> Any:
    if not name:
        return DR(error_code=ErrorCode.INVALID_REQUEST, error_message="Broker id must not be empty",
                  resource_type=BROKER_LOGGER, resource_name=name, configs=[])
    err = _broker_id_error(ctx, name, allow_empty=False)
    if err:
        return DR(error_code=ErrorCode.INVALID_REQUEST, error_message=err, resource_type=BROKER_LOGGER,
                  resource_name=name, configs=[])
    loggers = {"root": _log_level_name()}
    configs = [DC(name=n, value=loggers[n], read_only=False, config_source=DYNAMIC_BROKER_LOGGER_CONFIG,
                  is_sensitive=False, synonyms=[], config_type=0, documentation=None)
               for n in _wanted(keys, loggers)]
    return DR(error_code=0, error_message=None, resource_type=BROKER_LOGGER, resource_name=name, configs=configs)


def _broker_id_error(ctx: RequestContext, name: str, allow_empty: bool) -> str | None:
    """Kafka's messages for a BROKER / BROKER_LOGGER resource naming another node."""
    if not INTEGER_PATTERN.match(name):
        return f"Broker id must be an integer, but it is: {name}"
    node = ctx.broker.node_id
    if int(name) == node:
        return None
    if allow_empty:
        return f"Unexpected broker id, expected {node} or empty string, but received {name}"
    return f"Unexpected broker id, expected {node} but received {name}"


@handles(ApiKey.DESCRIBE_CONFIGS)
async def describe_configs(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    synonyms = bool(req.include_synonyms)
    docs = bool(getattr(req, "include_documentation", False)) and ctx.api_version >= 3
    results = []
    for res in req.resources:
        rtype, name, keys = res.resource_type, res.resource_name, res.configuration_keys
        if rtype == TOPIC:
            err = topic_name_error(name)
            if err:
                results.append(DR(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, error_message=err,
                                  resource_type=rtype, resource_name=name, configs=[]))
            else:
                results.append(_describe_topic(ctx, name, keys, synonyms, docs))
        elif rtype == BROKER:
            results.append(_describe_broker(ctx, name, keys, synonyms, docs))
        elif rtype == BROKER_LOGGER:
            results.append(_describe_broker_logger(ctx, name, keys))
        elif rtype == GROUP:
            results.append(_describe_group(ctx, name, keys, synonyms, docs))
        else:
            results.append(DR(error_code=ErrorCode.INVALID_REQUEST,
                              error_message=f"Unsupported resource type: {RESOURCE_NAMES.get(rtype, rtype)}",
                              resource_type=rtype, resource_name=name, configs=[]))
    return ctx.response(throttle_time_ms=0, results=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_CONFIGS)
async def authorize_describe_configs(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    R = response_class(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigsResult")
    return await configs_allowed(ctx, req, handler, Op.DESCRIBE_CONFIGS, "results", lambda denied: (
        R(error_code=config_denied_code(r), error_message=DENIED_MESSAGES[config_denied_code(r)],
          resource_type=r.resource_type, resource_name=r.resource_name, configs=[]) for r in denied))
