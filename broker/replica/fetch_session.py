"""The leader's incremental fetch sessions (KIP-227; Kafka's FetchSession.scala), for
followers' fetches.

Without sessions every follower Fetch names every partition it follows from this leader and
every answer carries every one of them: with the internal topics (50 partitions each) that is
dozens of partitions per round trip, and kafka-python's message classes take milliseconds to
encode and decode each side. With a session the follower sends a full fetch once (session id
0, epoch 0); the leader keeps each partition's fetch state (:class:`CachedPartition`) and
answers with a session id; later *incremental* requests (that id, epochs 1, 2, …) name only
the partitions whose fetch state changed, plus the ones to forget, and the answers carry only
the partitions with records, an error, or a high watermark / last stable offset / log start
offset the follower has not been told.

A partition that an incremental request does not name still fetches at its cached offset:
the handler feeds that offset to the replica manager like any other (so an idle partition's
follower stays caught up, in the ISR) and long-polls on it.

Rules, as Kafka's FetchManager.newContext:
- epoch 0 (full): the session named by a non-zero id is closed; a new one is created when
  the answer goes out, if the cache has room (else session id 0: sessionless);
- epoch -1 (final): the named session is closed; the fetch is sessionless;
- another epoch: FETCH_SESSION_ID_NOT_FOUND for an unknown id, INVALID_FETCH_SESSION_EPOCH
  for an epoch other than the session's next one (FETCH_SESSION_TOPIC_ID_ERROR when a v13+
  request uses a session created by names or the reverse); otherwise the request's
  partitions are added or updated, the forgotten ones removed, the epoch moves on; a session
  left with no partitions is closed and the fetch is sessionless.
The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions; when full a
new one evicts the least recently used session idle longer than
``min.incremental.fetch.session.eviction.ms``, else the smallest evictable one (Kafka's
``tryEvict``: privileged sessions — followers' — are evictable once older than that time).

Pure: time is passed in; no IO.
"""
from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 0x7FFFFFFF

# a partition of a session: (topic id, or name before Fetch v13; partition index)
PartitionKey = tuple[Any, int]


def next_epoch(epoch: int) -> int:
    """Kafka's FetchMetadata.nextEpoch: 1, 2, … wrapping to 1 after INT32_MAX."""
    if epoch < 0:
        return FINAL_EPOCH          # the final epoch stays final
    return 1 if epoch == INT32_MAX else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """One partition's fetch state in a session: the follower's last request parameters and
    what the last answer told it (to leave unchanged partitions out of the next one)."""
    topic: str | None                # the name (requests before v13 name topics)
    topic_id: Any                    # the id (v13+), else None
    partition: int
    fetch_offset: int
    log_start_offset: int            # the follower's own log start offset
    partition_max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int
    high_watermark: int = -1         # as last sent; -1 until then (a new partition is always sent)
    last_stable_offset: int = -1
    local_log_start_offset: int = -1  # this broker's log start offset, as last sent

    @classmethod
    def of(cls, topic: str | None, topic_id: Any, fp: Any) -> CachedPartition:
        return cls(topic, topic_id, fp.partition, fp.fetch_offset, getattr(fp, "log_start_offset", -1),
                   fp.partition_max_bytes, getattr(fp, "current_leader_epoch", -1),
                   getattr(fp, "last_fetched_epoch", -1))

    def update_request_params(self, other: CachedPartition) -> None:
        """Kafka's updateRequestParams: the follower's new fetch state (what it was told stays)."""
        self.fetch_offset = other.fetch_offset
        self.log_start_offset = other.log_start_offset
        self.partition_max_bytes = other.partition_max_bytes
        self.current_leader_epoch = other.current_leader_epoch
        self.last_fetched_epoch = other.last_fetched_epoch

    def must_respond(self, has_records: bool, high_watermark: int, last_stable_offset: int,
                     log_start_offset: int, error_code: int, update: bool) -> bool:
        """Kafka's maybeUpdateResponseData: whether the partition's answer goes into an
        incremental response (records, an error, or an offset the follower has not been told);
        with ``update`` the cached values become what this answer tells."""
        respond = has_records
        if self.high_watermark != high_watermark:
            respond = True
            if update:
                self.high_watermark = high_watermark
        if self.last_stable_offset != last_stable_offset:
            respond = True
            if update:
                self.last_stable_offset = last_stable_offset
        if self.local_log_start_offset != log_start_offset:
            respond = True
            if update:
                self.local_log_start_offset = log_start_offset
        if error_code:
            # errors always go out; forgetting the HW sends the partition again once it clears
            respond = True
            if update:
                self.high_watermark = -1
        return respond


