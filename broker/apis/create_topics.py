"""CreateTopics v2-v7.

Kafka's rules (its KRaft controller's order of checks and messages): more than 10,000 partitions
in one request fails every topic with POLICY_VIOLATION; a name given twice answers
INVALID_REQUEST "Duplicate topic name." once; ``__cluster_metadata`` is dropped from the answer;
then per topic: illegal name or a '.'/'_' collision (INVALID_TOPIC_EXCEPTION),
TOPIC_ALREADY_EXISTS, null or invalid configs (INVALID_CONFIG), then partitions and replication
factor. -1 means ``num.partitions`` / ``default.replication.factor``; a single node can hold only
one replica, so a factor above 1 is INVALID_REPLICATION_FACTOR with Kafka's placer message, and
manual assignments must name this broker once per partition, for partitions 0..n-1. A cluster
refuses a factor above its usable brokers the same way, requires explicit assignments to name
registered brokers, each once, with one replication factor for all partitions, and places
replicas rack-aware when racks are set. v5+ answers with the partition count, replication
factor and every effective config with its source; v7 with the id. validate_only runs every
check and creates nothing (the id answered is then zero). The broker's Topology
(broker/metadata/topology.py) knows the registered brokers, places replicas and creates the
topic; the checks here are the same in both modes.
Samsa's own rule: the internal topics (``__consumer_offsets``, ``__transaction_state``) are
created by the broker with its own layout, so clients may not create, delete, grow or
truncate them (Kafka itself does not stop a client from creating them).
Authorization: CREATE on the cluster or on each topic; configs returned only with
DESCRIBE_CONFIGS on the topic.
"""
from __future__ import annotations

from typing import Any

import structlog
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID
from broker.apis.shared.topic_rules import (CLUSTER_METADATA_TOPIC, CT, CTC, TopicRejected, duplicate_results,
                                            duplicated_names, too_many_partitions, unify_collision_chars)
from broker.common.config import BrokerConfig, ConfigError
from broker.common.config_defs import creation_config_entries, validate_topic_configs
from broker.log.manager import INTERNAL_TOPICS, topic_name_error
from broker.metadata.topology import Rejection, check_manual_assignment
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import TOPIC_DENIED, Handler, allowed, authorizes, cluster, response_class, split_topics

log = structlog.get_logger("samsa.topics")


