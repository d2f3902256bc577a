"""The log of one partition: ordered segments, offsets, and idempotent-producer state.

Single node: the leader is the only replica, so the high watermark is the log end offset
once an append returns. Appends validate every batch before writing any of them.

Storage rules follow Kafka's Log/LogLoader: a segment rolls on ``segment.bytes`` or when the
incoming batch's timestamp is ``segment.ms`` past the segment's first batch; retention deletes
whole segments from the oldest (rolling first when every segment has expired, so the active
one can go too); start-up trusts persisted indexes and producer snapshots where they check
out and rebuilds from the batches otherwise; an unclean shutdown means the last segment is
walked with CRC checks and a torn tail cut (the cut bytes are kept beside it).
"""
from __future__ import annotations

import bisect
import json
import os
import random
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Sequence

import structlog

from coordinator.txn.producer_state import ProducerStateTable
from protocol import records as rb
from protocol.errors import ErrorCode

from . import index as ix
from .append_settings import AppendSettings
from .epoch_cache import EpochCheckpointInvalid, LeaderEpochCache
from .fds import FdCache
from .segment import Segment, segment_name

if TYPE_CHECKING:
    import trio

    from broker.replica.state import ReplicaState

MAX_RELATIVE_OFFSET = 0x7FFFFFFF
SNAPSHOTS_KEPT = 2
LEFTOVER_SUFFIXES = (".cleaned", ".deleted", ".tmp")

log = structlog.get_logger("samsa.log")


CONTROL_ABORT, CONTROL_COMMIT = 0, 1
_OFFSET_AND_LENGTH = struct.Struct(">qi")  # a batch's base offset and length field


