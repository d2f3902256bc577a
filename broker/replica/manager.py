"""The replica manager (Kafka's ReplicaManager), beside the log manager: applies each new
cluster metadata image to the partitions this broker hosts — make-leader or make-follower
when a partition's leader or leader epoch changes — runs one fetcher per source broker for
the partitions it follows, keeps the leader-side follower state (LEO, last caught-up time),
moves the high watermark, shrinks and expands the ISR through the metadata store
(``alter_partition`` with the partition epoch), and answers acks=all produces once the ISR
has their records.

A broker with no metadata store (the single node) never receives an image: every
``Partition.replica`` stays None, the high watermark is the log end, and neither Produce nor
Fetch does any replication work. In a cluster a partition with a single replica has no
followers and likewise pays nothing.

The image is read through a few attributes (``topics`` → name → ``topic_id``, ``configs``,
``partitions`` → index → registration with ``replicas``, ``isr``, ``leader``,
``leader_epoch``, ``partition_epoch``; ``brokers`` → node id → ``endpoints``), see
:func:`topics_of` and :func:`endpoint_of`.
"""
from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable, Iterator

import structlog
import trio

from protocol.errors import ErrorCode

from broker.common.notifier import Notifier
from .checkpoint import HW_CHECKPOINT_FILE, read_offsets_checkpoint, write_offsets_checkpoint

if TYPE_CHECKING:   # imported by the cluster's role changes (a single node has no replica state)
    from ..log.partition import Partition
    from .state import ReplicaState
    from .fetch_session import FetchSessionCache
    from .fetcher import ReplicaFetcher   # imported when a follower first fetches: only in a cluster
    from broker.common.services import BrokerServices
    from broker.metadata.store import MetadataStore

log = structlog.get_logger("samsa.replica")

# alter_partition(topic, partition, leader_id, leader_epoch, partition_epoch, new_isr) -> a Kafka
# error code, or the new registration (anything with ``isr`` and ``partition_epoch``)
AlterPartition = Callable[[str, int, int, int, int, list[int]], Awaitable[Any]]


def topics_of(image: Any) -> Iterator[tuple[str, uuid.UUID | None, dict[str, str], Any]]:
    """(name, topic id, configs, {partition: registration}) for every topic of an image
    (coordinator.metadata_image.MetadataImage, or the test double's)."""
    for name, topic in image.topics.items():
        configs = image.topic_configs(name) if hasattr(image, "topic_configs") else getattr(topic, "configs", None)
        tid = getattr(topic, "topic_id", None)
        if isinstance(tid, str):
            tid = uuid.UUID(tid)
        yield name, tid, dict(configs or {}), topic.partitions


def endpoint_of(image: Any, node_id: int, listener: str) -> tuple[str, int] | None:
    """(host, port) of a broker on a listener (its first one when it has no such listener)."""
    broker = image.brokers.get(node_id) if image is not None else None
    if broker is None:
        return None
    endpoints = broker.endpoints
    if isinstance(endpoints, dict):
        ep = endpoints.get(listener) or next(iter(endpoints.values()), None)
    else:
        ep = next((e for e in endpoints if getattr(e, "name", None) == listener), None) or \
            next(iter(endpoints), None)
    if ep is None:
        return None
    if isinstance(ep, tuple):
        return ep[0], int(ep[1])
    return ep.host, int(ep.port)


