"""Kafka's transaction coordinator as a pure state machine (no sockets, no clock, no I/O).

One :class:`TransactionCoordinator` owns the transactional ids hashed onto one
``__transaction_state`` partition (``abs(javaStringHashCode(id)) % partitions``). The shell feeds
it requests (dataclasses below) with the current time and gets a :class:`Step`: records to append
to that partition, ``(token, result)`` completions to send once the records are durable, and
:class:`MarkerJob` s: COMMIT/ABORT control batches to write to every partition of a transaction.
When the shell has written a job's markers it calls :meth:`markers_written`, which moves the
transaction from PrepareCommit/PrepareAbort to CompleteCommit/CompleteAbort (one more record).
``tick`` aborts transactions that outlive their ``transaction.timeout.ms`` (a sweep every
``transaction.abort.timed.out.transaction.cleanup.interval.ms``, as Kafka's) and expires idle
transactional ids; ``next_deadline`` says when. ``replay`` rebuilds state from the log and
``load_complete`` re-issues the markers of transactions caught between PREPARE and COMPLETE.

The rules are Kafka's TransactionCoordinator/TransactionMetadata (transaction protocol v1, the
one clients use unless the ``transaction.version`` feature is finalized), including its error
codes; API-version mappings (PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH for old clients) are
the API layer's business. State transitions are decided on the latest state and applied when
their record is produced. With ``track_pending`` (a runtime that reports when records are
committed, through ``transitions_committed``) a transaction whose last state record is not
committed yet is in Kafka's "pending transition": InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn and EndTxn answer CONCURRENT_TRANSACTIONS (the client retries), as Kafka's
TransactionCoordinator does (its metadata changes only once the write completed), and the
timeout sweep skips it. Without it the epoch fence is the only pending state, immediately
followed by PrepareAbort in the same step.
"""
from __future__ import annotations

from protocol.errors import ErrorCode
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


from coordinator.hashing import partition_for_group
from coordinator.step import Coordinator, MarkerJob, Step, TopicPartition
from coordinator.txn.records import (TxnTransition, decode_key, decode_value, encode_key, encode_state, group_partitions,
                                     transaction_record)

__all__ = [
    "TransactionCoordinator", "TxnCoordinatorConfig", "TxnState", "TxnMetadata", "Step", "MarkerJob",
    "InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "DescribeTransactions",
    "ListTransactions", "InitProducerIdResult", "AddPartitionsResult", "EndTxnResult",
    "DescribedTransaction", "DescribeTransactionsResult", "ListedTransaction", "ListTransactionsResult",
    "OFFSETS_TOPIC",
]


OFFSETS_TOPIC = "__consumer_offsets"
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767

NONE = 0
INVALID_REQUEST: int = ErrorCode.INVALID_REQUEST
NOT_COORDINATOR: int = ErrorCode.NOT_COORDINATOR
COORDINATOR_LOAD_IN_PROGRESS: int = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
INVALID_PRODUCER_ID_MAPPING: int = ErrorCode.INVALID_PRODUCER_ID_MAPPING
INVALID_TXN_STATE: int = ErrorCode.INVALID_TXN_STATE
INVALID_TRANSACTION_TIMEOUT: int = ErrorCode.INVALID_TRANSACTION_TIMEOUT
CONCURRENT_TRANSACTIONS: int = ErrorCode.CONCURRENT_TRANSACTIONS
PRODUCER_FENCED: int = ErrorCode.PRODUCER_FENCED
TRANSACTIONAL_ID_NOT_FOUND: int = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


class TxnState(Enum):
    """Kafka's TransactionState: (id written in the log, name shown by Describe/ListTransactions)."""
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    def __init__(self, state_id: int, display: str) -> None:
        # plain attributes: read on every transition (an Enum property through ``value`` costs
        # two descriptor lookups each time)
        self.id = state_id
        self.display = display

    # Enum's ``__hash__`` is a Python function (``hash(self._name_)``), run for every lookup of a
    # state in ``_VALID_PREVIOUS`` and its sets (each transition, three a transaction). A member
    # is equal only to itself, so the identity hash keeps every dict and set answer the same.
    __hash__ = object.__hash__

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        for s in cls:
            if s.id == state_id:
                return s
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        for s in cls:
            if s.display == name:
                return s
        return None


