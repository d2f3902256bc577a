"""Metadata v0-v13.

Quirks: v0 asks for all topics with an empty list, v1+ with null; auto-creation happens
when ``auto.create.topics.enable`` is on and (v<4 or the request allows it); topics asked
by id (v10+) answer UNKNOWN_TOPIC_ID; a single node is leader and sole replica of every
partition, with leader epoch 0; v13 adds a top-level error code.
In a cluster the answer comes from the metadata image (never this broker's local logs): the
unfenced brokers with their endpoint on the listener the request came in on, the controller id,
and per partition the leader (-1 and LEADER_NOT_AVAILABLE without one), leader epoch, replicas,
ISR and offline replicas (replicas on fenced or unknown brokers); auto-creation goes through the
controller (broker/metadata/topic_creation.py).
Authorization: DESCRIBE on each topic (all topics: the undescribable are left out); auto-creation
needs CREATE on the cluster or the topic.
"""
from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.apis.shared.common import ZERO_UUID
from broker.log.manager import INTERNAL_TOPICS, Topic, topic_name_error
from broker.metadata import topic_catalog
from broker.metadata.topic_creation import auto_create
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, Operation as Op, ResourceType as RT
from broker.security.authz import (TOPIC_DENIED, Handler, allowed, authorizes, cluster, response_class, topic_name,
                                   with_authorized_operations)

T = MetadataResponse.MetadataResponseTopic
P = T.MetadataResponsePartition


def broker_entries(ctx: RequestContext) -> list:
    adv = ctx.advertised
    return [MetadataResponse.MetadataResponseBroker(node_id=ctx.broker.node_id, host=adv.host,
                                                    port=adv.port, rack=ctx.broker.config.get("broker.rack"))]


def topic_entry(ctx: RequestContext, topic: Topic) -> T:
    node = ctx.broker.node_id
    parts = [P(error_code=0, partition_index=p.index, leader_id=node, leader_epoch=p.leader_epoch,
               replica_nodes=[node], isr_nodes=[node], offline_replicas=[])
             for p in topic.partitions]
    return T(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.internal,
             partitions=parts, authorized_operations=None)


def maybe_auto_create(ctx: RequestContext, name: str, allowed: bool) -> Topic | None:
    broker = ctx.broker
    if not (allowed and broker.config["auto.create.topics.enable"]):
        return None
    for shell in (broker.groups, broker.txns):
        if name == shell.topic:
            # as Kafka's AutoTopicCreationManager: an internal topic is created as its
            # coordinator would create it (its partition count and configs), never as a plain one
            shell.ensure_topic()
            return broker.logs.topics[name]
    return broker.logs.create_topic(name, int(broker.config["num.partitions"]))