@dataclass
class FetchSession:
    id: int
    privileged: bool                 # a follower's (Kafka: evictable only when stale or old)
    uses_topic_ids: bool
    replica_id: int
    creation_ms: int
    last_used_ms: int
    epoch: int                       # the epoch the next incremental request must carry
    partitions: OrderedDict[PartitionKey, CachedPartition] = field(default_factory=OrderedDict)

    def update(self, requested: list[CachedPartition], forgotten: list[PartitionKey]) -> None:
        """An incremental request: add or update its partitions, remove the forgotten ones."""
        for cp in requested:
            key = (cp.topic_id if self.uses_topic_ids else cp.topic, cp.partition)
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = cp
            else:
                cached.update_request_params(cp)
        for key in forgotten:
            self.partitions.pop(key, None)

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, len(self.partitions), self.id)


@dataclass
class FetchContext:
    """What the Fetch handler needs for one request: the partitions to fetch (the request's, or
    all of the session's), and how to build the answer."""
    partitions: list[CachedPartition]
    session: FetchSession | None = None       # an incremental fetch's session
    full: bool = False                        # a full fetch that may create a session
    error: int = ErrorCode.NONE               # a session error: answer it, fetch nothing
    expected_epoch: int = 0                   # an incremental fetch's session epoch once it began

    @property
    def incremental(self) -> bool:
        return self.session is not None


class FetchSessionCache:
    """Kafka's FetchSessionCache + FetchManager.newContext (one per broker, beside the replica
    manager)."""

    def __init__(self, max_entries: int = 1000, eviction_ms: int = 120_000,
                 rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def new_context(self, session_id: int, epoch: int, requested: list[CachedPartition],
                    forgotten: list[PartitionKey], uses_topic_ids: bool, replica_id: int,
                    now_ms: int) -> FetchContext:
        """The context of one fetch request (Kafka's FetchManager.newContext)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)           # a full fetch closes the session it names
            return FetchContext(requested, full=epoch == INITIAL_EPOCH)
        session = self.sessions.get(session_id)
        if session is None or session.replica_id != replica_id:
            return FetchContext([], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext([], error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext([], error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(requested, forgotten)
        if not session.partitions:
            self.remove(session.id)               # nothing left: closed, sessionless
            return FetchContext(requested)
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        return FetchContext(list(session.partitions.values()), session=session, expected_epoch=session.epoch)

    def maybe_create_session(self, partitions: list[CachedPartition], uses_topic_ids: bool, replica_id: int,
                             privileged: bool, now_ms: int) -> int:
        """After a full fetch's answer (whose values ``partitions`` now cache): a new session's
        id, or INVALID_SESSION_ID when the cache is full and nothing may be evicted."""
        if len(self.sessions) >= self.max_entries and not self._try_evict(privileged, len(partitions), now_ms):
            return INVALID_SESSION_ID
        session_id = self._new_session_id()
        session = FetchSession(session_id, privileged, uses_topic_ids, replica_id, now_ms, now_ms,
                               next_epoch(INITIAL_EPOCH))
        for cp in partitions:
            session.partitions[(cp.topic_id if uses_topic_ids else cp.topic, cp.partition)] = cp
        self.sessions[session_id] = session
        return session_id

    def _new_session_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, INT32_MAX - 1)
            if session_id not in self.sessions:
                return session_id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's tryEvict: the least recently used session if it is stale, else the smallest
        evictable one (by (privileged, size, id)) if the new one outranks it."""
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - lru.last_used_ms > self.eviction_ms:
            self._evict(lru)
            return True
        # any session may go once older than the eviction time; an unprivileged one at any age,
        # for a privileged newcomer
        candidates = [s for s in self.sessions.values()
                      if now_ms - s.creation_ms > self.eviction_ms or (privileged and not s.privileged)]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession.evictable_key)
        if (privileged, size, 0) < victim.evictable_key():
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.sessions.pop(session.id, None)
        self.evictions += 1