_EXPIRATION_ALLOWED = {TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}
_VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset({TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                 TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    # Empty/Complete*: a transactions-v2 abort of a transaction that added nothing (Kafka 4.0)
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE, TxnState.EMPTY,
                                       TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


@dataclass(frozen=True, slots=True)
class TxnCoordinatorConfig:
    """Broker settings that drive the coordinator, with Kafka's defaults."""
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    transaction_state_log_num_partitions: int = 50
    remove_expired_transaction_cleanup_interval_ms: int = 3600000
    abort_timed_out_transaction_cleanup_interval_ms: int = 10000

    _KAFKA_NAMES = {
        "transaction.max.timeout.ms": "transaction_max_timeout_ms",
        "transactional.id.expiration.ms": "transactional_id_expiration_ms",
        "transaction.state.log.num.partitions": "transaction_state_log_num_partitions",
        "transaction.remove.expired.transaction.cleanup.interval.ms":
            "remove_expired_transaction_cleanup_interval_ms",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms":
            "abort_timed_out_transaction_cleanup_interval_ms",
    }

    @classmethod
    def from_properties(cls, props: dict[str, Any]) -> TxnCoordinatorConfig:
        """Build from Kafka-named broker properties (unknown names are ignored)."""
        return cls(**{attr: int(props[name]) for name, attr in cls._KAFKA_NAMES.items()
                      if props.get(name) is not None})


# =========================================================================== requests

@dataclass(kw_only=True, slots=True)
class _Request:
    token: Any = None
    api_version: int = 0


@dataclass(kw_only=True, slots=True)
class InitProducerId(_Request):
    """InitProducerId with a transactional id (null ids are the idempotent path, not ours).
    ``producer_id``/``producer_epoch`` are the v3+ fields (-1 when not resuming)."""
    transactional_id: str
    transaction_timeout_ms: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(kw_only=True, slots=True)
class AddPartitionsToTxn(_Request):
    """One transaction of an AddPartitionsToTxn request; ``verify_only`` is the v4+ check that
    the partitions are already part of the transaction (nothing is added)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]
    verify_only: bool = False


@dataclass(kw_only=True, slots=True)
class AddOffsetsToTxn(_Request):
    """AddOffsetsToTxn: adds the group's ``__consumer_offsets`` partition (computed by the caller,
    which knows that topic's partition count) to the transaction."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    offsets_partition: int


@dataclass(kw_only=True, slots=True)
class EndTxn(_Request):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


@dataclass(kw_only=True, slots=True)
class DescribeTransactions(_Request):
    transactional_ids: list[str]


@dataclass(kw_only=True, slots=True)
class ListTransactions(_Request):
    state_filters: list[str] = field(default_factory=list)
    producer_id_filters: list[int] = field(default_factory=list)
    duration_filter_ms: int = -1
    transactional_id_pattern: str | None = None


# =========================================================================== results

@dataclass(slots=True)
class InitProducerIdResult:
    error_code: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(slots=True)
class AddPartitionsResult:
    """One error for every partition (the add is all or nothing), except for ``verify_only``,
    where ``partition_errors`` says per partition whether it is in the transaction."""
    error_code: int
    partition_errors: dict[TopicPartition, int] = field(default_factory=dict)

    def error_for(self, tp: TopicPartition) -> int:
        return self.partition_errors.get(tp, self.error_code)


@dataclass(slots=True)
class EndTxnResult:
    error_code: int
    producer_id: int = -1        # EndTxn v5 (transactions v2): the id and epoch of the next transaction
    producer_epoch: int = -1


@dataclass(slots=True)
class DescribedTransaction:
    transactional_id: str
    error_code: int = NONE
    # error rows carry Kafka's message defaults (zeros, empty state)
    state: str = ""
    timeout_ms: int = 0
    start_time_ms: int = 0
    producer_id: int = 0
    producer_epoch: int = 0
    topics: list[tuple[str, list[int]]] = field(default_factory=list)


@dataclass(slots=True)
class DescribeTransactionsResult:
    transactions: list[DescribedTransaction]


@dataclass(slots=True)
class ListedTransaction:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(slots=True)
class ListTransactionsResult:
    error_code: int
    unknown_state_filters: list[str] = field(default_factory=list)
    transactions: list[ListedTransaction] = field(default_factory=list)


# =========================================================================== metadata

@dataclass(slots=True)
class TxnMetadata:
    """One transactional id's state (Kafka's TransactionMetadata)."""
    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    # the state whose record is written but not committed yet (Kafka's pendingState); only
    # tracked for a runtime that reports commits (TransactionCoordinator.track_pending)
    pending_state: TxnState | None = None

    @property
    def pending_transition(self) -> bool:
        """Kafka's pendingTransitionInProgress (the epoch fence excepted: it is immediately
        followed by PrepareAbort, which is what is pending then)."""
        return self.pending_state is not None and self.pending_state != TxnState.PREPARE_EPOCH_FENCE

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1


_new_tuple = tuple.__new__


def _check_transition(md: TxnMetadata, state: TxnState) -> None:
    if md.state not in _VALID_PREVIOUS[state]:
        raise AssertionError(f"transactional id {md.transactional_id}: invalid transition "
                             f"{md.state.display} -> {state.display}")


def _is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= MAX_EPOCH - 1


# =========================================================================== coordinator

class TransactionCoordinator:
    """The transaction coordinator for the transactional ids of one ``__transaction_state`` partition.

    ``allocate_producer_id`` hands out producer ids (the broker's allocator; tests inject a
    counter). ``partition`` (optional) enables NOT_COORDINATOR for ids that hash elsewhere. Create
    with ``loading=True`` to answer COORDINATOR_LOAD_IN_PROGRESS while ``replay`` runs, then call
    ``load_complete``.
    """

    def __init__(self, config: TxnCoordinatorConfig | None = None, partition: int | None = None, *,
                 allocate_producer_id: Callable[[], int], loading: bool = False,
                 coordinator_epoch: int = 0, track_pending: bool = False) -> None:
        self.config = config or TxnCoordinatorConfig()
        self.partition = partition
        self.loading = loading
        # a plain attribute, not a property: the runtime reads it after every step
        self.unloaded = False
        self.coordinator_epoch = coordinator_epoch
        self._allocate = allocate_producer_id
        self._txns: dict[str, TxnMetadata] = {}
        self._now: int | None = None
        self._next_expiry_check: int | None = None
        self._next_abort_sweep: int | None = None
        self.track_pending = track_pending
        # how many transactions are Ongoing (kept by every state change): ``next_deadline``,
        # asked after every step, needs only whether one is, without a walk over every id
        self._ongoing = 0

    # ------------------------------------------------------------------ public API

    def handle(self, request: Any, now_ms: int) -> Step:
        """Process one request at ``now_ms`` (due timers fire first)."""
        handler = self._HANDLERS.get(type(request))
        if handler is None:
            raise TypeError(f"unsupported request {type(request).__name__}")
        step = Step()
        if self.loading:
            step.complete(request.token, self.unavailable(request))
            return step
        self._advance(now_ms, step)
        handler(self, request, step)
        return step

    def tick(self, now_ms: int) -> Step:
        """Abort timed-out transactions and expire idle transactional ids due by ``now_ms``."""
        step = Step()
        if not self.loading:
            self._advance(now_ms, step)
        return step

    def next_deadline(self) -> int | None:
        """When ``tick`` has work next (absolute ms), or None."""
        if self.loading or self._now is None:
            return None
        # the runtime asks after every step: no generator or list here
        sweep, expiry = self._next_abort_sweep, self._next_expiry_check
        if sweep is not None and self._ongoing and (expiry is None or sweep < expiry):
            return sweep                                  # only while something can time out
        return expiry

    def replay(self, key: bytes, value: bytes | None, producer_id: int | None = None) -> None:
        """Apply one record of this partition's log (start-up). ``__transaction_state`` holds no
        transactional batches, so ``producer_id`` is always None here."""
        tid = decode_key(key)
        old = self._txns.get(tid)
        if old is not None and old.state is TxnState.ONGOING:
            self._ongoing -= 1
        if value is None:
            self._txns.pop(tid, None)
            return
        v = decode_value(value)
        state = TxnState.from_id(v.transaction_status)
        if state is TxnState.ONGOING:
            self._ongoing += 1
        self._txns[tid] = TxnMetadata(
            transactional_id=tid, producer_id=v.producer_id, last_producer_id=v.previous_producer_id,
            producer_epoch=v.producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH,
            timeout_ms=v.transaction_timeout_ms, state=state,
            partitions=set() if state == TxnState.EMPTY else v.partitions,
            start_ms=v.transaction_start_timestamp_ms, last_update_ms=v.transaction_last_update_timestamp_ms)

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        """``__transaction_state`` holds no COMMIT/ABORT markers: nothing to do."""

    def load_complete(self, now_ms: int) -> Step:
        """End of loading: transactions caught between PREPARE and COMPLETE get their markers
        (again: markers are idempotent); Ongoing ones wait for their timeout."""
        self.loading = False
        step = Step()
        self._advance(now_ms, step)
        for md in self._txns.values():
            if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                step.markers.append(self._marker_job(md))
        return step

    def markers_written(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                        now_ms: int) -> Step:
        """Every marker of the transaction is written: PrepareX -> CompleteX. A stale report (the
        transaction moved on meanwhile) changes nothing."""
        step = Step()
        md = self._txns.get(transactional_id)
        want = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        if md is None or md.state != want or md.producer_id != producer_id or md.producer_epoch != producer_epoch:
            return step
        self._now = now = max(self._now or now_ms, now_ms)
        done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        _check_transition(md, done)
        md.partitions = set()
        md.last_update_ms = now
        self._record_transition(md, done, step, md.producer_id)
        return step

    def transitions_committed(self, transactional_ids: list[str]) -> None:
        """The runtime's report that every state record written so far for these ids is committed
        (``track_pending``): their pending transitions are over."""
        for tid in transactional_ids:
            md = self._txns.get(tid)
            if md is not None:
                md.pending_state = None

    def metadata(self, transactional_id: str) -> TxnMetadata | None:
        """The live metadata (read-only by convention), for the shell's introspection and tests."""
        return self._txns.get(transactional_id)

    def transactional_ids(self) -> list[str]:
        return list(self._txns)

    # ------------------------------------------------------------------ helpers

    def _owns(self, transactional_id: str) -> bool:
        return self.partition is None or partition_for_group(
            transactional_id, self.config.transaction_state_log_num_partitions) == self.partition

    @staticmethod
    def _timeout_deadline(md: TxnMetadata) -> int:
        # Kafka aborts when start + timeout < now
        return md.start_ms + md.timeout_ms + 1

    def _advance(self, now_ms: int, step: Step) -> None:
        now = self._now
        if now is None:
            now = now_ms
            self._next_expiry_check = now_ms + self.config.remove_expired_transaction_cleanup_interval_ms
            self._next_abort_sweep = now_ms + self.config.abort_timed_out_transaction_cleanup_interval_ms
        elif now_ms > now:
            now = now_ms
        self._now = now
        sweep = self._next_abort_sweep
        if sweep is not None and sweep <= now:
            # Kafka's abortTimedOutTransactions, scheduled every cleanup interval
            self._next_abort_sweep = now + self.config.abort_timed_out_transaction_cleanup_interval_ms
            for md in list(self._txns.values()):
                if md.state == TxnState.ONGOING and not md.pending_transition and self._timeout_deadline(md) <= now:
                    self._abort_timed_out(md, step)
        if self._next_expiry_check is not None and self._next_expiry_check <= now:
            self._expire_transactional_ids(step)
            self._next_expiry_check = now + self.config.remove_expired_transaction_cleanup_interval_ms

    def _transition(self, md: TxnMetadata, state: TxnState, step: Step, **changes: Any) -> None:
        """Apply a state change and log it (Kafka's prepareTransitionTo + completeTransitionTo)."""
        _check_transition(md, state)
        previous_pid = md.producer_id
        for name, value in changes.items():
            setattr(md, name, value)
        self._record_transition(md, state, step, previous_pid)

    def _record_transition(self, md: TxnMetadata, state: TxnState, step: Step, previous_pid: int) -> None:
        """The second half of ``_transition``, for the per-transaction paths (AddPartitionsToTxn,
        EndTxn, markers written) that check with ``_check_transition`` and then set their fields
        themselves rather than through keyword arguments and ``setattr``."""
        md.last_producer_id = previous_pid
        if md.state is TxnState.ONGOING:
            self._ongoing -= 1
        if state is TxnState.ONGOING:
            self._ongoing += 1
        md.state = state
        if self.track_pending:
            md.pending_state = state
        # the record's bytes straight from the fields (records.encode_state), and a tuple for the
        # runtime's logs: no TransactionLogValue made (issue 23, three transitions a transaction)
        tid, status, partitions = md.transactional_id, state.id, md.partitions
        empty = state is TxnState.EMPTY
        step.records.append((encode_key(tid), encode_state(
            md.producer_id, md.producer_epoch, md.timeout_ms, status, None if empty else partitions,
            md.last_update_ms, md.start_ms)))
        step.transitions.append((tid, _new_tuple(TxnTransition, (     # (NamedTuple's __new__ without its frame)
            status, md.producer_id, md.producer_epoch, md.timeout_ms, 0 if empty else len(partitions),
            md.start_ms, md.last_update_ms))))

    def _marker_job(self, md: TxnMetadata) -> MarkerJob:
        return MarkerJob(transactional_id=md.transactional_id, producer_id=md.producer_id,
                         producer_epoch=md.producer_epoch, commit=md.state == TxnState.PREPARE_COMMIT,
                         coordinator_epoch=self.coordinator_epoch, partitions=tuple(sorted(md.partitions)))

    def unload(self) -> Step:
        """Resign this partition (its leadership moved to another broker): all state is dropped
        and every later request answers NOT_COORDINATOR, so clients find the new coordinator."""
        self._txns.clear()
        self._ongoing = 0
        self.loading = True
        self.unloaded = True
        return Step()

    def unavailable(self, request: Any, error: int | None = None) -> Any:
        err = error if error is not None else NOT_COORDINATOR if self.unloaded else COORDINATOR_LOAD_IN_PROGRESS
        if isinstance(request, InitProducerId):
            return InitProducerIdResult(err)
        if isinstance(request, (AddPartitionsToTxn, AddOffsetsToTxn)):
            return AddPartitionsResult(err)
        if isinstance(request, EndTxn):
            return EndTxnResult(err)
        if isinstance(request, DescribeTransactions):
            return DescribeTransactionsResult([DescribedTransaction(t, err) for t in request.transactional_ids])
        if isinstance(request, ListTransactions):
            return ListTransactionsResult(err)
        raise TypeError(type(request).__name__)

    # ================================================================== InitProducerId

    def _handle_init(self, req: InitProducerId, step: Step) -> None:
        def answer(result: InitProducerIdResult) -> None:
            step.complete(req.token, result)

        tid = req.transactional_id
        if not tid:
            return answer(InitProducerIdResult(INVALID_REQUEST))
        if not self._owns(tid):
            return answer(InitProducerIdResult(NOT_COORDINATOR))
        if not 0 < req.transaction_timeout_ms <= self.config.transaction_max_timeout_ms:
            return answer(InitProducerIdResult(INVALID_TRANSACTION_TIMEOUT))
        # KafkaApis: both or neither of producer id and epoch
        if (req.producer_id == NO_PRODUCER_ID) != (req.producer_epoch == NO_PRODUCER_EPOCH):
            return answer(InitProducerIdResult(INVALID_REQUEST))
        expected = None if req.producer_id == NO_PRODUCER_ID else (req.producer_id, req.producer_epoch)
        now = self._now
        assert now is not None
        md = self._txns.get(tid)
        if md is None:
            md = TxnMetadata(transactional_id=tid, producer_id=self._allocate(),
                             last_producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH,
                             last_producer_epoch=NO_PRODUCER_EPOCH, timeout_ms=req.transaction_timeout_ms,
                             state=TxnState.EMPTY, partitions=set(), start_ms=-1, last_update_ms=now)
            self._txns[tid] = md

        def valid_producer_id(pid: int, epoch: int) -> bool:
            return (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
                    or (pid == md.last_producer_id and _is_epoch_exhausted(epoch)))

        if md.pending_transition:
            return answer(InitProducerIdResult(CONCURRENT_TRANSACTIONS))
        if expected is not None and not valid_producer_id(*expected):
            return answer(InitProducerIdResult(PRODUCER_FENCED))
        if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return answer(InitProducerIdResult(CONCURRENT_TRANSACTIONS))
        if md.state == TxnState.ONGOING:
            # Fence the current producer and abort its transaction; the client retries (and gets
            # the epoch bumped once more) when the abort is complete.
            self._fence_and_abort(md, step)
            return answer(InitProducerIdResult(CONCURRENT_TRANSACTIONS))
        # Empty, CompleteCommit, CompleteAbort
        if md.epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
            new_pid = self._allocate()
            self._transition(md, TxnState.EMPTY, step, producer_id=new_pid, producer_epoch=0,
                             last_producer_epoch=md.producer_epoch if expected is not None else NO_PRODUCER_EPOCH,
                             timeout_ms=req.transaction_timeout_ms, partitions=set(), start_ms=-1,
                             last_update_ms=now)
            return answer(InitProducerIdResult(NONE, md.producer_id, md.producer_epoch))
        bumped = md.producer_epoch + 1
        if expected is None:
            epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif md.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == md.producer_epoch:
            epoch, last_epoch = bumped, md.producer_epoch
        elif expected[1] == md.last_producer_epoch:
            epoch, last_epoch = md.producer_epoch, md.last_producer_epoch     # retry of a bump we made
        else:
            return answer(InitProducerIdResult(PRODUCER_FENCED))
        self._transition(md, TxnState.EMPTY, step, producer_epoch=epoch, last_producer_epoch=last_epoch,
                         timeout_ms=req.transaction_timeout_ms, partitions=set(), start_ms=-1,
                         last_update_ms=now)
        answer(InitProducerIdResult(NONE, md.producer_id, md.producer_epoch))

    def _fence_and_abort(self, md: TxnMetadata, step: Step) -> None:
        """Kafka's prepareFenceProducerEpoch followed by an internal EndTxn(abort) at the bumped
        epoch: older epochs are fenced everywhere the ABORT marker lands."""
        epoch = md.producer_epoch if md.producer_epoch == MAX_EPOCH else md.producer_epoch + 1
        if md.state is TxnState.ONGOING:
            self._ongoing -= 1
        md.state = TxnState.PREPARE_EPOCH_FENCE          # transient, never logged
        self._transition(md, TxnState.PREPARE_ABORT, step, producer_epoch=epoch,
                         last_producer_epoch=NO_PRODUCER_EPOCH, last_update_ms=self._now)
        step.markers.append(self._marker_job(md))

    def _abort_timed_out(self, md: TxnMetadata, step: Step) -> None:
        self._fence_and_abort(md, step)

    # ================================================================== AddPartitionsToTxn

    def _check_producer(self, tid: str, producer_id: int, producer_epoch: int) -> tuple[int, TxnMetadata | None]:
        if not tid:
            return INVALID_REQUEST, None
        if not self._owns(tid):
            return NOT_COORDINATOR, None
        md = self._txns.get(tid)
        if md is None or md.producer_id != producer_id:
            return INVALID_PRODUCER_ID_MAPPING, None
        if md.producer_epoch != producer_epoch:
            return PRODUCER_FENCED, None
        return NONE, md

    def _add_partitions(self, tid: str, producer_id: int, producer_epoch: int,
                        partitions: list[TopicPartition], step: Step) -> int:
        err, md = self._check_producer(tid, producer_id, producer_epoch)
        if md is None:
            return err
        if md.pending_transition or md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return CONCURRENT_TRANSACTIONS
        wanted = set(partitions)
        if md.state == TxnState.ONGOING and wanted <= md.partitions:
            return NONE                                   # nothing new: no record
        now = self._now
        assert now is not None
        _check_transition(md, TxnState.ONGOING)
        if md.state is not TxnState.ONGOING:
            md.start_ms = now
        md.partitions = md.partitions | wanted
        md.last_update_ms = now
        self._record_transition(md, TxnState.ONGOING, step, md.producer_id)
        return NONE

    def _handle_add_partitions(self, req: AddPartitionsToTxn, step: Step) -> None:
        if req.verify_only:
            return self._handle_verify(req, step)
        err = self._add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                   req.partitions, step)
        step.complete(req.token, AddPartitionsResult(err))

    def _handle_verify(self, req: AddPartitionsToTxn, step: Step) -> None:
        step.complete(req.token, self._verify(req))

    def _verify(self, req: AddPartitionsToTxn) -> AddPartitionsResult:
        """KIP-890 verification: is each partition part of the ongoing transaction? (Reads only.)"""
        err, md = self._check_producer(req.transactional_id, req.producer_id, req.producer_epoch)
        if md is not None and md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            err, md = CONCURRENT_TRANSACTIONS, None
        if md is None:
            return AddPartitionsResult(err)
        ongoing = md.state == TxnState.ONGOING
        return AddPartitionsResult(NONE, {tp: NONE if ongoing and tp in md.partitions else INVALID_TXN_STATE
                                          for tp in req.partitions})

    def verify_now(self, req: AddPartitionsToTxn, now_ms: int) -> AddPartitionsResult | None:
        """``handle(req)``'s answer to a ``verify_only`` request (a leader's KIP-890 check before
        a transaction's first batch on a partition: one per transaction and partition) without
        its Step, when that step would hold the answer and nothing else: the coordinator is
        loaded, its clock started and no timer due by ``now_ms`` (``_advance`` would only move
        the clock). None otherwise: ``handle`` the request. The check writes nothing, so the
        runtime has nothing to wait for before answering (issue 23)."""
        if self.loading or not req.verify_only:
            return None
        now = self._now
        if now is None:
            return None
        if now_ms > now:
            now = now_ms
        sweep, expiry = self._next_abort_sweep, self._next_expiry_check
        if (sweep is not None and sweep <= now) or (expiry is not None and expiry <= now):
            return None
        self._now = now
        return self._verify(req)

    def _handle_add_offsets(self, req: AddOffsetsToTxn, step: Step) -> None:
        err = self._add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                   [(OFFSETS_TOPIC, req.offsets_partition)], step)
        step.complete(req.token, AddPartitionsResult(err))

    # ================================================================== EndTxn

    def _handle_end_txn(self, req: EndTxn, step: Step) -> None:
        """EndTxn. v5 is transactions v2 (KIP-890 part 2): every commit or abort bumps the producer
        epoch (the markers carry the new epoch, fencing the old one everywhere), the answer carries
        the producer id and epoch of the next transaction, a retry with the previous epoch is
        recognised, and aborting a transaction that added nothing is allowed."""
        tv2 = req.api_version >= 5

        def answer(code: int, md: TxnMetadata | None = None) -> None:
            if tv2 and code == NONE and md is not None:
                step.complete(req.token, EndTxnResult(code, md.producer_id, md.producer_epoch))
            else:
                step.complete(req.token, EndTxnResult(code, -1, -1))

        commit = req.committed
        pending = self._txns.get(req.transactional_id) if self._owns(req.transactional_id or "") else None
        if pending is not None and pending.pending_transition and pending.producer_id == req.producer_id:
            return answer(CONCURRENT_TRANSACTIONS)       # Kafka: a retry while the last write is pending
        if tv2:
            md = self._txns.get(req.transactional_id) if self._owns(req.transactional_id or "") else None
            if (md is not None and md.producer_id == req.producer_id and req.producer_epoch != md.producer_epoch
                    and req.producer_epoch == md.last_producer_epoch and md.producer_epoch == req.producer_epoch + 1):
                # a retry of the EndTxn that bumped the epoch
                done = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
                preparing = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
                if md.state == done:
                    return answer(NONE, md)
                if md.state == preparing:
                    return answer(CONCURRENT_TRANSACTIONS)
                return answer(INVALID_TXN_STATE)
        err, md = self._check_producer(req.transactional_id, req.producer_id, req.producer_epoch)
        if md is None:
            return answer(err)
        state = md.state
        if state == TxnState.ONGOING or (tv2 and not commit and state in (
                TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)):
            preparing = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
            now = self._now
            assert now is not None
            _check_transition(md, preparing)
            md.last_update_ms = now
            if tv2 and not md.epoch_exhausted:
                md.producer_epoch, md.last_producer_epoch = md.producer_epoch + 1, md.producer_epoch
            if state != TxnState.ONGOING:
                md.partitions = set()
            self._record_transition(md, preparing, step, md.producer_id)
            step.markers.append(self._marker_job(md))
            return answer(NONE, md)
        if state == TxnState.COMPLETE_COMMIT:
            return answer(NONE if commit else INVALID_TXN_STATE, md)    # a retry of a finished commit
        if state == TxnState.COMPLETE_ABORT:
            return answer(NONE if not commit else INVALID_TXN_STATE, md)
        if state == TxnState.PREPARE_COMMIT:
            return answer(CONCURRENT_TRANSACTIONS if commit else INVALID_TXN_STATE)
        if state == TxnState.PREPARE_ABORT:
            return answer(CONCURRENT_TRANSACTIONS if not commit else INVALID_TXN_STATE)
        answer(INVALID_TXN_STATE)                                      # Empty: nothing to end

    # ================================================================== Describe / List

    def _handle_describe(self, req: DescribeTransactions, step: Step) -> None:
        out = []
        for tid in req.transactional_ids:
            if not tid:
                out.append(DescribedTransaction(tid or "", INVALID_REQUEST))
                continue
            if not self._owns(tid):
                out.append(DescribedTransaction(tid, NOT_COORDINATOR))
                continue
            md = self._txns.get(tid)
            if md is None or md.state == TxnState.DEAD:
                out.append(DescribedTransaction(tid, TRANSACTIONAL_ID_NOT_FOUND))
                continue
            out.append(DescribedTransaction(
                transactional_id=tid, error_code=NONE, state=md.state.display, timeout_ms=md.timeout_ms,
                start_time_ms=md.start_ms, producer_id=md.producer_id, producer_epoch=md.producer_epoch,
                topics=[(t, list(ps)) for t, ps in group_partitions(md.partitions)]))
        step.complete(req.token, DescribeTransactionsResult(out))

    def _handle_list(self, req: ListTransactions, step: Step) -> None:
        unknown = []
        states: set[TxnState] = set()
        for name in req.state_filters:
            s = TxnState.from_name(name)
            if s is None:
                unknown.append(name)
            else:
                states.add(s)
        pids = set(req.producer_id_filters)
        pattern = re.compile(req.transactional_id_pattern) if req.transactional_id_pattern else None
        now = self._now
        assert now is not None
        listed = []
        for tid, md in self._txns.items():
            if md.state == TxnState.DEAD:
                continue
            if pids and md.producer_id not in pids:
                continue
            if req.state_filters and md.state not in states:
                continue
            if req.duration_filter_ms >= 0 and now - md.start_ms <= req.duration_filter_ms:
                continue
            if pattern is not None and not pattern.fullmatch(tid):
                continue
            listed.append(ListedTransaction(tid, md.producer_id, md.state.display))
        step.complete(req.token, ListTransactionsResult(NONE, unknown, listed))

    # ================================================================== expiry

    def _expire_transactional_ids(self, step: Step) -> None:
        """Kafka's removeExpiredTransactionalIds: ids idle (Empty/Complete*) for
        transactional.id.expiration.ms are tombstoned and forgotten."""
        now = self._now
        assert now is not None
        for tid, md in list(self._txns.items()):
            if md.state in _EXPIRATION_ALLOWED and \
                    md.last_update_ms + self.config.transactional_id_expiration_ms <= now:
                md.state = TxnState.DEAD
                del self._txns[tid]
                step.records.append(transaction_record(tid, None))

    _HANDLERS: dict[type, Callable[[TransactionCoordinator, Any, Step], None]] = {
        InitProducerId: _handle_init,
        AddPartitionsToTxn: _handle_add_partitions,
        AddOffsetsToTxn: _handle_add_offsets,
        EndTxn: _handle_end_txn,
        DescribeTransactions: _handle_describe,
        ListTransactions: _handle_list,
    }


def _implements_coordinator(coordinator: TransactionCoordinator) -> Coordinator:
    """Never called: mypy checks here that TransactionCoordinator implements the Coordinator protocol."""
    return coordinator
