"""What the five share-group state APIs (InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary) share: each names share
partitions as (group id, topic id, partition), is stepped per share partition through the share
coordinator of its ``__share_group_state`` partition (Kafka's ``ShareCoordinatorService`` splits a
request the same way) and answers in ``Results[TopicId, Partitions[PartitionResult]]``.

Kafka's service-level check comes first: an empty group id is INVALID_REQUEST for every partition.
"""
from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from coordinator.share.persister import SharePartitionKey
from protocol.errors import ErrorCode

EMPTY_GROUP_ID = "Group id must be specified and non-empty"


async def per_partition(ctx: Any, req: Any, result_cls: Any,
                        step: Callable[[SharePartitionKey, Any], Awaitable[Any]],
                        answer: Callable[[int, Any], Any]) -> Any:
    """The response: ``step`` each share partition (key, the request's partition data), then
    ``answer(partition, result)`` its PartitionResult; ``result`` is the coordinator's answer, or a
    ``(error code, message)`` pair for a partition refused before it reached a coordinator."""
    resp = ctx.response(results=[])
    for topic in req.topics:
        partitions = []
        for pd in topic.partitions:
            if not req.group_id:
                partitions.append(answer(pd.partition, (int(ErrorCode.INVALID_REQUEST), EMPTY_GROUP_ID)))
                continue
            key = SharePartitionKey(req.group_id, uuid.UUID(str(topic.topic_id)), pd.partition)
            partitions.append(answer(pd.partition, await step(key, pd)))
        resp.results.append(result_cls(topic_id=topic.topic_id, partitions=partitions))
    return resp


def error_of(result: Any) -> tuple[int, str | None]:
    """(error code, message) of a coordinator result or of a refusal pair."""
    if isinstance(result, tuple):
        return result[0], result[1]
    return int(result.error_code), result.error_message
