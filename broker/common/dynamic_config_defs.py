"""Kafka's dynamic broker configs (KIP-226) as rules: which broker properties AlterConfigs and
IncrementalAlterConfigs may change on a BROKER resource, which of those Samsa applies, and the
validation Kafka's DynamicBrokerConfig.validateConfigs does, with its messages.

Kafka's sets (core/src/main/scala/kafka/server/DynamicBrokerConfig.scala, Kafka 4):
``AllDynamicConfigs`` = the SSL keystore/truststore configs, LogCleaner.ReconfigurableConfigs,
DynamicLogConfig.ReconfigurableConfigs (the broker property behind every topic config:
ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS), DynamicThreadPool's thread counts,
``metric.reporters``, DynamicListenerConfig's listener/SSL/SASL configs, SocketServer's connection
limits, the producer-state configs and DynamicRemoteLogConfig's. Any other property Kafka knows is
refused ("Cannot update these configs dynamically: Set(...)", INVALID_REQUEST); a name Kafka does
not know is a custom config, accepted and stored.

What changes in Samsa at once (``applies_in_samsa``): every topic default (``log.retention.ms``,
``log.segment.bytes``, ``message.max.bytes``, ``log.cleanup.policy``, ...: every topic without its
own override uses it from the next append, retention pass or cleaning) and the cleaner's
``log.cleaner.backoff.ms``, ``log.cleaner.dedupe.buffer.size`` and
``log.cleaner.io.max.bytes.per.second``. The rest of Kafka's dynamic configs (thread counts,
connection limits, listeners, TLS/SASL material, metric reporters, tiered storage) are accepted,
stored and reported as Kafka reports them, and have no effect: Samsa has no such threads, and
reads its listeners and security settings from its static configuration at start-up.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from broker.common.config import BROKER_DEFAULTS, TOPIC_CONFIG_DEFS, ConfigError
from broker.common.config_defs import (DYNAMIC_ONLY_DEFAULTS, EXTRA_BROKER_DEFAULTS, broker_kind, check_topic_default,
                                       parse_config)

# SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only per listener (listener.name.<l>.<name>)
DYNAMIC_SECURITY_CONFIGS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})

# DynamicLogConfig.ReconfigurableConfigs: the first broker synonym of each topic config
DYNAMIC_LOG_CONFIGS = frozenset(d.synonyms[0] for d in TOPIC_CONFIG_DEFS.values() if d.synonyms)

# LogCleaner.ReconfigurableConfigs
DYNAMIC_CLEANER_CONFIGS = frozenset({
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms"})

# DynamicThreadPool.ReconfigurableConfigs
DYNAMIC_THREAD_CONFIGS = frozenset({
    "num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"})

# DynamicListenerConfig.ReconfigurableConfigs
DYNAMIC_LISTENER_CONFIGS = frozenset({
    "advertised.listeners", "listeners", "listener.security.protocol.map",
    "principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
    "max.connections", "max.connection.creation.rate", "num.network.threads"})

# SocketServer.ReconfigurableConfigs
DYNAMIC_SOCKET_CONFIGS = frozenset({
    "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections",
    "max.connection.creation.rate"})

DYNAMIC_PRODUCER_STATE_CONFIGS = frozenset({"producer.id.expiration.ms", "transaction.partition.verification.enable"})

# DynamicRemoteLogConfig.ReconfigurableConfigs
DYNAMIC_REMOTE_LOG_CONFIGS = frozenset({
    "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
    "remote.list.offsets.request.timeout.ms"})

ALL_DYNAMIC_CONFIGS = (DYNAMIC_SECURITY_CONFIGS | DYNAMIC_LOG_CONFIGS | DYNAMIC_CLEANER_CONFIGS
                       | DYNAMIC_THREAD_CONFIGS | {"metric.reporters"} | DYNAMIC_LISTENER_CONFIGS
                       | DYNAMIC_SOCKET_CONFIGS | DYNAMIC_PRODUCER_STATE_CONFIGS | DYNAMIC_REMOTE_LOG_CONFIGS)

_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
# PerBrokerConfigs: refused on the cluster-wide default resource
PER_BROKER_CONFIGS = (DYNAMIC_SECURITY_CONFIGS | DYNAMIC_LISTENER_CONFIGS) - _CLUSTER_LEVEL_LISTENER_CONFIGS

_LISTENER_CONFIG = re.compile(r"^listener\.name\.[^.]*\.(.*)$")

# What Samsa applies at once (see the module docstring); everything else dynamic is only stored.
APPLIED_IN_SAMSA = DYNAMIC_LOG_CONFIGS | {
    "message.max.bytes", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.max.bytes.per.second"}


# Properties Kafka knows (KafkaConfig.configNames) that Samsa's tables do not list: refused as
# non-dynamic like the ones they do list, rather than stored as custom configs.
_OTHER_KAFKA_STATIC = frozenset({
    "broker.id", "log.dir", "security.inter.broker.protocol", "controller.listener.names",
    "controller.quorum.voters", "controller.quorum.bootstrap.servers", "zookeeper.connect",
    "auto.leader.rebalance.enable", "queued.max.requests", "request.timeout.ms",
    "num.replica.alter.log.dirs.threads"})


def dynamic_kind(name: str) -> str | None:
    """The ConfigDef type of a broker property, dynamic-only ones and listener-prefixed ones
    included (None: unknown to Kafka, a custom config)."""
    kind = broker_kind(name)
    if kind is not None:
        return kind
    base = _LISTENER_CONFIG.match(name)
    return dynamic_kind(base.group(1)) if base else None


def _known_to_kafka(name: str) -> bool:
    if name.startswith("listener.name."):
        return False        # Kafka: a custom name, validated by its base name
    return (name in BROKER_DEFAULTS or name in EXTRA_BROKER_DEFAULTS or name in DYNAMIC_ONLY_DEFAULTS
            or name in _OTHER_KAFKA_STATIC)


def applies_in_samsa(name: str) -> bool:
    return name in APPLIED_IN_SAMSA


def kafka_set(names: Iterable[str]) -> str:
    """A Scala immutable Set's toString, as Kafka's messages print one: Set(a, b) up to four
    elements, HashSet(...) beyond."""
    items = list(dict.fromkeys(names))
    return ("Set(" if len(items) <= 4 else "HashSet(") + ", ".join(items) + ")"


def validate_dynamic_broker_configs(props: Mapping[str, str], per_broker: bool) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs on a resource's complete new configs, in its
    order; raises ConfigError with Kafka's message (the handler answers INVALID_REQUEST)."""
    non_dynamic = [n for n in props if _known_to_kafka(n) and n not in ALL_DYNAMIC_CONFIGS]
    if non_dynamic:
        raise ConfigError(f"Cannot update these configs dynamically: {kafka_set(non_dynamic)}")
    unprefixed = [n for n in sorted(DYNAMIC_SECURITY_CONFIGS) if n in props]
    if unprefixed:
        raise ConfigError("These security configs can be dynamically updated only per-listener using the "
                          f"listener prefix: {kafka_set(unprefixed)}")
    for name, raw in props.items():
        m = _LISTENER_CONFIG.match(name)
        base = m.group(1) if m else name
        kind = dynamic_kind(base)
        if kind is None:
            continue          # a custom config: Kafka allows them
        value = parse_config(base, kind, raw)
        if base in DYNAMIC_LOG_CONFIGS:
            check_topic_default(base, raw)
        if base in DYNAMIC_THREAD_CONFIGS and value <= 0:
            raise ConfigError(f"Dynamic thread count update validation failed for {base}={raw}, "
                              "value should be at least 1")
    if not per_broker:
        per = [n for n in props if n in PER_BROKER_CONFIGS or (
            (m := _LISTENER_CONFIG.match(n)) is not None and m.group(1) not in _CLUSTER_LEVEL_LISTENER_CONFIGS)]
        if per:
            raise ConfigError("Cannot update these configs at default cluster level, broker id must be "
                              f"specified: {kafka_set(per)}")


__all__ = ["ALL_DYNAMIC_CONFIGS", "APPLIED_IN_SAMSA", "PER_BROKER_CONFIGS",
           "applies_in_samsa", "dynamic_kind", "kafka_set", "validate_dynamic_broker_configs"]
