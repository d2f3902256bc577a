"""The trio shell around the pure group coordinators (coordinator/group.py).

One GroupCoordinator per ``__consumer_offsets`` partition. A request is stepped through its
coordinator; the step's records are appended to that partition *before* any completion is
released, so nobody hears of an assignment or commit that a crash could lose. Parked
requests (joins, follower syncs) wait on an event until a later step completes them. One
timer task fires session expiries, rebalance timeouts and the initial delay, sleeping until
the earliest deadline any coordinator reports.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
import trio

from coordinator.group import GroupCoordinator, GroupCoordinatorConfig, Step
from coordinator.hashing import partition_for_group
from protocol import records as rb

from .log.partition import CONTROL_COMMIT, control_marker

if TYPE_CHECKING:
    from .broker import Broker

log = structlog.get_logger("samsa.groups")

OFFSETS_TOPIC = "__consumer_offsets"


class _Pending:
    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Any = None


class GroupShell:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        cfg = broker.config
        self.num_partitions = int(cfg["offsets.topic.num.partitions"])
        self.coordinator_config = GroupCoordinatorConfig.from_properties(
            {k: cfg[k] for k in GroupCoordinatorConfig._KAFKA_NAMES if cfg.get(k) is not None})
        self.coordinators: dict[int, GroupCoordinator] = {}
        self._pending: dict[int, _Pending] = {}
        self._next_token = 0
        self._deadline_changed = trio.Event()

    # -- start-up ------------------------------------------------------------------------
    def load(self) -> None:
        """Replay ``__consumer_offsets`` if it exists (it is created on first use)."""
        topic = self.broker.logs.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return
        self.num_partitions = len(topic.partitions)
        now = self.broker.now_ms()
        for part in topic.partitions:
            coord = GroupCoordinator(self.coordinator_config, part.index, loading=True)
            for seg in part.segments:
                for h in seg.iter_headers():
                    data = seg.read(h.position, h.size)
                    h.position = 0
                    if h.is_control:      # a transaction's COMMIT/ABORT: its pending offsets settle
                        coord.replay_marker(h.producer_id, control_marker(data, h) == CONTROL_COMMIT)
                        continue
                    txn_producer = h.producer_id if h.is_transactional else None
                    for r in rb.iter_records(data, h):
                        if r.key is not None:
                            coord.replay(r.key, r.value, producer_id=txn_producer)
            self.coordinators[part.index] = coord
            self._apply(part.index, coord.load_complete(now))
        log.info("group coordinators loaded", partitions=len(topic.partitions))

    def _ensure_topic(self) -> None:
        if self.coordinators:
            return
        logs = self.broker.logs
        if OFFSETS_TOPIC not in logs.topics:
            logs.create_topic(OFFSETS_TOPIC, self.num_partitions,
                              {"cleanup.policy": "compact",
                               "segment.bytes": str(self.broker.config["offsets.topic.segment.bytes"])})
        now = self.broker.now_ms()
        for p in range(self.num_partitions):
            coord = GroupCoordinator(self.coordinator_config, p, loading=True)
            self.coordinators[p] = coord
            self._apply(p, coord.load_complete(now))

    # -- requests ------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return partition_for_group(group_id, self.num_partitions)

    def coordinator_for(self, group_id: str) -> tuple[int, GroupCoordinator]:
        self._ensure_topic()
        p = self.partition_for(group_id)
        return p, self.coordinators[p]

    async def call(self, partition: int, request: Any) -> Any:
        """Step ``request`` through the partition's coordinator and wait for its result."""
        self._ensure_topic()
        self._next_token += 1
        token = self._next_token
        pending = self._pending[token] = _Pending()
        request.token = token
        try:
            step = self.coordinators[partition].handle(request, self.broker.now_ms())
            self._apply(partition, step)
            await pending.event.wait()
            return pending.result
        finally:
            self._pending.pop(token, None)

    async def call_for_group(self, group_id: str, request: Any) -> Any:
        p, _ = self.coordinator_for(group_id or "")
        return await self.call(p, request)

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT marker was written to this partition (by the transaction shell)."""
        coord = self.coordinators.get(partition)
        if coord is not None:
            self._apply(partition, coord.complete_transaction(producer_id, commit, self.broker.now_ms()))

    def _apply(self, partition: int, step: Step) -> None:
        if step.records or step.txn_records:
            part = self.broker.logs.partition(OFFSETS_TOPIC, partition)
            if step.records:
                part.append_internal(step.records, self.broker.now_ms())
            for batch in step.txn_records:     # TxnOffsetCommit: a transactional batch of the producer
                part.append_internal(list(batch.records), self.broker.now_ms(), producer_id=batch.producer_id,
                                     producer_epoch=batch.producer_epoch, transactional=True)
        for token, result in step.completions:
            pending = self._pending.get(token)
            if pending is not None:
                pending.result = result
                pending.event.set()
        self._deadline_changed.set()

    # -- timers --------------------------------------------------------------------------
    async def run_timers(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            self._deadline_changed = trio.Event()
            now = self.broker.now_ms()
            earliest: int | None = None
            for p, coord in list(self.coordinators.items()):
                deadline = coord.next_deadline()
                if deadline is not None and deadline <= now:
                    self._apply(p, coord.tick(now))
                    deadline = coord.next_deadline()
                if deadline is not None and (earliest is None or deadline < earliest):
                    earliest = deadline
            if self._deadline_changed.is_set():
                continue  # a tick changed something: recompute before sleeping
            wait = None if earliest is None else max(0.0, (earliest - self.broker.now_ms()) / 1000)
            with trio.move_on_after(wait if wait is not None else float("inf")):
                await self._deadline_changed.wait()
