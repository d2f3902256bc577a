"""What the broker's parts use of the Broker (broker/server/broker_server.py), as a Protocol.

broker.py is the composition root: it builds the coordinator shells, the replica manager,
cluster metadata and metrics, handing each itself. Those parts type their ``broker`` as
``BrokerServices`` so that imports point down (broker.py imports them; they never import
broker.py). This module imports only what sits below them all: the clock, the config, the
log manager and the ACL authorizer.

The broker's other parts (``groups``, ``txns``, ``replicas``, ``metrics``, ``cluster``) are built
on these same services, so they are typed loosely here; their classes say what they are.
"""
from __future__ import annotations

from typing import Any, Protocol

from .clock import Clock
from .config import BrokerConfig
from broker.log.manager import LogManager
from broker.security.acl import Authorizer


class AppendWaker(Protocol):
    """broker.notifier.Notifier (Broker.appends): wakes fetches waiting for a partition to grow."""

    def notify(self) -> None: ...


class ProducerIds(Protocol):
    """broker.server.broker_server.ProducerIdAllocator, or the cluster's (broker/metadata/producer_ids.py)."""

    def allocate(self) -> int: ...


class BrokerServices(Protocol):
    node_id: int
    config: BrokerConfig
    logs: LogManager
    clock: Clock
    appends: AppendWaker
    producer_ids: ProducerIds | None
    groups: Any      # broker.group_shell.GroupShell
    txns: Any        # broker.txn_shell.TxnShell
    share_groups: Any   # broker.share_shell.ShareGroups (KIP-932, in memory)
    replicas: Any    # broker.replica.manager.ReplicaManager
    metrics: Any     # broker.metrics.BrokerMetrics, or None
    cluster: Any     # broker.metadata.cluster_mode.ClusterMetadata (etcd, controller); None on a single node
    topology: Any    # broker.metadata.topology.Topology: brokers, topics and their changes, in either mode
    authorizer: Authorizer | None   # None unless authorizer.class.name is set

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
