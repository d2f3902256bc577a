"""The broker's shared state: configuration, the log manager, and the wake-ups that
delayed operations (long-poll fetches) wait on."""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable

import trio

from .api_table import advertised_table
from broker.common.clock import Clock
from broker.common.config import BrokerConfig
from broker.common.link_cuts import LINKS, LinkCuts, topology_resolver
from broker.network.busy_poll import PROPERTY as BUSY_POLL, BusyPoll
from broker.network.faults import FaultRegistry
from broker.log import flush, retention
from broker.log.manager import LogManager
from broker.common.notifier import Notifier
from broker.common.services import ProducerIds
from broker.metadata.single_node import SingleNodeTopology
from broker.metadata.topology import Topology
from broker.replica.manager import ReplicaManager
from broker.security.setup import Security

if TYPE_CHECKING:
    from broker.coordinator_runtime.group_runtime import GroupShell
    from broker.coordinator_runtime.share_persister import SharePersister
    from broker.coordinator_runtime.share_runtime import ShareGroups
    from broker.coordinator_runtime.share_state_runtime import ShareCoordinatorShell
    from broker.coordinator_runtime.txn_runtime import TxnShell
    from broker.common.services import ProducerIds
    from broker.metadata.cluster_mode import ClusterMetadata
    from broker.log.partition import Partition
    from broker.metadata.store import MetadataStore
    from broker.observability.metrics import BrokerMetrics

PRODUCER_ID_BLOCK = 1000
# The coordinators' internal topics (their shells' ``topic``; tests/unit/test_lazy_loading.py keeps
# them equal): a single node with none of them in its log dir has no coordinator state to load.
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")
_COORDINATOR_MODULES = tuple(f"broker.coordinator_runtime.{m}" for m in
                             ("group_runtime", "txn_runtime", "share_state_runtime", "share_persister", "share_runtime"))


# properties the coordinators' configs check against each other (GroupCoordinatorConfig,
# ShareGroupConfig: inconsistent bounds stop start-up); a broker that sets any builds them at once
_CHECKED_PREFIXES = ("group.consumer.", "group.share.")
WARM_UP_DELAY_S = 0.3   # a fresh single node's first requests (ApiVersions, Metadata) go first


def warm_up_modules() -> list[str]:
    """The modules a fresh single node imports once it has served its first requests: the
    coordinator runtimes (with the pure coordinators under them, about as long as ``import trio``),
    then every API handler module, so that later first requests of an API find it loaded."""
    import pkgutil

    apis = importlib.import_module("broker.apis")
    return [*_COORDINATOR_MODULES, *(f"broker.apis.{info.name}" for info in pkgutil.iter_modules(apis.__path__)
                                     if not info.ispkg)]


