"""Cluster mode's answers for Metadata, DescribeCluster, CreateTopics, CreatePartitions and
DeleteTopics: everything comes from the metadata image (broker/metadata/), never from this
broker's local logs. The single-node handlers (metadata.py, cluster.py, topics.py) delegate here
when ``ctx.broker.cluster`` is set; versions and quirks are theirs.

Kafka's rules kept:
- Metadata lists the unfenced brokers with their endpoint on the listener the request came in on,
  the controller id, and per partition leader (-1 and LEADER_NOT_AVAILABLE without one), leader
  epoch, replicas, ISR and offline replicas (replicas on fenced or unknown brokers).
- DescribeCluster lists the unfenced brokers (v2's ``include_fenced_brokers`` adds the fenced).
- CreateTopics: a replication factor above the usable brokers is INVALID_REPLICATION_FACTOR with
  Kafka's placer message; explicit assignments must name registered brokers, each once, with one
  replication factor for all partitions; replicas are placed rack-aware when racks are set.
"""
from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin import DescribeClusterResponse
from kafka.protocol.metadata import MetadataResponse

from protocol.errors import ErrorCode

from broker.common.config import ConfigError
from broker.network.dispatch import RequestContext
from broker.log.manager import INTERNAL_TOPICS, topic_name_error
from broker.apis.shared.cluster_configs import _while_unavailable
from broker.apis.shared.common import ZERO_UUID

T = MetadataResponse.MetadataResponseTopic
P = T.MetadataResponsePartition


def _uuid(topic_id: str) -> uuid.UUID:
    return uuid.UUID(topic_id)


# -- Metadata ----------------------------------------------------------------------------------
def broker_entries(ctx: RequestContext) -> list:
    image = ctx.broker.cluster.image
    out = []
    for b in image.live_brokers():
        ep = b.endpoint(ctx.listener) or (b.endpoints[0] if b.endpoints else None)
        if ep is not None:
            out.append(MetadataResponse.MetadataResponseBroker(node_id=b.id, host=ep.host, port=ep.port, rack=b.rack))
    return out


def topic_entry(ctx: RequestContext, name: str) -> T:
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
    return T(error_code=0, name=name, topic_id=_uuid(t.topic_id), is_internal=name in INTERNAL_TOPICS,
             partitions=parts, authorized_operations=None)


async def auto_create(ctx: RequestContext, name: str) -> int:
    """Kafka's AutoTopicCreationManager in cluster mode: 0 when the topic exists now, else the error."""
    config = ctx.broker.config
    cluster = ctx.broker.cluster
    if name == "__consumer_offsets":
        count, rf = int(config["offsets.topic.num.partitions"]), int(config["offsets.topic.replication.factor"])
        configs = {"cleanup.policy": "compact"}
    elif name == "__transaction_state":
        count = int(config["transaction.state.log.num.partitions"])
        rf = int(config["transaction.state.log.replication.factor"])
        configs = {"cleanup.policy": "compact", "min.insync.replicas": str(config["transaction.state.log.min.isr"])}
    else:
        count, rf, configs = int(config["num.partitions"]), int(config["default.replication.factor"]), {}
    from coordinator.metadata.controller import Rejection

    assignments = cluster.place(count, rf)
    if isinstance(assignments, Rejection):
        return assignments.code
    result = await cluster.create_topic(name, assignments, configs)
    if isinstance(result, Rejection) and result.code != ErrorCode.TOPIC_ALREADY_EXISTS:
        return result.code
    return 0


async def metadata(ctx: RequestContext, req: Any) -> Any:
    cluster = ctx.broker.cluster
    v = ctx.api_version
    topics: list[T] = []
    if req.topics is None or (v == 0 and not req.topics):
        topics = [topic_entry(ctx, name) for name in sorted(cluster.image.topics)]
    else:
        allow = (v < 4 or bool(req.allow_auto_topic_creation)) and bool(ctx.broker.config["auto.create.topics.enable"])
        for rt in req.topics:
            tid = getattr(rt, "topic_id", None)
            if rt.name is None and tid is not None and tid != ZERO_UUID:
                t = cluster.image.topics_by_id.get(str(tid))
                topics.append(topic_entry(ctx, t.name) if t is not None else
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
                        code = await auto_create(ctx, name)
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
            topics.append(topic_entry(ctx, name))
    return ctx.response(throttle_time_ms=0, brokers=broker_entries(ctx), cluster_id=ctx.broker.cluster_id,
                        controller_id=cluster.controller_id, topics=topics, authorized_operations=None,
                        error_code=0)


# -- DescribeCluster ---------------------------------------------------------------------------
def describe_cluster(ctx: RequestContext, req: Any, ops: Any) -> Any:
    cluster = ctx.broker.cluster
    include_fenced = bool(getattr(req, "include_fenced_brokers", False))
    brokers = []
    for b in sorted(cluster.image.brokers.values(), key=lambda b: b.id):
        if b.fenced and not include_fenced:
            continue
        ep = b.endpoint(ctx.listener) or (b.endpoints[0] if b.endpoints else None)
        if ep is None:
            continue
        brokers.append(DescribeClusterResponse.DescribeClusterBroker(broker_id=b.id, host=ep.host, port=ep.port,
                                                                     rack=b.rack, is_fenced=b.fenced))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=1,
                        cluster_id=ctx.broker.cluster_id, controller_id=cluster.controller_id, brokers=brokers,
                        authorized_operations=ops)


