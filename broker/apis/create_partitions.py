"""CreatePartitions v0-v3.

Kafka's rules (its KRaft controller's order of checks and messages): a name given twice answers
INVALID_REQUEST "Duplicate topic name." once; INVALID_PARTITIONS unless the count grows;
assignments must match the number of new partitions and name registered brokers; internal topics
(``__consumer_offsets``, ``__transaction_state``) may not grow (Samsa's rule: the broker owns
their layout). The checks are the same in both modes; the broker's Topology
(broker/metadata/topology.py) places the new replicas (a cluster rack-aware) and adds them.
Authorization: ALTER on each topic.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.admin import CreatePartitionsRequest, CreatePartitionsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.topic_rules import (CP, MAX_PARTITIONS_PER_REQUEST, UNKNOWN_TOPIC_MESSAGE, TopicRejected,
                                            duplicate_results, duplicated_names)
from broker.metadata.topology import Rejection, check_manual_assignment
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import TOPIC_DENIED, Handler, authorizes, response_class, topics_allowed

@handles(ApiKey.CREATE_PARTITIONS)
async def create_partitions(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    topology = ctx.broker.topology
    duplicated = duplicated_names(req.topics)
    results: list[CP] = []
    for t in req.topics:
        name = t.name
        if name in duplicated:
            continue
        try:
            topic = topology.topic(name)
            if topic is None:
                raise TopicRejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
            have = topic.partition_count
            if t.count == have:
                raise TopicRejected(ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
            if t.count < have:
                raise TopicRejected(ErrorCode.INVALID_PARTITIONS, f"The topic {name} currently has {have} partition(s); "
                                                                  f"{t.count} would not be an increase.")
            additional = t.count - have
            partitions = topology.partitions(name)
            rf = len(partitions[0].replicas) if partitions else 1
            assignments: list[tuple[int, ...]] | None = None
            if t.assignments is not None:
                if len(t.assignments) != additional:
                    raise TopicRejected(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                        f"Attempted to add {additional} additional partition(s), but only "
                                        f"{len(t.assignments)} assignment(s) were specified.")
                registered = frozenset(b.id for b in topology.brokers())
                assignments = [tuple(a.broker_ids) for a in t.assignments]
                for a in assignments:
                    bad = check_manual_assignment(registered, a, rf)
                    if bad is not None:
                        raise TopicRejected(bad.code, bad.message)
            if additional > MAX_PARTITIONS_PER_REQUEST:
                raise TopicRejected(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
            if topic.internal:
                raise TopicRejected(ErrorCode.INVALID_REQUEST,
                                    f"Cannot change the number of partitions of internal topic {name}")
            if assignments is None:
                placed = topology.place(additional, rf)
                if isinstance(placed, Rejection):
                    raise TopicRejected(placed.code, placed.message)
                assignments = placed
            if not req.validate_only:
                rej = await topology.create_partitions(name, assignments, req.timeout_ms)
                if rej is not None:
                    raise TopicRejected(rej.code, rej.message)
        except TopicRejected as rej:
            results.append(CP(name=name, error_code=rej.code, error_message=rej.message))
            continue
        results.append(CP(name=name, error_code=0, error_message=None))
    results.extend(duplicate_results(CP, duplicated))
    return ctx.response(throttle_time_ms=0, results=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.CREATE_PARTITIONS)
async def authorize_create_partitions(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    R = response_class(ApiKey.CREATE_PARTITIONS, "CreatePartitionsTopicResult")
    return await topics_allowed(ctx, req, handler, Op.ALTER, lambda denied: (
        R(name=t.name, error_code=TOPIC_DENIED, error_message=None) for t in denied), out="results")
