"""Topic auto-creation in cluster mode (Kafka's AutoTopicCreationManager): a Metadata request
for an unknown topic (``auto.create.topics.enable``) and FindCoordinator's first use of
``__consumer_offsets`` / ``__transaction_state`` / ``__share_group_state`` create the topic through the controller, with the
partition count, replication factor and configs Kafka gives it. Here, below both the API handlers
(broker/apis/metadata.py) and the coordinators' placement (broker/coordinator_runtime/placement.py),
so neither imports the other.
"""
from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode


async def auto_create(broker: Any, name: str) -> int:
    """Kafka's AutoTopicCreationManager in cluster mode: 0 when the topic exists now, else the error."""
    config = broker.config
    cluster = broker.cluster
    if name == "__consumer_offsets":
        count, rf = int(config["offsets.topic.num.partitions"]), int(config["offsets.topic.replication.factor"])
        configs = {"cleanup.policy": "compact"}
    elif name == "__transaction_state":
        count = int(config["transaction.state.log.num.partitions"])
        rf = int(config["transaction.state.log.replication.factor"])
        configs = {"cleanup.policy": "compact", "min.insync.replicas": str(config["transaction.state.log.min.isr"])}
    elif name == "__share_group_state":
        count = int(config["share.coordinator.state.topic.num.partitions"])
        rf = int(config["share.coordinator.state.topic.replication.factor"])
        configs = broker.share_coordinator.topic_configs()
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
