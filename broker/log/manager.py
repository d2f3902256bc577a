"""Topics and their partition logs under ``log.dirs``.

Topic names, ids, partition counts and config overrides live in one metadata file, a
snapshot followed by the changes since, each fdatasynced before it is acknowledged
(broker/log/topic_file.py), so topic ids stay stable across restarts. A ``.kafka_cleanshutdown``
marker (Kafka's name) lets start-up trust the persisted indexes and producer snapshots and
skip CRC-checking the active segments.

Samsa-specific properties (not Kafka's, documented in the README):
- ``samsa.fsync.on.acks.all`` (default false): fsync the written partitions before answering an
  acks=all produce request (group commit: concurrent requests share one fsync, done in a
  worker thread so other connections are not blocked).
- ``samsa.log.max.open.segment.files`` (default: a quarter of the open-file soft limit, at
  most 8192): how many segment files stay open at once (an LRU; others reopen on use).
"""
from __future__ import annotations

import functools
import heapq
import os
import re
import secrets
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Collection, Mapping

import structlog
import trio

from broker.common.clock import Clock
from broker.common.config import TOPIC_CONFIGS, BrokerConfig, parse_value
from .append_settings import AppendSettings
from .fds import FdCache
from .flush import after_append
from .partition_map import PartitionMap
from .fds import fsync_dir
from .topic_file import COMPACT_AFTER, TopicFile, read_topic_file

if TYPE_CHECKING:   # types only: broker.metadata sits above broker.log
    from broker.metadata.topology import TopicConfigs

    from .partition import Partition   # imported with the first partition opened (start-up speed, issue 23)

log = structlog.get_logger("samsa.log")

