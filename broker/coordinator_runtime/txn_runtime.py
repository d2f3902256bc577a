"""The trio shell around the pure transaction coordinators (coordinator/txn/coordinator.py).

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

from typing import TYPE_CHECKING, Any

import structlog
import trio

from coordinator.txn import coordinator as tx
from coordinator.txn import records as txr
from coordinator.step import MarkerJob, Step
from coordinator.txn.coordinator import OFFSETS_TOPIC, TransactionCoordinator, TxnCoordinatorConfig

from broker.common.notifier import Notifier
from broker.coordinator_runtime.runtime import CoordinatorShell

if TYPE_CHECKING:
    from broker.common.services import BrokerServices
    from broker.log.partition import Partition

log = structlog.get_logger("samsa.txn")

TXN_TOPIC = "__transaction_state"
DEFAULT_SEGMENT_BYTES = 104857600
CONCURRENT_WAIT_S = 1.0   # how long an AddPartitionsToTxn waits for the previous transaction to settle

# the requests whose CONCURRENT_TRANSACTIONS answer waits for the transaction to settle (``call``)
_ADDS = (tx.AddPartitionsToTxn, tx.AddOffsetsToTxn)


class TxnShell(CoordinatorShell[TransactionCoordinator]):
    topic = TXN_TOPIC
    partition_count_field = "transaction_state_log_num_partitions"

    def __init__(self, broker: BrokerServices) -> None:
        cfg = broker.config
        super().__init__(broker, int(cfg.get("transaction.state.log.num.partitions") or 50))
        self._marker_sender: Any = None   # cluster mode: WriteTxnMarkers to the partitions' leaders
        self.coordinator_config = TxnCoordinatorConfig.from_properties(
            {k: cfg.get(k) for k in TxnCoordinatorConfig._KAFKA_NAMES})
        # per transactional id, the last state logged and its partition count (for the logs)
        self._states: dict[str, tuple[int, int]] = {}
        self._request: Any = None
        self._settled = Notifier()   # a step's transaction state records committed (see ``call``)
        self._settled_count = 0

    def new_coordinator(self, partition: int) -> TransactionCoordinator:
        return TransactionCoordinator(self.coordinator_config, partition, loading=True,
                                      allocate_producer_id=self._allocate_producer_id, track_pending=True)

    def _allocate_producer_id(self) -> int:
        ids = self.broker.producer_ids
        assert ids is not None, "the broker allocates producer ids once it serves"
        return ids.allocate()

    def topic_configs(self) -> dict[str, str]:
        segment_bytes = self.broker.config.get("transaction.state.log.segment.bytes") or DEFAULT_SEGMENT_BYTES
        return {"cleanup.policy": "compact", "segment.bytes": str(segment_bytes)}

    def load(self) -> int:
        """Replay ``__transaction_state``; finish what was between PREPARE and COMPLETE. Runs
        after the group coordinators loaded (markers may settle their offsets)."""
        loaded = super().load()
        if loaded:
            log.info("transaction coordinators loaded", partitions=loaded,
                     transactional_ids=sum(len(c.transactional_ids()) for c in self.coordinators.values()))
        return loaded

    async def call(self, partition: int, request: Any) -> Any:
        if type(request) is tx.AddPartitionsToTxn and request.verify_only and not self.clustered:
            answer = self._verify_now(partition, request)
            if answer is not None:
                return answer
        seen = self._settled_count
        self._request = request        # read by the request's own step (synchronous), then cleared
        result = await CoordinatorShell.call(self, partition, request)
        if type(request) in _ADDS and result.error_code == tx.CONCURRENT_TRANSACTIONS and \
                not getattr(request, "verify_only", False):
            # Deviation (latency only): Kafka answers CONCURRENT_TRANSACTIONS while the previous
            # transaction's markers and Complete* record are being written, and the client retries
            # after its backoff (librdkafka ~20-100 ms). In a cluster that window is a few
            # replication round trips, so the next transaction's first AddPartitionsToTxn would
            # nearly always pay the backoff. Here it waits for the transaction to settle (woken when
            # its state records commit, at most CONCURRENT_WAIT_S) and is stepped again; a
            # transaction still unsettled then gets Kafka's answer.
            with trio.move_on_after(CONCURRENT_WAIT_S):
                while result.error_code == tx.CONCURRENT_TRANSACTIONS:
                    if self._settled_count == seen:    # (it may have settled while the answer waited)
                        await self._settled.wait()
                    seen = self._settled_count
                    self._request = request
                    result = await CoordinatorShell.call(self, partition, request)
        return result

    def _verify_now(self, partition: int, request: tx.AddPartitionsToTxn) -> tx.AddPartitionsResult | None:
        """A single node's KIP-890 check (Produce's first transactional batch of a transaction on
        a partition): the coordinator's answer read at once (``verify_now``), without the token,
        waiter and Step of ``call``, when its step would hold that answer alone. What ``_apply``
        does after such a step is done here too: the timer task is woken for an earlier deadline.
        Nothing is written, so nothing is waited for, as ``call`` would not wait either on a node
        that commits each write as it appends it. None: ``call`` steps it."""
        coord = self.coordinators.get(partition)
        if coord is None:
            return None
        answer = coord.verify_now(request, self.broker.now_ms())
        if answer is not None:
            self.wake_timers_for(coord)
        return answer

    def write_step(self, partition: int, step: Step, part: Partition | None = None,
                   now_ms: int | None = None) -> None:
        CoordinatorShell.write_step(self, partition, step, part, now_ms)
        request, self._request = self._request, None
        if step.transitions:
            for transactional_id, value in step.transitions:
                self._log_transition(transactional_id, value, request)

    def _log_transition(self, transactional_id: str, t: txr.TxnTransition, request: Any) -> None:
        """Transactions begun/committed/aborted/timed out, from the state records the coordinator
        writes (an abort that no EndTxn asked for is the coordinator's timeout).

        ``begun`` and ``committed`` are DEBUG lines, as Kafka's ``TransactionMetadata`` logs each
        completed transition at debug: at INFO they were two rendered and written lines per
        transaction, ~11 % of a transaction's broker CPU. With DEBUG off, structlog's filtering
        bound logger makes ``debug`` a no-op (nothing rendered or written). Aborts and time-outs
        stay at INFO: rare, and what an operator looks for."""
        status = t.status
        previous, partitions = self._states.get(transactional_id, (None, 0))
        if t.partition_count:   # the Complete* records carry none: keep the Ongoing/Prepare count
            partitions = t.partition_count
        if status == 4 or status == 5:   # complete: nothing left to compare with (keeps this map small)
            self._states.pop(transactional_id, None)
        else:
            self._states[transactional_id] = (status, partitions)
        if status == 1:
            if previous != 1:
                log.debug("transaction begun", timeout_ms=t.timeout_ms, transactional_id=transactional_id,
                          producer_id=t.producer_id, producer_epoch=t.producer_epoch)
        elif status == 4:
            log.debug("transaction committed", partitions=partitions, duration_ms=t.last_update_ms - t.start_ms,
                      transactional_id=transactional_id, producer_id=t.producer_id, producer_epoch=t.producer_epoch)
        elif status == 3 and previous == 1 and type(request).__name__ not in ("EndTxn", "InitProducerId"):
            log.info("transaction timed out; aborting", timeout_ms=t.timeout_ms,
                     transactional_id=transactional_id, producer_id=t.producer_id, producer_epoch=t.producer_epoch)
        elif status == 5:
            log.info("transaction aborted", partitions=partitions, transactional_id=transactional_id,
                     producer_id=t.producer_id, producer_epoch=t.producer_epoch)

    def after_step(self, partition: int, step: Step) -> None:
        """The step's records are committed: its transitions are no longer pending (a retry meanwhile
        answered CONCURRENT_TRANSACTIONS), and its markers may go out."""
        if step.transitions:
            coord = self.coordinators.get(partition)
            if coord is not None and not coord.unloaded:
                coord.transitions_committed([tid for tid, _ in step.transitions])
            self._settled_count += 1
            self._settled.notify()
        for job in step.markers:
            self._write_markers(partition, job)

    def _write_markers(self, partition: int, job: MarkerJob) -> None:
        """Kafka's WriteTxnMarkers, done locally: one control batch per partition, then
        CompleteCommit/CompleteAbort. In a cluster the markers go to each partition's leader
        (broker/replica/markers.py)."""
        if self.clustered and self._tasks is not None:
            self._tasks.start_soon(self._deliver_markers, partition, job)
            return
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
        coord = self.coordinators[partition]
        self._apply(partition, coord.markers_written(job.transactional_id, job.producer_id,
                                                     job.producer_epoch, job.commit, now), now)

    async def _deliver_markers(self, partition: int, job: MarkerJob) -> None:
        from broker.replica.markers import MarkerSender

        if self._marker_sender is None:
            self._marker_sender = MarkerSender(self.broker)
        coord = self.coordinators.get(partition)
        if coord is None:   # unloaded before its markers went out: the next coordinator sends them
            return
        if not await self._marker_sender.deliver(job, lambda: self.coordinators.get(partition) is coord and
                                                 not coord.unloaded):
            return
        self._apply(partition, coord.markers_written(job.transactional_id, job.producer_id,
                                                     job.producer_epoch, job.commit, self.broker.now_ms()))
