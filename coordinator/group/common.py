"""What Kafka's two group protocols share in one ``__consumer_offsets`` partition's coordinator:
error codes, the broker settings, the coordinator's state and timer queue
(``GroupCoordinatorBase``), and the requests and results of the offset, describe/list/delete APIs
that classic and consumer groups both answer.
The protocols themselves live in ``coordinator.classic_group`` and ``coordinator.consumer_group``;
``coordinator.group`` puts them together as the ``GroupCoordinator``."""
from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka.record.util import size_of_varint

from coordinator.hashing import partition_for_group
from protocol.errors import ErrorCode
from protocol.records import HEADER_SIZE
from coordinator.step import Record, Step
from coordinator.group.offsets import (DEFAULT_RETENTION_TIME, OffsetCommitTopic, OffsetFetchTopic, OffsetStore, TopicPartitionErrors, TopicPartitions)

if TYPE_CHECKING:
    from coordinator.group.classic import ClassicGroup
    from coordinator.group.consumer import ConsumerGroup


CONSUMER_PROTOCOL_TYPE = "consumer"
UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1

NONE = 0
UNKNOWN_SERVER_ERROR = -1
COORDINATOR_LOAD_IN_PROGRESS: int = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
COORDINATOR_NOT_AVAILABLE: int = ErrorCode.COORDINATOR_NOT_AVAILABLE
NOT_COORDINATOR: int = ErrorCode.NOT_COORDINATOR
ILLEGAL_GENERATION: int = ErrorCode.ILLEGAL_GENERATION
INCONSISTENT_GROUP_PROTOCOL: int = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
UNSUPPORTED_VERSION: int = ErrorCode.UNSUPPORTED_VERSION
INVALID_GROUP_ID: int = ErrorCode.INVALID_GROUP_ID
UNKNOWN_MEMBER: int = ErrorCode.UNKNOWN_MEMBER_ID
INVALID_SESSION_TIMEOUT: int = ErrorCode.INVALID_SESSION_TIMEOUT
REBALANCE_IN_PROGRESS: int = ErrorCode.REBALANCE_IN_PROGRESS
NON_EMPTY_GROUP: int = ErrorCode.NON_EMPTY_GROUP
GROUP_ID_NOT_FOUND: int = ErrorCode.GROUP_ID_NOT_FOUND
MEMBER_ID_REQUIRED: int = ErrorCode.MEMBER_ID_REQUIRED
GROUP_MAX_SIZE_REACHED: int = ErrorCode.GROUP_MAX_SIZE_REACHED
FENCED_INSTANCE_ID: int = ErrorCode.FENCED_INSTANCE_ID


