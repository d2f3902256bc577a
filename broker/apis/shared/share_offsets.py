"""What the share admin APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets) share, as Kafka's GroupCoordinatorService does them: the share group's
state lives with the share coordinator, reached through the broker's Persister
(``broker.share_persister``: ReadShareGroupStateSummary, InitializeShareGroupState with a higher
state epoch, DeleteShareGroupState); altering or deleting needs the group to exist without members,
and READ on each topic named (KafkaApis).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protocol.errors import ErrorCode

from broker.security.acl import Operation as Op, ResourceType as RT
from broker.security.authz import GROUP_DENIED, Handler, allowed

GROUP_ID_NOT_FOUND_MESSAGE = "Group {} not found."
NON_EMPTY_GROUP_MESSAGE = "The group is not empty."


def offsets_alterable(broker: Any, group_id: str) -> tuple[int, str | None]:
    """Kafka's ``ShareGroup.validateOffsetsAlterable``: (error, message), NONE when the share group
    exists and has no members."""
    group = broker.share_groups.coordinator.groups.get(group_id)
    if group is None:
        return ErrorCode.GROUP_ID_NOT_FOUND, GROUP_ID_NOT_FOUND_MESSAGE.format(group_id)
    if group.members:
        return ErrorCode.NON_EMPTY_GROUP, NON_EMPTY_GROUP_MESSAGE
    return ErrorCode.NONE, None


def refused(ctx: Any, group_id: str) -> Any:
    """The whole-request answer (no topics) of an AlterShareGroupOffsets or DeleteShareGroupOffsets
    whose share group is not alterable (:func:`offsets_alterable`); None when it is."""
    code, message = offsets_alterable(ctx.broker, group_id)
    if code:
        return ctx.response(throttle_time_ms=0, error_code=code, error_message=message, responses=[])
    return None


async def authorize_offsets_change(ctx: Any, req: Any, handler: Handler, group_op: Op,
                                   denied_topic: Callable[[Any], Any]) -> Any:
    """KafkaApis' checks of AlterShareGroupOffsets and DeleteShareGroupOffsets: ``group_op`` on the
    group (else GROUP_AUTHORIZATION_FAILED for the request), READ on each topic; a denied topic is
    taken out of the request and answered by ``denied_topic(its request topic)`` after the others."""
    if not allowed(ctx, group_op, RT.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_DENIED, error_message=None, responses=[])
    denied = [t for t in req.topics if not allowed(ctx, Op.READ, RT.TOPIC, t.topic_name)]
    req.topics = [t for t in req.topics if t not in denied]
    response = await handler(ctx, req)
    response.responses += [denied_topic(t) for t in denied]
    return response