METADATA_FILE = "samsa-topics.json"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249
_APPEND_SETTINGS = "\0append"   # Topic.resolved's entry for the topic's AppendSettings (no config's name)
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def topic_name_error(name: str | None) -> str | None:
    """Kafka's Topic.validate rules; returns the reason a name is illegal, or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters"
    if not _LEGAL.match(name):
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    # the local logs (all of them on a single node; only this broker's replicas in a cluster)
    partitions: PartitionMap = field(default_factory=PartitionMap)
    partition_count: int = 0          # the topic's partitions, local or not
    # effective config values already resolved from ``configs`` (the dict they came from:
    # configs are replaced whole when altered, which empties this) and the broker's defaults
    resolved: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    resolved_from: dict[str, str] | None = field(default=None, repr=False, compare=False)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class LogManager:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.log_dir = os.path.abspath(config.log_dir)
        self.topics: dict[str, Topic] = {}
        self.topics_by_id: dict[uuid.UUID, Topic] = {}
        self.cluster_id = ""
        self.node_id = int(config["node.id"])
        self.clock = Clock()  # the broker replaces it with its own (broker/common/clock.py)
        self.fds = FdCache(config["samsa.log.max.open.segment.files"])
        self.fsync_on_acks_all = bool(config["samsa.fsync.on.acks.all"])
        self._deletions: list[tuple[int, int, list[str]]] = []  # (due ms, seq, renamed paths)
        self._deletions_changed = trio.Event()
        self._seq = 0
        self._deleter_running = False    # run_file_deleter removes deleted topics' directories
        self.topic_file = TopicFile(os.path.join(self.log_dir, METADATA_FILE))
        # bumped by every change to the topics (each goes through _persist), so views built
        # from them (the single node's catalog, broker/metadata/single_node.py) know when to rebuild
        self.generation = 0
        # the broker's reaction to any leader append (wake parked fetches, move the HW of a
        # partition whose ISR is the leader alone); set once by the broker
        self._on_leader_append: Callable[[Partition], None] | None = None

    @property
    def on_leader_append(self) -> Callable[[Partition], None] | None:
        return self._on_leader_append

    @on_leader_append.setter
    def on_leader_append(self, react: Callable[[Partition], None] | None) -> None:
        """Every partition calls the broker's reaction itself (Partition.on_append), without a
        hop through the manager on each append (one per offset commit): set here on those that
        exist, and by _attach on those made later."""
        self._on_leader_append = react
        for part in self.all_partitions():
            part.on_append = react

    def now_ms(self) -> int:
        return self.clock.now_ms()

    async def after_append(self, parts: list[Partition], acks: int) -> None:
        """Awaited by Produce before answering (fsync for acks=all or flush.messages)."""
        if self.fsync_on_acks_all or any(p.flush_due for p in parts):
            await after_append(self, parts, acks)

    def all_partitions(self) -> list[Partition]:
        return [p for t in list(self.topics.values()) for p in t.partitions]

    # -- start-up ------------------------------------------------------------------------
    def load(self) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        # A log dir no broker has started in yet (no meta.properties, no topics) had no shutdown at
        # all: not an unclean one.
        fresh = not any(os.path.exists(os.path.join(self.log_dir, f)) for f in ("meta.properties", METADATA_FILE))
        self._load_meta_properties()
        marker = os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE)
        clean = os.path.exists(marker)
        if not clean and not fresh:
            log.warning("previous shutdown was not clean; checking segment tails", log_dir=self.log_dir)
        meta, changes, rewrite = read_topic_file(self.topic_file.path)
        written_for = meta.get("cluster_id")
        if written_for and written_for != self.cluster_id:
            problem = (f"meta.properties in {self.log_dir} says cluster.id={self.cluster_id}, but its topics were "
                       f"written by cluster {written_for}; refusing to mix logs of two clusters")
            log.error("refusing to start: log directory belongs to another cluster or node", reason=problem)
            raise SystemExit(problem)
        started = time.monotonic()
        self._remove_marked_for_deletion()
        for t in meta["topics"]:
            topic = Topic(t["name"], uuid.UUID(t["id"]), dict(t.get("configs", {})), partition_count=t["partitions"])
            self._register(topic)
            for p in t.get("hosted", range(t["partitions"])):   # "hosted": only in a cluster, when sparse
                from .partition import LogCorrupt
                try:
                    topic.partitions.add(self._open_partition(topic, p, clean))
                except LogCorrupt as exc:
                    log.error("refusing to start: partition log is inconsistent", error=str(exc))
                    raise SystemExit(f"refusing to start: {exc}") from None
        if rewrite:
            self._save()           # a torn change cut off, or the older layout: a snapshot to append to
        elif os.path.exists(self.topic_file.path):
            self.topic_file.open(changes)
        if clean:
            os.unlink(marker)
        previous = {"new_log_dir": True} if fresh else {"clean_shutdown": clean}
        log.info("logs loaded", partitions=sum(len(t.partitions) for t in self.topics.values()),
                 **previous, seconds=round(time.monotonic() - started, 3))

    def _remove_marked_for_deletion(self) -> None:
        """Directories a topic deletion renamed but a crash or restart kept from removing."""
        for entry in os.scandir(self.log_dir):
            if entry.is_dir() and entry.name.endswith(DELETE_SUFFIX):
                shutil.rmtree(entry.path, ignore_errors=True)
                log.info("removed a partition directory marked for deletion", directory=entry.name)

    def _load_meta_properties(self) -> None:
        path = os.path.join(self.log_dir, "meta.properties")
        props: dict[str, str] = {}
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    if "=" in line and not line.startswith("#"):
                        k, v = line.strip().split("=", 1)
                        props[k] = v
        wanted_cluster = self.config.get("cluster.id")
        if props:
            problem = None
            if not props.get("cluster.id"):
                problem = f"meta.properties in {self.log_dir} has no cluster.id"
            elif not props.get("node.id", str(self.node_id)).strip().lstrip("-").isdigit():
                problem = f"meta.properties in {self.log_dir} has a malformed node.id={props.get('node.id')}"
            elif int(props.get("node.id", self.node_id)) != self.node_id:
                problem = (f"meta.properties in {self.log_dir} has node.id={props.get('node.id')}, "
                           f"but this broker is configured with node.id={self.node_id}")
            elif wanted_cluster and props.get("cluster.id") != wanted_cluster:
                problem = (f"meta.properties in {self.log_dir} has cluster.id={props.get('cluster.id')}, "
                           f"but cluster.id={wanted_cluster} was configured")
            if problem:
                # Kafka refuses too: these logs belong to another cluster or node
                log.error("refusing to start: log directory belongs to another cluster or node", reason=problem)
                raise SystemExit(problem)
            self.cluster_id = props["cluster.id"]
            return
        if os.path.exists(os.path.join(self.log_dir, METADATA_FILE)):
            problem = (f"{self.log_dir} holds topics but no meta.properties; refusing to adopt it "
                       "(restore meta.properties or start from an empty directory)")
            log.error("refusing to start: log directory has data but no meta.properties", reason=problem)
            raise SystemExit(problem)
        self.cluster_id = wanted_cluster or _new_cluster_id()
        with open(path + ".tmp", "w") as f:
            f.write("#\n#Written by Samsa\nversion=1\n"
                    f"cluster.id={self.cluster_id}\nnode.id={self.node_id}\n"
                    f"directory.id={_new_cluster_id()}\n")
        os.replace(path + ".tmp", path)

    def _register(self, topic: Topic) -> None:
        self.generation += 1
        self.topics[topic.name] = topic
        self.topics_by_id[topic.topic_id] = topic

    def _partition_dir(self, topic: str, p: int) -> str:
        return os.path.join(self.log_dir, f"{topic}-{p}")

    def _open_partition(self, topic: Topic, p: int, clean: bool) -> Partition:
        from .partition import Partition   # with the first partition: a fresh node serves without it
        part = Partition(topic.name, p, self._partition_dir(topic.name, p),
                         functools.partial(self.topic_config_value, topic), fds=self.fds,
                         clock=self.now_ms, settings=functools.partial(self.append_settings, topic))
        part.open(clean)
        return self._attach(part)

    def _new_partition(self, topic: Topic, p: int) -> Partition:
        """A partition that was not there: created without reading a directory known to be new
        (Partition.create), or loaded as at start-up if a directory of that name is left over."""
        from .partition import Partition   # with the first partition: a fresh node serves without it
        part = Partition(topic.name, p, self._partition_dir(topic.name, p),
                         functools.partial(self.topic_config_value, topic), fds=self.fds,
                         clock=self.now_ms, settings=functools.partial(self.append_settings, topic))
        if not part.create():
            part.open(True)
        return self._attach(part)

    def _attach(self, part: Partition) -> Partition:
        part.delete_later = self._delete_later
        part.on_append = self._on_leader_append
        return part

    # -- delayed file deletion (file.delete.delay.ms) ----------------------------------------
    def _delete_later(self, paths: list[str], delay_ms: int) -> None:
        self._seq += 1
        heapq.heappush(self._deletions, (self.now_ms() + delay_ms, self._seq, paths))
        self._deletions_changed.set()

    async def run_file_deleter(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """Remove renamed segment files once their file.delete.delay.ms has passed, and the
        renamed directories of deleted topics at once, in a worker thread (a directory's
        removal waits on the file system's journal: milliseconds the event loop keeps)."""
        self._deleter_running = True
        task_status.started()
        try:
            while True:
                self._deletions_changed = trio.Event()
                now = self.now_ms()
                while self._deletions and self._deletions[0][0] <= now:
                    _, _, paths = heapq.heappop(self._deletions)
                    for path in paths:
                        if path.endswith(DELETE_SUFFIX):
                            # Kafka's order: the topic leaves the topic file durably before its
                            # files go (a DeleteTopics may still be syncing its line)
                            try:
                                await self.topics_durable()
                            except OSError:
                                continue   # not durable: start-up removes the renamed directory
                            await trio.to_thread.run_sync(functools.partial(shutil.rmtree, path, ignore_errors=True))
                            continue
                        try:
                            os.unlink(path)
                        except FileNotFoundError:
                            pass
                await self.clock.wait(self._deletions[0][0] if self._deletions else None, self._deletions_changed)
        finally:
            self._deleter_running = False

    def _save(self) -> None:
        """Rewrite the topic file as one snapshot (durable on return)."""
        self.topic_file.rewrite({"cluster_id": self.cluster_id,
                                 "topics": [_entry(t) for t in self.topics.values()]})

    def _persist(self, topic: Topic, removed: bool = False, durable: bool = True) -> None:
        """Make one topic's change durable before it is answered: one line appended to the
        topic file and fdatasynced (a snapshot instead for the file's first change, after a
        failed write, and every COMPACT_AFTER changes). ``durable=False``: the line is written
        but not yet synced; the caller awaits ``topics_durable()`` before it answers."""
        self.generation += 1
        if not self.topic_file.is_open or self.topic_file.changes >= COMPACT_AFTER:
            self._save()
        else:
            self.topic_file.append({"remove": topic.name} if removed else {"put": _entry(topic)}, sync=durable)

    async def topics_durable(self) -> None:
        """Every topic change made so far is durable (its fdatasync, shared with the changes
        written meanwhile, runs in a worker thread: see TopicFile.wait_durable)."""
        await self.topic_file.wait_durable(self.topic_file.written)

    # -- configs -------------------------------------------------------------------------
    def broker_configs_changed(self) -> None:
        """Dynamic broker configs changed (broker/metadata/dynamic_broker_configs.py): every
        topic resolves its configs again, so those without an override take the new default."""
        for topic in list(self.topics.values()):
            topic.resolved_from = None

    def topic_config_value(self, topic: Topic | TopicConfigs, name: str) -> Any:
        """The topic's value, else the broker's default for it. Resolved once per topic and name
        (every append asks for several); a topic's configs are replaced whole when altered, and
        a change of dynamic broker configs forgets every resolved value (broker_configs_changed).
        Anything else with ``configs`` (the cluster image's view of a topic hosted elsewhere) is
        resolved uncached."""
        if not isinstance(topic, Topic):
            return self._resolve_config(topic.configs, name)
        resolved = _resolved(topic)
        try:
            return resolved[name]
        except KeyError:
            pass
        value = resolved[name] = self._resolve_config(topic.configs, name)
        return value

    def append_settings(self, topic: Topic) -> AppendSettings:
        """The configs every append of the topic reads, parsed (broker/log/append_settings.py):
        kept beside the topic's resolved values under a key no config has, so they are dropped
        with them when the topic's configs are replaced or the broker's defaults change."""
        if topic.resolved_from is topic.configs:   # _resolved(topic) without the call when current
            try:
                return topic.resolved[_APPEND_SETTINGS]  # type: ignore[no-any-return]
            except KeyError:
                pass
        resolved = _resolved(topic)
        settings = resolved[_APPEND_SETTINGS] = AppendSettings(functools.partial(self.topic_config_value, topic))
        return settings

    def _resolve_config(self, configs: Mapping[str, str], name: str) -> Any:
        if name in configs:
            return parse_value(TOPIC_CONFIGS[name][0], configs[name])
        broker_key = TOPIC_CONFIGS[name][1]
        return self.config.broker_value_for_topic_default(broker_key) if broker_key else None

    # -- admin ---------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, configs: dict[str, str] | None = None,
                     topic_id: uuid.UUID | None = None, hosted: Collection[int] | None = None,
                     durable: bool = True) -> Topic:
        """``topic_id``: the cluster's id for it (a replica created from cluster metadata);
        ``hosted``: the partitions this broker holds a replica of (None: all of them);
        ``durable=False``: the caller awaits ``topics_durable()`` (see _persist)."""
        topic = Topic(name, topic_id or uuid.uuid4(), dict(configs or {}), partition_count=partitions)
        self._register(topic)
        for p in range(partitions):
            if hosted is None or p in hosted:
                topic.partitions.add(self._new_partition(topic, p))
        self._persist(topic, durable=durable)
        log.info("topic created", topic=name, partitions=partitions, topic_id=str(topic.topic_id),
                 **({} if hosted is None else {"hosted": sorted(hosted)}))
        return topic

    def add_partitions(self, name: str, total: int, hosted: Collection[int] | None = None,
                       durable: bool = True) -> None:
        """The topic now has ``total`` partitions; the new ones in ``hosted`` (None: all) get local logs."""
        topic = self.topics[name]
        for p in range(topic.partition_count, total):
            if hosted is None or p in hosted:
                topic.partitions.add(self._new_partition(topic, p))
        topic.partition_count = max(topic.partition_count, total)
        self._persist(topic, durable=durable)

    def add_replica(self, name: str, index: int) -> Partition:
        """A cluster made this broker a replica of an existing partition (a reassignment): an empty log."""
        topic = self.topics[name]
        part = self._new_partition(topic, index)
        topic.partitions.add(part)
        self._persist(topic)
        return part

    def delete_replica(self, name: str, index: int) -> None:
        """This broker is no longer a replica of the partition (Kafka's stray replica): its log
        goes; the topic too once it has no local partition left."""
        topic = self.topics[name]
        part = topic.partitions.pop(index)
        if part is not None:
            # files first: a crash before the save leaves the replica listed with an empty log,
            # which the next image deletes again (never a directory nothing lists)
            _remove_partition_files(part)
        gone = not topic.partitions
        if gone:
            self.topics.pop(name)
            self.topics_by_id.pop(topic.topic_id, None)
        self._persist(topic, removed=gone)
        log.info("replica deleted", topic=name, partition=index)

    def alter_configs(self, name: str, configs: dict[str, str], durable: bool = True) -> None:
        topic = self.topics[name]
        topic.configs = dict(configs)
        self._persist(topic, durable=durable)

    def delete_topic(self, name: str, durable: bool = True) -> Topic:
        """Kafka's order: each partition directory is first renamed to ``<dir>.<id>-delete``
        (atomic), then the topic leaves the metadata file, then the files go. A crash at any
        point leaves either the topic listed or only ``-delete`` directories, which load()
        removes; never a live-looking directory nothing lists."""
        topic = self.topics.pop(name)
        self.topics_by_id.pop(topic.topic_id, None)
        for part in topic.partitions:
            _mark_for_deletion(part)
        self._persist(topic, removed=True, durable=durable)
        for part in topic.partitions:
            if self._deleter_running:
                # as Kafka's LogManager.asyncDelete: the renamed directory goes in the background
                # (right after the answer, file deleter); a restart before then removes it too
                _close_partition_files(part)
                self._delete_later([part.directory], 0)
            else:
                _remove_partition_files(part)
        log.info("topic deleted", topic=name)
        return topic

    def partition(self, topic: str, p: int) -> Partition | None:
        t = self.topics.get(topic)
        return None if t is None else t.partitions.get(p)

    # -- shutdown ------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Flush and close every partition (indexes and producer snapshots written), then leave
        the clean-shutdown marker, durably, so start-up may trust those files."""
        ok = True
        for t in self.topics.values():
            for part in t.partitions:
                try:
                    part.flush()
                except OSError as exc:
                    ok = False
                    log.error("flush failed at shutdown", partition=part.name, error=str(exc))
                part.close()
        self.fds.close_all()
        self.topic_file.close()
        if not ok:
            log.warning("not marking the shutdown clean: a flush failed", log_dir=self.log_dir)
            return
        path = os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE)
        with open(path, "w") as f:
            f.flush()
            os.fsync(f.fileno())
        fsync_dir(self.log_dir)
        log.info("log manager shut down cleanly", log_dir=self.log_dir)


def _entry(t: Topic) -> dict[str, Any]:
    """A topic as the topic file lists it."""
    return {"name": t.name, "id": str(t.topic_id), "partitions": t.partition_count, "configs": t.configs, **_hosted(t)}


def _hosted(t: Topic) -> dict[str, list[int]]:
    """The metadata file's "hosted" entry, only for a topic with partitions held elsewhere."""
    return {} if len(t.partitions) == t.partition_count else {"hosted": t.partitions.indexes()}


DELETE_SUFFIX = "-delete"


def _mark_for_deletion(part: Partition) -> None:
    """Rename the partition's directory as Kafka does (``topic-0.<uuid>-delete``)."""
    marked = f"{part.directory}.{uuid.uuid4().hex}{DELETE_SUFFIX}"
    try:
        os.rename(part.directory, marked)
    except FileNotFoundError:
        return
    part.directory = marked


def _close_partition_files(part: Partition) -> None:
    for seg in part.segments:
        seg.close()
    part.deleted = True


def _remove_partition_files(part: Partition) -> None:
    _close_partition_files(part)
    shutil.rmtree(part.directory, ignore_errors=True)


def _new_cluster_id() -> str:
    import base64
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")


def _resolved(topic: Topic) -> dict[Any, Any]:
    """The topic's resolved values, emptied first if its configs were replaced since they were
    resolved (an alter replaces the mapping whole, so identity says whether they are current)."""
    if topic.resolved_from is not topic.configs:
        topic.resolved.clear()
        topic.resolved_from = topic.configs
    return topic.resolved