class ReplicaManager:
    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self.node_id = broker.node_id
        self.image: Any = None
        self.alter_partition: AlterPartition | None = None   # set by the control plane
        # the cluster's MetadataStore to follow, handed over by the composition root in cluster
        # mode (a single node has no other broker to replicate with); ``attached`` once followed
        self.follows: Any = None
        self.attached: Any = None
        self.hw_moved = Notifier()
        # followers' incremental fetch sessions with this broker as leader (KIP-227): the cache
        # (``fetch_sessions``) is built by the first Fetch, see ``__getattr__``
        self._fetch_session_limits = (int(broker.config["max.incremental.fetch.session.cache.slots"]),
                                      int(broker.config["min.incremental.fetch.session.eviction.ms"]))
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.led: dict[tuple[str, int], Partition] = {}      # partitions led here that have followers
        # called with (partition, is_leader) after each role change (coordinators load/unload)
        self.role_listeners: list[Callable[[Partition, bool], None]] = []
        self._nursery: trio.Nursery | None = None
        cfg = broker.config
        self.lag_max_ms = int(cfg["replica.lag.time.max.ms"])
        self.hw_checkpoint_interval_s = int(cfg["replica.high.watermark.checkpoint.interval.ms"]) / 1000
        self._checkpointed_hw: dict[tuple[str, int], int] | None = None
        self.listener = cfg.advertised_listeners[0].name if cfg.advertised_listeners else "PLAINTEXT"

    @property
    def active(self) -> bool:
        return self.image is not None

    # -- running ---------------------------------------------------------------------------
    fetch_sessions: FetchSessionCache

    def __getattr__(self, name: str) -> Any:
        """Called only for an attribute not set yet: ``fetch_sessions``, built on the first Fetch
        (an ordinary attribute afterwards), so that start-up imports no fetch session module
        (start-up speed, issue 23)."""
        if name == "fetch_sessions":
            from .fetch_session import FetchSessionCache

            self.fetch_sessions = FetchSessionCache(*self._fetch_session_limits)
            return self.fetch_sessions
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    async def run(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """Fetcher tasks and the ISR expiration check (every replica.lag.time.max.ms / 2, as
        Kafka's isr-expiration task) live here."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for fetcher in self.fetchers.values():
                nursery.start_soon(fetcher.run)
            nursery.start_soon(self._isr_expiration)
            nursery.start_soon(self._hw_checkpointer)
            if self.follows is not None:
                self.attach(self.follows)
            task_status.started()

    def attach(self, store: MetadataStore) -> None:
        """Follow a MetadataStore (broker/metadata/store.py): every published image is applied in
        order, ISR changes go through its alter_partition; the current image is applied now."""
        self.attached = store
        self.alter_partition = store.alter_partition
        self.role_listeners.append(self._coordinator_roles)
        store.subscribe(self._on_metadata)
        self.apply_image(store.image)

    def _coordinator_roles(self, part: Partition, is_leader: bool) -> None:
        """A coordinator lives on its partition's leader: load on becoming leader, unload on losing it."""
        for shell in (self.broker.groups, self.broker.txns, self.broker.share_coordinator):
            if part.topic == shell.topic:
                if is_leader:
                    shell.become_leader(part.index)
                else:
                    shell.resign(part.index)

    def _on_metadata(self, old: Any, new: Any, delta: Any) -> None:
        self.apply_image(new)
        for name in getattr(delta, "deleted_topics", None) or ():
            if name in self.broker.logs.topics and name not in new.topics:
                self._delete_local_topic(name)

    def _delete_local_topic(self, name: str) -> None:
        """The topic is gone from the cluster (deleted, or deleted and created again under a
        new id): its local logs go."""
        for part in self.broker.logs.topics[name].partitions:
            self._release(part)
        self.broker.logs.delete_topic(name)

    def _release(self, part: Partition) -> None:
        """Stop every replication role of a local partition about to be deleted."""
        was_leader = part.replica is not None and part.replica.is_leader
        self._stop_following(part)
        self.led.pop((part.topic, part.index), None)
        part.replica = None
        if was_leader:
            for listener in self.role_listeners:
                listener(part, False)
        self.hw_moved.notify()       # acks=all waiters on it answer NOT_LEADER_OR_FOLLOWER

    def _drop_stray_topics(self, topic_ids: dict[str, Any]) -> None:
        """Local topics the image does not have (deleted while this broker was away), or has
        under another id (deleted and created again): Kafka's stray logs, deleted."""
        for name, topic in list(self.broker.logs.topics.items()):
            if name not in topic_ids or (topic_ids[name] is not None and topic_ids[name] != topic.topic_id):
                log.info("deleting the logs of a topic the cluster no longer has", topic=name,
                         topic_id=str(topic.topic_id))
                self._delete_local_topic(name)

    def _stop_following(self, part: Partition) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove(part.topic, part.index)

    async def _hw_checkpointer(self) -> None:
        """Kafka's replication-offset-checkpoint: every replicated partition's high watermark,
        so a restarted broker starts from it instead of the log start."""
        try:
            while True:
                await trio.sleep(self.hw_checkpoint_interval_s)
                self.write_hw_checkpoint()
        finally:
            self.write_hw_checkpoint()

    def write_hw_checkpoint(self) -> None:
        if not self.active:
            return
        entries = [(p.topic, p.index, p.hw) for p in self.broker.logs.all_partitions()
                   if p.hw is not None and p.replica is not None]
        try:
            write_offsets_checkpoint(self._hw_path(), entries)
        except OSError as exc:
            log.warning("could not write the high watermark checkpoint", error=str(exc))

    def _hw_path(self) -> str:
        return os.path.join(self.broker.logs.log_dir, HW_CHECKPOINT_FILE)

    def _initial_hw(self, part: Partition) -> int:
        if self._checkpointed_hw is None:
            self._checkpointed_hw = read_offsets_checkpoint(self._hw_path())
        hw = self._checkpointed_hw.get((part.topic, part.index), part.log_start_offset)
        return max(part.log_start_offset, min(hw, part.log_end_offset))

    async def _isr_expiration(self) -> None:
        while True:
            await trio.sleep(max(self.lag_max_ms / 2, 10) / 1000)
            self.maybe_shrink_isr(self.broker.now_ms())

    # -- metadata images -----------------------------------------------------------------
    def apply_image(self, image: Any) -> None:
        """Make this broker leader or follower of each partition it hosts, as the image says."""
        self.image = image
        now = self.broker.now_ms()
        follow: dict[int, dict[tuple[str, int], tuple[Partition, int, bool]]] = {}
        changed: list[tuple[Partition, bool]] = []
        strays: list[Partition] = []
        topics = list(topics_of(image))
        if self.attached is not None:   # the followed store's image names every topic
            self._drop_stray_topics({name: topic_id for name, topic_id, _, _ in topics})
        for name, topic_id, configs, regs in topics:
            local = self._local_topic(name, topic_id, configs, regs)
            if local is None:
                continue
            for index, reg in regs.items():
                part = local.partitions.get(index)
                if part is None:
                    continue                # a replica elsewhere only: no local log
                key = (name, index)
                if self.node_id not in reg.replicas:
                    strays.append(part)     # a reassignment removed this replica
                    continue
                if part.replica is not None and part.replica.registration is reg:
                    # unchanged (images share unchanged registrations): only keep following
                    if not part.replica.is_leader and reg.leader >= 0 and self.node_id in reg.replicas:
                        follow.setdefault(reg.leader, {})[key] = (part, reg.leader_epoch, False)
                    continue
                was_leader = part.replica is not None and part.replica.is_leader
                if reg.leader == self.node_id:
                    self._make_leader(part, reg, now)
                else:
                    new_term = self._make_follower(part, reg)
                    if reg.leader >= 0:
                        follow.setdefault(reg.leader, {})[key] = (part, reg.leader_epoch, new_term)
                is_leader = part.replica is not None and part.replica.is_leader
                if is_leader != was_leader:
                    changed.append((part, is_leader))
                if is_leader and part.replica.followers:
                    self.led[key] = part
                else:
                    self.led.pop(key, None)
        self._assign_fetchers(image, follow)
        for part, is_leader in changed:
            for listener in self.role_listeners:
                listener(part, is_leader)
        for part in strays:
            self._release(part)
            log.info("deleting a replica this broker no longer holds", partition=part.name)
            self.broker.logs.delete_replica(part.topic, part.index)
        self.hw_moved.notify()
        self.broker.appends.notify()   # waiting fetches re-check leadership

    def _local_topic(self, name: str, topic_id: Any, configs: dict[str, str], regs: dict[int, Any]) -> Any:
        """The local topic with a log for each partition this broker is a replica of (only
        those: Kafka's brokers keep no log of other partitions), created when it hosts one."""
        logs = self.broker.logs
        mine = {index for index, reg in regs.items() if self.node_id in reg.replicas}
        count = max(regs, default=-1) + 1
        topic = logs.topics.get(name)
        if topic is None:
            if not mine:
                return None
            return logs.create_topic(name, count, configs, topic_id=topic_id, hosted=mine)
        if topic.partition_count < count:
            logs.add_partitions(name, count, hosted=mine)
        for index in sorted(mine):
            if index not in topic.partitions:
                logs.add_replica(name, index)    # a reassignment added this broker
        if configs != topic.configs:
            logs.alter_configs(name, configs)    # topic configs are ConfigRecords in the image
        return topic

    def _make_leader(self, part: Partition, reg: Any, now_ms: int) -> None:
        from .state import FollowerState, ReplicaState

        rs = part.replica
        if rs is not None and rs.is_leader and rs.leader_epoch == reg.leader_epoch:
            # same term: the ISR, replicas or partition epoch moved
            rs.isr, rs.partition_epoch, rs.registration = list(reg.isr), reg.partition_epoch, reg
            if rs.pending_isr is not None and list(reg.isr) == rs.pending_isr:
                rs.pending_isr = None
            if list(reg.replicas) != rs.replicas:
                rs.replicas = list(reg.replicas)
                rs.followers = {r: rs.followers.get(r) or FollowerState(r)
                                for r in rs.replicas if r != self.node_id}
                if rs.followers:
                    self.led[(part.topic, part.index)] = part
            self._maybe_increment_hw(part, rs)
            return
        rs = ReplicaState(self.node_id, reg.leader, reg.leader_epoch, reg.partition_epoch, list(reg.replicas),
                          list(reg.isr), registration=reg)
        leo = part.log_end_offset
        part.leader_epoch = reg.leader_epoch
        part.epochs.assign(reg.leader_epoch, leo)      # Kafka's makeLeader: the epoch starts here
        rs.leader_epoch_start_offset = leo
        rs.reset_followers(now_ms)
        if rs.followers:
            if part.hw is None:
                part.hw = self._initial_hw(part)
        else:
            part.hw = None                               # the only replica: HW = log end
        part.replica = rs
        self._maybe_increment_hw(part, rs)
        log.info("became leader", partition=part.name, leader_epoch=reg.leader_epoch, isr=list(reg.isr),
                 log_end_offset=leo, high_watermark=part.high_watermark)

    def _make_follower(self, part: Partition, reg: Any) -> bool:
        """Returns True when the leader or its epoch changed (truncate before fetching again)."""
        from .state import ReplicaState

        rs = part.replica
        new_term = rs is None or rs.is_leader or rs.leader_epoch != reg.leader_epoch or rs.leader_id != reg.leader
        part.replica = ReplicaState(self.node_id, reg.leader, reg.leader_epoch, reg.partition_epoch,
                                    list(reg.replicas), list(reg.isr), registration=reg)
        part.leader_epoch = reg.leader_epoch
        if part.hw is None:
            part.hw = self._initial_hw(part)
        if new_term:
            log.info("became follower", partition=part.name, leader=reg.leader, leader_epoch=reg.leader_epoch,
                     log_end_offset=part.log_end_offset)
        return new_term

    def _assign_fetchers(self, image: Any, follow: dict[int, dict[tuple[str, int], tuple[Partition, int, bool]]]) -> None:
        for leader_id, running in list(self.fetchers.items()):
            wanted = follow.get(leader_id, {})
            for key in [k for k in running.partitions if k not in wanted]:
                running.remove(*key)
        for leader_id, parts in follow.items():
            fetcher = self.fetchers.get(leader_id)
            endpoint = endpoint_of(image, leader_id, self.listener)
            if fetcher is not None and endpoint is not None and (fetcher.host, fetcher.port) != endpoint:
                fetcher.cancel_scope.cancel()         # the leader moved to another address
                del self.fetchers[leader_id]
                fetcher = None
            if fetcher is None:
                if endpoint is None:
                    log.warning("leader has no known endpoint; not fetching", leader=leader_id)
                    continue
                from .fetcher import ReplicaFetcher

                fetcher = ReplicaFetcher(self, leader_id, *endpoint)
                self.fetchers[leader_id] = fetcher
                if self._nursery is not None:
                    self._nursery.start_soon(fetcher.run)
            for key, (part, epoch, new_term) in parts.items():
                current = fetcher.partitions.get(key)
                if current is None or new_term or current.leader_epoch != epoch:
                    fetcher.add(part, epoch)

    # -- leader side -----------------------------------------------------------------------
    def _maybe_increment_hw(self, part: Partition, rs: ReplicaState) -> None:
        if not rs.followers:
            return
        new = rs.high_watermark(part.log_end_offset)
        if part.hw is None or new > part.hw:
            part.hw = new
            self.hw_moved.notify()
            self.broker.appends.notify()       # consumers waiting below the old HW

    def leader_appended(self, part: Partition) -> None:
        """After a leader append: with an ISR of the leader alone the HW follows the log end."""
        rs = part.replica
        if rs is not None and rs.followers:
            self._maybe_increment_hw(part, rs)

    def follower_fetched(self, part: Partition, replica_id: int, fetch_offset: int, now_ms: int) -> int:
        """A follower's fetch at ``fetch_offset`` (its LEO): its state, the HW, an ISR expansion."""
        rs = part.replica
        if rs is None or not rs.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        f = rs.followers.get(replica_id)
        if f is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        leo = part.log_end_offset
        previous = f.leo
        f.update(min(fetch_offset, leo), leo, now_ms)
        if f.leo != previous:
            # the HW moves only with a follower's LEO here (appends and ISR changes move it elsewhere);
            # an idle partition of a fetch session, reported at every fetch, costs no more
            self._maybe_increment_hw(part, rs)
        if rs.pending_isr is None and replica_id not in rs.isr and rs.may_join_isr(replica_id, part.high_watermark):
            self._alter_isr(part, rs, rs.isr + [replica_id], "expand")
        return ErrorCode.NONE

    def maybe_shrink_isr(self, now_ms: int) -> None:
        for part in list(self.led.values()):
            rs = part.replica
            if rs is None or not rs.is_leader or rs.pending_isr is not None:
                continue
            lagging = rs.out_of_sync(part.log_end_offset, now_ms, self.lag_max_ms)
            if lagging:
                self._alter_isr(part, rs, [r for r in rs.isr if r not in lagging], "shrink")

    def _alter_isr(self, part: Partition, rs: ReplicaState, new_isr: list[int], why: str) -> None:
        if self.alter_partition is None or self._nursery is None:
            return
        rs.pending_isr = new_isr
        self._nursery.start_soon(self._send_alter, part, rs, new_isr, why)

    async def _send_alter(self, part: Partition, rs: ReplicaState, new_isr: list[int], why: str) -> None:
        log.info("altering ISR", partition=part.name, change=why, isr=rs.isr, new_isr=new_isr,
                 partition_epoch=rs.partition_epoch)
        assert self.alter_partition is not None     # _alter_isr checked it; it is never unset
        try:
            result = await self.alter_partition(part.topic, part.index, self.node_id, rs.leader_epoch,
                                                rs.partition_epoch, new_isr)
        except Exception as exc:  # the store is unreachable: keep the ISR we have, retry later
            log.warning("ISR change failed", partition=part.name, error=repr(exc))
            result = ErrorCode.UNKNOWN_SERVER_ERROR
        if part.replica is not rs:
            return                                  # a new term began meanwhile
        if not isinstance(result, int) and hasattr(result, "isr"):
            if result.partition_epoch > rs.partition_epoch:
                rs.isr, rs.partition_epoch = list(result.isr), result.partition_epoch
        else:
            code = result if isinstance(result, int) else getattr(result, "code", ErrorCode.UNKNOWN_SERVER_ERROR)
            log.info("ISR change refused", partition=part.name, reason=getattr(result, "message", None),
                     error=ErrorCode(code).name if code in ErrorCode._value2member_map_ else code)
        rs.pending_isr = None
        self._maybe_increment_hw(part, rs)
        self.hw_moved.notify()

    # -- produce -----------------------------------------------------------------------------
    def min_insync(self, part: Partition) -> int:
        return int(part.config("min.insync.replicas") or 1)

    def check_produce(self, part: Partition, acks: int) -> int:
        """Before appending: this broker must lead; acks=all needs min.insync.replicas in the ISR."""
        rs = part.replica
        assert rs is not None       # callers ask only for replicated partitions
        if not rs.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if acks == -1 and len(rs.isr) < self.min_insync(part):
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE

    def _acks_state(self, part: Partition, rs: ReplicaState | None, required: int) -> int | None:
        """Kafka's checkEnoughReplicasReachOffset; None while still waiting."""
        if part.replica is not rs:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert rs is not None       # callers wait only on replicated partitions
        if not rs.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if part.high_watermark >= required:
            if len(rs.isr) < self.min_insync(part):
                return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return ErrorCode.NONE
        return None

    async def wait_for_acks(self, pending: list[tuple[Partition, int]], timeout_s: float) -> list[int]:
        """acks=all: wait (woken by follower fetches and ISR changes, never polling) until the
        HW of every partition passed its required offset; REQUEST_TIMED_OUT at the timeout."""
        states = [(part, part.replica, required) for part, required in pending]
        results: list[int | None] = [None] * len(states)
        with trio.move_on_after(max(timeout_s, 0)):
            while True:
                for i, (part, rs, required) in enumerate(states):
                    if results[i] is None:
                        results[i] = self._acks_state(part, rs, required)
                if all(r is not None for r in results):
                    break
                await self.hw_moved.wait()
        return [ErrorCode.REQUEST_TIMED_OUT if r is None else r for r in results]

    # -- answers ---------------------------------------------------------------------------
    def current_leader(self, part: Partition) -> tuple[int, int]:
        rs = part.replica
        return (rs.leader_id, rs.leader_epoch) if rs is not None else (self.node_id, part.leader_epoch)

    def endpoint(self, node_id: int) -> tuple[str, int] | None:
        return endpoint_of(self.image, node_id, self.listener)
