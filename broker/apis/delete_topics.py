"""DeleteTopics v1-v6.

Kafka's rules: by name (v1-v5) or by name or id (v6); unknown names answer
UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; a name or id given twice, or both for
one topic, answers INVALID_REQUEST; ``delete.topic.enable=false`` answers TOPIC_DELETION_DISABLED
(INVALID_REQUEST before v3). The internal topics may not be deleted (Samsa's rule). Deleting a
topic removes its committed offsets from every group, as Kafka's onPartitionsDeleted. The checks
are the same in both modes; the broker's Topology (broker/metadata/topology.py) deletes.
Authorization: DELETE on the cluster or on each topic (see the rule below).
"""
from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin import DeleteTopicsRequest, DeleteTopicsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID
from broker.apis.shared.topic_rules import DT, UNKNOWN_TOPIC_ID_MESSAGE, UNKNOWN_TOPIC_MESSAGE
from broker.log.manager import INTERNAL_TOPICS
from broker.metadata import topic_catalog
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import (DENIED_MESSAGES, TOPIC_DENIED, Handler, allowed, authorizes, cluster, response_class,
                                   topic_name)


@handles(ApiKey.DELETE_TOPICS)
async def delete_topics(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    broker = ctx.broker
    topology = broker.topology
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
        topic = topology.topic_by_id(tid)
        if topic is None:
            answer(at, None, tid, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_ID_MESSAGE)
        else:
            to_delete[tid] = (topic.name, at)
    for name, at in names.items():
        topic = topology.topic(name)
        if topic is None:
            answer(at, name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
        elif topic.topic_id in to_delete:
            del to_delete[topic.topic_id]
            answer(at, name, topic.topic_id, ErrorCode.INVALID_REQUEST,
                   "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[topic.topic_id] = (name, at)
    deleting: dict[str, tuple[uuid.UUID, int]] = {}
    for tid, (name, at) in to_delete.items():
        if name in INTERNAL_TOPICS:
            answer(at, name, tid, ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete internal topic {name}")
        else:
            deleting[name] = (tid, at)
    outcomes = await topology.delete_topics(list(deleting), req.timeout_ms)
    for name, (tid, at) in deleting.items():
        rej = outcomes[name]
        answer(at, name, tid, rej.code if rej else 0, rej.message if rej else None)
    answers.sort(key=lambda a: a[0])
    return ctx.response(throttle_time_ms=0, responses=[dt for _, dt in answers])


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DELETE_TOPICS)
async def authorize_delete_topics(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    """ControllerApis.deleteTopics: DELETE on the cluster allows every topic; otherwise a topic
    needs DELETE on it. A denied topic answers TOPIC_AUTHORIZATION_FAILED, named only when the
    principal may DESCRIBE it (one asked for by id) and checked before it is looked up (one asked
    for by name: an undescribable name is denied whether it exists or not)."""
    everything = cluster(ctx, Op.DELETE)
    if everything:
        return await handler(ctx, req)

    def verdict(name: str | None, by_id: bool) -> tuple[bool, str | None]:
        """(denied, the name to answer with)."""
        if name is None:   # an unknown topic id: the handler answers UNKNOWN_TOPIC_ID
            return False, None
        describable = allowed(ctx, Op.DESCRIBE, RT.TOPIC, name)
        if allowed(ctx, Op.DELETE, RT.TOPIC, name):
            return False, name
        if by_id:
            return True, name if describable else None
        # by name: undescribable → denied; describable but missing → the handler's UNKNOWN_TOPIC_OR_PARTITION
        return (not describable or topic_catalog.topic(ctx.broker, name) is not None), name

    denied: list[tuple[str | None, Any]] = []
    if ctx.api_version >= 6:
        ok = []
        for t in req.topics:
            refused, name = verdict(topic_name(ctx, t.name, t.topic_id), not t.name)
            if refused:
                denied.append((name, t.topic_id))
            else:
                ok.append(t)
        req.topics = ok
    else:
        ok = []
        for n in req.topic_names:
            refused, _ = verdict(n, False)
            if refused:
                denied.append((n, None))
            else:
                ok.append(n)
        req.topic_names = ok
    if not denied:
        return await handler(ctx, req)
    response = await handler(ctx, req) if ok else ctx.response(throttle_time_ms=0, responses=[])
    R = response_class(ApiKey.DELETE_TOPICS, "DeletableTopicResult")
    response.responses.extend(R(name=n, topic_id=tid, error_code=TOPIC_DENIED,
                                error_message=DENIED_MESSAGES[TOPIC_DENIED]) for n, tid in denied)
    return response
