"""A follower's side of an incremental fetch session (KIP-227; Kafka's FetchSessionHandler),
one per leader it fetches from.

The first fetch is full (session id 0, epoch 0) and names every partition; when the leader
answers with a session id, the following fetches are incremental (that id, epochs 1, 2, …):
they name only the partitions added to the session or whose fetch state (fetch offset, log
start offset, leader epochs, max bytes) changed since it was last sent, and list the ones
removed as forgotten. The leader keeps fetching the others at their last offsets and answers
only the partitions with something new, so a partition missing from an incremental answer has
nothing new: its high watermark stays as it is.

A session error (FETCH_SESSION_ID_NOT_FOUND: the leader evicted it or restarted;
INVALID_FETCH_SESSION_EPOCH …), a broken connection or an answer that does not fit the
session sends the next fetch full again (closing the old session where the leader may still
hold it). Pure: no IO.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

from .fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                  ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)

# (topic id, partition index)
PartitionKey = tuple[Any, int]


@dataclass(frozen=True, slots=True)
class PartitionData:
    """What a follower's fetch says about one partition (Kafka's FetchRequest.PartitionData):
    a change to any field sends the partition in the next incremental fetch."""
    topic_id: Any
    partition: int
    fetch_offset: int
    log_start_offset: int
    partition_max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int

    @property
    def key(self) -> PartitionKey:
        return (self.topic_id, self.partition)


@dataclass
class FetchRequestData:
    """One fetch to send: its session id and epoch, the partitions to name, the ones to forget."""
    session_id: int
    epoch: int
    to_send: list[PartitionData]
    to_forget: list[PartitionKey]
    session_partitions: dict[PartitionKey, PartitionData] = field(default_factory=dict)

    @property
    def full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler:
    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        # the partitions and their fetch state as the leader's session has them (once answered)
        self.session_partitions: dict[PartitionKey, PartitionData] = {}

    @property
    def full_next(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def build(self, wanted: list[PartitionData]) -> FetchRequestData:
        """The next fetch for these partitions (in this order, as the session keeps them)."""
        if self.full_next:
            self.session_partitions = {p.key: p for p in wanted}
            return FetchRequestData(self.session_id, self.epoch, list(wanted), [], self.session_partitions)
        nxt = {p.key: p for p in wanted}
        to_send: list[PartitionData] = []
        to_forget: list[PartitionKey] = []
        for key, prev in list(self.session_partitions.items()):
            cur = nxt.get(key)
            if cur is None:
                del self.session_partitions[key]
                to_forget.append(key)
            elif cur != prev:
                self.session_partitions[key] = cur
                to_send.append(cur)
        for key, cur in nxt.items():
            if key not in self.session_partitions:
                self.session_partitions[key] = cur
                to_send.append(cur)
        return FetchRequestData(self.session_id, self.epoch, to_send, to_forget, self.session_partitions)

    def handle_response(self, error_code: int, session_id: int, answered: set[PartitionKey]) -> bool:
        """Move the session on after an answer (Kafka's handleResponse); False when the answer's
        partitions must not be used (a session error or an answer that does not fit)."""
        if error_code:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
            else:
                self.epoch = INITIAL_EPOCH          # full again, closing the session the leader has
            return False
        if self.full_next:
            if answered != set(self.session_partitions):
                # a full answer names exactly the partitions fetched
                self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
                return False
            if session_id == INVALID_SESSION_ID:
                self.epoch = INITIAL_EPOCH          # sessionless: every fetch full
            else:
                self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
            return True
        if not all(key in self.session_partitions for key in answered):   # (few: only the news)
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH   # the leader closed it
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The fetch got no answer (a broken connection, a timeout): the leader may or may not
        have moved the session on, so the next fetch is full, closing the old session."""
        self.epoch = INITIAL_EPOCH
