"""The contract between a share partition's leader and the share coordinator (KIP-932's
``Persister``, Kafka's ``server-common/.../share/persister/Persister.java``): what a leader reads
when it starts leading a share partition and what it writes after every state change, so that
in-flight state survives restarts and leader changes.

The leader (``broker/coordinator_runtime/share_runtime.py``) talks to a :class:`Persister`; the
share coordinator (``coordinator/share_state/``, on ``__share_group_state``) serves it — in process
when this broker leads the state partition, else broker to broker with InitializeShareGroupState /
ReadShareGroupState / WriteShareGroupState / DeleteShareGroupState / ReadShareGroupStateSummary.
Kafka's requests batch many partitions; this interface is per share partition (an implementation
may batch underneath).

Error codes are Kafka's (``protocol.errors.ErrorCode``): e.g. FENCED_STATE_EPOCH,
FENCED_LEADER_EPOCH, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
INVALID_REQUEST (a read or write of state never initialized: initialize it first, as Kafka).
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Protocol

UNINITIALIZED_START_OFFSET = -1


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """Kafka's ``SharePartitionKey``: the coordinator key is ``"<group>:<topic id>:<partition>"``
    (FindCoordinator key type SHARE = 2)."""
    group_id: str
    topic_id: uuid.UUID
    partition: int

    @property
    def coordinator_key(self) -> str:
        """Kafka's ``asCoordinatorKey``: the topic id as Kafka prints a Uuid (URL-safe base64
        without padding), which is what places the state on a ``__share_group_state`` partition."""
        topic = base64.urlsafe_b64encode(self.topic_id.bytes).decode().rstrip("=")
        return f"{self.group_id}:{topic}:{self.partition}"


@dataclass(frozen=True, slots=True)
class PersisterStateBatch:
    """A run of offsets with one delivery state and count (Kafka's ``PersisterStateBatch``).
    ``delivery_state`` is RecordState's value: 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED (acquired
    records are written as AVAILABLE: a lock does not survive its leader)."""
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareState:
    """What ReadShareGroupState answers / WriteShareGroupState carries for one partition."""
    state_epoch: int
    start_offset: int                     # UNINITIALIZED_START_OFFSET when never initialized
    leader_epoch: int = -1
    batches: tuple[PersisterStateBatch, ...] = ()
    delivery_complete_count: int = -1     # v1 (Kafka 4.2); -1 when unknown


@dataclass(frozen=True, slots=True)
class ReadStateResult:
    error_code: int
    state: ShareState | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class StateSummary:
    """ReadShareGroupStateSummary: enough for DescribeShareGroupOffsets and lag."""
    error_code: int
    state_epoch: int = -1
    leader_epoch: int = -1
    start_offset: int = UNINITIALIZED_START_OFFSET
    delivery_complete_count: int = -1
    error_message: str | None = None


class Persister(Protocol):
    """Where share-partition state lives. Every method answers only once what it wrote is
    committed (the coordinator runtime's rule) and returns Kafka's error code on failure."""

    async def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> int:
        """InitializeShareGroupState: a fresh state at ``start_offset`` (also AlterShareGroupOffsets,
        with a higher state epoch)."""
        ...

    async def read_state(self, key: SharePartitionKey, leader_epoch: int) -> ReadStateResult:
        """ReadShareGroupState by a (new) leader at ``leader_epoch``; fences older leaders."""
        ...

    async def write_state(self, key: SharePartitionKey, state: ShareState) -> int:
        """WriteShareGroupState: the batches that changed since the last write (merged by the
        coordinator) and the new start offset."""
        ...

    async def delete_state(self, key: SharePartitionKey) -> int:
        """DeleteShareGroupState (DeleteGroups, DeleteShareGroupOffsets)."""
        ...

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int = -1) -> StateSummary:
        """ReadShareGroupStateSummary."""
        ...
