"""What a test holds to make a broker misbehave: ``.faults``, ``.clock`` and ``.links``; and, for a
cluster, network partitions: ``partition``, ``isolate`` and ``heal`` (:class:`LinkControl`).

The same objects serve a broker in a child process or started elsewhere (through its HTTP
control endpoint, :class:`SamsaControl`) and a broker running in a thread of the test process
(calls run on its trio thread): both hand operations to broker/control/endpoint.py, so arguments, answers
and errors (ValueError for bad input) are the same.
"""
from __future__ import annotations

import time
from typing import Any
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

Call = Callable[[str, dict[str, Any]], Any]


class FaultHandle:
    """An armed fault; ``release()`` lets the requests a ``hold`` keeps go on."""

    def __init__(self, call: Call, described: dict[str, Any]) -> None:
        self._call = call
        self.id: int = described["id"]
        self.kind: str = described["kind"]
        self.api: str = described["api"]

    def release(self) -> bool:
        return bool(self._call("release", {"id": self.id})["released"])

    def __repr__(self) -> str:
        return f"<fault {self.id}: {self.kind} {self.api}>"


class Faults:
    """``fail``/``delay``/``drop``/``hold`` the next matching requests (by Kafka API name, and
    optionally ``topic``, ``group``, ``client_id``); ``clear()``; ``log()``."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def _arm(self, kind: str, args: dict[str, Any]) -> FaultHandle:
        return FaultHandle(self._call, self._call(kind, {k: v for k, v in args.items() if v is not None or k == "count"}))

    def fail(self, api: str, error: str, count: int | None = 1, *, topic: str | None = None,
             group: str | None = None, client_id: str | None = None) -> FaultHandle:
        """Answer the next ``count`` matching requests with Kafka error ``error`` in every item,
        applying nothing."""
        return self._arm("fail", dict(api=api, error=error, count=count, topic=topic, group=group, client_id=client_id))

    def delay(self, api: str, ms: int, count: int | None = None, *, topic: str | None = None,
              group: str | None = None, client_id: str | None = None) -> FaultHandle:
        """Answer matching requests ``ms`` later (a connection's answers stay in order)."""
        return self._arm("delay", dict(api=api, ms=ms, count=count, topic=topic, group=group, client_id=client_id))

    def drop(self, api: str, count: int | None = 1, *, topic: str | None = None, group: str | None = None,
             client_id: str | None = None) -> FaultHandle:
        """Close the connection instead of answering the next ``count`` matching requests."""
        return self._arm("drop", dict(api=api, count=count, topic=topic, group=group, client_id=client_id))

    def hold(self, api: str, count: int | None = None, *, topic: str | None = None, group: str | None = None,
             client_id: str | None = None) -> FaultHandle:
        """Matching requests wait until ``handle.release()`` (or ``clear()``)."""
        return self._arm("hold", dict(api=api, count=count, topic=topic, group=group, client_id=client_id))

    def clear(self) -> int:
        """Disarm every fault and release held requests; returns how many were armed."""
        return int(self._call("clear", {})["cleared"])

    def armed(self) -> list[dict[str, Any]]:
        return list(self._call("faults", {}))

    def log(self) -> list[dict[str, Any]]:
        """The faults that fired: fault id, kind, api, api_version, correlation_id, client_id,
        topics, groups, at_ms (broker clock)."""
        return list(self._call("log", {}))


class BrokerClock:
    """The broker's clock: ``advance(ms)`` makes timeouts, retention and delayed deletes fire
    as if ``ms`` had passed."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def advance(self, ms: int) -> int:
        """Jump ``ms`` forward; returns the broker's new time (ms since the epoch)."""
        return int(self._call("advance", {"ms": ms})["now_ms"])

    def now_ms(self) -> int:
        return int(self._call("now", {})["now_ms"])


class Links:
    """One broker's cut links (broker/common/link_cuts.py): ``cut(peers, etcd)`` replaces them,
    ``heal()`` clears them, ``describe()`` reads them (with the counts of swallowed requests and
    lost calls). A partition is every broker told its side: see :class:`LinkControl`."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def cut(self, peers: Iterable[int] = (), etcd: bool = False) -> dict[str, Any]:
        return dict(self._call("cut", {"peers": sorted(peers), "etcd": etcd}))

    def heal(self) -> dict[str, Any]:
        return dict(self._call("heal", {}))

    def describe(self) -> dict[str, Any]:
        """``{"node_id", "peers", "etcd", "swallowed", "lost"}``."""
        return dict(self._call("links", {}))


ETCD = "etcd"


def plan_partition(nodes: Collection[int], groups: Sequence[Collection[int | str]],
                   etcd: Collection[int] | None = None) -> dict[int, tuple[frozenset[int], bool]]:
    """Each node's cut links for a partition into ``groups``: a node loses every node of the
    other groups; a node named in no group keeps all its links. etcd stays with the group that
    names ``"etcd"`` (or the group equal to ``etcd``): the nodes of every other group, and the
    unnamed ones, lose it; with neither, every node keeps etcd."""
    known = set(nodes)
    sides: list[frozenset[int]] = []
    etcd_side: frozenset[int] | None = None
    for group in groups:
        members = set(group)
        with_etcd = ETCD in members
        members.discard(ETCD)
        bad = [m for m in members if isinstance(m, bool) or not isinstance(m, int) or m not in known]
        if bad:
            raise ValueError(f"partition groups name brokers by node id ({sorted(known)}) or 'etcd'; got {bad!r}")
        side = frozenset(int(m) for m in members)
        if any(side & s for s in sides):
            raise ValueError(f"a broker is in two partition groups: {[sorted(s) for s in sides]} and {sorted(side)}")
        sides.append(side)
        if with_etcd:
            if etcd_side is not None:
                raise ValueError("'etcd' is named in two partition groups")
            etcd_side = side
    if etcd is not None:
        wanted = frozenset(etcd)
        if etcd_side is not None and etcd_side != wanted:
            raise ValueError("etcd= names a different group from the one that contains 'etcd'")
        if wanted not in sides:
            raise ValueError(f"etcd= must be one of the groups {[sorted(s) for s in sides]}, got {sorted(wanted)}")
        etcd_side = wanted
    plan: dict[int, tuple[frozenset[int], bool]] = {}
    for node in sorted(known):
        mine = next((s for s in sides if node in s), None)
        peers = frozenset().union(*(s for s in sides if s is not mine)) if mine is not None else frozenset()
        plan[node] = (frozenset(peers), etcd_side is not None and node not in etcd_side)
    return plan


class LinkControl:
    """Network partitions of a cluster, each broker told its own side so the cut is symmetric:
    ``partition({1}, {2, 3})``, ``isolate(1)``, ``heal()``. Each call replaces the cuts before it
    (a broker not named keeps or regains all its links). Clients still reach every broker."""

    def _link_calls(self) -> Mapping[int, Call]:
        """node id -> the control transport of each broker that is running."""
        raise NotImplementedError

    _plan: Mapping[int, tuple[frozenset[int], bool]] = {}    # the cuts last asked for, per node

    def _apply(self, plan: Mapping[int, tuple[frozenset[int], bool]]) -> dict[int, dict[str, Any]]:
        self._plan = dict(plan)
        calls = self._link_calls()
        out: dict[int, dict[str, Any]] = {}
        for node, call in calls.items():     # heal first, so no moment has more cut than asked
            peers, etcd = plan.get(node, (frozenset(), False))
            if not peers and not etcd:
                out[node] = Links(call).heal()
        for node, call in calls.items():
            peers, etcd = plan.get(node, (frozenset(), False))
            if peers or etcd:
                out[node] = Links(call).cut(peers, etcd)
        return out

    def partition(self, *groups: Collection[int | str], etcd: Collection[int] | None = None) -> dict[int, dict[str, Any]]:
        """Cut every link between ``groups`` (sets of node ids; ``"etcd"`` in a group keeps etcd
        on that side, as does ``etcd=`` that group; without either every broker keeps etcd).
        Returns each broker's links."""
        return self._apply(plan_partition(self._link_calls().keys(), groups, etcd))

    def isolate(self, node_id: int, peers: bool = True, etcd: bool = True) -> dict[int, dict[str, Any]]:
        """Cut ``node_id`` from the other brokers (``peers``) and from etcd (``etcd``); clients
        still reach it."""
        nodes = self._link_calls().keys()
        if node_id not in nodes:
            raise ValueError(f"no running broker {node_id} (running: {sorted(nodes)})")
        others = set(nodes) - {node_id}
        plan = plan_partition(nodes, [{node_id}, others] if peers else [], None)
        if etcd:
            plan[node_id] = (plan[node_id][0], True)
        return self._apply(plan)

    def heal(self) -> dict[int, dict[str, Any]]:
        """Every link of every broker works again."""
        return self._apply({})

    def links(self) -> dict[int, dict[str, Any]]:
        """Each running broker's cut links."""
        return {node: Links(call).describe() for node, call in self._link_calls().items()}


class ControlUnavailable(RuntimeError):
    """The broker has no control endpoint (``samsa.control.listener`` not set)."""


def http_call(url: str, timeout: float = 30.0, connect_wait: float = 5.0) -> Call:
    """A transport to a broker's control endpoint at ``url`` (``http://127.0.0.1:PORT``)."""
    import httpx

    from broker.control.endpoint import ROUTES

    client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout)

    def call(op: str, args: dict[str, Any]) -> Any:
        method, path = ROUTES[op]
        args = dict(args)
        if "{id}" in path:
            path = path.replace("{id}", str(args.pop("id")))
        deadline = time.monotonic() + connect_wait
        while True:
            try:
                resp = client.request(method, path, json=args if method == "POST" else None)
                break
            except httpx.ConnectError as exc:
                if time.monotonic() >= deadline:   # the endpoint starts just after the Kafka listener
                    raise ControlUnavailable(
                        f"no Samsa control endpoint at {url} ({exc}); faults and the clock need the broker "
                        "started with samsa.control.listener=http://127.0.0.1:PORT") from None
                time.sleep(0.02)
            except httpx.TransportError as exc:   # something else listens there
                raise ControlUnavailable(f"no Samsa control endpoint at {url}: {exc!r}") from None
        if resp.status_code == 400:
            raise ValueError(resp.json().get("error", resp.text))
        if resp.status_code != 200:
            raise ControlUnavailable(f"{url} answered {resp.status_code} to {method} {path}: is it a Samsa "
                                     f"control endpoint? {resp.text[:200]}")
        return resp.json()

    call.close = client.close  # type: ignore[attr-defined]
    return call


