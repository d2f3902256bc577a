"""The broker's share groups (KIP-932): the membership coordinator (coordinator/share/group.py), the
share sessions and one SharePartition per (group, topic, partition) this broker leads
(coordinator/share/partition.py), driven by broker/apis/share_*.py.

Share-partition state is persisted as Kafka's SharePartition / SharePartitionManager do, through a
``Persister`` (coordinator/share/persister.py): ``broker.share_persister``
(broker/coordinator_runtime/share_persister.py: the share coordinator on ``__share_group_state``, in
process or broker to broker), so it survives restarts and leader changes. A shell built without
one (unit tests) uses an in-memory MemoryPersister (coordinator/share/memory_persister.py).

- Initialization (Kafka's ``maybeInitialize``): the first use of a share partition on its leader
  reads the state at the partition's leader epoch; a state never initialized is initialized at
  ``share.auto.offset.reset`` (the log start for ``earliest``, the high watermark for ``latest``)
  and read again. Concurrent ShareFetches wait for that one load. A failed load answers its error
  and leaves nothing behind (the next fetch tries again): FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH
  and NOT_LEADER_OR_FOLLOWER answer NOT_LEADER_OR_FOLLOWER (the client looks for the new leader);
  the coordinator's NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS answer COORDINATOR_NOT_AVAILABLE,
  as Kafka's ``fetchPersisterError`` maps them.
- Writes (WriteShareGroupState with the changed records and the start offset, one at a time per
  share partition): an acknowledgement is applied and answered only after its write succeeded; a
  failed write changes nothing in memory and answers its error (fenced: the share partition is
  dropped). Records released by an expired lock or a departed member change at once and are
  written in the background (``run``); a failed background write is not retried by itself, the
  next write carries the change (Kafka: "persisted eventually"). Acquiring writes nothing.
- Leadership: a broker that stops leading a partition, or leads it at a new leader epoch, drops
  its share partitions; the next leader reads the state.
- DeleteGroups deletes the persisted state of the group's share partitions this broker loaded.

Membership (groups, members, epochs, target and current assignments) is persisted as Kafka does:
each request's share-group records (types 10-14, coordinator/share/records.py) go to the group's
``__consumer_offsets`` partition through that partition's group coordinator and runtime
(``write_records``: GroupRecords, answered once committed), and the answer leaves only then.
The group shell routes the share-group records it replays when it loads a partition (start-up, or
leadership of it in a cluster) to the membership coordinator (``replaying``, ``partition_loading``,
``partition_loaded``), whose groups of a partition no longer led here are forgotten
(``partition_unloaded``). A request for a group whose partition is not coordinated here answers
NOT_COORDINATOR (loading: COORDINATOR_LOAD_IN_PROGRESS) before anything changes
(``coordinator_error``). A write that fails reloads the partition's coordinator from its log, and
with it the share groups (the group shell's ``become_leader``). Share sessions (the ShareFetch
sessions of a share partition's leader) are not persisted, as in Kafka.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
import trio

from coordinator.share.group import SHARE_GROUP_PROPERTIES, ShareGroupConfig, ShareGroupCoordinator
from coordinator.group.coordinator import GroupRecords
from coordinator.share.records import is_share_group_record
from coordinator.share.memory_persister import MemoryPersister
from coordinator.share.partition import INVALID_RECORD_STATE, RecordState, SharePartition, ShareSessions
from coordinator.share.persister import UNINITIALIZED_START_OFFSET, Persister, SharePartitionKey, ShareState
from protocol.errors import ErrorCode
from broker.metadata.group_configs import share_group_settings, share_start_offset

if TYPE_CHECKING:
    from broker.log.partition import Partition
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.share")

Key = tuple[str, uuid.UUID, int]     # (group, topic id, partition)

# the persister's errors as a share partition's leader answers them (Kafka's fetchPersisterError and
# SharePartitionManager: a fenced share partition is dropped and the client looks for the leader)
_FENCED = {ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER}
_COORDINATOR = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
_PASSED = {ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REQUEST}


def answer_for(persister_error: int) -> int:
    if persister_error in _FENCED:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if persister_error in _COORDINATOR:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if persister_error in _PASSED:
        return persister_error
    return ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass
class _Persisted:
    """What the leader keeps beside a share partition: the epochs its writes carry and the lock
    that orders its writes."""
    state_epoch: int
    leader_epoch: int
    lock: trio.Lock = field(default_factory=trio.Lock)


class ShareGroups:
    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        cfg = broker.config
        config = ShareGroupConfig.from_properties({k: cfg.get(k) for k in SHARE_GROUP_PROPERTIES})
        self.coordinator = ShareGroupCoordinator(config)
        self.sessions = ShareSessions()
        self.partitions: dict[Key, SharePartition] = {}
        self.meta: dict[Key, _Persisted] = {}
        self.loading: dict[Key, trio.Event] = {}
        self.load_errors: dict[Key, int] = {}
        self.loaded_by_group: dict[str, set[tuple[uuid.UUID, int]]] = {}
        self.lock_duration_ms = config.record_lock_duration_ms
        self.delivery_count_limit = config.delivery_count_limit
        self.max_record_locks = config.partition_max_record_locks
        self._fallback: MemoryPersister | None = None
        self._to_write: set[Key] = set()
        self._wake = trio.Event()

    @property
    def persister(self) -> Persister:
        """The broker's share persister, else the in-memory one (see the module docstring)."""
        persister = getattr(self.broker, "share_persister", None)
        if persister is not None:
            return persister
        if self._fallback is None:
            self._fallback = MemoryPersister()
        return self._fallback

    # -- membership records on __consumer_offsets ------------------------------------------------------
    def coordinator_error(self, group_id: str) -> int:
        """NOT_COORDINATOR when the group's ``__consumer_offsets`` partition is not coordinated here,
        COORDINATOR_LOAD_IN_PROGRESS while it loads, else NONE: checked before a request changes
        anything (the group coordinator of that partition writes the group's records). A broker
        without a group runtime (unit tests' fakes) keeps membership in memory only."""
        if getattr(self.broker, "groups", None) is None:
            return ErrorCode.NONE
        _, coord = self.broker.groups.coordinator_for(group_id)
        if coord.unloaded:
            return ErrorCode.NOT_COORDINATOR
        if coord.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    async def write_records(self, group_id: str = "") -> int:
        """Write the records the membership coordinator left (each group's to its partition, in
        order) and wait until they are committed; the first error code, else NONE. Called right
        after the coordinator ran, with no checkpoint between, so each partition's log order is
        the order of the changes. ``group_id``'s answer waits even when it wrote nothing: until
        what its partition has pending is committed (the runtime's "a read after all"), so no
        answer shows a change a failover could lose."""
        by_group: dict[str, list[Any]] = {group_id: []} if group_id else {}
        for gid, record in self.coordinator.take_records():    # one group's: every caller steps one group
            by_group.setdefault(gid, []).append(record)
        code = ErrorCode.NONE
        if getattr(self.broker, "groups", None) is None:    # see coordinator_error
            return code
        for gid, records in by_group.items():
            result = await self.broker.groups.call_for(gid, GroupRecords(gid, tuple(records)))
            if result and not code:
                log.warning("share group records not written", group=gid, error=ErrorCode(result).name)
                code = result
        return code

    def replaying(self, coord: Any) -> Any:
        """What the group shell replays a ``__consumer_offsets`` partition into: the share-group
        records to the membership coordinator, everything else to the partition's coordinator."""
        return _ReplayRouter(coord, self.coordinator)

    def _groups_of(self, partition: int) -> list[str]:
        groups = self.broker.groups
        return [gid for gid in self.coordinator.groups if groups.partition_for(gid) == partition]

    def partition_loading(self, partition: int) -> None:
        """The partition is about to be replayed (again): its groups come back from the log."""
        self.coordinator.forget(self._groups_of(partition))

    def partition_loaded(self, partition: int | None = None) -> None:
        """Replay done: the replayed members' sessions start now, with their groups' session
        timeouts (group configs)."""
        for gid in self._groups_of(partition) if partition is not None else list(self.coordinator.groups):
            settings = share_group_settings(self.broker, gid)
            self.coordinator.configure(gid, settings.session_timeout_ms, settings.heartbeat_interval_ms)
        self.coordinator.load_complete(self.broker.now_ms())

    def partition_unloaded(self, partition: int) -> None:
        """The partition is coordinated elsewhere now: its groups are that broker's."""
        self.coordinator.forget(self._groups_of(partition))

    # -- initialization ------------------------------------------------------------------------------
    async def load(self, group_id: str, topic_id: uuid.UUID, index: int, part: Partition) -> int:
        """Make sure the share partition is loaded at the partition's leader epoch (reading, or
        initializing, its persisted state); Kafka's error code when it cannot be."""
        key = (group_id, topic_id, index)
        epoch = _leader_epoch(part)
        while True:
            meta = self.meta.get(key)
            if key in self.partitions and meta is not None and meta.leader_epoch == epoch:
                return ErrorCode.NONE
            if key in self.partitions:       # led again at another epoch: read afresh
                self.drop(key)
            pending = self.loading.get(key)
            if pending is None:
                break
            await pending.wait()
            if key not in self.partitions:
                return self.load_errors.get(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        done = self.loading[key] = trio.Event()
        try:
            code = await self._read(key, part, epoch)
        finally:
            del self.loading[key]
            done.set()
        if code:
            self.load_errors[key] = code
        else:
            self.load_errors.pop(key, None)
        return code

    async def _read(self, key: Key, part: Partition, epoch: int) -> int:
        pkey = SharePartitionKey(*key)
        read = await self._call(self.persister.read_state(pkey, epoch))
        if isinstance(read, int):
            return answer_for(read)
        # never initialized: Kafka's share coordinator answers INVALID_REQUEST ("Read operation on
        # uninitialized share partition not allowed."); older ones a start offset of -1
        uninitialized = read.error_code in (ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) or (
            read.error_code == ErrorCode.NONE and read.state is not None
            and read.state.start_offset == UNINITIALIZED_START_OFFSET)
        if uninitialized:    # Kafka's share.auto.offset.reset
            start = share_start_offset(self.broker, key[0], part)   # the group's share.auto.offset.reset
            state_epoch = read.state.state_epoch if read.state is not None else 0
            code = await self._call(self.persister.initialize_state(pkey, state_epoch, start))
            if code:
                return answer_for(code)
            read = await self._call(self.persister.read_state(pkey, epoch))
            if isinstance(read, int):
                return answer_for(read)
        if read.error_code or read.state is None:
            return answer_for(read.error_code or ErrorCode.UNKNOWN_SERVER_ERROR)
        if not self._leads(part, epoch):        # leadership moved while reading
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        sp = SharePartition.from_state(read.state, self.lock_duration_ms, self.delivery_count_limit,
                                       self.max_record_locks)
        self.partitions[key] = sp
        self.meta[key] = _Persisted(read.state.state_epoch, epoch)
        self.loaded_by_group.setdefault(key[0], set()).add((key[1], key[2]))
        return ErrorCode.NONE

    @staticmethod
    async def _call(call: Any) -> Any:
        """A persister call; an exception (a peer broker unreachable) is COORDINATOR_NOT_AVAILABLE."""
        try:
            return await call
        except Exception as e:   # noqa: BLE001 (answered as Kafka answers an unavailable coordinator)
            log.warning("share persister call failed", error=repr(e))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def _leads(self, part: Partition, epoch: int) -> bool:
        replica = getattr(part, "replica", None)
        return (replica is None or replica.is_leader) and _leader_epoch(part) == epoch

    def partition(self, group_id: str, topic_id: uuid.UUID, index: int, part: Partition) -> SharePartition | None:
        """The loaded share partition (None when not loaded: see :meth:`load`), its start moved
        past the log start; released records (expired locks) are scheduled for writing."""
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        meta = self.meta.get(key)
        if sp is None or meta is None or meta.leader_epoch != _leader_epoch(part):
            return None
        start = sp.start_offset
        sp.move_start(part.log_start_offset)
        if sp.expire_locks(self.broker.now_ms()) or sp.start_offset != start:
            self.schedule_write(key)
        return sp

    def existing(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition | None:
        return self.partitions.get((group_id, topic_id, index))

    def drop(self, key: Key) -> None:
        """Forget a share partition (leadership moved, or its state was fenced)."""
        self.partitions.pop(key, None)
        self.meta.pop(key, None)
        self._to_write.discard(key)

    def on_role_change(self, part: Partition, is_leader: bool) -> None:
        """ReplicaManager role listener: a partition led elsewhere now, or led again, is read afresh."""
        topic = self.broker.logs.topics.get(part.topic)
        topic_id = getattr(topic, "topic_id", None)
        for key in [k for k in self.partitions if k[1] == topic_id and k[2] == part.index]:
            self.drop(key)

    # -- writes ------------------------------------------------------------------------------------------
    async def acknowledge(self, group_id: str, topic_id: uuid.UUID, index: int, member_id: str,
                          batches: list[tuple[int, int, list[int]]], now_ms: int, renew: bool = False) -> int:
        """Apply a member's acknowledgement batches once WriteShareGroupState has them (Kafka's
        acknowledge futures complete after the persister write); error code."""
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        meta = self.meta.get(key)
        if sp is None or meta is None:
            return INVALID_RECORD_STATE
        async with meta.lock:
            if self.partitions.get(key) is not sp:      # dropped while waiting for the lock
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            sp.expire_locks(now_ms)
            code, planned = sp.plan_acknowledge(member_id, batches, now_ms, renew=renew)
            if code:
                return code
            changed = sp.dirty_batches(planned)
            start = sp.start_after(planned)
            if changed or start != sp.persisted_start:
                code = await self._write(key, sp, meta, changed, start)
                if code:
                    return code
            sp.apply_planned(member_id, planned)
        return ErrorCode.NONE

    async def _write(self, key: Key, sp: SharePartition, meta: _Persisted, changed: list, start: int) -> int:
        """WriteShareGroupState of ``changed`` and the start offset (the caller holds the lock).
        Kafka's leader writes the start offset from before the change and moves it after; here the
        write carries the start the change moves to, so no second write follows an acknowledgement."""
        state = ShareState(state_epoch=meta.state_epoch, start_offset=start, leader_epoch=meta.leader_epoch,
                           batches=tuple(changed), delivery_complete_count=delivery_complete_count(sp, changed, start))
        code = await self._call(self.persister.write_state(SharePartitionKey(*key), state))
        if code:
            log.warning("share state write failed", group=key[0], topic_id=str(key[1]), partition=key[2], error=code)
            if code in _FENCED and self.partitions.get(key) is sp:
                self.drop(key)
            return answer_for(code)
        sp.mark_persisted(changed, start)
        return ErrorCode.NONE

    def schedule_write(self, key: Key) -> None:
        self._to_write.add(key)
        self._wake.set()

    async def run(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """Background writes of records released by expired locks and departed members."""
        task_status.started()
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            keys, self._to_write = self._to_write, set()
            for key in keys:
                await self.flush(key)

    async def flush(self, key: Key) -> int:
        """Write what changed in a share partition since its last write, if anything."""
        sp, meta = self.partitions.get(key), self.meta.get(key)
        if sp is None or meta is None:
            return ErrorCode.NONE
        async with meta.lock:
            if self.partitions.get(key) is not sp:
                return ErrorCode.NONE
            changed = sp.dirty_batches()
            if not changed and sp.start_offset == sp.persisted_start:
                return ErrorCode.NONE
            return await self._write(key, sp, meta, changed, sp.start_offset)

    def release(self, group_id: str, member_id: str) -> int:
        """A member's session closed or it left the group: its acquired records become available."""
        released = 0
        for key, sp in self.partitions.items():
            if key[0] == group_id and (n := sp.release_member(member_id)):
                released += n
                self.schedule_write(key)
        return released

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

    async def delete(self, group_id: str, now_ms: int) -> int:
        """DeleteGroups: an empty share group goes with its share-partition state, deleted from the
        persister too (DeleteShareGroupState; NON_EMPTY_GROUP while it has members, as Kafka).

        Which share partitions have state: Kafka's group coordinator keeps the group's initialized
        partitions (ShareGroupStatePartitionMetadata records). This one does not (the partitions are
        initialized by their leaders, on any broker of a cluster, and by AlterShareGroupOffsets), and
        an empty group has no subscription left to go by, so DeleteShareGroupState is sent for every
        partition of every topic (the ones loaded here first): the share coordinator answers it
        without writing anything where it holds no state. Cost: one persister call per partition
        of the cluster (broker-to-broker for keys whose ``__share_group_state`` partition is led
        elsewhere) per deleted share group; nothing when ``__share_group_state`` does not exist."""
        code = self.coordinator_error(group_id)
        if code:
            return code
        code = self.coordinator.delete(group_id, now_ms)
        written = await self.write_records(group_id)     # the group's tombstones (or an expired member's)
        self.settle_departures()
        if code or written:
            return code or written
        for key in [k for k in self.partitions if k[0] == group_id]:
            self.drop(key)
        loaded = sorted(self.loaded_by_group.pop(group_id, set()), key=lambda tp: (str(tp[0]), tp[1]))
        for topic_id, index in loaded + [tp for tp in self._all_partitions() if tp not in set(loaded)]:
            result = await self._call(self.persister.delete_state(SharePartitionKey(group_id, topic_id, index)))
            if result:
                log.warning("share state delete failed", group=group_id, topic_id=str(topic_id), partition=index,
                            error=result)
        return ErrorCode.NONE


    def _all_partitions(self) -> list[tuple[uuid.UUID, int]]:
        """(topic id, partition) of every partition of every non-internal topic, when share state can
        exist at all (``__share_group_state`` exists, or the in-memory persister of a shell-less broker)."""
        from broker.metadata import topic_catalog

        if getattr(self.broker, "topology", None) is None:      # a broker without metadata (unit tests' fakes)
            return []
        shell = getattr(self.broker, "share_coordinator", None)
        if shell is not None and topic_catalog.topic(self.broker, shell.topic) is None:
            return []
        topics = sorted(topic_catalog.all_topics(self.broker).values(), key=lambda t: t.name)
        return [(t.topic_id, p) for t in topics if not t.internal for p in range(t.partition_count)]


class _ReplayRouter:
    """A ``__consumer_offsets`` coordinator as replay sees it, with the share-group records
    diverted to the membership coordinator (see ShareGroups.replaying)."""
    __slots__ = ("coord", "shares")

    def __init__(self, coord: Any, shares: ShareGroupCoordinator) -> None:
        self.coord, self.shares = coord, shares

    def replay(self, key: bytes, value: bytes | None, producer_id: int | None = None) -> None:
        if is_share_group_record(key):
            self.shares.replay(key, value)
        else:
            self.coord.replay(key, value, producer_id=producer_id)

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        self.coord.replay_marker(producer_id, commit)


def _leader_epoch(part: Partition) -> int:
    return int(getattr(part, "leader_epoch", 0) or 0)


def delivery_complete_count(sp: SharePartition, changed: list, start: int) -> int:
    """KIP-1226's delivery-complete count a write carries (WriteShareGroupState v1): the in-flight
    records at or after ``start`` that are ACKNOWLEDGED or ARCHIVED once ``changed`` is applied, so
    that DescribeShareGroupOffsets' lag (high watermark - start offset - this) is exact."""
    states = {off: int(r.state) for off, r in sp.records.items() if off >= start}
    for b in changed:
        for off in range(max(b.first_offset, start), b.last_offset + 1):
            states[off] = b.delivery_state
    return sum(1 for st in states.values() if st in (int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED)))
