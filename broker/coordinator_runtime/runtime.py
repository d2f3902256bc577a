"""What the group and transaction shells share: one pure coordinator per partition of an
internal, compacted topic, stepped by requests and by a timer task (Kafka's ``CoordinatorRuntime``).

A request is stepped through its partition's coordinator, which decides on the latest state; the
step's records are appended to that partition, and the step's answers (and what it asks for
afterwards, such as transaction markers) are released only once the partition's high watermark
has passed *everything written to it so far* — the step's own records and any still pending
before them. So nobody hears of an assignment, offset or transaction state that a failover could
lose, and a step that wrote nothing (a read, a retry answered from state) waits for the writes
pending before it, as Kafka's runtime treats it ("a read operation after all"). On a single node
and on a partition whose ISR is the leader alone the high watermark is the log end, so the
answer leaves at once; the code path is the same.

Deviation from Kafka: Kafka answers read operations (OffsetFetch, DescribeGroups, ...) at once
from a snapshot of the state as of the last committed offset (``SnapshotRegistry``). Here a read
is computed on the latest state and held until that state is committed. Both never show a client
state that is not committed; here a read waits for the pending writes (a few ms in a cluster),
and the state machines stay free of snapshot bookkeeping.

When a write fails before it is appended (this broker no longer leads, or fewer in-sync replicas
than ``min.insync.replicas``) its answers carry Kafka's error and the coordinator is rebuilt from
the partition's log, which is its state without that write. When leadership is lost the waiting
answers get NOT_COORDINATOR (the records may be truncated; the next leader's coordinator decides).
An answer not committed within ``offsets.commit.timeout.ms`` gets COORDINATOR_NOT_AVAILABLE; its
records stay in the log and count if they commit later, as in Kafka.

Parked requests wait on an event until a later step completes them. The timer task sleeps until
the earliest deadline any coordinator reports. Start-up replays the topic, then ends each
coordinator's loading.
"""
from __future__ import annotations

import dataclasses
import math
from collections import deque
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import structlog
import trio

from coordinator.hashing import partition_for_group
from coordinator.step import Completion, Coordinator, Step
from protocol import records as rb
from protocol.errors import ErrorCode

from broker.log.partition import CONTROL_COMMIT, Partition, control_marker

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.coordinator")

C = TypeVar("C", bound=Coordinator)


class _Pending:
    """A request stepped through a coordinator, until its answer is released. Most requests are
    answered by their own step before ``call`` would wait, so the ``trio.Event`` is made only
    for one that waits (a write waiting to commit, a request the coordinator holds)."""
    __slots__ = ("event", "done", "result", "request")

    def __init__(self, request: Any = None) -> None:
        self.event: trio.Event | None = None
        self.done = False
        self.result: Any = None
        self.request = request

    def release(self, result: Any) -> None:
        self.result = result
        self.done = True
        if self.event is not None:
            self.event.set()

    async def wait(self) -> Any:
        if not self.done:
            self.event = trio.Event()
            await self.event.wait()
        return self.result


class _Write:
    """A step whose answers (and follow-up) wait until the high watermark reaches ``required``
    (the partition's log end just after the step), on the leadership term ``replica``."""
    __slots__ = ("required", "step", "replica", "deadline", "answered")

    def __init__(self, required: int, step: Step, replica: Any, deadline: float) -> None:
        self.required = required
        self.step = step
        self.replica = replica
        self.deadline = deadline
        self.answered = False      # timed out: its answers went out with an error


