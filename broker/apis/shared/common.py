"""Helpers several API modules share: topic lookup, leader-epoch and leadership checks, the fields
every coordinator request carries, group heartbeat answers, and calls split by coordinator partition.
The broker is typed as BrokerServices (broker/common/services.py): nothing here imports the
composition root."""
from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode

from broker.log.manager import Topic
from broker.metadata import topic_catalog
from broker.metadata.topic_catalog import absent_partition_error  # noqa: F401  (the handlers' import)

if TYPE_CHECKING:
    from broker.log.partition import Partition   # imported with the first partition opened
    from broker.common.services import BrokerServices
    from broker.network.dispatch import RequestContext

ZERO_UUID = uuid.UUID(int=0)


def check_leader_epoch(part: Partition, requested: int | None) -> int:
    """Kafka's rule for a client-sent current leader epoch (-1 means 'not sent')."""
    if requested is None or requested < 0:
        return ErrorCode.NONE
    if requested < part.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if requested > part.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE


def find_topic(broker: BrokerServices, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
    if topic_id is not None and topic_id != ZERO_UUID:
        return broker.logs.topics_by_id.get(topic_id)
    if name is None:
        return None
    return broker.logs.topics.get(name)


def coordinator_fields(ctx: RequestContext) -> dict[str, Any]:
    """What every coordinator request carries about its client (Kafka's client id and
    "/host" as DescribeGroups shows them)."""
    return {"api_version": ctx.api_version, "client_id": ctx.client_id or "", "client_host": "/" + ctx.client_host}


def topics_view(ctx: RequestContext) -> dict[str, tuple[uuid.UUID, int]]:
    """The cluster's non-internal topics as the group coordinator's server-side assignment sees
    them, name -> (id, partition count) (the metadata image in cluster mode, not only the ones
    hosted here)."""
    return {name: (t.topic_id, t.partition_count) for name, t in topic_catalog.all_topics(ctx.broker).items()
            if not t.internal}


def partition_racks_view(ctx: RequestContext) -> Any:
    """The replica racks of the cluster's partitions (rack-aware group assignment)."""
    return topic_catalog.partition_racks(ctx.broker)


def group_heartbeat_answer(ctx: RequestContext, r: Any) -> Any:
    """ConsumerGroupHeartbeat's and ShareGroupHeartbeat's answer (the same fields): the member's
    epoch and, when it changed, its assignment as topic id -> partitions (empty topics left out)."""
    resp = ctx.response(throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message,
                        member_id=r.member_id, member_epoch=r.member_epoch,
                        heartbeat_interval_ms=r.heartbeat_interval_ms, assignment=None)
    if r.assignment is not None:
        resp.assignment = resp.Assignment(topic_partitions=[
            resp.Assignment.TopicPartitions(topic_id=tid, partitions=sorted(ps))
            for tid, ps in sorted(r.assignment.items(), key=lambda kv: str(kv[0])) if ps])
    return resp


def other_group_type_answer(ctx: RequestContext, group_id: str, member_epoch: int, kind: str) -> Any:
    """GROUP_ID_NOT_FOUND for a heartbeat naming a group of the other type: consumer and share
    groups share one id space (KIP-932)."""
    return ctx.response(throttle_time_ms=0, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                        error_message=f"Group {group_id} is not a {kind} group.", member_id=None,
                        member_epoch=member_epoch, heartbeat_interval_ms=0, assignment=None)


async def call_per_coordinator_partition(ctx: RequestContext, group_ids: list[str | None],
                                         make: Callable[[list[str | None]], Any]) -> dict[int, Any]:
    """Split a multi-group request by coordinator partition; each partition's result (its
    groups' answers), by coordinator partition."""
    by_partition: dict[int, list[str | None]] = defaultdict(list)   # a null group id is ""'s
    for gid in group_ids:
        by_partition[ctx.broker.groups.coordinator_for(gid or "")[0]].append(gid)
    results: dict[int, Any] = {}
    for p, gids in by_partition.items():
        results[p] = await ctx.broker.groups.call(p, make(gids))
    return results


def topic_name_for(ctx: RequestContext, name: str | None, topic_id: Any) -> str | None:
    if ctx.api_version >= 10:
        topic = topic_catalog.topic_by_id(ctx.broker, topic_id)
        return topic.name if topic else None
    return name


def leader_partition(ctx: RequestContext, topic: Topic | None, name: str, index: int, rp: Any,
                     any_replica: bool = False) -> tuple[Partition | None, int]:
    """(the partition, 0) when this broker leads it at the request's leader epoch, else (None or
    the partition, the error it answers; None only with an error): unknown partition, fenced/unknown leader epoch, or
    NOT_LEADER_OR_FOLLOWER on a follower — the checks ListOffsets and OffsetForLeaderEpoch share.
    ``any_replica``: Kafka answers debugging tools (replica id -2) from any replica."""
    part = topic.partitions.get(index) if topic is not None else None
    if part is None:
        return None, absent_partition_error(ctx.broker, name, index)
    err = check_leader_epoch(part, getattr(rp, "current_leader_epoch", -1))
    if not err and part.replica is not None and not part.replica.is_leader and not any_replica:
        err = ErrorCode.NOT_LEADER_OR_FOLLOWER
    return part, err
