"""Kafka's LeaderEpochFileCache: which leader epoch wrote which offsets of a partition.

Each entry is (epoch, start offset): the first offset written under that epoch. It is kept
in ``leader-epoch-checkpoint`` beside the segments, in Kafka's checkpoint format::

    0            <- version
    2            <- number of entries
    0 0          <- "epoch startOffset"
    3 1500

A follower (or an old leader coming back) asks the leader for the end offset of its latest
epoch (OffsetForLeaderEpoch) and truncates its log there before fetching, so a tail written
under an epoch the new leader never saw is cut instead of served.
"""
from __future__ import annotations

import bisect
import os

from .fds import fsync_dir

CHECKPOINT_FILE = "leader-epoch-checkpoint"
CHECKPOINT_VERSION = 0
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class EpochCheckpointInvalid(Exception):
    pass


def read_checkpoint(path: str) -> list[tuple[int, int]]:
    """The entries of a checkpoint file ([] when there is none)."""
    try:
        with open(path) as f:
            lines = [line.strip() for line in f]
    except FileNotFoundError:
        return []
    lines = [line for line in lines if line]
    try:
        version, count = int(lines[0]), int(lines[1])
        if version != CHECKPOINT_VERSION:
            raise EpochCheckpointInvalid(f"{path}: unknown checkpoint version {version}")
        entries = []
        for line in lines[2:2 + count]:
            epoch, offset = line.split()
            entries.append((int(epoch), int(offset)))
    except (IndexError, ValueError) as exc:
        raise EpochCheckpointInvalid(f"{path}: malformed leader epoch checkpoint ({exc})") from None
    if len(entries) != count:
        raise EpochCheckpointInvalid(f"{path}: expected {count} entries, found {len(entries)}")
    return entries


def write_checkpoint(path: str, entries: list[tuple[int, int]], fsync: bool = False) -> None:
    """Replace the file atomically. Not fsynced by default (Kafka fsyncs it): the file is
    derived from the batches' epochs, and a missing or torn one is rebuilt from the log at
    start-up (Partition._load_epochs), so the first append of each partition costs no fsync."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{CHECKPOINT_VERSION}\n{len(entries)}\n")
        for epoch, offset in entries:
            f.write(f"{epoch} {offset}\n")
        if fsync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if fsync:
        fsync_dir(os.path.dirname(path) or ".")


class LeaderEpochCache:
    """The epoch entries of one partition, persisted on every change (changes are rare:
    one per leadership change that wrote something, and truncations)."""

    def __init__(self, directory: str, entries: list[tuple[int, int]] | None = None, write: bool = True) -> None:
        """``entries``: rebuilt from the log (the file is then rewritten, unless ``write`` is false:
        a partition whose directory was made a moment ago starts with none, and its file is
        written with its first entry); else read from the file."""
        self.path = os.path.join(directory, CHECKPOINT_FILE)
        self.entries: list[tuple[int, int]] = read_checkpoint(self.path) if entries is None else list(entries)
        self.latest_epoch = self.entries[-1][0] if self.entries else UNDEFINED_EPOCH
        if entries is not None and write:
            write_checkpoint(self.path, self.entries)

    def _flush(self) -> None:
        self.latest_epoch = self.entries[-1][0] if self.entries else UNDEFINED_EPOCH
        write_checkpoint(self.path, self.entries)

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (Kafka's assign: only a newer epoch
        is added; entries that a newer one makes inconsistent — starting at or after it — go)."""
        if epoch < 0 or epoch <= self.latest_epoch:
            return
        while self.entries and self.entries[-1][1] >= start_offset:
            self.entries.pop()
        self.entries.append((epoch, start_offset))
        self._flush()

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch that wrote ``offset`` (UNDEFINED_EPOCH when none is known)."""
        i = bisect.bisect_right([o for _, o in self.entries], offset) - 1
        return self.entries[i][0] if i >= 0 else UNDEFINED_EPOCH

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's endOffsetFor: (the largest epoch <= requested, the start offset of the first
        epoch after it; the log end for the latest epoch). Older than every entry: (requested,
        the first entry's start). Newer than every entry, or nothing known: undefined (-1, -1)."""
        if requested == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested == self.latest_epoch:
            return requested, log_end_offset
        i = bisect.bisect_right([e for e, _ in self.entries], requested)
        if i == len(self.entries):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if i == 0:
            return requested, self.entries[0][1]
        return self.entries[i - 1][0], self.entries[i][1]

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut at ``end_offset``: epochs starting at or after it are gone."""
        if self.entries and self.entries[-1][1] >= end_offset:
            self.entries = [(e, o) for e, o in self.entries if o < end_offset]
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: earlier entries collapse into one starting there."""
        keep = [(e, o) for e, o in self.entries if o > start_offset]
        before = [(e, o) for e, o in self.entries if o <= start_offset]
        if before and before[-1][1] != start_offset:
            keep.insert(0, (before[-1][0], start_offset))
        elif before:
            keep.insert(0, before[-1])
        if keep != self.entries:
            self.entries = keep
            self._flush()

    def clear(self) -> None:
        if self.entries:
            self.entries = []
            self._flush()
