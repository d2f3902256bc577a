"""A :class:`~coordinator.share.persister.Persister` that keeps share-partition state in memory, with
the share coordinator's rules (Kafka's ShareCoordinatorShard): a write's batches are merged over
the stored ones offset by offset and those below the new start offset dropped; a read by a leader
records its leader epoch and fences older leaders (FENCED_LEADER_EPOCH), a write with an older
state epoch is FENCED_STATE_EPOCH; reading or writing a partition never initialized answers
INVALID_REQUEST (Kafka's "Read operation on uninitialized share partition not allowed."), its
summary a start offset of -1.

The broker's own is ``broker.share_persister`` (the share coordinator on ``__share_group_state``);
this one serves a ShareGroups shell built without it (unit tests) and tests that inject persister
failures (``fail``) or look at what was written (``states``, ``calls``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.share.persister import (
    PersisterStateBatch, ReadStateResult, SharePartitionKey, ShareState, StateSummary,
)
from protocol.errors import ErrorCode


@dataclass
class _Stored:
    state_epoch: int
    start_offset: int
    leader_epoch: int = -1
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)   # offset -> (state, delivery count)


class MemoryPersister:
    def __init__(self) -> None:
        self.states: dict[SharePartitionKey, _Stored] = {}
        self.fail: dict[str, int] = {}      # method name -> the error code it answers next (tests)
        self.calls: list[tuple[str, SharePartitionKey]] = []

    def _failure(self, method: str, key: SharePartitionKey) -> int:
        self.calls.append((method, key))
        return self.fail.pop(method, ErrorCode.NONE)

    async def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> int:
        if code := self._failure("initialize_state", key):
            return code
        old = self.states.get(key)
        if old is not None and state_epoch < old.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        self.states[key] = _Stored(state_epoch, start_offset, old.leader_epoch if old else -1)
        return ErrorCode.NONE

    async def read_state(self, key: SharePartitionKey, leader_epoch: int) -> ReadStateResult:
        if code := self._failure("read_state", key):
            return ReadStateResult(code)
        s = self.states.get(key)
        if s is None:
            return ReadStateResult(ErrorCode.INVALID_REQUEST, None,
                                   "Read operation on uninitialized share partition not allowed.")
        if leader_epoch < s.leader_epoch:
            return ReadStateResult(ErrorCode.FENCED_LEADER_EPOCH)
        s.leader_epoch = leader_epoch
        return ReadStateResult(ErrorCode.NONE, ShareState(s.state_epoch, s.start_offset, s.leader_epoch,
                                                          tuple(_runs(s.offsets))))

    async def write_state(self, key: SharePartitionKey, state: ShareState) -> int:
        if code := self._failure("write_state", key):
            return code
        s = self.states.get(key)
        if s is None:
            return ErrorCode.INVALID_REQUEST
        if state.leader_epoch < s.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if state.state_epoch < s.state_epoch:
            return ErrorCode.FENCED_STATE_EPOCH
        s.leader_epoch = max(s.leader_epoch, state.leader_epoch)
        for b in state.batches:
            for off in range(b.first_offset, b.last_offset + 1):
                s.offsets[off] = (b.delivery_state, b.delivery_count)
        if state.start_offset >= 0:
            s.start_offset = state.start_offset
        for off in [off for off in s.offsets if off < s.start_offset]:
            del s.offsets[off]
        return ErrorCode.NONE

    async def delete_state(self, key: SharePartitionKey) -> int:
        if code := self._failure("delete_state", key):
            return code
        self.states.pop(key, None)
        return ErrorCode.NONE

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int = -1) -> StateSummary:
        if code := self._failure("read_summary", key):
            return StateSummary(code)
        s = self.states.get(key)
        if s is None:
            return StateSummary(ErrorCode.NONE)
        return StateSummary(ErrorCode.NONE, s.state_epoch, s.leader_epoch, s.start_offset)


def _runs(offsets: dict[int, tuple[int, int]]) -> list[PersisterStateBatch]:
    out: list[PersisterStateBatch] = []
    for off in sorted(offsets):
        state, count = offsets[off]
        last = out[-1] if out else None
        if last is not None and last.last_offset == off - 1 and (last.delivery_state, last.delivery_count) == (state, count):
            out[-1] = PersisterStateBatch(last.first_offset, off, state, count)
        else:
            out.append(PersisterStateBatch(off, off, state, count))
    return out
