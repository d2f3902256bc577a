"""Network partitions without root or a firewall: a broker's table of cut links.

A test (or an operator rehearsing a failure) tells each broker which of its links are cut: the
node ids of the peers it can no longer reach, and whether it has lost etcd. The broker then
behaves as if the network dropped those packets, in both directions:

- its own broker-to-broker clients (broker/replica/client.py ``BrokerConnection``: the replica
  fetcher, transaction markers and verification, the console's peers) get no answer from a cut
  peer: a call waits its timeout and fails; a new connection "times out" (waits the connect
  timeout) without any socket being touched, and a connection given up during the cut is not
  closed until the link heals, so the peer never sees a FIN it would not have seen;
- requests that arrive from a cut peer (told apart by the follower's ``replica_id`` in Fetch and
  OffsetForLeaderEpoch, else by the client id every inter-broker client sends,
  ``samsa-<purpose>-<node id>``) are swallowed: never handled, never answered; the connection
  stays open and, as a TCP connection whose retransmissions gave up, is closed once the link
  heals; an answer due to a peer that was cut while the request was handled is swallowed too;
- its etcd client (broker/metadata/etcd_client.py) gets no answer: calls wait the client's
  timeout and fail with MetadataUnavailable, an open watch stream delivers nothing until the
  link heals, so the broker's lease expires and the controller fences it as on a real partition.

Clients (anything that is not another broker of the cluster) still reach the broker. Each broker
is told its own cuts, so a partition is symmetric when every broker is told (broker/control/
client.py's ``partition``/``isolate``/``heal`` do that); the incoming check also holds when only
one side was told.

The table lives on the broker's trio thread (``broker.links``); the code that talks to peers and
etcd finds it through :data:`LINKS`, a context variable the broker sets once before it starts its
tasks (they inherit it), so clients deep in the replica or metadata code need no extra argument.
"""
from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable

import structlog
import trio

from protocol.frame import FrameError

if TYPE_CHECKING:
    from broker.common.services import RequestScope as RequestContext

log = structlog.get_logger("samsa.links")

# The client ids the brokers' own clients send: ``samsa-<purpose>-<node id>``, optionally followed
# by ``-<number>`` (the replica fetcher's ``samsa-replica-fetcher-<node>-<leader>``). A user's
# client should not name itself like this: the broker would take it for a peer's.
INTER_BROKER_CLIENT_ID = re.compile(r"^samsa-(?:[a-z]+-)*?[a-z]+-(?P<node>\d+)(?:-\d+)?$")

# APIs whose ``replica_id`` names the follower sending them (Kafka's field; -1 for a consumer)
_FETCH, _OFFSET_FOR_LEADER_EPOCH = 1, 23


def node_of_client_id(client_id: str | None) -> int | None:
    """The node id an inter-broker client id names, or None for any other client."""
    if not client_id:
        return None
    m = INTER_BROKER_CLIENT_ID.match(client_id)
    return int(m.group("node")) if m else None


def inter_broker_client_id(node_id: int, purpose: str, *qualifiers: int) -> str:
    """The client id a broker's own client sends (``purpose`` in lower-case words joined by
    ``-``), which the other brokers recognise as this node's."""
    cid = "-".join(["samsa", purpose, str(node_id), *map(str, qualifiers)])
    if node_of_client_id(cid) != node_id:
        raise ValueError(f"inter-broker client id {cid!r} does not name node {node_id}")
    return cid


def peer_of_request(ctx: RequestContext, request: Any) -> int | None:
    """The node id of the broker that sent this request, or None when a client sent it."""
    if ctx.api_key in (_FETCH, _OFFSET_FOR_LEADER_EPOCH):
        state = getattr(request, "replica_state", None)
        replica = getattr(state, "replica_id", None) if state is not None else None
        if replica is None or replica < 0:
            replica = getattr(request, "replica_id", None)
        if isinstance(replica, int) and replica >= 0:
            return replica
    return node_of_client_id(ctx.client_id)


class SwallowedByLinkCut(FrameError):
    """A request from a cut peer was never answered; now that the link healed, its connection is
    closed (as TCP gives up a connection whose packets were dropped)."""


