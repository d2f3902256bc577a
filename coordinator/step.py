"""The one shape every coordinator of ``coordinator/`` has: a pure state machine stepped by
requests and by time, whose every call returns a :class:`Step`; and the :class:`Coordinator`
protocol that the group, transaction and share coordinators implement.

This is the contract between the machines and their runtime (``broker/coordinator_runtime/``,
Kafka's ``CoordinatorRuntime``): a machine decides, the runtime acts. The machine never appends,
never waits and never reads a clock; it says which records to append (``records``,
``txn_records``), which answers to send once those records are durable (``completions``, matched
to the waiting request by its token) and what else the runtime must do afterwards (``markers``).
The runtime owns the appends, the release of answers, the timers (it calls ``tick`` at
``next_deadline``) and loading (``replay`` then ``load_complete``) and resigning (``unload``).

May import only the standard library and (for types) other ``coordinator/`` modules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from coordinator.txn.records import TxnTransition

Record = tuple[bytes, "bytes | None"]
"""One record of an internal topic: key and value bytes (a ``None`` value is a tombstone)."""

TopicPartition = tuple[str, int]


class Completion(NamedTuple):
    """An answer to release: ``result`` for the request that carried ``token``."""
    token: Any
    result: Any


_new_tuple = tuple.__new__


@dataclass(frozen=True, slots=True)
class TxnRecords:
    """Records that must be appended as one transactional batch of this producer (TxnOffsetCommit):
    they count only once the producer's COMMIT marker follows them in the partition."""
    producer_id: int
    producer_epoch: int
    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class MarkerJob:
    """Kafka's WriteTxnMarkers for one transaction: write a COMMIT (``commit``) or ABORT marker for
    this producer id/epoch to each partition, then report back to the transaction coordinator
    (``TransactionCoordinator.markers_written``)."""
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[TopicPartition, ...]


@dataclass(slots=True, init=False)
class Step:
    """What one call of a coordinator produced, in the order the runtime acts on it: append
    ``records`` (then each transactional batch of ``txn_records``) to the coordinator's partition;
    once they are durable, release ``completions``; then carry out ``markers``.

    ``transitions`` names the transaction state records among ``records`` as (transactional id,
    what the record says), in order: what the runtime logs (begun/committed/aborted) without decoding the
    bytes it was just given. Fields a coordinator never produces stay empty."""
    completions: list[Completion] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    txn_records: list[TxnRecords] = field(default_factory=list)
    markers: list[MarkerJob] = field(default_factory=list)
    transitions: list[tuple[str, TxnTransition]] = field(default_factory=list)

    def __init__(self) -> None:
        # written out: dataclass's generated __init__ tests each field against its default
        # factory sentinel and calls ``list`` through it; a Step is made for every request and
        # timer step of every coordinator (issue 23)
        self.completions = []
        self.records = []
        self.txn_records = []
        self.markers = []
        self.transitions = []

    def complete(self, token: Any, result: Any) -> None:
        """Answer the request that carried ``token`` (released after this step's records)."""
        # (NamedTuple's __new__ without its Python frame: every request's answer is made here)
        self.completions.append(_new_tuple(Completion, (token, result)))

    def take(self, token: Any) -> Any:
        """Remove and return the answer for ``token`` (None if this step has none): for a caller
        that steps a request and takes its answer itself rather than waiting for its release."""
        for i, (t, result) in enumerate(self.completions):
            if t is token:
                del self.completions[i]
                return result
        return None

    def extend(self, other: Step) -> None:
        self.completions.extend(other.completions)
        self.records.extend(other.records)
        self.txn_records.extend(other.txn_records)
        self.markers.extend(other.markers)
        self.transitions.extend(other.transitions)


class Coordinator(Protocol):
    """A coordinator of the keys (group ids, transactional ids) hashed onto one partition of an
    internal topic, as a pure state machine; Kafka's ``CoordinatorShard``.

    A coordinator starts *loading*: requests answer COORDINATOR_LOAD_IN_PROGRESS while the runtime
    ``replay``\\ s the partition, until ``load_complete``. After ``unload`` (the partition's
    leadership moved) every request answers NOT_COORDINATOR."""

    def handle(self, request: Any, now_ms: int) -> Step:
        """Step one request at ``now_ms`` (timers due by then fire first). Its answer is a
        completion with the request's ``token``, in this step or, for a parked request, a later one."""
        ...

    def tick(self, now_ms: int) -> Step:
        """Fire every timer due at or before ``now_ms``."""
        ...

    def next_deadline(self) -> int | None:
        """When ``tick`` has work next (absolute ms), or None."""
        ...

    def replay(self, key: bytes, value: bytes | None, producer_id: int | None = None) -> None:
        """Apply one record of the partition's log; ``producer_id`` is set for a record of a
        transactional batch (it counts once that producer's COMMIT marker is replayed)."""
        ...

    def replay_marker(self, producer_id: int, commit: bool) -> None:
        """Apply a COMMIT/ABORT control batch of the partition's log (Kafka's
        replayEndTransactionMarker)."""
        ...

    def load_complete(self, now_ms: int) -> Step:
        """End of loading: the clock starts (Kafka's onLoaded)."""
        ...

    def unload(self) -> Step:
        """Resign the partition (Kafka's onUnloaded): parked requests are answered NOT_COORDINATOR
        and all state is dropped."""
        ...

    @property
    def unloaded(self) -> bool:
        """``unload`` was called: this coordinator only answers NOT_COORDINATOR."""
        ...

    def unavailable(self, request: Any, error: int | None = None) -> Any:
        """The request's own answer type carrying ``error`` (default: COORDINATOR_LOAD_IN_PROGRESS
        while loading, NOT_COORDINATOR once unloaded), for a request this coordinator cannot serve
        or whose write did not commit."""
        ...
