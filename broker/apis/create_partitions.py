"""CreatePartitions v0-v3.

Kafka's rules (its KRaft controller's order of checks and messages): a name given twice answers
INVALID_REQUEST "Duplicate topic name." once; INVALID_PARTITIONS unless the count grows;
assignments must match the number of new partitions and name registered brokers; internal topics
(``__consumer_offsets``, ``__transaction_state``) may not grow (Samsa's rule: the broker owns
their layout). A cluster places the new replicas rack-aware and writes them to the metadata log.
Authorization: ALTER on each topic.
"""
from __future__ import annotations

from typing import Any

import structlog
from kafka.protocol.admin import CreatePartitionsRequest, CreatePartitionsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.apis.shared.cluster_configs import while_unavailable
from broker.apis.shared.topic_rules import (CP, MAX_PARTITIONS_PER_REQUEST, UNKNOWN_TOPIC_MESSAGE, TopicRejected,
                                            check_single_node_assignment, duplicate_results, duplicated_names)
from broker.log.manager import INTERNAL_TOPICS
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import TOPIC_DENIED, Handler, authorizes, response_class, topics_allowed

log = structlog.get_logger("samsa.topics")


@handles(ApiKey.CREATE_PARTITIONS)
async def create_partitions(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    if ctx.broker.cluster is not None:
        return await cluster_create_partitions(ctx, req)
    logs = ctx.broker.logs
    duplicated = duplicated_names(req.topics)
    results: list[CP] = []
    for t in req.topics:
        name = t.name
        if name in duplicated:
            continue
        try:
            topic = logs.topics.get(name)
            if topic is None:
                raise TopicRejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
            have = topic.partition_count
            if t.count == have:
                raise TopicRejected(ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
            if t.count < have:
                raise TopicRejected(ErrorCode.INVALID_PARTITIONS, f"The topic {name} currently has {have} partition(s); "
                                                            f"{t.count} would not be an increase.")
            additional = t.count - have
            if t.assignments is not None:
                if len(t.assignments) != additional:
                    raise TopicRejected(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                  f"Attempted to add {additional} additional partition(s), but only "
                                  f"{len(t.assignments)} assignment(s) were specified.")
                for a in t.assignments:
                    check_single_node_assignment(ctx, list(a.broker_ids), 1)
            if additional > MAX_PARTITIONS_PER_REQUEST:
                raise TopicRejected(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
            if topic.internal:
                raise TopicRejected(ErrorCode.INVALID_REQUEST,
                              f"Cannot change the number of partitions of internal topic {name}")
        except TopicRejected as rej:
            results.append(CP(name=name, error_code=rej.code, error_message=rej.message))
            continue
        if not req.validate_only:
            logs.add_partitions(name, t.count)
            log.info("partitions added", topic=name, partitions=t.count)
        results.append(CP(name=name, error_code=0, error_message=None))
    results.extend(duplicate_results(CP, duplicated))
    return ctx.response(throttle_time_ms=0, results=results)


async def cluster_create_partitions(ctx: RequestContext, req: Any) -> Any:
    from coordinator.metadata.controller import Rejection, check_assignment

    from broker.metadata.store import MetadataUnavailable

    cluster = ctx.broker.cluster
    duplicated = duplicated_names(req.topics)
    results = []
    for t in req.topics:
        name = t.name
        if name in duplicated:
            continue
        image = cluster.image
        topic = image.topics.get(name)
        rej: Rejection | None = None
        assignments: Any = None
        if topic is None:
            rej = Rejection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
        else:
            have = len(topic.partitions)
            rf = len(topic.partitions[0].replicas) if topic.partitions else 1
            if t.count == have:
                rej = Rejection(ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
            elif t.count < have:
                rej = Rejection(ErrorCode.INVALID_PARTITIONS, f"The topic {name} currently has {have} partition(s); "
                                                              f"{t.count} would not be an increase.")
            elif name in INTERNAL_TOPICS:
                rej = Rejection(ErrorCode.INVALID_REQUEST, f"Cannot change the number of partitions of internal "
                                                           f"topic {name}")
            elif t.assignments is not None:
                if len(t.assignments) != t.count - have:
                    rej = Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                    f"Attempted to add {t.count - have} additional partition(s), but only "
                                    f"{len(t.assignments)} assignment(s) were specified.")
                else:
                    assignments = [tuple(a.broker_ids) for a in t.assignments]
                    for a in assignments:
                        rej = rej or check_assignment(image, a)
            else:
                placed = cluster.place(t.count - have, rf)
                if isinstance(placed, Rejection):
                    rej = placed
                else:
                    assignments = placed
        if rej is None and not req.validate_only:
            try:
                rej = await while_unavailable(req.timeout_ms, cluster.create_partitions, name, assignments)
            except MetadataUnavailable as exc:
                rej = Rejection(ErrorCode.REQUEST_TIMED_OUT, str(exc))
        results.append(CP(name=name, error_code=rej.code if rej else 0, error_message=rej.message if rej else None))
    results.extend(duplicate_results(CP, duplicated))
    return ctx.response(throttle_time_ms=0, results=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.CREATE_PARTITIONS)
async def authorize_create_partitions(ctx: RequestContext, req: Any, handler: Handler) -> Any:
    R = response_class(ApiKey.CREATE_PARTITIONS, "CreatePartitionsTopicResult")
    return await topics_allowed(ctx, req, handler, Op.ALTER, lambda denied: (
        R(name=t.name, error_code=TOPIC_DENIED, error_message=None) for t in denied), out="results")