@handles(ApiKey.METADATA)
async def metadata(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    return with_all_operations(ctx, req, await _metadata(ctx, req))


def with_all_operations(ctx: RequestContext, req: MetadataRequest, response: MetadataResponse) -> MetadataResponse:
    """KIP-430 without an authorizer: Kafka's AuthHelper answers every supported operation (topic
    operations for each topic answered by name, cluster operations in v8-10) when asked; with
    one, the rule below answers the principal's own."""
    if getattr(req, "include_topic_authorized_operations", False):
        for t in response.topics:
            if t.name:
                t.authorized_operations = set(TOPIC_OPERATIONS)
    if getattr(req, "include_cluster_authorized_operations", False) and 8 <= ctx.api_version <= 10:
        response.authorized_operations = set(CLUSTER_OPERATIONS)
    return response


async def _metadata(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse:
    if ctx.broker.cluster is not None:  # cluster mode: the answer comes from the metadata image
        return await cluster_metadata(ctx, req)
    logs = ctx.broker.logs
    v = ctx.api_version
    topics: list[T] = []
    if req.topics is None or (v == 0 and not req.topics):
        topics = [topic_entry(ctx, t) for t in logs.topics.values()]
    else:
        allow = v < 4 or bool(req.allow_auto_topic_creation)
        for rt in req.topics:
            tid = getattr(rt, "topic_id", None)
            # by topic id: the name is null (v10+), or "" as the Java 4.x consumer sends it
            if not rt.name and tid is not None and tid != ZERO_UUID:
                topic = logs.topics_by_id.get(tid)
                if topic is None:
                    topics.append(T(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=tid,
                                    is_internal=False, partitions=[], authorized_operations=None))
                else:
                    topics.append(topic_entry(ctx, topic))
                continue
            name = rt.name
            topic = logs.topics.get(name)
            if topic is None:
                if topic_name_error(name):
                    topics.append(T(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name, topic_id=ZERO_UUID,
                                    is_internal=False, partitions=[], authorized_operations=None))
                    continue
                topic = maybe_auto_create(ctx, name, allow)
            if topic is None:
                topics.append(T(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID,
                                is_internal=False, partitions=[], authorized_operations=None))
            else:
                topics.append(topic_entry(ctx, topic))
    return ctx.response(throttle_time_ms=0, brokers=broker_entries(ctx), cluster_id=ctx.broker.cluster_id,
                        controller_id=ctx.broker.node_id, topics=topics, authorized_operations=None,
                        error_code=0)


def cluster_broker_entries(ctx: RequestContext) -> list:
    image = ctx.broker.cluster.image
    out = []
    for b in image.live_brokers():
        ep = b.endpoint(ctx.listener) or (b.endpoints[0] if b.endpoints else None)
        if ep is not None:
            out.append(MetadataResponse.MetadataResponseBroker(node_id=b.id, host=ep.host, port=ep.port, rack=b.rack))
    return out


def cluster_topic_entry(ctx: RequestContext, name: str) -> T:
    image = ctx.broker.cluster.image
    t = image.topics[name]
    live = {b.id for b in image.live_brokers()}
    parts = []
    for p, reg in sorted(t.partitions.items()):
        has_leader = reg.leader in live
        parts.append(P(error_code=0 if has_leader else ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p,
                       leader_id=reg.leader if has_leader else -1, leader_epoch=reg.leader_epoch,
                       replica_nodes=list(reg.replicas), isr_nodes=list(reg.isr),
                       offline_replicas=[b for b in reg.replicas if b not in live]))
    return T(error_code=0, name=name, topic_id=uuid.UUID(t.topic_id), is_internal=name in INTERNAL_TOPICS,
             partitions=parts, authorized_operations=None)


async def cluster_metadata(ctx: RequestContext, req: Any) -> Any:
    cluster = ctx.broker.cluster
    v = ctx.api_version
    topics: list[T] = []
    if req.topics is None or (v == 0 and not req.topics):
        topics = [cluster_topic_entry(ctx, name) for name in sorted(cluster.image.topics)]
    else:
        allow = (v < 4 or bool(req.allow_auto_topic_creation)) and bool(ctx.broker.config["auto.create.topics.enable"])
        for rt in req.topics:
            tid = getattr(rt, "topic_id", None)
            if rt.name is None and tid is not None and tid != ZERO_UUID:
                t = cluster.image.topics_by_id.get(str(tid))
                topics.append(cluster_topic_entry(ctx, t.name) if t is not None else
                              T(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=tid, is_internal=False,
                                partitions=[], authorized_operations=None))
                continue
            name = rt.name
            if name not in cluster.image.topics:
                if topic_name_error(name):
                    topics.append(T(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name, topic_id=ZERO_UUID,
                                    is_internal=False, partitions=[], authorized_operations=None))
                    continue
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if allow:
                    try:
                        code = await auto_create(ctx.broker, name)
                    except Exception as exc:  # etcd unreachable: metadata changes wait
                        from broker.metadata.store import MetadataUnavailable
                        if not isinstance(exc, MetadataUnavailable):
                            raise
                        code = ErrorCode.LEADER_NOT_AVAILABLE
                if code or name not in cluster.image.topics:
                    topics.append(T(error_code=code or ErrorCode.LEADER_NOT_AVAILABLE, name=name,
                                    topic_id=ZERO_UUID, is_internal=False, partitions=[],
                                    authorized_operations=None))
                    continue
            topics.append(cluster_topic_entry(ctx, name))
    return ctx.response(throttle_time_ms=0, brokers=cluster_broker_entries(ctx), cluster_id=ctx.broker.cluster_id,
                        controller_id=cluster.controller_id, topics=topics, authorized_operations=None,
                        error_code=0)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.METADATA)
async def authorize_metadata(ctx: RequestContext, req: Any, handler: Handler) -> Any:
    return with_authorized_operations(ctx, req, await _metadata_topics_allowed(ctx, req, handler))


async def _metadata_topics_allowed(ctx, req, handler):
    T = response_class(ApiKey.METADATA, "MetadataResponseTopic")
    if req.topics is None or (ctx.api_version == 0 and not req.topics):
        response = await handler(ctx, req)
        response.topics = [t for t in response.topics if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name)]
        return response
    auto_create = ctx.broker.config["auto.create.topics.enable"] and \
        (ctx.api_version < 4 or bool(req.allow_auto_topic_creation))
    may_create_any = auto_create and cluster(ctx, Op.CREATE)
    keep, denied = [], []
    for rt in req.topics:
        name = topic_name(ctx, rt.name, getattr(rt, "topic_id", None))
        if name is None:
            keep.append(rt)
        elif not allowed(ctx, Op.DESCRIBE, RT.TOPIC, name):
            denied.append(rt)
        elif auto_create and topic_catalog.topic(ctx.broker, name) is None and not may_create_any and \
                not allowed(ctx, Op.CREATE, RT.TOPIC, name):
            denied.append(rt)
        else:
            keep.append(rt)
    if not denied:
        return await handler(ctx, req)
    req.topics = keep
    response = await handler(ctx, req)
    response.topics.extend(T(error_code=TOPIC_DENIED, name=rt.name, topic_id=getattr(rt, "topic_id", None),
                             is_internal=False, partitions=[], authorized_operations=None) for rt in denied)
    return response
