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
check and creates nothing (the id answered is then zero).
Samsa's own rule: the internal topics (``__consumer_offsets``, ``__transaction_state``) are
created by the broker with its own layout, so clients may not create, delete, grow or
truncate them (Kafka itself does not stop a client from creating them).
Authorization: CREATE on the cluster or on each topic; configs returned only with
DESCRIBE_CONFIGS on the topic.
"""
from __future__ import annotations

import uuid
from typing import Any

import structlog
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.apis.shared.cluster_configs import while_unavailable
from broker.apis.shared.common import ZERO_UUID
from broker.apis.shared.topic_rules import (CLUSTER_METADATA_TOPIC, CT, CTC, TopicRejected,
                                            check_single_node_assignment, duplicate_results, duplicated_names,
                                            too_many_partitions, unify_collision_chars)
from broker.common.config import ConfigError
from broker.common.config_defs import creation_config_entries, validate_topic_configs
from broker.log.manager import INTERNAL_TOPICS, topic_name_error
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import TOPIC_DENIED, Handler, allowed, authorizes, cluster, response_class, split_topics

log = structlog.get_logger("samsa.topics")


def _partition_count(ctx: RequestContext, t: Any) -> int:
    """Partitions the topic would get, or TopicRejected with Kafka's error."""
    if t.assignments:
        if t.replication_factor != -1:
            raise TopicRejected(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                     "replication factor was not set to -1.")
        if t.num_partitions != -1:
            raise TopicRejected(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                     "numPartitions was not set to -1.")
        seen: set[int] = set()
        rf: int | None = None
        for a in t.assignments:
            if a.partition_index in seen:
                raise TopicRejected(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                              f"Found multiple manual partition assignments for partition {a.partition_index}")
            check_single_node_assignment(ctx, list(a.broker_ids), rf)
            rf = len(a.broker_ids)
            seen.add(a.partition_index)
        if seen != set(range(len(seen))):
            raise TopicRejected(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                          "partitions should be a consecutive 0-based integer sequence")
        return len(seen)
    if t.replication_factor < -1 or t.replication_factor == 0:
        raise TopicRejected(ErrorCode.INVALID_REPLICATION_FACTOR,
                      "Replication factor must be larger than 0, or -1 to use the default value.")
    if t.num_partitions < -1 or t.num_partitions == 0:
        raise TopicRejected(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    config = ctx.broker.config
    count = int(config["num.partitions"]) if t.num_partitions == -1 else t.num_partitions
    rf = int(config["default.replication.factor"]) if t.replication_factor == -1 else t.replication_factor
    if rf > 1:
        raise TopicRejected(ErrorCode.INVALID_REPLICATION_FACTOR,
                      f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                      f"cannot be reached because only 1 broker(s) are registered.")
    return count


@handles(ApiKey.CREATE_TOPICS)
async def create_topics(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    if ctx.broker.cluster is not None:  # cluster mode: placed on the brokers, written to the metadata log
        return await cluster_create_topics(ctx, req)
    logs = ctx.broker.logs
    validate_only = bool(req.validate_only)
    refused = too_many_partitions(ctx, req)
    if refused is not None:
        return refused
    duplicated = duplicated_names(req.topics)
    collisions = {unify_collision_chars(name): name for name in logs.topics}
    results: list[CT] = []
    for t in req.topics:
        name = t.name
        if name in duplicated or name == CLUSTER_METADATA_TOPIC:
            continue
        try:
            err = topic_name_error(name)
            if err:
                raise TopicRejected(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
            if name not in logs.topics:
                clash = collisions.get(unify_collision_chars(name))
                if clash is not None and clash != name:
                    raise TopicRejected(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                  f"Topic '{name}' collides with existing topic: {clash}")
            if name in logs.topics:
                raise TopicRejected(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            if name in INTERNAL_TOPICS:
                raise TopicRejected(ErrorCode.INVALID_REQUEST,
                              f"Topic '{name}' is an internal topic: the broker creates it when it is first needed.")
            configs = {c.name: c.value for c in t.configs}
            try:
                validate_topic_configs(configs, ctx.broker.config)
            except ConfigError as exc:
                raise TopicRejected(ErrorCode.INVALID_CONFIG, str(exc)) from None
            count = _partition_count(ctx, t)
        except TopicRejected as rej:
            results.append(CT(name=name, error_code=rej.code, error_message=rej.message))
            continue
        overrides: dict[str, str] = {k: v for k, v in configs.items() if v is not None}
        topic_id = ZERO_UUID
        if not validate_only:
            topic = logs.create_topic(name, count, overrides)
            topic_id = topic.topic_id
        entries = [CTC(name=n, value=v, read_only=False, config_source=src, is_sensitive=False)
                   for n, v, src in creation_config_entries(ctx.broker.config, overrides)]
        results.append(CT(name=name, topic_id=topic_id, error_code=0, error_message=None, topic_config_error_code=0,
                          num_partitions=count, replication_factor=1, configs=entries))
    results.extend(duplicate_results(CT, duplicated))
    return ctx.response(throttle_time_ms=0, topics=results)


async def cluster_create_topics(ctx: RequestContext, req: Any) -> Any:
    from coordinator.metadata.controller import Rejection, check_assignment

    from broker.metadata.store import MetadataUnavailable

    cluster = ctx.broker.cluster
    config = ctx.broker.config
    validate_only = bool(req.validate_only)
    refused = too_many_partitions(ctx, req)
    if refused is not None:
        return refused
    duplicated = duplicated_names(req.topics)
    results = []
    for t in req.topics:
        name = t.name
        if name in duplicated or name == CLUSTER_METADATA_TOPIC:
            continue
        image = cluster.image
        collisions = {unify_collision_chars(n): n for n in image.topics}

        def reject(code: int, message: str | None) -> None:
            results.append(CT(name=name, error_code=code, error_message=message))

        err = topic_name_error(name)
        if err:
            reject(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
            continue
        if name in image.topics:
            reject(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            continue
        clash = collisions.get(unify_collision_chars(name))
        if clash is not None:
            reject(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{name}' collides with existing topic: {clash}")
            continue
        if name in INTERNAL_TOPICS:
            reject(ErrorCode.INVALID_REQUEST,
                   f"Topic '{name}' is an internal topic: the broker creates it when it is first needed.")
            continue
        configs = {c.name: c.value for c in t.configs}
        try:
            validate_topic_configs(configs, config)
        except ConfigError as exc:
            reject(ErrorCode.INVALID_CONFIG, str(exc))
            continue
        if t.assignments:
            if t.replication_factor != -1 or t.num_partitions != -1:
                which = "replication factor" if t.replication_factor != -1 else "numPartitions"
                reject(ErrorCode.INVALID_REQUEST,
                       f"A manual partition assignment was specified, but {which} was not set to -1.")
                continue
            by_index = {}
            bad: Rejection | None = None
            for a in t.assignments:
                if a.partition_index in by_index:
                    bad = Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                    f"Found multiple manual partition assignments for partition {a.partition_index}")
                    break
                bad = check_assignment(image, list(a.broker_ids))
                if bad is None and by_index and len(a.broker_ids) != len(next(iter(by_index.values()))):
                    bad = Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                    f"The manual partition assignment includes a partition with {len(a.broker_ids)} "
                                    f"replica(s), but this is not consistent with previous partitions, which have "
                                    f"{len(next(iter(by_index.values())))} replica(s).")
                if bad is not None:
                    break
                by_index[a.partition_index] = tuple(a.broker_ids)
            if bad is None and set(by_index) != set(range(len(by_index))):
                bad = Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                "partitions should be a consecutive 0-based integer sequence")
            if bad is not None:
                reject(bad.code, bad.message)
                continue
            assignments: Any = [by_index[i] for i in range(len(by_index))]
        else:
            if t.replication_factor < -1 or t.replication_factor == 0:
                reject(ErrorCode.INVALID_REPLICATION_FACTOR,
                       "Replication factor must be larger than 0, or -1 to use the default value.")
                continue
            if t.num_partitions < -1 or t.num_partitions == 0:
                reject(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
                continue
            count = int(config["num.partitions"]) if t.num_partitions == -1 else t.num_partitions
            rf = int(config["default.replication.factor"]) if t.replication_factor == -1 else t.replication_factor
            assignments = cluster.place(count, rf)
            if isinstance(assignments, Rejection):
                reject(assignments.code, assignments.message)
                continue
        overrides = {k: v for k, v in configs.items() if v is not None}
        topic_id = ZERO_UUID
        if not validate_only:
            try:
                created = await while_unavailable(req.timeout_ms, cluster.create_topic, name, assignments, overrides)
            except MetadataUnavailable as exc:
                reject(ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata store is unavailable: {exc}")
                continue
            if isinstance(created, Rejection):
                reject(created.code, created.message)
                continue
            topic_id = uuid.UUID(created)
        entries = [CTC(name=n, value=v, read_only=False, config_source=src, is_sensitive=False)
                   for n, v, src in creation_config_entries(config, overrides)]
        results.append(CT(name=name, topic_id=topic_id, error_code=0, error_message=None, topic_config_error_code=0,
                          num_partitions=len(assignments), replication_factor=len(assignments[0]), configs=entries))
    results.extend(duplicate_results(CT, duplicated))
    return ctx.response(throttle_time_ms=0, topics=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.CREATE_TOPICS)
async def authorize_create_topics(ctx: RequestContext, req: Any, handler: Handler) -> Any:
    """ControllerApis.createTopics: CREATE on the cluster or on each topic (a denied one answers
    TOPIC_AUTHORIZATION_FAILED, "Authorization failed."); a created topic's configs, partition
    count and replication factor are returned only with DESCRIBE_CONFIGS on it, else its
    topic_config_error_code is TOPIC_AUTHORIZATION_FAILED (ReplicationControlManager)."""
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