@dataclass
class LinkCuts:
    """One broker's cut links: ``peers`` (node ids) and ``etcd``. Mutated on the trio thread."""

    node_id: int
    peer_at: Callable[[str, int], int | None] = lambda host, port: None   # (host, port) -> node id
    peers: frozenset[int] = frozenset()
    etcd: bool = False
    swallowed: int = 0          # requests from cut peers never answered
    lost: int = 0               # our own calls to cut peers (or etcd) that got no answer
    _changed: trio.Event = field(default_factory=trio.Event)
    _deferred: list[tuple[int | None, Any]] = field(default_factory=list)   # (peer, socket) to close once healed

    @property
    def active(self) -> bool:
        return bool(self.peers) or self.etcd

    def cut(self, peers: Iterable[int] = (), etcd: bool = False) -> dict[str, Any]:
        """Set this broker's cut links (replacing the earlier ones); links no longer named heal."""
        ids = set()
        for p in peers:
            if isinstance(p, bool) or not isinstance(p, int):
                raise ValueError(f"peers must be broker node ids (integers), got {p!r}")
            if p == self.node_id:
                raise ValueError(f"node {p} cannot be cut from itself")
            ids.add(p)
        if not isinstance(etcd, bool):
            raise ValueError(f"etcd must be true or false, got {etcd!r}")
        self.peers, self.etcd = frozenset(ids), etcd
        log.warning("links cut", node_id=self.node_id, peers=sorted(ids), etcd=etcd)
        self._notify()
        return self.describe()

    def heal(self) -> dict[str, Any]:
        """Every link works again."""
        if self.active:
            log.warning("links healed", node_id=self.node_id, peers=sorted(self.peers), etcd=self.etcd)
        self.peers, self.etcd = frozenset(), False
        self._notify()
        return self.describe()

    def describe(self) -> dict[str, Any]:
        return {"node_id": self.node_id, "peers": sorted(self.peers), "etcd": self.etcd,
                "swallowed": self.swallowed, "lost": self.lost}

    def _notify(self) -> None:
        """Wake the waiters; close the sockets given up on links that work again."""
        event, self._changed = self._changed, trio.Event()
        event.set()
        keep = []
        for peer, sock in self._deferred:
            if self.is_cut(peer):
                keep.append((peer, sock))
                continue
            try:
                sock.close()
            except OSError:
                pass
        self._deferred = keep

    # -- what the clients and dispatch ask -----------------------------------------------------
    def is_cut(self, peer: int | None) -> bool:
        """``peer`` a node id, or None for etcd."""
        return self.etcd if peer is None else peer in self.peers

    def peer_cut_at(self, host: str, port: int) -> int | None:
        """The node id at (host, port) when that link is cut, else None."""
        if not self.peers:
            return None
        peer = self.peer_at(host, port)
        return peer if peer is not None and peer in self.peers else None

    async def wait_healed(self, peer: int | None, timeout_s: float = float("inf")) -> bool:
        """Wait until the link to ``peer`` (None: etcd) works again; False if ``timeout_s``
        passed first (the caller's timeout: what a dropped network costs it)."""
        with trio.move_on_after(timeout_s):
            while self.is_cut(peer):
                await self._changed.wait()
            return True
        return False

    def defer_close(self, peer: int | None, sock: Any) -> None:
        """Close ``sock`` (anything with a synchronous ``close()``) once the link to ``peer``
        (None: etcd) works again, not now: a connection given up during a cut sends its FIN only
        once packets flow again."""
        self._deferred.append((peer, sock))

    async def swallow(self, peer: int, what: str) -> None:
        """A request (or its answer) to/from a cut peer: never answered; once the link heals,
        the connection is closed (SwallowedByLinkCut)."""
        self.swallowed += 1
        log.info("swallowed by a cut link", node_id=self.node_id, peer=peer, what=what)
        await self.wait_healed(peer)
        raise SwallowedByLinkCut(f"{what} from broker {peer} was lost while the link was cut")


LINKS: ContextVar[LinkCuts | None] = ContextVar("samsa_links", default=None)


def current_links() -> LinkCuts | None:
    """The running broker's cut links (None outside a broker, e.g. a tool's own client)."""
    return LINKS.get()


def topology_resolver(broker: Any) -> Callable[[str, int], int | None]:
    """(host, port) -> the node id that advertises it, from the broker's view of the cluster."""
    def peer_at(host: str, port: int) -> int | None:
        for node in broker.topology.brokers():
            for ep in node.endpoints:
                if ep.port == port and ep.host == host:
                    return int(node.id)
        return None
    return peer_at