# -- CreateTopics ------------------------------------------------------------------------------
async def create_topics(ctx: RequestContext, req: Any) -> Any:
    from coordinator.metadata.controller import Rejection, check_assignment

    from broker.metadata.store import MetadataUnavailable
    from broker.common.config_defs import creation_config_entries, validate_topic_configs
    from broker.apis.shared.topic_rules import (CLUSTER_METADATA_TOPIC, CT, CTC, _unify, duplicate_results, duplicated_names,
                              too_many_partitions)

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
        collisions = {_unify(n): n for n in image.topics}

        def reject(code: int, message: str | None) -> None:
            results.append(CT(name=name, error_code=code, error_message=message))

        err = topic_name_error(name)
        if err:
            reject(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
            continue
        if name in image.topics:
            reject(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            continue
        clash = collisions.get(_unify(name))
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
                created = await _while_unavailable(req.timeout_ms, cluster.create_topic, name, assignments, overrides)
            except MetadataUnavailable as exc:
                reject(ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata store is unavailable: {exc}")
                continue
            if isinstance(created, Rejection):
                reject(created.code, created.message)
                continue
            topic_id = _uuid(created)
        entries = [CTC(name=n, value=v, read_only=False, config_source=src, is_sensitive=False)
                   for n, v, src in creation_config_entries(config, overrides)]
        results.append(CT(name=name, topic_id=topic_id, error_code=0, error_message=None, topic_config_error_code=0,
                          num_partitions=len(assignments), replication_factor=len(assignments[0]), configs=entries))
    results.extend(duplicate_results(CT, duplicated))
    return ctx.response(throttle_time_ms=0, topics=results)


# -- DeleteTopics ------------------------------------------------------------------------------
async def delete_topics(ctx: RequestContext, req: Any) -> Any:
    from broker.metadata.store import MetadataUnavailable
    from broker.apis.shared.topic_rules import DT, UNKNOWN_TOPIC_ID_MESSAGE, UNKNOWN_TOPIC_MESSAGE

    cluster = ctx.broker.cluster
    v = ctx.api_version
    requested = ([(t.name, t.topic_id if t.topic_id is not None else ZERO_UUID) for t in req.topics] if v >= 6
                 else [(n, ZERO_UUID) for n in req.topic_names])
    if not ctx.broker.config["delete.topic.enable"]:
        code = ErrorCode.INVALID_REQUEST if v < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return ctx.response(throttle_time_ms=0, responses=[DT(name=n, topic_id=i, error_code=code, error_message=None)
                                                           for n, i in requested])
    out = []
    for name, tid in requested:
        image = cluster.image
        t = image.topics.get(name) if name is not None else image.topics_by_id.get(str(tid))
        if t is None:
            out.append(DT(name=name, topic_id=tid, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None
                          else ErrorCode.UNKNOWN_TOPIC_ID,
                          error_message=UNKNOWN_TOPIC_MESSAGE if name is not None else UNKNOWN_TOPIC_ID_MESSAGE))
            continue
        if t.name in INTERNAL_TOPICS:
            out.append(DT(name=t.name, topic_id=_uuid(t.topic_id), error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                          error_message=f"Cannot delete internal topic {t.name}"))
            continue
        try:
            rej = await _while_unavailable(req.timeout_ms, cluster.delete_topic, t.name)
        except MetadataUnavailable as exc:
            out.append(DT(name=t.name, topic_id=_uuid(t.topic_id), error_code=ErrorCode.REQUEST_TIMED_OUT,
                          error_message=str(exc)))
            continue
        out.append(DT(name=t.name, topic_id=_uuid(t.topic_id), error_code=rej.code if rej else 0,
                      error_message=rej.message if rej else None))
    return ctx.response(throttle_time_ms=0, responses=out)


# -- CreatePartitions --------------------------------------------------------------------------
async def create_partitions(ctx: RequestContext, req: Any) -> Any:
    from coordinator.metadata.controller import Rejection, check_assignment

    from broker.metadata.store import MetadataUnavailable
    from broker.apis.shared.topic_rules import CP, UNKNOWN_TOPIC_MESSAGE, duplicate_results, duplicated_names

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
                rej = await _while_unavailable(req.timeout_ms, cluster.create_partitions, name, assignments)
            except MetadataUnavailable as exc:
                rej = Rejection(ErrorCode.REQUEST_TIMED_OUT, str(exc))
        results.append(CP(name=name, error_code=rej.code if rej else 0, error_message=rej.message if rej else None))
    results.extend(duplicate_results(CP, duplicated))
    return ctx.response(throttle_time_ms=0, results=results)
