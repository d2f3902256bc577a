"""What the topic admin APIs (create_topics.py, create_partitions.py, delete_topics.py) share:
Kafka's limits and messages, the response rows, name collisions, the partition count a request
asks for, and a single node's check of manual assignments.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Callable, Iterable

from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse

from protocol.errors import ErrorCode

from broker.network.dispatch import RequestContext

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
MAX_PARTITIONS_PER_REQUEST = 10_000  # Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."
DUPLICATE_TOPIC_MESSAGE = "Duplicate topic name."

CT = CreateTopicsResponse.CreatableTopicResult
CTC = CT.CreatableTopicConfigs


DT = DeleteTopicsResponse.DeletableTopicResult
CP = CreatePartitionsResponse.CreatePartitionsTopicResult


def unify_collision_chars(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: '.' and '_' may not tell two topics apart."""
    return name.replace(".", "_")


def _requested_partitions(ctx: RequestContext, t: Any) -> int:
    if t.assignments:
        return len(t.assignments)
    if t.num_partitions == -1:
        return int(ctx.broker.config["num.partitions"])
    return max(t.num_partitions, 0)


def too_many_partitions(ctx: RequestContext, req: Any) -> Any | None:
    """CreateTopics asking for more than MAX_PARTITIONS_PER_REQUEST partitions in all: Kafka
    refuses every topic of the request with POLICY_VIOLATION (the answer), else None."""
    if sum(_requested_partitions(ctx, t) for t in req.topics) <= MAX_PARTITIONS_PER_REQUEST:
        return None
    msg = "Excessively large number of partitions per request."
    return ctx.response(throttle_time_ms=0, topics=[CT(name=t.name, error_code=ErrorCode.POLICY_VIOLATION,
                                                       error_message=msg) for t in req.topics])


def duplicated_names(topics: Iterable[Any]) -> list[str]:
    """Topic names a CreateTopics/CreatePartitions request gives more than once, in first-given
    order: Kafka acts on none of their entries and answers each name once (duplicate_results)."""
    counts: dict[str, int] = {}
    for t in topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    return [name for name, n in counts.items() if n > 1]


def duplicate_results(row: Callable[..., Any], names: Iterable[str]) -> list[Any]:
    """The INVALID_REQUEST rows for duplicated names, which Kafka puts after the other topics."""
    return [row(name=name, error_code=ErrorCode.INVALID_REQUEST, error_message=DUPLICATE_TOPIC_MESSAGE)
            for name in names]


class TopicRejected(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