class CoordinatorShell(Generic[C]):
    """The runtime of one kind of coordinator (Kafka's ``CoordinatorRuntime``): everything here is
    generic over :class:`coordinator.step.Coordinator`; a subclass names the topic, makes the
    coordinators and adds what its kind asks for after a step (``after_step``)."""
    topic: str = ""
    # the coordinators' config and its field holding the topic's partition count, which
    # places keys on partitions: an existing topic's count wins over the configured one
    coordinator_config: Any = None
    partition_count_field: str = ""

    def __init__(self, broker: BrokerServices, num_partitions: int) -> None:
        self.broker = broker
        self.num_partitions = num_partitions
        self.coordinators: dict[int, C] = {}
        self._pending: dict[int, _Pending] = {}
        self._next_token = 0
        self._deadline_changed = trio.Event()
        self._sleep_until: int | None = None  # the timer task's wake-up deadline; None = none
        self._tasks: trio.Nursery | None = None  # the release tasks of answers waiting for the HW
        self._waiting: dict[int, deque[_Write]] = {}   # per partition, in log order

    @property
    def clustered(self) -> bool:
        """Cluster mode: a partition's coordinator loads when this broker becomes the leader of
        that partition and unloads when it stops leading it (broker/coordinator_runtime/placement.py);
        a write is answered once the high watermark passed it."""
        return getattr(self.broker, "cluster", None) is not None

    # -- what subclasses define ----------------------------------------------------------
    def new_coordinator(self, partition: int) -> C:
        raise NotImplementedError

    def topic_configs(self) -> dict[str, str]:
        raise NotImplementedError

    def replay_batch(self, coord: C, data: bytes, h: rb.BatchHeader) -> None:
        """Feed one stored batch (``h.position`` is 0 in ``data``) to the coordinator: a
        transaction's COMMIT/ABORT marker settles what that producer's transactional batches
        wrote; their records carry the producer id until then."""
        if h.is_control:
            coord.replay_marker(h.producer_id, control_marker(data, h) == CONTROL_COMMIT)
            return
        txn_producer = h.producer_id if h.is_transactional else None
        for r in rb.iter_records(data, h):
            if r.key is not None:
                coord.replay(r.key, r.value, producer_id=txn_producer)

    def write_step(self, partition: int, step: Step, part: Partition | None = None,
                   now_ms: int | None = None) -> None:
        """Append the step's records, then each of its transactional batches (TxnOffsetCommit:
        a batch of that producer, counted once its COMMIT marker follows). ``part``: the
        partition's log when the caller has it; ``now_ms``: the time the step was made at, when
        the caller read the clock for it (the batches' timestamp; else the clock is read)."""
        if not (step.records or step.txn_records):
            return
        if part is None:
            part = self.broker.logs.partition(self.topic, partition)
        assert part is not None, f"{self.topic}-{partition}: a coordinator runs only where its partition's log is"
        now = self.broker.now_ms() if now_ms is None else now_ms
        if step.records:
            part.append_internal(step.records, now)
        for batch in step.txn_records:
            part.append_internal(list(batch.records), now, producer_id=batch.producer_id,
                                 producer_epoch=batch.producer_epoch, transactional=True)

    def before_request(self, request: Any) -> None:
        """What a subclass notes about a request just before it is stepped (the topic exists
        by then, so its coordinators' first steps are not this request's)."""

    def after_step(self, partition: int, step: Step) -> None:
        """Work a step asks for once its records are written and its results released."""

    # -- start-up ------------------------------------------------------------------------
    def load(self) -> int:
        """Replay the topic if it exists (it is created on first use); returns partitions loaded."""
        topic = self.broker.logs.topics.get(self.topic)
        if topic is None or self.clustered:
            return 0
        self.num_partitions = topic.partition_count
        self.coordinator_config = dataclasses.replace(
            self.coordinator_config, **{self.partition_count_field: self.num_partitions})
        for part in topic.partitions:
            coord = self.new_coordinator(part.index)
            for seg in part.segments:
                for h in seg.iter_headers():
                    data = seg.read(h.position, h.size)
                    h.position = 0
                    self.replay_batch(coord, data, h)
            self.coordinators[part.index] = coord
        now = self.broker.now_ms()
        for p, coord in self.coordinators.items():
            self._apply(p, coord.load_complete(now))
        return topic.partition_count

    def ensure_topic(self) -> None:
        """Create the internal topic (its first use, or a Metadata request that auto-creates
        it) with its own partition count and configs, and start its coordinators."""
        if self.coordinators or self.clustered:
            return
        logs = self.broker.logs
        if self.topic not in logs.topics:
            logs.create_topic(self.topic, self.num_partitions, self.topic_configs())
        now = self.broker.now_ms()
        for p in range(self.num_partitions):
            coord = self.coordinators[p] = self.new_coordinator(p)
            self._apply(p, coord.load_complete(now))

    # -- requests ------------------------------------------------------------------------
    def partition_for(self, key: str) -> int:
        return partition_for_group(key, self.num_partitions)

    def coordinator_for(self, key: str) -> tuple[int, C]:
        self.ensure_topic()
        p = self.partition_for(key)
        return p, self._coordinator(p)

    def owned_partitions(self) -> list[int]:
        """The partitions whose coordinator runs here (loaded or loading), as Kafka's List*
        APIs see them: not the placeholders answering NOT_COORDINATOR for partitions led
        elsewhere (made when a client asks the wrong broker), nor resigned ones."""
        return sorted(p for p, c in self.coordinators.items() if not c.unloaded)

    def _coordinator(self, partition: int) -> C:
        coord = self.coordinators.get(partition)
        if coord is None:       # cluster mode, a partition not led here: it answers NOT_COORDINATOR
            coord = self.coordinators[partition] = self.new_coordinator(partition)
            coord.unload()
        return coord

    # -- cluster mode: leadership of the topic's partitions ----------------------------------
    def become_leader(self, partition: int) -> None:
        """Load the partition's coordinator from its log (Kafka's onElection)."""
        topic = self.broker.logs.topics.get(self.topic)
        if topic is None or partition not in topic.partitions:
            return
        if self.num_partitions != topic.partition_count:
            self.num_partitions = topic.partition_count
            self.coordinator_config = dataclasses.replace(
                self.coordinator_config, **{self.partition_count_field: self.num_partitions})
        part = topic.partitions[partition]
        coord = self.new_coordinator(partition)
        for seg in part.segments:
            for h in seg.iter_headers():
                data = seg.read(h.position, h.size)
                h.position = 0
                self.replay_batch(coord, data, h)
        self.coordinators[partition] = coord
        self._apply(partition, coord.load_complete(self.broker.now_ms()))

    def resign(self, partition: int) -> None:
        """Unload the partition's coordinator (Kafka's onResignation): waiting requests and
        later ones answer NOT_COORDINATOR."""
        coord = self.coordinators.get(partition)
        if coord is not None and not coord.unloaded:
            self._apply(partition, coord.unload())
        self._fail_waiting(partition, ErrorCode.NOT_LEADER_OR_FOLLOWER)

    def _unavailable_answer(self, partition: int, request: Any, code: int) -> Any:
        """The request's own answer type for a write that did not commit, with Kafka's mapping:
        leadership lost -> NOT_COORDINATOR; too few in-sync replicas or a timeout ->
        COORDINATOR_NOT_AVAILABLE."""
        from protocol.errors import ErrorCode

        err = ErrorCode.NOT_COORDINATOR if code == ErrorCode.NOT_LEADER_OR_FOLLOWER \
            else ErrorCode.COORDINATOR_NOT_AVAILABLE
        return self.new_coordinator(partition).unavailable(request, int(err))

    async def call(self, partition: int, request: Any) -> Any:
        """Step ``request`` through the partition's coordinator and wait for its result."""
        self.ensure_topic()
        self.before_request(request)
        self._next_token += 1
        token = request.token = self._next_token
        pending = self._pending[token] = _Pending(request)
        try:
            now = self.broker.now_ms()   # one reading for the step and its records' timestamp
            self._apply(partition, self._coordinator(partition).handle(request, now), now)
            if pending.done:   # most requests: answered by their own step, its records committed at once
                return pending.result
            return await pending.wait()
        finally:
            self._pending.pop(token, None)

    def query(self, partition: int, request: Any) -> Any:
        """A read-only request (ListGroups, DescribeGroups, OffsetFetch,
        ListTransactions, DescribeTransactions) answered at once, for the
        metrics and the console: the step runs like any request's (timers due by now fire and
        their records are written), only its answer is taken here instead of by a waiter."""
        coord = self.coordinators.get(partition)
        if coord is None:
            return None
        return self.step_now(partition, coord, request)

    def step_now(self, partition: int, coord: C, request: Any) -> Any:
        """Step ``request`` and take its answer from its own step, without waiting for the
        step's records to be committed; the rest of the step is applied as usual."""
        request.token = token = object()
        now = self.broker.now_ms()
        step = coord.handle(request, now)
        result = step.take(token)
        self._apply(partition, step, now)
        return result

    async def call_for(self, key: str, request: Any) -> Any:
        # ``call`` makes the topic (``coordinator_for`` without its second lookup)
        return await self.call(self.partition_for(key or ""), request)

    def _apply(self, partition: int, step: Step, now_ms: int | None = None) -> None:
        """Write the step's records (timestamped ``now_ms``, the time the step was made at, when
        the caller has it) and release its answers once they are committed."""
        coord = self.coordinators.get(partition)
        part = self.broker.logs.partition(self.topic, partition)
        if (step.records or step.txn_records) and part is not None and part.replica is not None:
            code = self.broker.replicas.check_produce(part, -1)
            if code:
                self._write_failed(partition, step, code)
                return
        self.write_step(partition, step, part, now_ms)
        waiting = self._waiting.get(partition)
        if part is None or coord is None or coord.unloaded or self._tasks is None or \
                (not waiting and part.high_watermark >= part.log_end_offset):
            # committed already (a single node, an ISR of the leader alone, nothing pending), or
            # an answer that carries no state (NOT_COORDINATOR from a coordinator that does not
            # lead the partition); before the runtime's task nursery runs (start-up) nothing waits
            self._complete(partition, step)
        else:
            timeout_s = int(self.broker.config["offsets.commit.timeout.ms"]) / 1000
            write = _Write(part.log_end_offset, step, part.replica, trio.current_time() + timeout_s)
            if waiting is None:
                waiting = self._waiting[partition] = deque()
                self._tasks.start_soon(self._release_when_committed, partition, waiting)
            waiting.append(write)
        # Wake the timer task only for a deadline earlier than the one it sleeps until: a
        # later or removed one is found when it wakes anyway. (Waking it on every step made it
        # poll every partition's coordinator on every commit.)
        coord = self.coordinators.get(partition)
        if coord is not None:
            self.wake_timers_for(coord)

    def wake_timers_for(self, coord: C) -> None:
        """Wake the timer task if ``coord``'s next deadline is earlier than the one it sleeps until."""
        deadline = coord.next_deadline()
        if deadline is not None and (self._sleep_until is None or deadline < self._sleep_until):
            self._deadline_changed.set()

    def _complete(self, partition: int, step: Step) -> None:
        """The step's records are committed: its answers go out, then its follow-up work."""
        self._release(step.completions)
        self.after_step(partition, step)

    def _write_failed(self, partition: int, step: Step, code: int) -> None:
        """A write that could not be appended: its answers carry the error, and the coordinator,
        which already applied the step, is rebuilt from the log (its state without the step).
        Requests parked in it are answered NOT_COORDINATOR and retried by their clients."""
        log.warning("coordinator write failed; reloading the coordinator from its log", topic=self.topic,
                    partition=partition, error=ErrorCode(code).name)
        self._release(step.completions, partition, code)
        coord = self.coordinators.get(partition)
        if coord is not None and not coord.unloaded:
            self._apply(partition, coord.unload())
        part = self.broker.logs.partition(self.topic, partition)
        if code != ErrorCode.NOT_LEADER_OR_FOLLOWER and part is not None and \
                (part.replica is None or part.replica.is_leader):
            self.become_leader(partition)

    def _fail_waiting(self, partition: int, code: int) -> None:
        """Leadership lost: every answer still waiting for its records to commit gets the error;
        their follow-up work is the next leader's (it replays the log and resumes it)."""
        waiting = self._waiting.pop(partition, None)
        while waiting:
            write = waiting.popleft()
            if not write.answered:
                self._release(write.step.completions, partition, code)

    def _release(self, completions: list[Completion], failed_partition: int | None = None, code: int = 0) -> None:
        for token, result in completions:
            pending = self._pending.get(token)
            if pending is not None:
                if failed_partition is not None and pending.request is not None:
                    result = self._unavailable_answer(failed_partition, pending.request, code)
                pending.release(result)

    async def _release_when_committed(self, partition: int, waiting: deque[_Write]) -> None:
        """Release waiting steps in log order as the high watermark passes them (woken by the
        replica manager whenever a HW or a leadership moves, never polling)."""
        hw_moved = self.broker.replicas.hw_moved
        try:
            while waiting and self._waiting.get(partition) is waiting:
                head = waiting[0]
                part = self.broker.logs.partition(self.topic, partition)
                if part is None or part.replica is not head.replica or \
                        (head.replica is not None and not head.replica.is_leader):
                    self._fail_waiting(partition, ErrorCode.NOT_LEADER_OR_FOLLOWER)
                    return
                if part.high_watermark >= head.required:
                    waiting.popleft()
                    if head.answered:
                        self.after_step(partition, head.step)
                    else:
                        self._complete(partition, head.step)
                    continue
                now = trio.current_time()
                next_deadline = math.inf
                for write in waiting:
                    if write.answered:
                        continue
                    if write.deadline <= now:
                        write.answered = True
                        self._release(write.step.completions, partition, ErrorCode.REQUEST_TIMED_OUT)
                    else:
                        next_deadline = min(next_deadline, write.deadline)
                with trio.move_on_at(next_deadline):
                    await hw_moved.wait()
        finally:
            if not waiting and self._waiting.get(partition) is waiting:
                del self._waiting[partition]

    # -- timers --------------------------------------------------------------------------
    async def run_timers(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as tasks:
            self._tasks = tasks
            await self._run_timers(task_status)

    async def _run_timers(self, task_status: trio.TaskStatus) -> None:
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
            self._sleep_until = earliest
            await self.broker.clock.wait(earliest, self._deadline_changed)