class SamsaControl:
    """Faults and clock of a broker started elsewhere, through its control endpoint:
    ``SamsaControl("http://127.0.0.1:8091").faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER")``."""

    def __init__(self, url: str, timeout: float = 30.0, connect_wait: float = 1.0) -> None:
        self.url = url
        self._call = http_call(url, timeout, connect_wait)
        self.faults = Faults(self._call)
        self.clock = BrokerClock(self._call)
        self.links = Links(self._call)

    def close(self) -> None:
        self._call.close()  # type: ignore[attr-defined]

    def __enter__(self) -> SamsaControl:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class SamsaClusterControl(LinkControl):
    """Partitions of a cluster started elsewhere, through each broker's control endpoint:
    ``SamsaClusterControl(["http://127.0.0.1:8091", "http://127.0.0.1:8092"]).isolate(1)``. The
    node ids are read from the endpoints."""

    def __init__(self, urls: Iterable[str], timeout: float = 30.0, connect_wait: float = 1.0) -> None:
        self.brokers: dict[int, SamsaControl] = {}
        for url in urls:
            control = SamsaControl(url, timeout, connect_wait)
            self.brokers[int(control.links.describe()["node_id"])] = control

    def _link_calls(self) -> Mapping[int, Call]:
        return {node: control._call for node, control in self.brokers.items()}

    def close(self) -> None:
        for control in self.brokers.values():
            control.close()

    def __enter__(self) -> SamsaClusterControl:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def refused(reason: str) -> Call:
    """A transport that refuses every operation with ``reason`` (a broker without the endpoint)."""
    def call(op: str, args: dict[str, Any]) -> Any:
        raise ControlUnavailable(reason)
    return call
