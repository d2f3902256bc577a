"""CreateTopics v2-v7, DeleteTopics v1-v6, CreatePartitions v0-v3, DeleteRecords v0-v2.

Kafka's rules (its KRaft controller's order of checks and messages):
- CreateTopics: more than 10,000 partitions in one request fails every topic with
  POLICY_VIOLATION; a name given twice answers INVALID_REQUEST "Duplicate topic name."
  once; ``__cluster_metadata`` is dropped from the answer; then per topic: illegal name or a
  '.'/'_' collision (INVALID_TOPIC_EXCEPTION), TOPIC_ALREADY_EXISTS, null or invalid configs
  (INVALID_CONFIG), then partitions and replication factor. -1 means ``num.partitions`` /
  ``default.replication.factor``; a single node can hold only one replica, so a factor above
  1 is INVALID_REPLICATION_FACTOR with Kafka's placer message. Manual assignments must name
  this broker once per partition, for partitions 0..n-1. v5+ answers with the partition
  count, replication factor and every effective config with its source; v7 with the id.
  validate_only runs every check and creates nothing (the id answered is then zero).
- DeleteTopics: by name (v1-v5) or by name or id (v6); unknown names answer
  UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; ``delete.topic.enable=false``
  answers TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3).
- CreatePartitions: INVALID_PARTITIONS unless the count grows; assignments must match the
  number of new partitions.
- DeleteRecords: offset -1 means the high watermark; above it (or negative) answers
  OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks 'delete' answers POLICY_VIOLATION;
  the answer carries the new low watermark (the log start offset), -1 with any error.
Samsa's own rule: the internal topics (``__consumer_offsets``, ``__transaction_state``) are
created by the broker with its own layout, so clients may not create, delete, grow or
truncate them (Kafka itself does not stop a client from creating them).
"""
from __future__ import annotations

import uuid
from typing import Any

import structlog
from kafka.protocol.admin import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                                  CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse,
                                  DeleteTopicsRequest, DeleteTopicsResponse)

from protocol.errors import ErrorCode

from broker.common.config import ConfigError
from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles
from broker.log.manager import INTERNAL_TOPICS, topic_name_error
from broker.apis.shared.common import ZERO_UUID, absent_partition_error
from broker.common.config_defs import creation_config_entries, validate_topic_configs
from broker.apis.shared.topic_rules import (CLUSTER_METADATA_TOPIC, CP, CT, CTC, DT, MAX_PARTITIONS_PER_REQUEST, UNKNOWN_TOPIC_ID_MESSAGE,
                          UNKNOWN_TOPIC_MESSAGE, _unify, duplicate_results, duplicated_names, too_many_partitions)

log = structlog.get_logger("samsa.topics")

class _Reject(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_assignment(ctx: RequestContext, broker_ids: list[int], replication_factor: int | None) -> None:
    """Kafka's validateManualPartitionAssignment for a cluster of one broker."""
    if not broker_ids:
        raise _Reject(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                      "The manual partition assignment includes an empty replica list.")
    prev = None
    for b in sorted(broker_ids):
        if b != ctx.broker.node_id:
            raise _Reject(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                          f"The manual partition assignment includes broker {b}, but no such broker is registered.")
        if b == prev:
            raise _Reject(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                          f"The manual partition assignment includes the broker {prev} more than once.")
        prev = b
    if replication_factor is not None and len(broker_ids) != replication_factor:
        raise _Reject(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                      f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), "
                      f"but this is not consistent with previous partitions, which have "
                      f"{replication_factor} replica(s).")