def _assignor_name(value: str) -> str:
    """Kafka lists assignors by name or class name (org.apache...assignor.UniformAssignor)."""
    value = value.strip()
    short = value.rsplit(".", 1)[-1]
    return {"UniformAssignor": "uniform", "RangeAssignor": "range"}.get(short, value.lower())


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    """Broker settings that drive the coordinator, with Kafka's defaults (see ``from_properties``)."""
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2147483647
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    offsets_topic_num_partitions: int = 50
    # Kafka's internal group.classic.new.member.join.timeout.ms: a new member's JoinGroup that the
    # rebalance never completes is dropped after this long.
    new_member_join_timeout_ms: int = 300000
    # message.max.bytes as it applies to __consumer_offsets: a group metadata record larger than
    # this fails to append in Kafka (e.g. a member with a 1 MB subscription), see _fits().
    max_message_bytes: int = 1048588
    # KIP-848 consumer groups (Kafka's names and defaults; the bounds are checked as Kafka does).
    consumer_group_session_timeout_ms: int = 45000
    consumer_group_min_session_timeout_ms: int = 45000
    consumer_group_max_session_timeout_ms: int = 60000
    consumer_group_heartbeat_interval_ms: int = 5000
    consumer_group_min_heartbeat_interval_ms: int = 5000
    consumer_group_max_heartbeat_interval_ms: int = 15000
    consumer_group_max_size: int = 2147483647
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_group_migration_policy: str = "bidirectional"
    # Samsa: the server-side assignors prefer rack-local partitions (coordinator.consumer_group_assignors);
    # False assigns as Kafka 4.x's built-in assignors do, without racks.
    consumer_group_rack_aware_assignment: bool = False

    _KAFKA_NAMES = {
        "group.min.session.timeout.ms": "group_min_session_timeout_ms",
        "group.max.session.timeout.ms": "group_max_session_timeout_ms",
        "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
        "group.max.size": "group_max_size",
        "offsets.retention.minutes": "offsets_retention_minutes",
        "offsets.retention.check.interval.ms": "offsets_retention_check_interval_ms",
        "offset.metadata.max.bytes": "offset_metadata_max_bytes",
        "offsets.topic.num.partitions": "offsets_topic_num_partitions",
        "message.max.bytes": "max_message_bytes",
        "group.consumer.session.timeout.ms": "consumer_group_session_timeout_ms",
        "group.consumer.min.session.timeout.ms": "consumer_group_min_session_timeout_ms",
        "group.consumer.max.session.timeout.ms": "consumer_group_max_session_timeout_ms",
        "group.consumer.heartbeat.interval.ms": "consumer_group_heartbeat_interval_ms",
        "group.consumer.min.heartbeat.interval.ms": "consumer_group_min_heartbeat_interval_ms",
        "group.consumer.max.heartbeat.interval.ms": "consumer_group_max_heartbeat_interval_ms",
        "group.consumer.max.size": "consumer_group_max_size",
    }
    _STRING_NAMES = {
        "group.consumer.assignors": "consumer_group_assignors",
        "group.consumer.migration.policy": "consumer_group_migration_policy",
        "samsa.group.consumer.rack.aware.assignment": "consumer_group_rack_aware_assignment",
    }

    def __post_init__(self) -> None:
        """Kafka's GroupCoordinatorConfig checks: a broker with inconsistent bounds does not start."""
        checks = [
            (self.consumer_group_session_timeout_ms >= self.consumer_group_min_session_timeout_ms,
             "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
            (self.consumer_group_session_timeout_ms <= self.consumer_group_max_session_timeout_ms,
             "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
            (self.consumer_group_heartbeat_interval_ms >= self.consumer_group_min_heartbeat_interval_ms,
             "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
            (self.consumer_group_heartbeat_interval_ms <= self.consumer_group_max_heartbeat_interval_ms,
             "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
            (self.consumer_group_heartbeat_interval_ms < self.consumer_group_session_timeout_ms,
             "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
            (self.consumer_group_max_size >= 1, "group.consumer.max.size must be at least 1"),
            (bool(self.consumer_group_assignors) and all(a in ("uniform", "range") for a in self.consumer_group_assignors),
             f"group.consumer.assignors must name uniform and/or range, not {self.consumer_group_assignors}"),
            (self.consumer_group_migration_policy in ("disabled", "upgrade", "downgrade", "bidirectional"),
             "group.consumer.migration.policy must be one of disabled, upgrade, downgrade, bidirectional"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    @classmethod
    def from_properties(cls, props: dict[str, Any]) -> GroupCoordinatorConfig:
        """Build from Kafka-named broker properties (unknown names are ignored)."""
        kwargs: dict[str, Any] = {attr: int(props[name]) for name, attr in cls._KAFKA_NAMES.items() if name in props}
        if props.get("group.consumer.assignors") is not None:
            kwargs["consumer_group_assignors"] = tuple(
                _assignor_name(a) for a in str(props["group.consumer.assignors"]).split(",") if a.strip())
        if props.get("group.consumer.migration.policy") is not None:
            kwargs["consumer_group_migration_policy"] = str(props["group.consumer.migration.policy"]).strip().lower()
        rack_aware = props.get("samsa.group.consumer.rack.aware.assignment")
        if rack_aware is not None:
            kwargs["consumer_group_rack_aware_assignment"] = str(rack_aware).strip().lower() in ("true", "1")
        return cls(**kwargs)

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60 * 1000


# =========================================================================== requests

@dataclass(kw_only=True, slots=True)
class _Request:
    token: Any = None
    api_version: int = 0
    client_id: str = ""
    client_host: str = ""


@dataclass(kw_only=True, slots=True)
class OffsetCommit(_Request):
    """OffsetCommit. v0 has no generation/member (defaults); ``retention_time_ms`` is v2-v4 only."""
    group_id: str | None
    topics: list[OffsetCommitTopic]
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    retention_time_ms: int = DEFAULT_RETENTION_TIME


@dataclass(kw_only=True, slots=True)
class TxnOffsetCommit(_Request):
    """TxnOffsetCommit: offsets that take effect when the producer's transaction commits. The
    caller has already checked that the group's partition is in the producer's transaction
    (KIP-890 verification), so the producer id/epoch here are current."""
    group_id: str | None
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: list[OffsetCommitTopic]
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None


@dataclass(slots=True)
class OffsetFetchGroup:
    """One group of an OffsetFetch; ``topics=None`` asks for every committed offset."""
    group_id: str | None
    topics: list[TopicPartitions] | None = None
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(kw_only=True, slots=True)
class OffsetFetch(_Request):
    """OffsetFetch; v0-v7 name one group, v8+ several (one ``OffsetFetchGroup`` each)."""
    groups: list[OffsetFetchGroup]
    require_stable: bool = False


@dataclass(kw_only=True, slots=True)
class OffsetDelete(_Request):
    group_id: str | None
    topics: list[TopicPartitions]


@dataclass(kw_only=True, slots=True)
class DescribeGroups(_Request):
    groups: list[str | None]


@dataclass(kw_only=True, slots=True)
class ListGroups(_Request):
    states_filter: list[str] = field(default_factory=list)
    types_filter: list[str] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class DeleteGroups(_Request):
    groups: list[str | None]


@dataclass(kw_only=True, slots=True)
class TopicsDeleted(_Request):
    """Not a client request: the broker deleted these topics (Kafka's onPartitionsDeleted)."""
    topics: list[str]


# =========================================================================== results

@dataclass(slots=True)
class OffsetCommitResult:
    topics: list[TopicPartitionErrors]


@dataclass(slots=True)
class TxnOffsetCommitResult:
    topics: list[TopicPartitionErrors]


@dataclass(slots=True)
class OffsetFetchGroupResult:
    group_id: str | None
    error_code: int
    topics: list[OffsetFetchTopic] = field(default_factory=list)


@dataclass(slots=True)
class OffsetFetchResult:
    """One entry per requested group, in request order (v0-v7: use ``groups[0]``)."""
    groups: list[OffsetFetchGroupResult]


@dataclass(slots=True)
class OffsetDeleteResult:
    error_code: int
    topics: list[TopicPartitionErrors] = field(default_factory=list)


@dataclass(slots=True)
class TopicsDeletedResult:
    error_code: int
    offsets_removed: int = 0


@dataclass(slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(slots=True)
class DescribedGroup:
    group_id: str
    error_code: int = NONE
    error_message: str | None = None
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: list[DescribedMember] = field(default_factory=list)


@dataclass(slots=True)
class DescribeGroupsResult:
    groups: list[DescribedGroup]


@dataclass(slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(slots=True)
class ListGroupsResult:
    error_code: int
    groups: list[ListedGroup] = field(default_factory=list)


@dataclass(slots=True)
class DeletableGroupResult:
    group_id: str | None
    error_code: int


@dataclass(slots=True)
class DeleteGroupsResult:
    results: list[DeletableGroupResult]


def batch_size_of(record: Record) -> int:
    """Bytes of a v2 record batch holding just this record, uncompressed: Kafka refuses to append
    a batch larger than max.message.bytes."""
    key, value = record
    klen = len(key)
    vlen = -1 if value is None else len(value)
    body: int = 1 + 1 + 1 + size_of_varint(klen) + klen + size_of_varint(vlen) + max(vlen, 0) + 1
    return HEADER_SIZE + int(size_of_varint(body)) + body


TimerKey = tuple[Any, ...]
"""A timer's key: its kind first (``"heartbeat"``, ``"cg-session"``, ...), then the group id."""
_Timer = tuple[int, int, Callable[[Step], None]]


class GroupCoordinatorBase:
    """The state of one ``__consumer_offsets`` partition's group coordinator, declared and created
    in one place, with the helpers over it that every part uses: the classic protocol
    (``coordinator.group.classic``), the consumer protocol (``coordinator.group.consumer``), classic
    members of consumer groups (``coordinator.group.consumer_classic``) and the offset/admin APIs
    (``coordinator.group.coordinator``) all inherit from it, so none of them reaches into
    attributes another file happens to create. Cross-part calls go through methods declared on
    the part that defines them, which the parts inherit in order (classic, consumer, consumer
    classic); the two a consumer group needs from the part after it are declared as hooks on
    ``ConsumerGroupHandlers``.

    The timer queue (session expiry, join/sync deadlines, offset expiry) is keyed timers on a heap,
    fired in deadline order with the injected clock."""

    def __init__(self, config: GroupCoordinatorConfig | None = None, partition: int | None = None, *,
                 loading: bool = False, member_id_factory: Callable[[], str] | None = None,
                 group_configs: Callable[[str], Mapping[str, str]] | None = None) -> None:
        self.config = config or GroupCoordinatorConfig()
        # Kafka's GroupConfigManager: a group's dynamic configs (GROUP ConfigRecords in the metadata
        # log) by group id, read when a heartbeat or a session timer needs them.
        self.group_configs: Callable[[str], Mapping[str, str]] = group_configs or (lambda group_id: {})
        self.partition = partition
        self.loading = loading
        self.offsets = OffsetStore()
        self._groups: dict[str, ClassicGroup] = {}            # classic groups (and "simple" ones)
        self._consumer_groups: dict[str, ConsumerGroup] = {}  # KIP-848 consumer groups
        self._regex_cache: dict[str, Any] = {}                # compiled subscription regexes
        self._member_id_factory = member_id_factory or (lambda: str(uuid.uuid4()))
        self._timers: dict[TimerKey, _Timer] = {}
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._deferred: set[TimerKey] = set()                 # _defer'red keys not yet fired
        self._seq = itertools.count()
        self._now: int | None = None                          # None until loaded: the clock starts then
        self._unloaded = False

    # ------------------------------------------------------------------ hooks

    def _on_loaded(self, step: Step) -> None:
        """The clock starts (first ``_advance``): start the timers of replayed state."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers

    def _fits(self, record: Record) -> bool:
        return batch_size_of(record) <= self.config.max_message_bytes

    def _owns(self, group_id: str) -> bool:
        return self.partition is None or partition_for_group(
            group_id, self.config.offsets_topic_num_partitions) == self.partition

    def _new_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{self._member_id_factory()}"

    def _drop_group(self, group_id: str) -> None:
        if self._groups.pop(group_id, None) is not None:
            self._cancel_group_timers(group_id)

    # ------------------------------------------------------------------ timers

    def next_deadline(self) -> int | None:
        """When ``tick`` has work next (absolute ms), or None."""
        while self._heap:
            deadline, seq, key = self._heap[0]
            timer = self._timers.get(key)
            if timer is not None and timer[1] == seq:
                return deadline
            heapq.heappop(self._heap)
        return None

    def _schedule(self, key: TimerKey, delay_ms: int, fn: Callable[[Step], None]) -> None:
        assert self._now is not None
        seq = next(self._seq)
        deadline = self._now + max(0, delay_ms)
        self._timers[key] = (deadline, seq, fn)
        heapq.heappush(self._heap, (deadline, seq, key))

    def _defer(self, key: TimerKey, fn: Callable[[Step], None]) -> None:
        """Kafka's CoordinatorExecutor: work due at once that must not run within the request that
        scheduled it (a regex resolution) but as its own later step, which the runtime runs with
        ``tick`` (or the next request runs first)."""
        self._schedule(key, 0, fn)
        self._deferred.add(key)

    def _cancel(self, key: TimerKey) -> None:
        self._timers.pop(key, None)
        self._deferred.discard(key)

    def _advance(self, now_ms: int, step: Step, hold_deferred: bool = False) -> None:
        """Fire due timers in deadline order; each fires with the clock at its own deadline.
        ``hold_deferred``: leave the work the current request deferred (``_defer``) for later."""
        heap = self._heap
        if self._now is not None and (not heap or heap[0][0] > now_ms):   # nothing due: most steps
            if now_ms > self._now:
                self._now = now_ms
            return
        if self._now is None:
            self._now = now_ms
            self._on_loaded(step)
        held = []
        while self._heap and self._heap[0][0] <= now_ms:
            deadline, seq, key = heapq.heappop(self._heap)
            timer = self._timers.get(key)
            if timer is None or timer[1] != seq:
                continue
            if hold_deferred and key in self._deferred:
                held.append((deadline, seq, key))
                continue
            del self._timers[key]
            self._deferred.discard(key)
            self._now = max(self._now, deadline)
            timer[2](step)
        for entry in held:
            heapq.heappush(self._heap, entry)
        self._now = max(self._now, now_ms)

    def _cancel_group_timers(self, group_id: str) -> None:
        for key in [k for k in self._timers if len(k) > 1 and k[1] == group_id]:
            del self._timers[key]
            self._deferred.discard(key)

    def _now_ms(self) -> int:
        assert self._now is not None
        return self._now
