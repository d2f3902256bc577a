"""The trio shell around the pure transaction coordinators (coordinator/transactions.py).

One TransactionCoordinator per ``__transaction_state`` partition; the topic is created on first
use (internal, compacted, ``transaction.state.log.num.partitions`` partitions). A request is
stepped through its coordinator; the step's records are appended to that partition before any
completion is released. Marker jobs are then carried out right here, because this single node
leads every partition: a COMMIT/ABORT control batch goes to each partition of the transaction
(partitions deleted meanwhile are skipped, as Kafka drops their markers), the group coordinator
of a ``__consumer_offsets`` partition is told so its pending offsets settle, and the coordinator
is told the markers are written, which logs CompleteCommit/CompleteAbort. All of that happens
without an await, so no request sees a half-finished transaction. A timer task aborts
transactions that exceed their timeout. On start-up the log is replayed and transactions caught
between PREPARE and COMPLETE get their markers again.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import structlog
import trio

from coordinator.hashing import partition_for_group
from coordinator.transactions import MarkerJob, Step, TransactionCoordinator, TxnCoordinatorConfig
from protocol import records as rb

if TYPE_CHECKING:
    from .broker import Broker

log = structlog.get_logger("samsa.txn")

TXN_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_SEGMENT_BYTES = 104857600


class _Pending:
    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Any = None


class TxnShell:
    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        cfg = broker.config
        self.num_partitions = int(cfg.get("transaction.state.log.num.partitions") or 50)
        self.coordinator_config = TxnCoordinatorConfig.from_properties(
            {k: cfg.get(k) for k in TxnCoordinatorConfig._KAFKA_NAMES})
        self.coordinators: dict[int, TransactionCoordinator] = {}
        self._pending: dict[int, _Pending] = {}
        self._next_token = 0
        self._deadline_changed = trio.Event()

    def _new_coordinator(self, partition: int) -> TransactionCoordinator:
        # an existing topic's partition count wins over the configured one (as in Kafka)
        cfg = self.coordinator_config = dataclasses.replace(
            self.coordinator_config, transaction_state_log_num_partitions=self.num_partitions)
        return TransactionCoordinator(cfg, partition, loading=True,
                                      allocate_producer_id=lambda: self.broker.producer_ids.allocate())

    # -- start-up ------------------------------------------------------------------------
    def load(self) -> None:
        """Replay ``__transaction_state`` if it exists; finish what was between PREPARE and
        COMPLETE. Runs after the group coordinators loaded (markers may settle their offsets)."""
        topic = self.broker.logs.topics.get(TXN_TOPIC)
        if topic is None:
            return
        self.num_partitions = len(topic.partitions)
        now = self.broker.now_ms()
        for part in topic.partitions:
            coord = self._new_coordinator(part.index)
            for seg in part.segments:
                for h in seg.iter_headers():
                    if h.is_control:
                        continue
                    data = seg.read(h.position, h.size)
                    h.position = 0
                    for r in rb.iter_records(data, h):
                        if r.key is not None:
                            coord.replay(r.key, r.value)
            self.coordinators[part.index] = coord
        for p, coord in self.coordinators.items():
            self._apply(p, coord.load_complete(now))
        log.info("transaction coordinators loaded", partitions=len(topic.partitions),
                 transactional_ids=sum(len(c.transactional_ids()) for c in self.coordinators.values()))

    def _ensure_topic(self) -> None:
        if self.coordinators:
            return
        logs = self.broker.logs
        if TXN_TOPIC not in logs.topics:
            segment_bytes = self.broker.config.get("transaction.state.log.segment.bytes") or DEFAULT_SEGMENT_BYTES
            logs.create_topic(TXN_TOPIC, self.num_partitions,
                              {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)})
        now = self.broker.now_ms()
        for p in range(self.num_partitions):
            coord = self._new_coordinator(p)
            self.coordinators[p] = coord
            self._apply(p, coord.load_complete(now))

    # -- requests ------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return partition_for_group(transactional_id, self.num_partitions)

    def coordinator_for(self, transactional_id: str) -> tuple[int, TransactionCoordinator]:
        self._ensure_topic()
        p = self.partition_for(transactional_id)
        return p, self.coordinators[p]

    async def call(self, partition: int, request: Any) -> Any:
        """Step ``request`` through the partition's coordinator and wait for its result."""
        self._ensure_topic()
        self._next_token += 1
        token = self._next_token
        pending = self._pending[token] = _Pending()
        request.token = token
        try:
            self._apply(partition, self.coordinators[partition].handle(request, self.broker.now_ms()))
            await pending.event.wait()
            return pending.result
        finally:
            self._pending.pop(token, None)

    async def call_for(self, transactional_id: str, request: Any) -> Any:
        p, _ = self.coordinator_for(transactional_id or "")
        return await self.call(p, request)

    def call_now(self, transactional_id: str, request: Any) -> Any:
        """A request answered within its own step, without yielding (verification before a
        TxnOffsetCommit, so nothing can end the transaction between the check and the append)."""
        p, coord = self.coordinator_for(transactional_id or "")
        request.token = object()
        step = coord.handle(request, self.broker.now_ms())
        result = next((r for t, r in step.completions if t is request.token), None)
        step.completions = [(t, r) for t, r in step.completions if t is not request.token]
        self._apply(p, step)
        return result

    def _apply(self, partition: int, step: Step) -> None:
        if step.records:
            part = self.broker.logs.partition(TXN_TOPIC, partition)
            part.append_internal(step.records, self.broker.now_ms())
        for token, result in step.completions:
            pending = self._pending.get(token)
            if pending is not None:
                pending.result = result
                pending.event.set()
        for job in step.markers:
            self._write_markers(partition, job)
        self._deadline_changed.set()

    def _write_markers(self, partition: int, job: MarkerJob) -> None:
        """Kafka's WriteTxnMarkers, done locally: one control batch per partition, then
        CompleteCommit/CompleteAbort."""
        now = self.broker.now_ms()
        logs = self.broker.logs
        for topic, p in job.partitions:
            part = logs.partition(topic, p)
            if part is None:
                log.warning("dropping transaction marker for a partition that no longer exists",
                            topic=topic, partition=p, transactional_id=job.transactional_id)
                continue
            try:
                part.append_control(job.producer_id, job.producer_epoch, job.commit, job.coordinator_epoch, now)
            except RuntimeError as exc:        # e.g. a newer epoch already on that partition
                log.error("transaction marker rejected", topic=topic, partition=p,
                          transactional_id=job.transactional_id, reason=str(exc))
                continue
            if topic == OFFSETS_TOPIC:
                self.broker.groups.complete_transaction(p, job.producer_id, job.commit)
        self.broker.appends.notify()       # read_committed fetches wait for the LSO to move
        coord = self.coordinators[partition]
        self._apply(partition, coord.markers_written(job.transactional_id, job.producer_id,
                                                     job.producer_epoch, job.commit, now))

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
                continue
            wait = None if earliest is None else max(0.0, (earliest - self.broker.now_ms()) / 1000)
            with trio.move_on_after(wait if wait is not None else float("inf")):
                await self._deadline_changed.wait()
