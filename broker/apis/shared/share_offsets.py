"""What the share admin APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets) share, as Kafka's GroupCoordinatorService does them: the share group's
state lives with the share coordinator, reached through the broker's Persister
(``broker.share_persister``: ReadShareGroupStateSummary, InitializeShareGroupState with a higher
state epoch, DeleteShareGroupState); altering or deleting needs the group to exist without members.
"""
from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode

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
