"""What the topic admin handlers (topics.py) and their cluster-mode halves (cluster_admin.py)
share: Kafka's limits and messages, the response rows, name collisions, the partition count a
request asks for. Its own module so cluster_admin.py, which topics.py delegates to, need not
import topics.py back."""
from __future__ import annotations

from typing import Any

from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse

from ..dispatch import RequestContext

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
MAX_PARTITIONS_PER_REQUEST = 10_000  # Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."

CT = CreateTopicsResponse.CreatableTopicResult
CTC = CT.CreatableTopicConfigs


DT = DeleteTopicsResponse.DeletableTopicResult
CP = CreatePartitionsResponse.CreatePartitionsTopicResult


def _unify(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: '.' and '_' may not tell two topics apart."""
    return name.replace(".", "_")


def _requested_partitions(ctx: RequestContext, t: Any) -> int:
    if t.assignments:
        return len(t.assignments)
    if t.num_partitions == -1:
        return int(ctx.broker.config["num.partitions"])
    return max(t.num_partitions, 0)
