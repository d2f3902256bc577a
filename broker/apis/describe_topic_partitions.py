"""DescribeTopicPartitions v0 (KIP-966), which the Java Admin 3.8+ prefers for describeTopics by name.

As Kafka's DescribeTopicPartitionsRequestHandler and KRaftMetadataCache: the requested topics (or,
with none, every topic) in name order from the cursor's topic on, the cursor's topic starting at
its partition; at most min(ResponsePartitionLimit, ``max.request.partition.size.limit``, default
2000) and at least one partition per answer; when the limit cuts a topic, NextCursor names the
first partition not returned, and when it is reached just before a further topic, NextCursor is
that topic's partition 0. A named topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION
(INVALID_TOPIC_EXCEPTION for an invalid name); a cursor outside the requested topics, or with a
negative partition, is INVALID_REQUEST for every requested topic. Topics and partition states are
the broker's Topology's (broker/metadata/topology.py: a single node leads every partition, its
only replica and ISR; a cluster answers every topic of its metadata image, hosted here or not,
with each partition's leader (-1 and LEADER_NOT_AVAILABLE when it is not live), leader epoch,
replicas, ISR and offline replicas (on fenced or unknown brokers), as Metadata answers them);
ELR lists are empty; a topic's authorized operations are all
of them, as Kafka's AuthHelper answers without an authorizer (with one, the rule below
answers the principal's own).

Authorization: DESCRIBE on each topic (see the rule below).
"""
from __future__ import annotations

import uuid
from typing import Any

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID
from broker.log.manager import topic_name_error
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import TOPIC_OPERATIONS, Operation as Op, ResourceType as RT
from broker.security.authz import TOPIC_DENIED, Handler, allowed, authorizer_of, authorizes

_NOT_REQUESTED = -2147483648
_ALL_TOPIC_OPERATIONS = sum(1 << op for op in TOPIC_OPERATIONS)   # Kafka's bit field, an int32 here


def _partitions(ctx: RequestContext, P: Any, name: str, start: int, upper: int) -> list:
    """Partitions start..upper-1 as Metadata answers them: a leader that is not live is -1 with
    LEADER_NOT_AVAILABLE, replicas on brokers that are not live are offline."""
    topology = ctx.broker.topology
    live = topology.live_broker_ids()
    out = []
    for p in topology.partitions(name)[start:upper]:
        has_leader = p.leader in live
        out.append(P(error_code=0 if has_leader else ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p.index,
                     leader_id=p.leader if has_leader else -1, leader_epoch=p.leader_epoch,
                     replica_nodes=list(p.replicas), isr_nodes=list(p.isr), eligible_leader_replicas=[],
                     last_known_elr=[], offline_replicas=[b for b in p.replicas if b not in live]))
    return out


@handles(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
async def describe_topic_partitions(ctx: RequestContext, req: Any) -> Any:
    catalog = topic_catalog.all_topics(ctx.broker)
    resp = ctx.response(throttle_time_ms=0, topics=[], next_cursor=None)
    T = resp.DescribeTopicPartitionsResponseTopic
    P = T.DescribeTopicPartitionsResponsePartition
    fetch_all = not req.topics
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    if fetch_all:
        names = sorted(n for n in catalog if n >= cursor_topic)
    else:
        names = sorted({t.name for t in req.topics if t.name is not None and t.name >= cursor_topic})
        if cursor is not None and cursor.topic_name not in names:
            names = []
            cursor = None
            resp.topics = [T(error_code=ErrorCode.INVALID_REQUEST, name=t.name, topic_id=ZERO_UUID,
                             is_internal=False, partitions=[], topic_authorized_operations=_NOT_REQUESTED)
                           for t in req.topics]
            return resp
    if cursor is not None and cursor.partition_index < 0:
        resp.topics = [T(error_code=ErrorCode.INVALID_REQUEST, name=n, topic_id=ZERO_UUID, is_internal=False,
                         partitions=[], topic_authorized_operations=_NOT_REQUESTED) for n in names]
        return resp
    limit = int(ctx.broker.config.get("max.request.partition.size.limit") or 2000)
    remaining = max(min(limit, req.response_partition_limit), 1)
    for name in names:
        if remaining == 0:
            resp.next_cursor = resp.Cursor(topic_name=name, partition_index=0)
            break
        topic = catalog.get(name)
        if topic is None:
            if not fetch_all:
                err = ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_error(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                resp.topics.append(T(error_code=err, name=name, topic_id=ZERO_UUID, is_internal=False, partitions=[],
                                     topic_authorized_operations=_NOT_REQUESTED))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        count = topic.partition_count
        upper = min(count, start + remaining)
        parts = _partitions(ctx, P, name, start, upper)
        resp.topics.append(T(error_code=0, name=name, topic_id=topic.topic_id, is_internal=topic.internal,
                             partitions=parts, topic_authorized_operations=_ALL_TOPIC_OPERATIONS))
        if upper < count:
            resp.next_cursor = resp.Cursor(topic_name=name, partition_index=upper)
            break
        remaining -= len(parts)
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
UNDISCLOSED_TOPIC_ID = uuid.UUID(int=0)   # the topic id Kafka answers when it does not disclose one


@authorizes(ApiKey.DESCRIBE_TOPIC_PARTITIONS)   # DescribeTopicPartitions: DESCRIBE on each topic; unnamed ones are left out, named ones denied
async def authorize_describe_topic_partitions(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    """DescribeTopicPartitionsRequestHandler: a named topic without DESCRIBE answers
    TOPIC_AUTHORIZATION_FAILED with the zero topic id (existence not disclosed), a listed one is
    left out, and the next cursor never names a hidden topic (it moves to the next visible one:
    none of a hidden topic's partitions would be returned anyway). Authorized topics carry their
    authorized operations, which Kafka always fills in."""
    response = await handler(ctx, req)
    named = bool(req.topics)
    auth = authorizer_of(ctx)
    out = []
    for t in response.topics:
        if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name):
            if t.error_code == 0:
                ops = auth.authorized_operations(ctx.principal, ctx.client_host, RT.TOPIC, t.name, TOPIC_OPERATIONS)
                t.topic_authorized_operations = sum(1 << op for op in ops)   # an int32 here, Kafka's bit field
            out.append(t)
        elif named:
            t.error_code, t.partitions, t.is_internal = TOPIC_DENIED, [], False
            t.topic_id = UNDISCLOSED_TOPIC_ID
            out.append(t)
    response.topics = out
    cursor = response.next_cursor
    if cursor is not None and not named and not allowed(ctx, Op.DESCRIBE, RT.TOPIC, cursor.topic_name):
        later = sorted(n for n in topic_catalog.all_topics(ctx.broker)
                       if n > cursor.topic_name and allowed(ctx, Op.DESCRIBE, RT.TOPIC, n))
        response.next_cursor = type(cursor)(topic_name=later[0], partition_index=0) if later else None
    return response