def _partition_count(ctx: RequestContext, t: Any) -> int:
    """Partitions the topic would get, or _Reject with Kafka's error."""
    if t.assignments:
        if t.replication_factor != -1:
            raise _Reject(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                     "replication factor was not set to -1.")
        if t.num_partitions != -1:
            raise _Reject(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                     "numPartitions was not set to -1.")
        seen: set[int] = set()
        rf: int | None = None
        for a in t.assignments:
            if a.partition_index in seen:
                raise _Reject(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                              f"Found multiple manual partition assignments for partition {a.partition_index}")
            _check_assignment(ctx, list(a.broker_ids), rf)
            rf = len(a.broker_ids)
            seen.add(a.partition_index)
        if seen != set(range(len(seen))):
            raise _Reject(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                          "partitions should be a consecutive 0-based integer sequence")
        return len(seen)
    if t.replication_factor < -1 or t.replication_factor == 0:
        raise _Reject(ErrorCode.INVALID_REPLICATION_FACTOR,
                      "Replication factor must be larger than 0, or -1 to use the default value.")
    if t.num_partitions < -1 or t.num_partitions == 0:
        raise _Reject(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    config = ctx.broker.config
    count = int(config["num.partitions"]) if t.num_partitions == -1 else t.num_partitions
    rf = int(config["default.replication.factor"]) if t.replication_factor == -1 else t.replication_factor
    if rf > 1:
        raise _Reject(ErrorCode.INVALID_REPLICATION_FACTOR,
                      f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                      f"cannot be reached because only 1 broker(s) are registered.")
    return count


# -- CreateTopics -----------------------------------------------------------------------
@handles(ApiKey.CREATE_TOPICS)
async def create_topics(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    if ctx.broker.cluster is not None:  # cluster mode: placed on the brokers, written to the metadata log
        from broker.apis.cluster_admin import create_topics as cluster_create_topics
        return await cluster_create_topics(ctx, req)
    logs = ctx.broker.logs
    validate_only = bool(req.validate_only)
    refused = too_many_partitions(ctx, req)
    if refused is not None:
        return refused
    duplicated = duplicated_names(req.topics)
    collisions = {_unify(name): name for name in logs.topics}
    results: list[CT] = []
    for t in req.topics:
        name = t.name
        if name in duplicated or name == CLUSTER_METADATA_TOPIC:
            continue
        try:
            err = topic_name_error(name)
            if err:
                raise _Reject(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
            if name not in logs.topics:
                clash = collisions.get(_unify(name))
                if clash is not None and clash != name:
                    raise _Reject(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                  f"Topic '{name}' collides with existing topic: {clash}")
            if name in logs.topics:
                raise _Reject(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            if name in INTERNAL_TOPICS:
                raise _Reject(ErrorCode.INVALID_REQUEST,
                              f"Topic '{name}' is an internal topic: the broker creates it when it is first needed.")
            configs = {c.name: c.value for c in t.configs}
            try:
                validate_topic_configs(configs, ctx.broker.config)
            except ConfigError as exc:
                raise _Reject(ErrorCode.INVALID_CONFIG, str(exc)) from None
            count = _partition_count(ctx, t)
        except _Reject as rej:
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


# -- DeleteTopics -----------------------------------------------------------------------


@handles(ApiKey.DELETE_TOPICS)
async def delete_topics(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    if ctx.broker.cluster is not None:
        from broker.apis.cluster_admin import delete_topics as cluster_delete_topics
        return await cluster_delete_topics(ctx, req)
    broker = ctx.broker
    logs = broker.logs
    v = ctx.api_version
    requested: list[tuple[str | None, uuid.UUID]] = (
        [(t.name, t.topic_id if t.topic_id is not None else ZERO_UUID) for t in req.topics] if v >= 6
        else [(n, ZERO_UUID) for n in req.topic_names])
    if not broker.config["delete.topic.enable"]:
        code = ErrorCode.INVALID_REQUEST if v < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return ctx.response(throttle_time_ms=0, responses=[DT(name=n, topic_id=i, error_code=code, error_message=None)
                                                           for n, i in requested])
    # Kafka shuffles its answers; Samsa keeps the order of first mention, which is one of them.
    answers: list[tuple[int, DT]] = []

    def answer(at: int, name: str | None, tid: uuid.UUID, code: int = 0, message: str | None = None) -> None:
        answers.append((at, DT(name=name, topic_id=tid, error_code=code, error_message=message)))

    names: dict[str, int] = {}
    ids: dict[uuid.UUID, int] = {}
    dup_names: dict[str, int] = {}
    dup_ids: dict[uuid.UUID, int] = {}
    for at, (name, tid) in enumerate(requested):
        if name is None:
            if tid == ZERO_UUID:
                answer(at, None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
            elif tid in ids:
                dup_ids[tid] = ids.pop(tid)
            elif tid not in dup_ids:
                ids[tid] = at
        elif tid != ZERO_UUID:
            answer(at, name, tid, ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
        elif name in names:
            dup_names[name] = names.pop(name)
        elif name not in dup_names:
            names[name] = at
    for name, at in dup_names.items():
        answer(at, name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    for tid, at in dup_ids.items():
        answer(at, None, tid, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    to_delete: dict[uuid.UUID, tuple[str, int]] = {}
    for tid, at in ids.items():
        topic = logs.topics_by_id.get(tid)
        if topic is None:
            answer(at, None, tid, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_ID_MESSAGE)
        else:
            to_delete[tid] = (topic.name, at)
    for name, at in names.items():
        topic = logs.topics.get(name)
        if topic is None:
            answer(at, name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
        elif topic.topic_id in to_delete:
            del to_delete[topic.topic_id]
            answer(at, name, topic.topic_id, ErrorCode.INVALID_REQUEST,
                   "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[topic.topic_id] = (name, at)
    deleted: list[str] = []
    for tid, (name, at) in to_delete.items():
        if name in INTERNAL_TOPICS:
            answer(at, name, tid, ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete internal topic {name}")
            continue
        logs.delete_topic(name)
        if ctx.broker.metrics is not None:
            ctx.broker.metrics.topic_deleted(name)
        deleted.append(name)
        answer(at, name, tid)
    if deleted:
        broker.appends.notify()  # waiting fetches re-check and see the topic gone
        # as Kafka's onPartitionsDeleted: committed offsets of the topics go from every group,
        # so a topic created again under the name does not inherit them
        await broker.groups.topics_deleted(deleted)
    answers.sort(key=lambda a: a[0])
    return ctx.response(throttle_time_ms=0, responses=[dt for _, dt in answers])


# -- CreatePartitions -------------------------------------------------------------------


@handles(ApiKey.CREATE_PARTITIONS)
async def create_partitions(ctx: RequestContext, req: CreatePartitionsRequest) -> CreatePartitionsResponse:
    if ctx.broker.cluster is not None:
        from broker.apis.cluster_admin import create_partitions as cluster_create_partitions
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
                raise _Reject(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
            have = topic.partition_count
            if t.count == have:
                raise _Reject(ErrorCode.INVALID_PARTITIONS, f"Topic already has {have} partition(s).")
            if t.count < have:
                raise _Reject(ErrorCode.INVALID_PARTITIONS, f"The topic {name} currently has {have} partition(s); "
                                                            f"{t.count} would not be an increase.")
            additional = t.count - have
            if t.assignments is not None:
                if len(t.assignments) != additional:
                    raise _Reject(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                                  f"Attempted to add {additional} additional partition(s), but only "
                                  f"{len(t.assignments)} assignment(s) were specified.")
                for a in t.assignments:
                    _check_assignment(ctx, list(a.broker_ids), 1)
            if additional > MAX_PARTITIONS_PER_REQUEST:
                raise _Reject(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
            if topic.internal:
                raise _Reject(ErrorCode.INVALID_REQUEST,
                              f"Cannot change the number of partitions of internal topic {name}")
        except _Reject as rej:
            results.append(CP(name=name, error_code=rej.code, error_message=rej.message))
            continue
        if not req.validate_only:
            logs.add_partitions(name, t.count)
            log.info("partitions added", topic=name, partitions=t.count)
        results.append(CP(name=name, error_code=0, error_message=None))
    results.extend(duplicate_results(CP, duplicated))
    return ctx.response(throttle_time_ms=0, results=results)


# -- DeleteRecords ----------------------------------------------------------------------
DRT = DeleteRecordsResponse.DeleteRecordsTopicResult
DRP = DRT.DeleteRecordsPartitionResult
HIGH_WATERMARK = -1


@handles(ApiKey.DELETE_RECORDS)
async def delete_records(ctx: RequestContext, req: DeleteRecordsRequest) -> DeleteRecordsResponse:
    broker = ctx.broker
    logs = broker.logs
    topics = []
    moved = False
    for rt in req.topics:
        topic = logs.topics.get(rt.name)
        parts = []
        for rp in rt.partitions:
            idx = rp.partition_index
            # Kafka's order: internal topic, no local replica, not the leader, then the cleanup policy
            if rt.name in INTERNAL_TOPICS:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif (part := topic.partitions.get(idx) if topic is not None else None) is None:
                code = absent_partition_error(broker, rt.name, idx)
            elif part.replica is not None and not part.replica.is_leader:
                code = ErrorCode.NOT_LEADER_OR_FOLLOWER     # a cluster: the leader moves the log start
            elif "delete" not in part.policies():
                code = ErrorCode.POLICY_VIOLATION
            else:
                offset = part.high_watermark if rp.offset == HIGH_WATERMARK else rp.offset
                if offset < 0 or offset > part.high_watermark:
                    code = ErrorCode.OFFSET_OUT_OF_RANGE
                else:
                    if offset > part.log_start_offset:
                        part.delete_records_before(offset)
                        moved = True
                        log.info("records deleted", topic=topic.name, partition=idx, log_start_offset=offset)
                    parts.append(DRP(partition_index=idx, low_watermark=part.log_start_offset, error_code=0))
                    continue
            parts.append(DRP(partition_index=idx, low_watermark=-1, error_code=code))
        topics.append(DRT(name=rt.name, partitions=parts))
    if moved:
        broker.appends.notify()  # fetches below the new start must now answer OFFSET_OUT_OF_RANGE
    return ctx.response(throttle_time_ms=0, topics=topics)

