"""DeleteTopics v1-v6.
"""
from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin import DeleteTopicsRequest, DeleteTopicsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.apis.shared.cluster_configs import while_unavailable
from broker.apis.shared.common import ZERO_UUID
from broker.apis.shared.topic_rules import DT, UNKNOWN_TOPIC_ID_MESSAGE, UNKNOWN_TOPIC_MESSAGE
from broker.log.manager import INTERNAL_TOPICS
from broker.network.dispatch import RequestContext, handles


@handles(ApiKey.DELETE_TOPICS)
async def delete_topics(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    if ctx.broker.cluster is not None:
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


# -- DeleteTopics ------------------------------------------------------------------------------
async def cluster_delete_topics(ctx: RequestContext, req: Any) -> Any:
    from broker.apis.shared.topic_rules import DT, UNKNOWN_TOPIC_ID_MESSAGE, UNKNOWN_TOPIC_MESSAGE
    from broker.metadata.store import MetadataUnavailable

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
            out.append(DT(name=t.name, topic_id=uuid.UUID(t.topic_id), error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                          error_message=f"Cannot delete internal topic {t.name}"))
            continue
        try:
            rej = await while_unavailable(req.timeout_ms, cluster.delete_topic, t.name)
        except MetadataUnavailable as exc:
            out.append(DT(name=t.name, topic_id=uuid.UUID(t.topic_id), error_code=ErrorCode.REQUEST_TIMED_OUT,
                          error_message=str(exc)))
            continue
        out.append(DT(name=t.name, topic_id=uuid.UUID(t.topic_id), error_code=rej.code if rej else 0,
                      error_message=rej.message if rej else None))
    return ctx.response(throttle_time_ms=0, responses=out)
