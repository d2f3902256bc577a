"""A follower's fetcher: one task per source broker (Kafka's ReplicaFetcherThread), copying
the partitions that broker leads into the local logs.

Each partition first truncates (Kafka's truncation by leader epoch): the follower asks the
leader, with OffsetForLeaderEpoch, where its own latest epoch ends in the leader's log and
cuts its log there, so a tail the leader never had (written by an old leader before it lost
leadership) is dropped before anything is fetched. Then it fetches in a loop — Fetch v15
with topic ids, the follower's id in ``ReplicaState`` (KIP-903), ``current_leader_epoch`` and
``last_fetched_epoch``, as Kafka's brokers send it, in an incremental fetch session (KIP-227,
fetch_session_handler.py: after the first full fetch only changed partitions are named and
only partitions with news are answered) — appends the
batches with the leader's offsets and takes the high watermark from the answer (never above
its own log end). The fetch long-polls at the leader for ``replica.fetch.wait.max.ms``; the
leader answers at once when it appends.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog
import trio

from protocol import records as rb
from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS
from protocol.errors import ErrorCode

from ..log.epoch_cache import UNDEFINED_EPOCH
from ..log.partition import Partition
from .client import BrokerConnection, BrokerConnectionError
from .fetch_session_handler import SESSION_ERRORS, FetchSessionHandler, PartitionData

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.replica")


class ReplicaManagerView(Protocol):
    """What a fetcher reads of the ReplicaManager (broker/replica/manager.py), which creates it."""

    @property
    def broker(self) -> BrokerServices: ...
    @property
    def node_id(self) -> int: ...

FETCH_VERSION = 15          # topic ids, ReplicaState, current and last-fetched leader epochs
OFFSET_FOR_EPOCH_VERSION = 4
MAX_TRUNCATION_ROUNDS = 16

# this API's classes only, not kafka-python's whole consumer family (start-up speed)
FetchRequest: Any = REQUESTS[ApiKey.FETCH]
OffsetForLeaderEpochRequest: Any = REQUESTS[ApiKey.OFFSET_FOR_LEADER_EPOCH]
FT = FetchRequest.FetchTopic
FP = FT.FetchPartition
OT = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
OP = OT.OffsetForLeaderPartition

_RETRY_LATER = (ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
                ErrorCode.UNKNOWN_SERVER_ERROR)


@dataclass
class FetchState:
    part: Partition
    leader_epoch: int
    truncating: bool = True
    retry_at: float = 0.0         # trio time before which the partition is left out (backoff)


class ReplicaFetcher:
    """Fetches the partitions ``leader_id`` leads for this broker."""

    def __init__(self, manager: ReplicaManagerView, leader_id: int, host: str, port: int) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.host, self.port = host, port
        self.partitions: dict[tuple[str, int], FetchState] = {}
        self.changed = trio.Event()
        self.cancel_scope = trio.CancelScope()
        self.session = FetchSessionHandler()     # the incremental fetch session with this leader
        cfg = manager.broker.config
        self.wait_ms = int(cfg["replica.fetch.wait.max.ms"])
        self.min_bytes = int(cfg["replica.fetch.min.bytes"])
        self.max_bytes = int(cfg["replica.fetch.max.bytes"])
        self.response_max_bytes = int(cfg["replica.fetch.response.max.bytes"])
        self.backoff_s = int(cfg["replica.fetch.backoff.ms"]) / 1000
        self.socket_timeout_s = int(cfg["replica.socket.timeout.ms"]) / 1000

    # -- assignment (called by the replica manager, synchronously) --------------------------
    def add(self, part: Partition, leader_epoch: int) -> None:
        self.partitions[(part.topic, part.index)] = FetchState(part, leader_epoch)
        self._wake()

    def remove(self, topic: str, index: int) -> None:
        if self.partitions.pop((topic, index), None) is not None:
            self._wake()

    def _wake(self) -> None:
        self.changed.set()

    # -- the loop -------------------------------------------------------------------------
    async def run(self) -> None:
        node = self.manager.node_id
        conn = BrokerConnection(self.host, self.port, f"samsa-replica-fetcher-{node}-{self.leader_id}",
                                self.socket_timeout_s)
        with self.cancel_scope:
            try:
                while True:
                    now = trio.current_time()
                    ready = {k: s for k, s in self.partitions.items() if s.retry_at <= now}
                    if not ready:
                        self.changed = trio.Event()
                        later = [s.retry_at for s in self.partitions.values()]
                        with trio.move_on_after(min(later) - now if later else float("inf")):
                            await self.changed.wait()
                        continue
                    try:
                        truncating = {k: s for k, s in ready.items() if s.truncating}
                        if truncating:
                            await self._truncate(conn, truncating)
                        fetching = {k: s for k, s in ready.items()
                                    if not s.truncating and self.partitions.get(k) is s}
                        if fetching:
                            await self._fetch(conn, fetching)
                    except BrokerConnectionError as exc:
                        log.info("replica fetch failed; retrying", leader=self.leader_id, error=str(exc))
                        await trio.sleep(self.backoff_s)
            finally:
                await conn.close()

    def _back_off(self, key: tuple[str, int], state: FetchState, code: int) -> None:
        state.retry_at = trio.current_time() + self.backoff_s
        log.info("replica fetch error; backing off", partition=f"{key[0]}-{key[1]}", leader=self.leader_id,
                 error=ErrorCode(code).name if code in ErrorCode._value2member_map_ else code)

    async def _truncate(self, conn: BrokerConnection, states: dict[tuple[str, int], FetchState]) -> None:
        """Truncation by leader epoch, repeated while the leader's answer names an epoch this
        follower does not hold (each round moves to an older epoch)."""
        pending = dict(states)
        for _ in range(MAX_TRUNCATION_ROUNDS):
            asking = {k: s for k, s in pending.items() if s.part.epochs.latest_epoch != UNDEFINED_EPOCH}
            for k in [k for k in pending if k not in asking]:
                pending.pop(k).truncating = False     # an empty log (or no epochs): nothing to cut
            if not asking:
                return
            by_topic: dict[str, list] = {}
            for (topic, index), s in asking.items():
                by_topic.setdefault(topic, []).append(
                    OP(partition=index, current_leader_epoch=s.leader_epoch, leader_epoch=s.part.epochs.latest_epoch))
            req = OffsetForLeaderEpochRequest(replica_id=self.manager.node_id,
                                              topics=[OT(topic=t, partitions=ps) for t, ps in by_topic.items()])
            resp = await conn.call(req, OFFSET_FOR_EPOCH_VERSION)
            for rt in resp.topics:
                for rp in rt.partitions:
                    key = (rt.topic, rp.partition)
                    state = pending.get(key)
                    if state is None or self.partitions.get(key) is not state:
                        pending.pop(key, None)
                        continue
                    if rp.error_code:
                        pending.pop(key)
                        self._back_off(key, state, rp.error_code)
                        continue
                    if state.part.cleaning:      # the cleaner is rewriting segments: truncate after it
                        pending.pop(key)
                        state.retry_at = trio.current_time() + self.backoff_s
                        continue
                    done = self._truncate_one(state.part, rp.leader_epoch, rp.end_offset)
                    if done:
                        pending.pop(key)
                        state.truncating = False
            if not pending:
                return

    def _truncate_one(self, part: Partition, leader_epoch: int, leader_end: int) -> bool:
        """Kafka's getOffsetTruncationState: cut at the smaller of the two ends of the epoch
        both logs share; True when done, False to ask again about an older epoch."""
        leo = part.log_end_offset
        if leader_epoch == UNDEFINED_EPOCH or leader_end < 0:
            # the leader knows nothing that old: keep only what is known committed
            target = min(part.high_watermark, leo)
            done = True
        else:
            epoch, end = part.epochs.end_offset_for(leader_epoch, leo)
            if epoch == UNDEFINED_EPOCH:
                first = part.epochs.entries[0][1] if part.epochs.entries else leo
                target, done = min(leader_end, first), True
            else:
                target, done = min(leader_end, end), epoch == leader_epoch
        if target < leo:
            log.info("truncating follower log by leader epoch", partition=part.name, from_offset=leo,
                     to_offset=target, leader_epoch=leader_epoch, leader_end_offset=leader_end)
            part.truncate_to(target)
        return done or part.epochs.latest_epoch == UNDEFINED_EPOCH

    async def _fetch(self, conn: BrokerConnection, states: dict[tuple[str, int], FetchState]) -> None:
        wanted: list[PartitionData] = []
        names: dict[Any, str] = {}
        logs = self.manager.broker.logs
        for (topic, index), s in states.items():
            part = s.part
            local = logs.topics.get(topic)
            if local is None:
                continue
            names[local.topic_id] = topic
            leo = part.log_end_offset
            last_epoch = part.epochs.epoch_for_offset(leo - 1) if leo > 0 else -1
            wanted.append(PartitionData(local.topic_id, index, leo, part.log_start_offset, self.max_bytes,
                                        s.leader_epoch, last_epoch))
        if not wanted:
            return
        # an incremental fetch (KIP-227) names only the partitions whose fetch state changed
        data = self.session.build(wanted)
        by_topic: dict[Any, list] = {}
        for p in data.to_send:
            by_topic.setdefault(p.topic_id, []).append(
                FP(partition=p.partition, current_leader_epoch=p.current_leader_epoch, fetch_offset=p.fetch_offset,
                   last_fetched_epoch=p.last_fetched_epoch, log_start_offset=p.log_start_offset,
                   partition_max_bytes=p.partition_max_bytes))
        forgotten: dict[Any, list[int]] = {}
        for topic_id, index in data.to_forget:
            forgotten.setdefault(topic_id, []).append(index)
        req = FetchRequest(replica_state=FetchRequest.ReplicaState(replica_id=self.manager.node_id, replica_epoch=-1),
                           max_wait_ms=self.wait_ms, min_bytes=self.min_bytes,
                           max_bytes=self.response_max_bytes, isolation_level=0, session_id=data.session_id,
                           session_epoch=data.epoch,
                           topics=[FT(topic_id=t, partitions=ps) for t, ps in by_topic.items()],
                           forgotten_topics_data=[FetchRequest.ForgottenTopic(topic_id=t, partitions=ps)
                                                  for t, ps in forgotten.items()],
                           rack_id="")
        try:
            resp = await conn.call(req, FETCH_VERSION, timeout_s=self.socket_timeout_s + self.wait_ms / 1000)
        except BrokerConnectionError:
            self.session.handle_error()
            raise
        answered = {(rt.topic_id, rp.partition_index) for rt in resp.responses for rp in rt.partitions}
        if not self.session.handle_response(resp.error_code, resp.session_id, answered):
            if resp.error_code in SESSION_ERRORS or not resp.error_code:
                log.info("fetch session reset; the next fetch is full", leader=self.leader_id,
                         session_id=data.session_id, epoch=data.epoch, error=ErrorCode(resp.error_code).name)
                return
            raise BrokerConnectionError(f"fetch answered error {resp.error_code}")
        now_ms = self.manager.broker.now_ms()
        moved = False
        for rt in resp.responses:
            for rp in rt.partitions:
                key = (names.get(rt.topic_id, ""), rp.partition_index)
                state = states.get(key)
                if state is None or self.partitions.get(key) is not state:
                    continue           # reassigned while the fetch was in flight
                part = state.part
                if rp.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    if part.log_end_offset < rp.log_start_offset:
                        part.truncate_fully_and_start_at(rp.log_start_offset)
                    else:
                        state.truncating = True
                        self._back_off(key, state, rp.error_code)
                    continue
                if rp.error_code:
                    self._back_off(key, state, rp.error_code)
                    continue
                if rp.records:
                    try:
                        part.append_as_follower(rp.records, now_ms)
                    except rb.InvalidBatch as exc:
                        log.warning("fetched records do not continue the log; truncating again",
                                    partition=part.name, error=str(exc))
                        state.truncating = True
                        continue
                    moved = True
                leo = part.log_end_offset
                hw = min(rp.high_watermark, leo)
                if part.hw is None or hw != part.hw:
                    part.hw = hw
                if 0 <= rp.log_start_offset <= leo and rp.log_start_offset > part.log_start_offset:
                    part.delete_records_before(rp.log_start_offset)
        if moved:
            self.manager.broker.appends.notify()