@dataclass(slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # offset of the ABORT marker


def control_marker(data: bytes | bytearray, h: rb.BatchHeader) -> int | None:
    """The control type (0 abort, 1 commit) of a control batch's first record."""
    return control_record(data, h)[0]


def control_record(data: bytes | bytearray, h: rb.BatchHeader) -> tuple[int | None, int]:
    """(control type, coordinator epoch) of a control batch's first record; the epoch is -1
    unless the value is an end-transaction marker (version int16, coordinator epoch int32)."""
    for r in rb.iter_records(data, h):
        if r.key is not None and len(r.key) >= 4:
            epoch = struct.unpack_from(">i", r.value, 2)[0] if r.value is not None and len(r.value) >= 6 else -1
            return struct.unpack_from(">h", r.key, 2)[0], epoch
    return None, -1


def _all_keyed(data: bytes | bytearray, h: rb.BatchHeader) -> bool:
    """Kafka's LogValidator rule for compacted topics (the one per-record walk on produce,
    and only for compacted topics)."""
    section = rb.records_section(data, h)
    return all(span.key is not None for span in rb.iter_record_spans(section, h.record_count))


@dataclass(slots=True)
class AppendResult:
    error: int = ErrorCode.NONE
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = 0
    message: str | None = None


class LogCorrupt(Exception):
    """The partition's files contradict each other in a way start-up must not paper over."""


def _base_offset(seg: Segment) -> int:
    return seg.base_offset


def _wall_ms() -> int:
    return int(time.time() * 1000)


_WALK_READ = 1 << 16  # a span this short is read in one go; longer ones header by header


def _last_boundary(seg: Segment, first: int, end: int, upper_offset: int) -> int:
    """The end of the last whole batch at or before ``end`` whose base offset is below
    ``upper_offset``, walking from the nearest indexed batch after ``first`` (the caller has
    checked that the batch at ``first`` qualifies)."""
    j = min(bisect.bisect_right(seg.idx_positions, end),
            bisect.bisect_left(seg.idx_offsets, upper_offset)) - 1
    pos = max(first, seg.idx_positions[j]) if j >= 0 else first
    start = pos
    buf = os.pread(seg.fd, end - pos, pos) if end - pos <= _WALK_READ else None
    while pos + rb.LOG_OVERHEAD <= end:
        if buf is not None:
            base, length = _OFFSET_AND_LENGTH.unpack_from(buf, pos - start)
        else:
            base, length = _OFFSET_AND_LENGTH.unpack(os.pread(seg.fd, rb.LOG_OVERHEAD, pos))
        nxt = pos + rb.LOG_OVERHEAD + length
        if nxt > end or base >= upper_offset:
            break
        pos = nxt
    return pos


class Partition:
    def __init__(self, topic: str, index: int, directory: str,
                 config: Callable[[str], Any], leader_epoch: int = 0, fds: FdCache | None = None,
                 clock: Callable[[], int] | None = None,
                 settings: Callable[[], AppendSettings] | None = None) -> None:
        self.topic = topic
        self.index = index
        self.directory = directory
        self.config = config  # effective topic config lookup
        # the configs an append reads, parsed: the log manager's per-topic cache (dropped when the
        # topic's configs change); without one, resolved from ``config`` on every append
        self.settings: Callable[[], AppendSettings] = settings or (lambda: AppendSettings(self.config))
        self.leader_epoch = leader_epoch
        self.fds = fds if fds is not None else FdCache()
        self.clock = clock or _wall_ms
        self.segments: list[Segment] = []
        self.log_start_offset = 0
        self.producers = ProducerStateTable()
        self.unflushed_messages = 0
        self.flush_due = False          # flush.messages reached: the produce path syncs before answering
        self.last_flush_ms = 0
        self.synced_offset = 0          # everything below is known to be fsynced
        self.sync_in_flight: trio.Event | None = None  # a trio.Event while a background fsync runs (broker/log/flush.py)
        self.cleaning = False           # the cleaner has a pass in flight over this partition
        self.deleted = False            # its topic was deleted (background tasks skip it)
        # set by the log manager: removes files after file.delete.delay.ms (none: at once)
        self.delete_later: Callable[[list[str], int], None] | None = None
        # set by the log manager: told of every leader append (produce, coordinator records,
        # markers), so parked fetches and acks=all waits are woken by one mechanism
        self.on_append: Callable[[Partition], None] | None = None
        # transactions: open ones (producer id -> first offset) and aborted ranges for read_committed
        self.ongoing_txns: dict[int, int] = {}
        self.aborted_txns: list[AbortedTxn] = []
        # replication (broker/replica/): which leader epoch wrote which offsets; the high
        # watermark when other replicas exist (None: this is the only replica, HW = log end);
        # the replica manager's state for the partition (None: single node, always leader).
        # The epoch cache is read from disk below (_load_epochs), before anything uses it.
        self.epochs: LeaderEpochCache
        self.hw: int | None = None
        self.replica: ReplicaState | None = None
        # the cleaner's (broker/log/cleaner.py): its checkpoint, read on first use; a corrupt batch
        # it met, which stops it from cleaning this partition
        self.cleaner_checkpoint: int | None = None
        self.uncleanable = False

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.index}"

    def _interval(self) -> int:
        return int(self.config("index.interval.bytes"))

    def policies(self) -> set[str]:
        return {p.strip() for p in str(self.config("cleanup.policy") or "delete").split(",")}

    def _new_segment(self, base: int, created_ms: int | None = None, new_file: bool = False) -> Segment:
        return Segment(self.directory, base, self._interval(), self.fds, created_ms, new_file=new_file)

    # -- lifecycle -----------------------------------------------------------------------
    def open(self, clean_shutdown: bool) -> None:
        """Load the segments: persisted indexes where they check out (always for a clean
        shutdown), a CRC-checked walk of the last segment after an unclean one, then producer
        state from the newest usable snapshot plus the batches after it."""
        os.makedirs(self.directory, exist_ok=True)
        self._clean_leftovers()
        bases = sorted(int(f[:-4]) for f in os.listdir(self.directory)
                       if f.endswith(".log") and f[:-4].isdigit())
        for i, base in enumerate(bases):
            seg = self._new_segment(base)
            last = i == len(bases) - 1
            if last and not clean_shutdown:
                result = seg.rebuild(validate_crc=True)
            else:
                why = seg.load(validate_tail_crc=not clean_shutdown)
                if why is None:
                    seg.index_dirty = False
                    self.segments.append(seg)
                    continue
                log.warning("rebuilding segment index", segment=seg.path, reason=why)
                result = seg.rebuild(validate_crc=True)
            seg.index_dirty = True
            if result.truncated_bytes and not last:
                log.error("segment in the middle of the log had a corrupt tail; the cut bytes were saved",
                          segment=seg.path, missing_from_offset=seg.next_offset,
                          next_segment_base=bases[i + 1], reason=result.reason)
            self.segments.append(seg)
        for a, b in zip(self.segments, self.segments[1:]):
            if a.next_offset > b.base_offset:
                raise LogCorrupt(f"{self.directory}: segment {a.path} holds offsets up to {a.next_offset - 1}, "
                                 f"overlapping the next segment {b.path}; refusing to guess which is right")
        now = self.clock()
        if not self.segments:
            self.segments.append(self._new_segment(0, now))
            self.segments[-1].index_dirty = True
        self.log_start_offset = max(self.segments[0].base_offset, self._read_log_start_offset())
        self._load_epochs()
        self._load_producer_state()
        if not clean_shutdown and self.segments[-1].size:
            self.segments[-1].flush()  # what was recovered is durable before anything new is acknowledged
        self.synced_offset = self.log_end_offset
        self.last_flush_ms = now

    def create(self) -> bool:
        """A new, empty partition in a directory made here: what ``open`` would find in it
        (one empty segment at offset 0, no epochs, no producers) without listing and reading
        it — ~0.1 ms less per partition a topic change creates. False, and nothing done, when
        the directory already exists (left by a crash or an earlier replica): ``open`` it then.
        Nothing is fsynced, as Kafka's LogManager.getOrCreateLog does not: the topic file
        records that the partition exists (broker/log/topic_file.py)."""
        try:
            os.mkdir(self.directory)
        except FileExistsError:
            return False
        now = self.clock()
        seg = self._new_segment(0, now, new_file=True)
        seg.index_dirty = True
        self.segments.append(seg)
        self.log_start_offset = 0
        self.epochs = LeaderEpochCache(self.directory, [], write=False)   # nothing to read, nothing written yet
        self.synced_offset = 0
        self.last_flush_ms = now
        return True

    def _clean_leftovers(self) -> None:
        """Finish or undo what a crash interrupted: temporary and half-cleaned files go,
        a ``.swap`` (a cleaned segment whose swap-in began) replaces the segments it covers."""
        names = os.listdir(self.directory)
        for name in names:
            if name.endswith(LEFTOVER_SUFFIXES):
                os.unlink(os.path.join(self.directory, name))
                log.info("removed leftover file of an interrupted operation", file=name, partition=self.name)
        for name in sorted(n for n in names if n.endswith(".log.swap")):
            base = int(name.split(".")[0])
            swap_path = os.path.join(self.directory, name)
            replaces_path = swap_path + ".replaces"
            try:
                with open(replaces_path) as f:
                    replaced = [int(b) for b in json.load(f)]
            except (OSError, ValueError):
                # no record of the group: Kafka's rule, the segments starting inside the swap's range
                swapped = Segment(self.directory, base, self._interval(), self.fds, path=swap_path)
                swapped.rebuild(validate_crc=True)
                end = max(swapped.next_offset, base + 1)
                swapped.close()
                replaced = [int(n[:-4]) for n in os.listdir(self.directory)
                            if n.endswith(".log") and n[:-4].isdigit() and base <= int(n[:-4]) < end]
            for b in replaced:
                stem = os.path.join(self.directory, segment_name(b))
                if b != base and os.path.exists(stem + ".log"):
                    os.unlink(stem + ".log")
                ix.remove_indexes(stem)
            os.replace(swap_path, os.path.join(self.directory, segment_name(base) + ".log"))
            if os.path.exists(replaces_path):
                os.unlink(replaces_path)
            log.info("completed an interrupted segment swap", partition=self.name, base_offset=base,
                     replaced=replaced)
        current = os.listdir(self.directory)
        logs = {n[:-4] for n in current if n.endswith(".log")}
        for name in current:
            stem, _, ext = name.partition(".")
            if ext in ("index", "timeindex") and stem not in logs:
                os.unlink(os.path.join(self.directory, name))  # left by a deletion cut short
        for name in names:
            if name.endswith(".log.swap.replaces") and name[:-len(".replaces")] not in names:
                os.unlink(os.path.join(self.directory, name))  # written before a swap that never happened

    def _load_epochs(self) -> None:
        """The leader epoch cache from ``leader-epoch-checkpoint``; rebuilt from the batches'
        epochs when the file is missing (a log written before it existed) or unreadable, and
        cut at the log end (a tail cut at recovery takes its epochs along)."""
        epochs: LeaderEpochCache | None
        try:
            epochs = LeaderEpochCache(self.directory)
        except EpochCheckpointInvalid as exc:
            log.warning("rebuilding leader epoch checkpoint", partition=self.name, reason=str(exc))
            epochs = None
        leo = self.log_end_offset
        if epochs is None or (not epochs.entries and leo > self.log_start_offset):
            entries: list[tuple[int, int]] = []
            for seg in self.segments:
                for h in seg.iter_headers():
                    if h.last_offset >= self.log_start_offset and (not entries or h.leader_epoch > entries[-1][0]) \
                            and h.leader_epoch >= 0:
                        entries.append((h.leader_epoch, max(h.base_offset, self.log_start_offset)))
            epochs = LeaderEpochCache(self.directory, entries)
        self.epochs = epochs
        self.epochs.truncate_from_end(leo)

    def _load_producer_state(self) -> None:
        leo = self.log_end_offset
        start = None
        for off in reversed(ix.list_snapshots(self.directory)):
            if off > leo:
                os.unlink(ix.snapshot_path(self.directory, off))
                continue
            try:
                state = ix.read_snapshot(self.directory, off)
            except (ix.IndexInvalid, OSError) as exc:
                log.warning("ignoring producer snapshot", partition=self.name, offset=off, reason=str(exc))
                continue
            self.producers = ProducerStateTable.from_snapshot(state["producers"])
            self.ongoing_txns = {int(p): int(f) for p, f in state.get("ongoing", [])}
            self.aborted_txns = [AbortedTxn(*a) for a in state.get("aborted", [])]
            start = off
            break
        self._replay(start if start is not None else -1)

    def _replay(self, from_offset: int) -> None:
        """Producer and transaction state from the batches at or after ``from_offset``."""
        if from_offset >= self.log_end_offset:
            return
        for seg in self.segments[self._segment_index_for(max(from_offset, 0)):]:
            for h in seg.iter_headers():
                if h.base_offset < from_offset:
                    continue
                control = None
                if h.is_control:
                    control = seg.read(h.position, h.size)
                    h = rb.parse_header(control)
                self._track_batch(h, control)

    def snapshot_state(self) -> dict[str, Any]:
        return {"producers": self.producers.to_snapshot(),
                "ongoing": [[p, f] for p, f in self.ongoing_txns.items()],
                "aborted": [[a.producer_id, a.first_offset, a.last_offset] for a in self.aborted_txns
                            if a.last_offset >= self.log_start_offset]}

    def _write_snapshot(self, offset: int) -> None:
        ix.write_snapshot(self.directory, offset, self.snapshot_state())
        for old in ix.list_snapshots(self.directory)[:-SNAPSHOTS_KEPT]:
            try:
                os.unlink(ix.snapshot_path(self.directory, old))
            except FileNotFoundError:
                pass

    def _read_log_start_offset(self) -> int:
        try:
            with open(os.path.join(self.directory, "log-start-offset")) as f:
                return int(f.read().strip() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def _write_log_start_offset(self) -> None:
        self.epochs.truncate_from_start(self.log_start_offset)
        tmp = os.path.join(self.directory, "log-start-offset.tmp")
        with open(tmp, "w") as f:
            f.write(str(self.log_start_offset))
        os.replace(tmp, os.path.join(self.directory, "log-start-offset"))

    def close(self) -> None:
        """Persist what start-up needs to skip the walk: indexes of segments that changed and a
        producer snapshot at the log end."""
        for seg in self.segments:
            if getattr(seg, "index_dirty", True):
                try:
                    seg.write_indexes()
                    seg.index_dirty = False
                except OSError as exc:
                    log.warning("could not write segment index", segment=seg.path, error=str(exc))
        try:
            self._write_snapshot(self.log_end_offset)
        except OSError as exc:
            log.warning("could not write producer snapshot", partition=self.name, error=str(exc))
        for seg in self.segments:
            seg.close()

    def unflushed_segments(self) -> list[Segment]:
        return [s for s in self.segments if s.flushed_size < s.size]

    def flush(self) -> None:
        """fsync every segment with unsynced bytes (blocking; the trio shell uses flush.py)."""
        upto = self.log_end_offset
        for seg in self.unflushed_segments():
            seg.flush()
        self.mark_flushed(upto)

    def mark_flushed(self, upto: int) -> None:
        self.synced_offset = max(self.synced_offset, upto)
        if upto >= self.log_end_offset:
            self.unflushed_messages = 0
            self.flush_due = False
        self.last_flush_ms = self.clock()

    # -- offsets -------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        hw = self.hw
        return self.log_end_offset if hw is None else hw

    @property
    def last_stable_offset(self) -> int:
        if self.ongoing_txns:
            return min(min(self.ongoing_txns.values()), self.high_watermark)
        return self.high_watermark

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- append --------------------------------------------------------------------------
    def append(self, data: bytes | bytearray, batches: list[rb.BatchHeader], now_ms: int,
               built_here: bool = False, control_marker: tuple[int, int] | None = None) -> AppendResult:
        """Append validated batches from one produce request. A bytearray is stamped in place;
        immutable bytes are written with stamped heads beside views of the rest (no copy),
        unless log-append time means rewriting timestamps and CRCs. ``built_here``: a batch
        the broker built itself (append_internal), every record keyed and stamped ``now_ms``:
        the compacted-topic key walk and the timestamp bounds cannot fail, so they are skipped.
        ``control_marker``: (control type, coordinator epoch) of the one control batch the broker
        built (append_control), so it is not read back from the batch."""
        settings = self.settings()
        max_bytes = settings.max_message_bytes
        for h in batches:
            if h.size > max_bytes:
                return AppendResult(ErrorCode.MESSAGE_TOO_LARGE,
                                    message=f"batch of {h.size} bytes exceeds max.message.bytes {max_bytes}")
        if not built_here and settings.compact:
            for h in batches:
                try:
                    keyed = h.is_control or _all_keyed(data, h)
                except rb.InvalidBatch as exc:  # records that cannot be decompressed or walked
                    return AppendResult(exc.error_code, message=str(exc))
                if not keyed:
                    return AppendResult(ErrorCode.INVALID_RECORD,
                                        message=f"Compacted topic cannot accept message without key in topic "
                                                f"partition {self.name}.")
        log_append = settings.log_append_time
        if not log_append and not built_here:
            after = settings.timestamp_after_max_ms
            before = settings.timestamp_before_max_ms
            for h in batches:
                if h.max_timestamp >= 0 and h.max_timestamp - now_ms > after:
                    return AppendResult(ErrorCode.INVALID_TIMESTAMP,
                                        message="timestamp is too far in the future")
                if 0 <= h.base_timestamp < now_ms - before:
                    return AppendResult(ErrorCode.INVALID_TIMESTAMP, message="timestamp is too far in the past")
        for h in batches:
            if h.has_producer_id:
                v = self.producers.check(h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence)
                if v.error == ErrorCode.DUPLICATE_SEQUENCE_NUMBER and len(batches) == 1 and v.duplicate_of is not None:
                    # a retry of a batch already written: answer as Kafka does, with its offset
                    return AppendResult(ErrorCode.NONE, v.duplicate_of.first_offset, -1, self.log_start_offset)
                if v.error:
                    return AppendResult(v.error, message=v.message or None)
        next_offset = self.log_end_offset
        base = next_offset
        if self.leader_epoch > self.epochs.latest_epoch:
            self.epochs.assign(self.leader_epoch, base)
        if log_append and not isinstance(data, bytearray):
            data = bytearray(data)
        in_place = isinstance(data, bytearray)
        for h in batches:
            if isinstance(data, bytearray):    # in_place
                rb.stamp(data, h.position, next_offset, self.leader_epoch, now_ms if log_append else None)
            h.base_offset = next_offset
            if log_append:
                h.max_timestamp = now_ms
            next_offset += h.last_offset_delta + 1
        self._maybe_roll(len(data), max(h.max_timestamp for h in batches), next_offset - 1, now_ms, settings)
        self._append_active(data if in_place else rb.stamped_parts(data, batches, self.leader_epoch), data, batches,
                            control_marker, settings)
        if self.on_append is not None:
            self.on_append(self)
        return AppendResult(ErrorCode.NONE, base, now_ms if log_append else -1, self.log_start_offset)

    def _append_active(self, stored: bytes | bytearray | list, data: bytes | bytearray,
                       batches: list[rb.BatchHeader], control_marker: tuple[int, int] | None,
                       settings: AppendSettings) -> None:
        """What a leader's and a follower's append share: ``stored`` (the batches as written) into
        the active segment, then producer state, transactions and the flush.messages count from
        ``batches``/``data``."""
        active = self.segments[-1]
        active.append(stored, batches)
        active.index_dirty = True
        # producer state, transactions and the flush.messages count for the batches just written
        records = 0
        for h in batches:
            self._track_batch(h, data if h.is_control else None, control_marker)
            records += h.record_count
        self._count_unflushed(records, settings)

    def _count_unflushed(self, records: int, settings: AppendSettings) -> None:
        """The flush.messages count after ``records`` more were written to the active segment."""
        unflushed = self.unflushed_messages = self.unflushed_messages + records
        flush_messages = settings.flush_messages
        if flush_messages is not None and unflushed >= flush_messages:
            self.flush_due = True  # the produce path (or the flusher task) fsyncs off the event loop

    def _track_batch(self, h: rb.BatchHeader, control_data: bytes | bytearray | None,
                     control_marker: tuple[int, int] | None = None) -> None:
        """Producer state and transaction bookkeeping for one appended (or recovered) batch."""
        if not h.has_producer_id:
            return
        producer_id = h.producer_id
        if h.is_control:
            marker: int | None
            if control_marker is not None:
                marker, coordinator_epoch = control_marker
            else:
                marker, coordinator_epoch = control_record(control_data, h) if control_data is not None else (None, -1)
            first = self.ongoing_txns.pop(producer_id, None)
            if marker == CONTROL_ABORT and first is not None:
                self.aborted_txns.append(AbortedTxn(producer_id, first, h.last_offset))
            self.producers.end_transaction(producer_id, h.producer_epoch, coordinator_epoch)
            return
        self.producers.update(producer_id, h.producer_epoch, h.base_sequence, h.last_sequence,
                              h.base_offset, h.last_offset, h.max_timestamp, h.is_transactional)
        if h.is_transactional:
            self.ongoing_txns.setdefault(producer_id, h.base_offset)

    def append_control(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                       now_ms: int) -> int:
        """Write a transaction marker (COMMIT or ABORT control batch); returns its offset."""
        marker = CONTROL_COMMIT if commit else CONTROL_ABORT
        key = struct.pack(">hh", 0, marker)
        value = struct.pack(">hi", 0, coordinator_epoch)
        return self.append_internal([(key, value)], now_ms, producer_id=producer_id,
                                    producer_epoch=producer_epoch, transactional=True, control=True,
                                    control_marker=(marker, coordinator_epoch))

    def aborted_in_range(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start, end): what a read_committed fetch needs."""
        return [a for a in self.aborted_txns if a.last_offset >= start and a.first_offset < end]

    def append_internal(self, records: Sequence[tuple[bytes | None, bytes | None]], now_ms: int,
                        producer_id: int = rb.NO_PRODUCER_ID, producer_epoch: int = -1, transactional: bool = False,
                        control: bool = False, control_marker: tuple[int, int] | None = None) -> int:
        """Append broker-written records (internal topics, markers); returns the base offset.

        The broker's own appends (one per offset commit, three or more per transaction) take a
        short path with what :meth:`append` does for such a batch and nothing else: the batch is
        built already stamped with its offset and leader epoch (rb.internal_batch, the same
        bytes as build_batch then stamp), its header made rather than parsed and only for a
        batch with a producer id (markers, transactional offset commits: the producer state
        reads it; an offset commit's append needs nothing it does not know already), and the
        configs read from the partition's cached settings. Its checks are append's for a batch
        built here: the size limit, the producer's epoch (markers, transactional offset
        commits); every record is keyed and stamped now, so the compacted-topic key walk and
        the timestamp bounds cannot fail. A topic with log-append time (a marker on a user
        topic) or an unkeyed record take :meth:`append` itself."""
        settings = self.settings()
        keyed = control
        if not keyed:
            for key, _ in records:
                if key is None:
                    break
            else:
                keyed = True
        attributes = (rb.TRANSACTIONAL_MASK if transactional else 0) | (rb.CONTROL_MASK if control else 0)
        if settings.log_append_time or not keyed:
            built = rb.build_batch(records, timestamp_ms=now_ms, producer_id=producer_id,
                                   producer_epoch=producer_epoch, transactional=transactional, control=control)
            result = self.append(built, [rb.parse_header(built)], now_ms, built_here=keyed,
                                 control_marker=control_marker)
            if result.error:
                raise RuntimeError(f"internal append failed: {result.error} {result.message}")
            return result.base_offset
        active = self.segments[-1]
        base = active.next_offset               # the log end offset
        leader_epoch = self.leader_epoch
        n = len(records)
        h: rb.BatchHeader | None = None
        if producer_id >= 0:
            data, h = rb.build_internal_batch(records, base, leader_epoch, now_ms, producer_id, producer_epoch,
                                              attributes)
        else:   # an offset commit, a group's records: no producer state to keep, so no header
            data = rb.internal_batch(records, base, leader_epoch, now_ms, producer_id, producer_epoch, attributes)
        size = len(data)
        if size > settings.max_message_bytes:
            raise RuntimeError(f"internal append failed: {ErrorCode.MESSAGE_TOO_LARGE} batch of "
                               f"{size} bytes exceeds max.message.bytes "
                               f"{settings.max_message_bytes}")
        if h is not None:
            v = self.producers.check(producer_id, producer_epoch, rb.NO_SEQUENCE, rb.NO_SEQUENCE)
            if v.error == ErrorCode.DUPLICATE_SEQUENCE_NUMBER and v.duplicate_of is not None:
                return v.duplicate_of.first_offset    # what append answers for a retried batch
            if v.error:
                raise RuntimeError(f"internal append failed: {v.error} {v.message or None}")
        if leader_epoch > self.epochs.latest_epoch:
            self.epochs.assign(leader_epoch, base)
        last = base + n - 1
        if active.size:     # _maybe_roll's own first test, without the call for a new segment
            self._maybe_roll(size, now_ms, last, now_ms, settings)
            active = self.segments[-1]
        active.append_batch(data, base, last, now_ms)
        active.index_dirty = True
        # what _append_active does after its write, for this one batch: producer state only for a batch with a producer id
        if h is not None:
            self._track_batch(h, data if control else None, control_marker)
        self._count_unflushed(n, settings)
        on_append = self.on_append
        if on_append is not None:
            on_append(self)
        return base

    # -- replication -----------------------------------------------------------------------
    def append_as_follower(self, data: bytes | bytearray, now_ms: int) -> int:
        """Append batches fetched from the leader with the leader's offsets and epochs (no
        stamping, no producer checks: the leader made them). Producer state, transactions and
        the epoch cache follow the batches, so a follower that becomes leader continues the
        sequence checks. Returns the new log end offset; raises InvalidBatch for data that
        does not continue this log."""
        batches = list(rb.iter_batches(data))
        leo = self.log_end_offset
        if batches[0].base_offset != leo:
            raise rb.InvalidBatch(ErrorCode.CORRUPT_MESSAGE,
                                  f"fetched batch at offset {batches[0].base_offset}, log end is {leo}")
        expected = leo
        for h in batches:
            if h.base_offset < expected:
                raise rb.InvalidBatch(ErrorCode.CORRUPT_MESSAGE, "fetched offsets do not increase")
            expected = h.last_offset + 1
        for h in batches:
            if h.leader_epoch > self.epochs.latest_epoch:
                self.epochs.assign(h.leader_epoch, h.base_offset)
        settings = self.settings()
        self._maybe_roll(len(data), max(h.max_timestamp for h in batches), batches[-1].last_offset, now_ms, settings)
        self._append_active(data, data, batches, None, settings)
        return self.log_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop everything and continue at ``offset`` (Kafka's truncateFullyAndStartAt: the
        leader's log starts after this follower's end)."""
        self.truncate_to(self.log_start_offset)
        if offset > self.log_end_offset:
            for seg in self.segments:
                seg.delete_files()
            self.segments = [self._new_segment(offset, self.clock())]
            self.segments[-1].index_dirty = True
            self.log_start_offset = offset
            self._write_log_start_offset()
            self.epochs.clear()
            for off in ix.list_snapshots(self.directory):
                os.unlink(ix.snapshot_path(self.directory, off))
            self.producers = ProducerStateTable()
            self.ongoing_txns, self.aborted_txns = {}, []
            self.hw = offset
            self.synced_offset = offset

    def truncate_to(self, offset: int) -> None:
        """Cut the log at ``offset`` (Kafka's Log.truncateTo): a follower, or an old leader
        coming back, drops a tail the current leader does not have. Whole batches go (the one
        holding ``offset`` too); segments, indexes, producer and transaction state, the epoch
        cache and the high watermark follow."""
        if offset >= self.log_end_offset:
            return
        offset = max(offset, self.log_start_offset)
        if offset <= self.segments[0].base_offset:
            dropped, self.segments = self.segments, []
            for seg in dropped:
                seg.delete_files()
            self.segments.append(self._new_segment(offset, self.clock()))
            self.segments[-1].index_dirty = True
            self.log_start_offset = offset
            self._write_log_start_offset()
        else:
            while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
                self.segments.pop().delete_files()
            seg = self.segments[-1]
            h = seg.find_batch(offset)
            if h is not None:
                os.ftruncate(seg.fd, h.position)
                seg.size = h.position
                seg.flushed_size = min(seg.flushed_size, h.position)
                seg.rebuild(validate_crc=False)
                ix.remove_indexes(seg.stem)
                seg.index_dirty = True
        leo = self.log_end_offset
        self.epochs.truncate_from_end(leo)
        for off in ix.list_snapshots(self.directory):
            if off > leo:
                os.unlink(ix.snapshot_path(self.directory, off))
        self.producers = ProducerStateTable()
        self.ongoing_txns = {}
        self.aborted_txns = []
        self._load_producer_state()
        if self.hw is not None and self.hw > leo:
            self.hw = leo
        self.synced_offset = min(self.synced_offset, leo)
        log.info("log truncated", partition=self.name, offset=offset, log_end_offset=leo)

    def _maybe_roll(self, incoming: int, max_ts: int, last_offset: int, now_ms: int,
                    settings: AppendSettings) -> None:
        """Kafka's LogSegment.shouldRoll: size, time since the first batch (by record
        timestamps, else by creation time) beyond segment.ms less the segment's jitter, or
        offsets beyond a 32-bit relative index."""
        active = self.segments[-1]
        if active.size == 0:
            return
        if active.size + incoming > settings.segment_bytes or \
                last_offset - active.base_offset > MAX_RELATIVE_OFFSET:
            self.roll(now_ms)
            return
        segment_ms = settings.segment_ms
        if segment_ms is None:
            return
        if active.roll_jitter_ms is None:
            # Kafka's randomSegmentJitter: drawn once per segment, below both limits
            jitter = settings.segment_jitter_ms
            active.roll_jitter_ms = random.randrange(min(jitter, segment_ms)) if jitter > 0 else 0
        first = active.rolling_timestamp()
        waited = max_ts - first if first is not None and max_ts >= 0 else now_ms - active.created_ms
        if waited > segment_ms - active.roll_jitter_ms:
            self.roll(now_ms)

    def roll(self, now_ms: int | None = None) -> Segment:
        """Start a new active segment at the log end; the old one's indexes and a producer
        snapshot at the new base are written so start-up need not walk the old one."""
        active = self.segments[-1]
        active.write_indexes()
        active.index_dirty = False
        seg = self._new_segment(active.next_offset, now_ms if now_ms is not None else self.clock())
        seg.index_dirty = True
        self.segments.append(seg)
        self._write_snapshot(seg.base_offset)
        return seg

    # -- reads ---------------------------------------------------------------------------
    def _segment_index_for(self, offset: int) -> int:
        i = bisect.bisect_right(self.segments, offset, key=_base_offset) - 1
        return max(i, 0)

    def read(self, offset: int, max_bytes: int, upper_offset: int, min_one: bool = True) -> bytes:
        """Whole stored batches starting with the one that contains ``offset``, below
        ``upper_offset``, at most ``max_bytes`` unless the first batch alone is larger and
        ``min_one`` is set (Kafka's first-batch rule)."""
        found = self.locate(offset, max_bytes, upper_offset, min_one)
        if found is None:
            return b""
        seg, pos, length = found
        return seg.read(pos, length)

    def locate(self, offset: int, max_bytes: int, upper_offset: int,
               min_one: bool = True) -> tuple[Segment, int, int] | None:
        """(segment, position, length) of the batches :meth:`read` returns, or None; Fetch
        sends them from the file without reading them."""
        if offset >= upper_offset:
            return None
        i = self._segment_index_for(offset)
        while i < len(self.segments):
            seg = self.segments[i]
            h = seg.find_batch(offset)
            if h is not None:
                break
            i += 1
        else:
            return None
        if h.base_offset >= upper_offset:
            return None
        want = min(max_bytes, seg.size - h.position)
        if want < h.size:
            if not min_one:
                return None
            want = h.size
        end = h.position + want
        if upper_offset < seg.next_offset or end < seg.size:
            end = _last_boundary(seg, h.position, end, upper_offset)
        return seg, h.position, end - h.position

    def offset_for_timestamp(self, ts: int) -> tuple[int, int] | None:
        """First record at or after the log start with timestamp >= ts: (offset, timestamp)."""
        for seg in self.segments:
            if seg.max_timestamp >= ts:
                found = self._scan_segment_for_timestamp(seg, ts)
                if found:
                    return found
        return None

    def _scan_segment_for_timestamp(self, seg: Segment, ts: int) -> tuple[int, int] | None:
        start_h = seg.first_batch_with_timestamp(ts)
        if start_h is None:
            return None
        for h in seg.iter_headers(start_h.position):
            if h.max_timestamp < ts or h.last_offset < self.log_start_offset or h.is_control:
                continue
            data = seg.read(h.position, h.size)
            pos = h.position
            h.position = 0
            for r in rb.iter_records(data, h):
                if r.offset >= self.log_start_offset and r.timestamp >= ts:
                    return r.offset, r.timestamp
            h.position = pos
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        best: Segment | None = None
        for seg in self.segments:
            if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None or best.max_timestamp_position() < 0:
            return None
        h = best.header_at(best.max_timestamp_position())
        data = best.read(h.position, h.size)
        h.position = 0
        for r in rb.iter_records(data, h):
            if r.timestamp == best.max_timestamp:
                return r.offset, r.timestamp
        return h.base_offset, best.max_timestamp

    # -- deletion ------------------------------------------------------------------------
    def delete_records_before(self, offset: int) -> None:
        """Advance the log start offset and drop segments wholly below it."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        self._delete_old_segments(lambda seg, nxt: nxt is not None and nxt.base_offset <= offset,
                                  "log start offset", roll_if_all=False)
        if len(self.segments) == 1 and self.segments[0].size and self.segments[0].next_offset <= offset:
            # everything is below the new start: roll, then the old active segment can go
            self._delete_old_segments(lambda seg, nxt: True, "log start offset")
        self._prune_aborted()
        self._write_log_start_offset()

    def apply_retention(self, now_ms: int) -> int:
        """Kafka's deleteOldSegments: retention.ms, retention.bytes (for the delete policy),
        then segments wholly below the log start offset. Returns the segments deleted."""
        deleted = 0
        if "delete" in self.policies():
            retention_ms = self.config("retention.ms")
            if retention_ms is not None and int(retention_ms) >= 0:
                limit = int(retention_ms)
                deleted += self._delete_old_segments(
                    lambda seg, nxt: now_ms - seg.largest_timestamp > limit, "retention.ms")
            retention_bytes = self.config("retention.bytes")
            if retention_bytes is not None and int(retention_bytes) >= 0:
                excess = [self.size_bytes - int(retention_bytes)]

                def over_size(seg: Segment, nxt: Segment | None) -> bool:
                    if excess[0] - seg.size >= 0:
                        excess[0] -= seg.size
                        return True
                    return False
                deleted += self._delete_old_segments(over_size, "retention.bytes")
        deleted += self._delete_old_segments(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, "log start offset")
        return deleted

    def _delete_old_segments(self, predicate: Callable[[Segment, Segment | None], bool], reason: str,
                             roll_if_all: bool = True) -> int:
        if self.cleaning:
            return 0  # the cleaner is rewriting these segments; retention runs again next check
        deletable: list[Segment] = []
        for i, seg in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            if nxt is None and seg.size == 0:
                break
            if not predicate(seg, nxt):
                break
            deletable.append(seg)
        if not deletable:
            return 0
        if len(deletable) == len(self.segments):
            if not roll_if_all:
                deletable.pop()
                if not deletable:
                    return 0
            else:
                self.roll()
        del self.segments[:len(deletable)]
        delay = int(self.config("file.delete.delay.ms") or 0)
        later = delay > 0 and self.delete_later is not None
        for seg in deletable:
            renamed = seg.delete_files(later=later)
            if later:
                self.delete_later(renamed, delay)  # type: ignore[misc]
        start = max(self.log_start_offset, self.segments[0].base_offset)
        moved = start != self.log_start_offset
        self.log_start_offset = start
        self._prune_aborted()
        if moved:
            self._write_log_start_offset()
        log.info("deleted log segments", partition=self.name, reason=reason, segments=len(deletable),
                 bytes=sum(s.size for s in deletable), log_start_offset=self.log_start_offset)
        return len(deletable)

    def _prune_aborted(self) -> None:
        if self.aborted_txns and self.aborted_txns[0].last_offset < self.log_start_offset:
            self.aborted_txns = [a for a in self.aborted_txns if a.last_offset >= self.log_start_offset]

    def delete(self) -> None:
        for seg in self.segments:
            seg.delete_files()
        for f in os.listdir(self.directory):
            os.unlink(os.path.join(self.directory, f))
        os.rmdir(self.directory)