def _assignments(ctx: RequestContext, t: Any) -> list[tuple[int, ...]]:
    """The topic's replica lists (manual, or placed by the broker's topology), or TopicRejected
    with Kafka's error, in its order of checks."""
    topology = ctx.broker.topology
    if t.assignments:
        if t.replication_factor != -1:
            raise TopicRejected(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                           "replication factor was not set to -1.")
        if t.num_partitions != -1:
            raise TopicRejected(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                           "numPartitions was not set to -1.")
        registered = frozenset(b.id for b in topology.brokers())
        by_index: dict[int, tuple[int, ...]] = {}
        rf: int | None = None
        for a in t.assignments:
            if a.partition_index in by_index:
                raise TopicRejected(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                    f"Found multiple manual partition assignments for partition {a.partition_index}")
            bad = check_manual_assignment(registered, list(a.broker_ids), rf)
            if bad is not None:
                raise TopicRejected(bad.code, bad.message)
            rf = len(a.broker_ids)
            by_index[a.partition_index] = tuple(a.broker_ids)
        if set(by_index) != set(range(len(by_index))):
            raise TopicRejected(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                "partitions should be a consecutive 0-based integer sequence")
        return [by_index[i] for i in range(len(by_index))]
    if t.replication_factor < -1 or t.replication_factor == 0:
        raise TopicRejected(ErrorCode.INVALID_REPLICATION_FACTOR,
                            "Replication factor must be larger than 0, or -1 to use the default value.")
    if t.num_partitions < -1 or t.num_partitions == 0:
        raise TopicRejected(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    config = ctx.broker.config
    count = int(config["num.partitions"]) if t.num_partitions == -1 else t.num_partitions
    rf = int(config["default.replication.factor"]) if t.replication_factor == -1 else t.replication_factor
    placed = topology.place(count, rf)
    if isinstance(placed, Rejection):
        raise TopicRejected(placed.code, placed.message)
    return placed


class _DefaultEntries:
    """The configs a topic created without overrides is answered with (v5+), built once per
    state of the broker's configs: resolving the 33 topic configs and building their message
    objects took ~0.35 ms, a third of a CreateTopics' CPU. The dynamic layers of BrokerConfig
    are replaced whole on a change (BrokerConfig.set_dynamic) and its static layer never
    changes, so the config and its two dynamic dicts, by identity, are the key (held here, so
    no identity is reused while it is the key). The entries are shared by the answers
    that carry them: nothing changes an answer's config entries once built (the authorizer
    replaces the list of a topic it hides, not its entries)."""

    def __init__(self) -> None:
        self.key: tuple[object, ...] = ()
        self.entries: list[Any] = []

    def get(self, config: BrokerConfig) -> list[Any]:
        key = (config, config.dynamic_broker, config.dynamic_default)
        if len(self.key) != 3 or any(a is not b for a, b in zip(self.key, key)):
            self.entries = _build_entries(config, {})
            self.key = key
        return list(self.entries)


def _build_entries(config: BrokerConfig, overrides: dict[str, str]) -> list[Any]:
    return [CTC(name=n, value=v, read_only=False, config_source=src, is_sensitive=False)
            for n, v, src in creation_config_entries(config, overrides)]


_DEFAULTS = _DefaultEntries()


def _config_entries(config: BrokerConfig, overrides: dict[str, str]) -> list[Any]:
    """A created topic's configs as CreateTopics v5+ answers them (name, value, source)."""
    return _build_entries(config, overrides) if overrides else _DEFAULTS.get(config)


@handles(ApiKey.CREATE_TOPICS)
async def create_topics(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    topology = ctx.broker.topology
    validate_only = bool(req.validate_only)
    refused = too_many_partitions(ctx, req)
    if refused is not None:
        return refused
    duplicated = duplicated_names(req.topics)
    # as Kafka's validateNewTopicNames: collisions with the topics that existed before this request.
    # A name without '.' or '_' is its own unified form, so only a topic of that very name (which
    # "exists") unifies to it: the topics are listed only when a name here has one of the two.
    collisions: dict[str, str] = {}
    if any("." in t.name or "_" in t.name for t in req.topics if t.name):
        collisions = {unify_collision_chars(name): name for name in topology.topics()}
    results: list[CT] = []
    for t in req.topics:
        name = t.name
        if name in duplicated or name == CLUSTER_METADATA_TOPIC:
            continue
        try:
            err = topic_name_error(name)
            if err:
                raise TopicRejected(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
            exists = topology.topic(name) is not None
            if not exists:
                clash = collisions.get(unify_collision_chars(name))
                if clash is not None and clash != name:
                    raise TopicRejected(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                        f"Topic '{name}' collides with existing topic: {clash}")
            if exists:
                raise TopicRejected(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            if name in INTERNAL_TOPICS:
                raise TopicRejected(ErrorCode.INVALID_REQUEST,
                                    f"Topic '{name}' is an internal topic: the broker creates it when it is first needed.")
            configs = {c.name: c.value for c in t.configs}
            try:
                validate_topic_configs(configs, ctx.broker.config)
            except ConfigError as exc:
                raise TopicRejected(ErrorCode.INVALID_CONFIG, str(exc)) from None
            assignments = _assignments(ctx, t)
            overrides: dict[str, str] = {k: v for k, v in configs.items() if v is not None}
            topic_id = ZERO_UUID
            if not validate_only:
                created = await topology.create_topic(name, assignments, overrides, req.timeout_ms)
                if isinstance(created, Rejection):
                    raise TopicRejected(created.code, created.message)
                topic_id = created
        except TopicRejected as rej:
            results.append(CT(name=name, error_code=rej.code, error_message=rej.message))
            continue
        entries = _config_entries(ctx.broker.config, overrides)
        results.append(CT(name=name, topic_id=topic_id, error_code=0, error_message=None, topic_config_error_code=0,
                          num_partitions=len(assignments), replication_factor=len(assignments[0]), configs=entries))
    results.extend(duplicate_results(CT, duplicated))
    return ctx.response(throttle_time_ms=0, topics=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.CREATE_TOPICS)
async def authorize_create_topics(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    """ControllerApis.createTopics: CREATE on the cluster or on each topic (a denied one answers
    TOPIC_AUTHORIZATION_FAILED, "Authorization failed."); a created topic's configs, partition
    count and replication factor are returned only with DESCRIBE_CONFIGS on it, else its
    topic_config_error_code is TOPIC_AUTHORIZATION_FAILED (ReplicationControlManager)."""
    denied: list[Any]
    if cluster(ctx, Op.CREATE):
        ok, denied = list(req.topics), []
    else:
        ok, denied = split_topics(ctx, req.topics, Op.CREATE, lambda t: t.name)
    req.topics = ok
    response = await handler(ctx, req) if ok else ctx.response(throttle_time_ms=0, topics=[])
    if ctx.api_version >= 5:
        for r in response.topics:
            if r.error_code == 0 and not allowed(ctx, Op.DESCRIBE_CONFIGS, RT.TOPIC, r.name):
                r.topic_config_error_code, r.configs, r.num_partitions, r.replication_factor = TOPIC_DENIED, [], -1, -1
    R = response_class(ApiKey.CREATE_TOPICS, "CreatableTopicResult")
    response.topics.extend(R(name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed.",
                             topic_config_error_code=0, num_partitions=-1, replication_factor=-1, configs=[])
                           for t in denied)
    return response
