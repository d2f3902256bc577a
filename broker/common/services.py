"""What the broker's parts use of the Broker (broker/server/broker_server.py), as a Protocol.

``Broker`` is the composition root: it builds the coordinator shells, the replica manager,
cluster metadata and metrics, handing each itself. Those parts type their ``broker`` as
``BrokerServices`` so that imports point down (broker_server.py imports them; they never import
broker_server.py). This module imports at run time only what sits beside it in broker.common
(the clock, the config); the log manager and the ACL authorizer it names for the type checker only.

The broker's other parts (``groups``, ``txns``, ``replicas``, ``metrics``, ``cluster``,
``topology``) are named for the type checker only, so importing this module imports none of them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .clock import Clock
from .config import BrokerConfig

if TYPE_CHECKING:   # types only: broker.common sits below broker.log and broker.security
    from broker.coordinator_runtime.group_runtime import GroupShell
    from broker.coordinator_runtime.share_runtime import ShareGroups
    from broker.coordinator_runtime.share_persister import SharePersister
    from broker.coordinator_runtime.share_state_runtime import ShareCoordinatorShell
    from broker.coordinator_runtime.txn_runtime import TxnShell
    from broker.log.manager import LogManager
    from broker.metadata.cluster_mode import ClusterMetadata
    from broker.metadata.store import MetadataStore
    from broker.metadata.topology import Topology
    from broker.observability.metrics import BrokerMetrics
    from broker.replica.manager import ReplicaManager
    from broker.security.acl import Authorizer


class AppendWaker(Protocol):
    """broker.common.notifier.Notifier (Broker.appends): wakes fetches waiting for a partition to grow."""

    def notify(self) -> None: ...


class ProducerIds(Protocol):
    """broker.server.broker_server.ProducerIdAllocator, or the cluster's (broker/metadata/producer_ids.py)."""

    def allocate(self) -> int: ...


class BrokerServices(Protocol):
    node_id: int
    config: BrokerConfig
    logs: LogManager
    clock: Clock
    groups: GroupShell
    txns: TxnShell
    share_groups: ShareGroups       # KIP-932 share groups; share-partition state through share_persister
    share_coordinator: ShareCoordinatorShell   # KIP-932's share coordinator on __share_group_state
    share_persister: SharePersister            # a share partition leader's way to its state
    replicas: ReplicaManager
    metrics: BrokerMetrics | None       # None until samsa.http.listener serves /metrics
    cluster: ClusterMetadata | None     # None on a single node
    topology: Topology              # brokers, topics and their changes, in either mode
    authorizer: Authorizer | None   # None unless authorizer.class.name is set

    # read-only to the parts: properties, so that the Broker's concrete Notifier and allocator match
    @property
    def appends(self) -> AppendWaker: ...
    @property
    def producer_ids(self) -> ProducerIds | None: ...
    @property
    def metadata(self) -> MetadataStore: ...    # the local metadata log or etcd's

    def now_ms(self) -> int: ...


class RequestScope(Protocol):
    """What a request's helpers below dispatch (broker/network/faults.py, broker/security/authz.py) read
    of dispatch's RequestContext: dispatch calls them, so they must not import dispatch."""

    @property
    def broker(self) -> BrokerServices: ...
    @property
    def api_key(self) -> int: ...
    @property
    def api_version(self) -> int: ...
    @property
    def correlation_id(self) -> int: ...
    @property
    def client_id(self) -> str | None: ...
    @property
    def client_host(self) -> str: ...
    @property
    def principal(self) -> str: ...

    def response(self, **fields: Any) -> Any: ...
