"""A single node's metadata log: one JSON batch per line in ``<log.dir>/__samsa_metadata.log``.

Why a file: a single node needs no other service, yet ACLs, SCRAM credentials and other
cluster-wide records need a durable, ordered home that replays like a cluster's. It sits beside
the log manager's own topic file (topics of a single node stay where they always were; nothing
is migrated). Each append is written and fsynced before it is applied (records before answers);
a torn last line (a crash mid-write) is cut off at start-up. The node is always its own
controller; ``append`` checks its conditions against the image it holds (it is the only writer).
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import structlog
import trio

from coordinator.metadata.image import MetadataImage, replay_all
from coordinator.metadata.records import (AccessControlEntryRecord, MetadataRecord, PartitionChangeRecord, ProducerIdsRecord, RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord, TopicRecord, UserScramCredentialRecord, decode_batch, encode_batch)

from .store import Publisher

log = structlog.get_logger("samsa.metadata")

FILE_NAME = "__samsa_metadata.log"


def conflicts(current: MetadataImage, base: MetadataImage, records: Sequence[MetadataRecord]) -> bool:
    """The conditions every store enforces: partitions the batch changes are still at their
    epoch in ``base``; topics it creates do not exist; an ACL it creates has no identical one
    (same binding), an ACL it removes still exists; a SCRAM credential it sets or removes is
    still as it was in ``base`` (broker/security/writes.py decides again when refused)."""
    bindings = None
    for r in records:
        if isinstance(r, PartitionChangeRecord):
            t = base.topics_by_id.get(r.topic_id)
            old = None if t is None else t.partitions.get(r.partition_id)
            ct = current.topics_by_id.get(r.topic_id)
            cur = None if ct is None else ct.partitions.get(r.partition_id)
            if old is None or cur is None or cur.partition_epoch != old.partition_epoch:
                return True
        elif isinstance(r, TopicRecord) and r.name in current.topics:
            return True
        elif isinstance(r, ProducerIdsRecord) and current.next_producer_id != base.next_producer_id:
            return True
        elif isinstance(r, AccessControlEntryRecord):
            if bindings is None:
                bindings = {a.binding() for a in current.acls.values()}
            if r.binding() in bindings or r.id in current.acls:
                return True
        elif isinstance(r, RemoveAccessControlEntryRecord) and r.id not in current.acls:
            return True
        elif isinstance(r, (UserScramCredentialRecord, RemoveUserScramCredentialRecord)):
            key = (r.name, r.mechanism)
            if current.scram_credentials.get(key) != base.scram_credentials.get(key):
                return True
    return False


class LocalMetadataStore(Publisher):
    def __init__(self, log_dir: str, node_id: int, cluster_id: str = "") -> None:
        super().__init__()
        self.path = os.path.join(log_dir, FILE_NAME)
        self.node_id = node_id
        self.controller_id = node_id
        self.cluster_id = cluster_id
        self._lock = trio.Lock()

    def load(self) -> None:
        """Replay the file (synchronous: called while the broker starts)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        good = 0
        batches = []
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                batches.append(decode_batch(line))
            except (ValueError, TypeError, KeyError):
                break
            good += len(line)
        if good != len(data):
            log.warning("metadata log: cutting a torn tail", path=self.path, kept=good, dropped=len(data) - good)
            with open(self.path, "r+b") as f:
                f.truncate(good)
        records = [r for b in batches for r in b]
        self.image, _ = replay_all(self.image, records, len(batches) - 1)

    async def start(self) -> None:
        self.load()

    async def run(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def append(self, records: Sequence[MetadataRecord], base: MetadataImage | None = None,
                     as_controller: bool = False) -> bool:
        async with self._lock:
            if base is not None and conflicts(self.image, base, records):
                return False
            line = encode_batch(list(records)) + b"\n"
            with open(self.path, "ab") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self.publish(records, self.image.offset + 1)
            return True

    async def close(self) -> None:
        pass


__all__ = ["LocalMetadataStore", "FILE_NAME", "conflicts"]
