"""Metadata v0-v13.

Quirks: v0 asks for all topics with an empty list, v1+ with null; auto-creation happens
when ``auto.create.topics.enable`` is on and (v<4 or the request allows it); topics asked
by id (v10+) answer UNKNOWN_TOPIC_ID; v13 adds a top-level error code.
The answer comes from the broker's Topology (broker/metadata/topology.py), never from which mode
it runs in: the live brokers with their endpoint on the listener the request came in on, the
controller id, and per partition the leader (-1 and LEADER_NOT_AVAILABLE without a live one),
leader epoch, replicas, ISR and offline replicas (replicas on brokers that are not live). A
single node is the controller, leader and sole replica of every partition; a cluster answers
from its metadata image (never this broker's local logs) and auto-creates through the
controller (broker/metadata/topic_creation.py).
Authorization: DESCRIBE on each topic (all topics: the undescribable are left out); auto-creation
needs CREATE on the cluster or the topic.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from protocol.api_keys import ApiKey
from protocol.build import build
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID
from broker.log.manager import topic_name_error
from broker.metadata import topic_catalog
from broker.metadata.topology import BrokerNode, CatalogTopic
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, Operation as Op, ResourceType as RT
from broker.security.authz import (TOPIC_DENIED, Handler, allowed, authorizes, cluster, response_class, topic_name,
                                   with_authorized_operations)
from protocol.kafka_import import import_submodule_alone

if TYPE_CHECKING:
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
else:   # the module alone, not the metadata family's __init__ (FindCoordinator's classes: start-up)
    _messages = import_submodule_alone("kafka.protocol.metadata.metadata")
    MetadataRequest, MetadataResponse = _messages.MetadataRequest, _messages.MetadataResponse

T = MetadataResponse.MetadataResponseTopic
P = T.MetadataResponsePartition


# (the topology's id, listener) -> (its brokers, the live ids, the entries made from them); the brokers
# are kept, so a hit by identity is never a new sequence at a dropped one's address
_BROKER_ENTRIES: dict[tuple[int, str], tuple[Sequence[BrokerNode], frozenset[int], tuple[Any, ...]]] = {}
BROKER_ENTRIES_LIMIT = 64    # (topology, listener) pairs: a few per broker, but tests start many brokers


def broker_entries(ctx: RequestContext) -> list:
    """The live brokers with their endpoint on the listener the request came in on.

    Made again only when the topology's brokers (a new sequence: the single node's when a property
    it comes from changes, a cluster's with each metadata image) or the live ones changed: every
    Metadata answer carries them, and building them each time was a third of a small answer's
    cost. Each answer gets a list of its own; the entries are never changed once made."""
    topology = ctx.broker.topology
    brokers, live = topology.brokers(), topology.live_broker_ids()
    key = (id(topology), ctx.listener)
    hit = _BROKER_ENTRIES.get(key)
    if hit is None or hit[0] is not brokers or hit[1] != live:
        if len(_BROKER_ENTRIES) >= BROKER_ENTRIES_LIMIT:
            _BROKER_ENTRIES.clear()
        hit = _BROKER_ENTRIES[key] = (brokers, live, tuple(_broker_entries(brokers, live, ctx.listener)))
    return list(hit[2])


def _broker_entries(brokers: Sequence[BrokerNode], live: frozenset[int], listener: str) -> list[Any]:
    out = []
    for b in brokers:
        ep = b.endpoint(listener) if b.id in live else None
        if ep is not None:
            out.append(MetadataResponse.MetadataResponseBroker(node_id=b.id, host=ep.host, port=ep.port, rack=b.rack))
    return out


def topic_entry(ctx: RequestContext, topic: CatalogTopic, live: frozenset[int] | None = None) -> Any:   # a T
    """The topic's partitions as the topology records them: a leader that is not live answers -1
    with LEADER_NOT_AVAILABLE, replicas on brokers that are not live are offline. The entries are
    made with protocol/build.py (the objects T(...) and P(...) make, without kafka-python's walk
    over every field for each); ``live`` is the topology's live brokers, when the caller has them."""
    topology = ctx.broker.topology
    if live is None:
        live = topology.live_broker_ids()
    parts = []
    for p in topology.partitions(topic.name):
        has_leader = p.leader in live
        replicas = p.replicas
        parts.append(build(P, None, {
            "error_code": 0 if has_leader else ErrorCode.LEADER_NOT_AVAILABLE, "partition_index": p.index,
            "leader_id": p.leader if has_leader else -1, "leader_epoch": p.leader_epoch,
            "replica_nodes": list(replicas), "isr_nodes": list(p.isr),
            "offline_replicas": [b for b in replicas if b not in live]}))
    return build(T, None, {"error_code": 0, "name": topic.name, "topic_id": topic.topic_id,
                           "is_internal": topic.internal, "partitions": parts, "authorized_operations": None})


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
    topology = ctx.broker.topology
    v = ctx.api_version
    topics: list[Any] = []   # T messages
    if req.topics is None or (v == 0 and not req.topics):
        live = topology.live_broker_ids()
        topics = [topic_entry(ctx, t, live) for t in list(topology.topics().values())]
    else:
        allow = (v < 4 or bool(req.allow_auto_topic_creation)) and bool(ctx.broker.config["auto.create.topics.enable"])
        for rt in req.topics:
            tid = getattr(rt, "topic_id", None)
            # by topic id: the name is null (v10+), or "" as the Java 4.x consumer sends it
            if not rt.name and tid is not None and tid != ZERO_UUID:
                topic = topology.topic_by_id(tid)
                topics.append(topic_entry(ctx, topic) if topic is not None else
                              T(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=tid, is_internal=False,
                                partitions=[], authorized_operations=None))
                continue
            name = rt.name
            topic = topology.topic(name)
            if topic is None:
                if topic_name_error(name):
                    topics.append(T(error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name, topic_id=ZERO_UUID,
                                    is_internal=False, partitions=[], authorized_operations=None))
                    continue
                code = await topology.auto_create(name) if allow else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topic = topology.topic(name)
                if code or topic is None:
                    topics.append(T(error_code=code or ErrorCode.LEADER_NOT_AVAILABLE, name=name,
                                    topic_id=ZERO_UUID, is_internal=False, partitions=[],
                                    authorized_operations=None))
                    continue
            topics.append(topic_entry(ctx, topic))
    return ctx.response(throttle_time_ms=0, brokers=broker_entries(ctx), cluster_id=ctx.broker.cluster_id,
                        controller_id=topology.controller_id, topics=topics, authorized_operations=None,
                        error_code=0)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.METADATA)
async def authorize_metadata(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    return with_authorized_operations(ctx, req, await _metadata_topics_allowed(ctx, req, handler))


async def _metadata_topics_allowed(ctx: RequestScope, req: Any, handler: Handler) -> Any:
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
