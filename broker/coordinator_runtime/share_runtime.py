"""The broker's share groups (KIP-932): the membership coordinator (coordinator/share/group.py), the
share sessions and one SharePartition per (group, topic, partition) (coordinator/share/partition.py),
all in memory, driven by broker/apis/share_groups.py.

Everything here is synchronous and runs on the trio thread between awaits, so the handlers see
consistent state. Not persisted (Kafka's share coordinator and ``__share_group_state`` are not
implemented): a restart forgets the groups, their in-flight records and delivery counts; the
share partitions then start again at ``share.auto.offset.reset`` (default from
``samsa.share.auto.offset.reset``, ``latest`` as Kafka's group config).
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from coordinator.share.group import SHARE_GROUP_PROPERTIES, ShareGroupConfig, ShareGroupCoordinator
from coordinator.share.partition import SharePartition, ShareSessions
from broker.metadata.group_configs import share_start_offset

if TYPE_CHECKING:
    from broker.log.partition import Partition
    from broker.common.services import BrokerServices


class ShareGroups:
    def __init__(self, broker: BrokerServices) -> None:
        cfg = broker.config
        self.broker = broker
        config = ShareGroupConfig.from_properties({k: cfg.get(k) for k in SHARE_GROUP_PROPERTIES})
        self.coordinator = ShareGroupCoordinator(config)
        self.sessions = ShareSessions()
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self.lock_duration_ms = config.record_lock_duration_ms
        self.delivery_count_limit = config.delivery_count_limit
        self.max_record_locks = config.partition_max_record_locks
        self.auto_offset_reset = str(cfg.get("samsa.share.auto.offset.reset") or "latest").lower()

    def partition(self, group_id: str, topic_id: uuid.UUID, index: int, part: Partition) -> SharePartition:
        """The group's state for a partition, initialised at ``share.auto.offset.reset`` on first use."""
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        if sp is None:
            start = share_start_offset(self.broker, group_id, part)   # share.auto.offset.reset
            sp = self.partitions[key] = SharePartition(start, self.lock_duration_ms, self.delivery_count_limit,
                                                       self.max_record_locks)
        sp.move_start(part.log_start_offset)
        return sp

    def existing(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition | None:
        return self.partitions.get((group_id, topic_id, index))

    def release(self, group_id: str, member_id: str) -> int:
        """A member's session closed or it left the group: its acquired records become available."""
        return sum(sp.release_member(member_id) for (g, _, _), sp in self.partitions.items() if g == group_id)

    def settle_departures(self) -> None:
        """After the coordinator ran: members that left or timed out lose their share sessions
        and their acquired records go back."""
        for group_id, member_id in self.coordinator.take_departed():
            self.sessions.drop_member(group_id, member_id)
            self.release(group_id, member_id)

    def listed(self, states: list[str] | None, types: list[str] | None) -> list[tuple[str, str]]:
        """(group id, state) for ListGroups, filtered as Kafka does (case-insensitive)."""
        if types and "share" not in {t.lower() for t in types}:
            return []
        wanted = {s.lower() for s in states or ()}
        return [(gid, g.state) for gid, g in sorted(self.coordinator.groups.items())
                if not wanted or g.state.lower() in wanted]

    def has(self, group_id: str) -> bool:
        return group_id in self.coordinator.groups

    def delete(self, group_id: str, now_ms: int) -> int:
        """DeleteGroups: an empty share group goes with its share-partition state (NON_EMPTY_GROUP
        while it has members, as Kafka)."""
        code = self.coordinator.delete(group_id, now_ms)
        self.settle_departures()
        if code == 0:
            for key in [k for k in self.partitions if k[0] == group_id]:
                del self.partitions[key]
        return code