class ProducerIdAllocator:
    """Producer ids unique across restarts: blocks are reserved in a file before use."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, "producer-id-block")
        try:
            with open(self.path) as f:
                self._next = int(f.read().strip() or 0)
        except (FileNotFoundError, ValueError):
            self._next = 0
        self._limit = self._next

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._limit = self._next + PRODUCER_ID_BLOCK
            with open(self.path + ".tmp", "w") as f:
                f.write(str(self._limit))
                f.flush()
                os.fsync(f.fileno())
            os.replace(self.path + ".tmp", self.path)
        pid = self._next
        self._next += 1
        return pid


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.node_id = int(config["node.id"])
        self.logs = LogManager(config)
        self.appends = Notifier()   # wakes every waiting fetch when any partition grows
        self.clock = clock or Clock()
        self.logs.clock = self.clock  # segments, retention and the cleaner use the broker's clock
        self.stopping = trio.Event()
        self._coordinator_wanted = trio.Event()   # set when a coordinator is first built
        self.warmed_up = trio.Event()   # the coordinators built and every API module imported (samsa serve's gc.freeze)
        self.producer_ids: ProducerIds | None = None   # the single node's, or the cluster's blocks
        # the coordinators (groups, txns, share_coordinator, share_persister, share_groups) are
        # built on first use: see ``coordinators_built`` and ``_run_coordinators``
        self.metrics: BrokerMetrics | None = None   # set when samsa.http.listener serves /metrics
        self.faults = FaultRegistry()   # broker/network/faults.py; armed through broker/control/endpoint.py
        self.busy_poll = BusyPoll(int(config[BUSY_POLL]))   # run beside the listeners (broker/network/busy_poll.py)
        self.links = LinkCuts(self.node_id, topology_resolver(self))   # cut links (broker/common/link_cuts.py)
        self.api_versions = advertised_table(config)
        self.security = Security(config, config.log_dir, self.now_ms, lambda: self.metadata)
        self.authorizer = self.security.authorizer   # None unless authorizer.class.name is set
        self.replicas = ReplicaManager(self)   # idle until cluster metadata arrives (broker/replica/)
        self.logs.on_leader_append = self._leader_appended
        # cluster metadata (broker/metadata/): ClusterMetadata when an etcd endpoint is set, else None;
        # ``metadata`` is the MetadataStore either way (the etcd one, or the single node's local file)
        self.cluster: ClusterMetadata | None = None
        self._metadata: MetadataStore | None = None
        # the brokers, topics and topic changes as the handlers see them, in either mode: the
        # single node's until start_cluster chooses the cluster's (broker/metadata/topology.py)
        self.topology: Topology = SingleNodeTopology(self)
        # cluster-only machinery start_cluster composes in (a single node has none)
        self._cluster_services: tuple[Callable[..., Awaitable[None]], ...] = ()
        self._controlled_shutdown: Callable[[], Awaitable[None]] | None = None
        if any(name.startswith(_CHECKED_PREFIXES) for name in config.raw):
            self.build_coordinators()   # their configs' checks refuse start-up, as before the laziness

    # -- the coordinators, built on first use ------------------------------------------------
    # A fresh single node serves before it imports them (start-up speed, issue 23); a broker with
    # coordinator state to load, or in a cluster, builds them in ``start`` as before.
    groups: GroupShell
    txns: TxnShell
    share_coordinator: ShareCoordinatorShell    # KIP-932 state on __share_group_state
    share_persister: SharePersister     # in process, or to the share coordinator's broker
    share_groups: ShareGroups   # KIP-932 (broker/coordinator_runtime/share_runtime.py)

    def __getattr__(self, name: str) -> Any:
        """Called only for an attribute not set yet: builds that coordinator (once; it is an
        ordinary attribute afterwards)."""
        if name == "groups":
            from broker.coordinator_runtime.group_runtime import GroupShell
            self.groups = GroupShell(self)
        elif name == "txns":
            from broker.coordinator_runtime.txn_runtime import TxnShell
            self.txns = TxnShell(self)
        elif name == "share_coordinator":
            from broker.coordinator_runtime.share_state_runtime import ShareCoordinatorShell
            self.share_coordinator = ShareCoordinatorShell(self)
        elif name == "share_persister":
            from broker.coordinator_runtime.share_persister import SharePersister
            self.share_persister = SharePersister(self)
        elif name == "share_groups":
            from broker.coordinator_runtime.share_runtime import ShareGroups
            self.share_groups = ShareGroups(self)
            self.replicas.role_listeners.append(self.share_groups.on_role_change)  # share partitions follow leadership
        else:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self._coordinator_wanted.set()   # _run_coordinators builds the rest and starts the timers now
        return self.__dict__[name]

    @property
    def coordinators_built(self) -> bool:
        return "share_groups" in self.__dict__

    def build_coordinators(self) -> None:
        """Every coordinator, in the order the broker always built them."""
        for name in ("groups", "txns", "share_coordinator", "share_persister", "share_groups"):
            getattr(self, name)

    @property
    def cluster_id(self) -> str:
        return self.logs.cluster_id

    async def start_cluster(self) -> None:
        """Cluster mode only (``samsa.metadata.etcd.endpoints`` set): join the cluster before
        the logs load, so the log dir is checked against the cluster's id. A single node
        imports nothing of this."""
        if self.config.get("samsa.metadata.etcd.endpoints"):
            from broker.metadata.cluster_mode import ClusterMetadata
            from broker.metadata.cluster_topology import ClusterTopology

            LINKS.set(self.links)   # the peer and etcd clients of every task started from here on consult it
            cluster = self.cluster = ClusterMetadata(self)
            await cluster.start()
            self._metadata = cluster.store
            self._watch_dynamic_configs(cluster.store)
            self.topology = ClusterTopology(cluster)
            self.replicas.follows = cluster.store       # followers fetch from leaders
            self.producer_ids = cluster.producer_ids    # blocks from the metadata log
            self._cluster_services = (cluster.run,)     # etcd session, controller loop
            self._controlled_shutdown = cluster.controlled_shutdown

    @property
    def metadata(self) -> MetadataStore:
        """The MetadataStore. A single node opens its local metadata log on first use (or at
        start-up when the file exists), so a node that never needs one pays nothing for it."""
        if self._metadata is None:
            from broker.metadata.local import LocalMetadataStore

            local = LocalMetadataStore(self.logs.log_dir, self.node_id, self.cluster_id)
            local.load()
            self._metadata = local
            self._watch_dynamic_configs(local)
        return self._metadata

    def _watch_dynamic_configs(self, store: MetadataStore) -> None:
        """Dynamic broker configs (ConfigRecords on BROKER resources) apply from the store's image."""
        from broker.metadata.dynamic_broker_configs import watch

        watch(self, store)

    async def controlled_shutdown(self) -> None:
        """Kafka's controlled shutdown when this broker is in a cluster (set by start_cluster);
        a single node has no leadership to hand over."""
        if self._controlled_shutdown is not None:
            await self._controlled_shutdown()

    def start(self) -> None:
        self.logs.load()
        if self._metadata is None and os.path.exists(os.path.join(self.logs.log_dir, "__samsa_metadata.log")):
            _ = self.metadata  # replay the single node's metadata log (ACLs, credentials) now
        elif self._metadata is None and self.security.uses_metadata:
            _ = self.metadata  # ACLs and SCRAM credentials live in the metadata log
        if self.producer_ids is None:     # a single node's, unless start_cluster set the cluster's
            self.producer_ids = ProducerIdAllocator(self.logs.log_dir)
        if self.cluster is not None or any(t in self.logs.topics for t in INTERNAL_TOPICS):
            self.build_coordinators()
        elif not self.coordinators_built:
            return      # a fresh single node: nothing to load; built once it serves (_run_coordinators)
        self.groups.load()
        self.txns.load()      # after the groups: finishing a transaction may settle their offsets
        self.share_coordinator.load()

    async def run_services(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """Background work that lives as long as the broker: group and transaction coordinator
        timers, retention, flushing, compaction and delayed file deletion."""
        async with trio.open_nursery() as nursery:
            for service in self._cluster_services:
                await nursery.start(service)
            await nursery.start(self._run_coordinators)
            # storage: retention, flush.ms, log compaction (broker/log/)
            await nursery.start(retention.run_retention, self.logs, self.appends.notify)
            await nursery.start(flush.run_flusher, self.logs)
            await nursery.start(self._run_cleaner)
            await nursery.start(self.logs.run_file_deleter)
            await nursery.start(self.replicas.run)
            await nursery.start(self.security.refresh_jwks)
            task_status.started()

    async def _run_cleaner(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """The log cleaner (broker/log/cleaner.py). A log dir without a compacted partition has
        nothing for it to clean yet, so its module is imported once the first requests are
        served (``WARM_UP_DELAY_S``, start-up speed, issue 23); with one, at once as before."""
        task_status.started()
        if not any("compact" in p.policies() for p in self.logs.all_partitions()):
            await trio.sleep(WARM_UP_DELAY_S)
        from broker.log.cleaner import run_cleaner

        await run_cleaner(self.logs)

    async def _run_coordinators(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """The coordinators' timers and background share-state writes. A fresh single node
        imports the coordinators once it has served its first requests (``WARM_UP_DELAY_S``),
        then builds them; a request that needs one sooner builds it itself at once, and its
        timers start right after. The imports run in this thread, one module between two
        checkpoints, not in a worker thread: there they could meet a request's own import of the
        same modules halfway (Python's per-module import locks), and the GIL would not let them
        run beside the requests anyway."""
        async with trio.open_nursery() as nursery:
            background = not self.coordinators_built
            if background:
                task_status.started()
                with trio.move_on_after(WARM_UP_DELAY_S):
                    await self._coordinator_wanted.wait()
                for name in _COORDINATOR_MODULES:
                    importlib.import_module(name)
                    await trio.sleep(0)
                self.build_coordinators()
            await nursery.start(self.groups.run_timers)
            await nursery.start(self.txns.run_timers)
            await nursery.start(self.share_coordinator.run_timers)
            await nursery.start(self.share_groups.run)     # background share-state writes (lock expiry)
            if not background:
                task_status.started()
            else:
                for name in warm_up_modules()[len(_COORDINATOR_MODULES):]:
                    importlib.import_module(name)     # the API modules not requested yet
                    await trio.sleep(0)
            self.warmed_up.set()

    def _leader_appended(self, part: Partition) -> None:
        """Any append to a log this broker leads (produce, coordinator records, transaction
        markers, the broker's own batches): the HW follows the log end when the ISR is the
        leader alone, and every parked fetch re-checks (followers' fetches included, so a
        coordinator's write replicates at once instead of when the fetch times out)."""
        self.replicas.leader_appended(part)
        self.appends.notify()

    def now_ms(self) -> int:
        return self.clock.now_ms()
