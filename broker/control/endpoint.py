"""The control operations (faults and the clock) and their HTTP endpoint,
``samsa.control.listener`` (off by default).

One table of operations, :data:`OPERATIONS`, serves every caller the same way: the JSON API
here (used by ``broker.testing.SamsaControl`` and ``samsa ctl``) and the in-process broker of
the test fixtures, which runs them on the broker's trio thread. Bad input is a ValueError with
a clear message, a 400 over HTTP.

JSON API (all bodies and answers JSON):

- ``POST /faults/fail``   ``{"api", "error", "count"=1, "topic", "group", "client_id"}``
- ``POST /faults/delay``  ``{"api", "ms", "count"=null, …match}``
- ``POST /faults/drop``   ``{"api", "count"=1, …match}``
- ``POST /faults/hold``   ``{"api", "count"=null, …match}`` → the fault; then
  ``POST /faults/{id}/release``
- ``GET /faults`` (armed faults), ``GET /faults/log`` (which fired, on which requests),
  ``DELETE /faults`` (clear: disarm all, release holds)
- ``GET /clock`` → ``{"now_ms", "offset_ms"}``; ``POST /clock/advance`` ``{"ms"}``
- ``GET /links`` → this broker's cut links ``{"node_id", "peers", "etcd", "swallowed", "lost"}``;
  ``POST /links`` ``{"peers": [node ids], "etcd": false}`` sets them (replacing the earlier ones);
  ``DELETE /links`` heals every link (broker/common/link_cuts.py). A partition of the cluster is
  each broker told its own side: broker/control/client.py's ``partition``/``isolate``/``heal``.

The listener binds loopback addresses only unless ``samsa.control.listener.allow.remote=true``:
anyone who reaches it can make the broker fail requests.
"""
from __future__ import annotations

import ipaddress
import json
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

ALLOW_REMOTE = "samsa.control.listener.allow.remote"


def _arm(kind: str) -> Callable[..., Any]:
    def arm(broker: Broker, api: Any = None, **args: Any) -> dict[str, Any]:
        fault = getattr(broker.faults, kind)(api, **args)
        return fault.describe()
    return arm


def _release(broker: Broker, id: Any = None) -> dict[str, Any]:
    if isinstance(id, bool) or not isinstance(id, int):
        raise ValueError(f"release needs a fault id (an integer), got {id!r}")
    return {"released": broker.faults.release(id)}


def _advance(broker: Broker, ms: Any = None) -> dict[str, Any]:
    broker.clock.advance(ms)
    return _now(broker)


def _now(broker: Broker) -> dict[str, Any]:
    return {"now_ms": broker.clock.now_ms(), "offset_ms": broker.clock.offset_ms}


def _cut(broker: Broker, peers: Any = (), etcd: Any = False) -> dict[str, Any]:
    if not isinstance(peers, (list, tuple)):
        raise ValueError(f"peers must be a list of broker node ids, got {peers!r}")
    return broker.links.cut(peers, etcd)


OPERATIONS: dict[str, Callable[..., Any]] = {
    "fail": _arm("fail"),
    "delay": _arm("delay"),
    "drop": _arm("drop"),
    "hold": _arm("hold"),
    "release": _release,
    "clear": lambda broker: {"cleared": broker.faults.clear()},
    "faults": lambda broker: broker.faults.describe(),
    "log": lambda broker: broker.faults.log(),
    "advance": _advance,
    "now": _now,
    "links": lambda broker: broker.links.describe(),
    "cut": _cut,
    "heal": lambda broker: broker.links.heal(),
}

# (method, path) of each operation; ``{id}`` is the fault id of ``release``
ROUTES: dict[str, tuple[str, str]] = {
    "fail": ("POST", "/faults/fail"), "delay": ("POST", "/faults/delay"), "drop": ("POST", "/faults/drop"),
    "hold": ("POST", "/faults/hold"), "release": ("POST", "/faults/{id}/release"), "clear": ("DELETE", "/faults"),
    "faults": ("GET", "/faults"), "log": ("GET", "/faults/log"), "advance": ("POST", "/clock/advance"),
    "now": ("GET", "/clock"), "links": ("GET", "/links"), "cut": ("POST", "/links"), "heal": ("DELETE", "/links"),
}


def run_operation(broker: Broker, op: str, args: dict[str, Any] | None = None) -> Any:
    """Run one control operation on the broker's trio thread; ValueError for bad input."""
    fn = OPERATIONS.get(op)
    if fn is None:
        raise ValueError(f"unknown control operation {op!r}; expected one of {', '.join(OPERATIONS)}")
    try:
        return fn(broker, **(args or {}))
    except TypeError as exc:  # unexpected or missing arguments
        raise ValueError(f"{op}: {exc}") from None


def route(method: str, path: str) -> tuple[str, dict[str, Any]] | None:
    """(operation, path arguments) for an HTTP request, or None."""
    parts = path.rstrip("/").split("/")
    for op, (m, pattern) in ROUTES.items():
        want = pattern.split("/")
        if m != method or len(want) != len(parts):
            continue
        args: dict[str, Any] = {}
        for w, p in zip(want, parts):
            if w == "{id}":
                if not p.isdigit():
                    break
                args["id"] = int(p)
            elif w != p:
                break
        else:
            return op, args
    return None


def control_app(broker: Broker) -> Callable[..., Any]:
    """The ASGI app of the control endpoint (mounted on broker/network/http_serve.py's Routes)."""
    from broker.network.http_serve import read_body, respond_json

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        found = route(scope["method"], scope.get("path", "/"))
        if found is None:
            await respond_json(send, 404, {"error": f"no control operation at {scope['method']} {scope.get('path')}"})
            return
        op, args = found
        try:
            body = await read_body(receive)
            if body.strip():
                payload = json.loads(body)
                if not isinstance(payload, dict):
                    raise ValueError("the request body must be a JSON object")
                args.update(payload)
            result = run_operation(broker, op, args)
        except ValueError as exc:      # includes bad JSON
            await respond_json(send, 400, {"error": str(exc)})
            return
        await respond_json(send, 200, result)

    return app


def check_bind(listener: str, allow_remote: bool) -> None:
    """Refuse a non-loopback control listener unless explicitly allowed."""
    from broker.network.http_serve import parse_http_listener

    host, _ = parse_http_listener(listener)
    if allow_remote:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise SystemExit(f"samsa.control.listener={listener} binds a non-loopback address; the control endpoint "
                         f"lets anyone who reaches it break the broker: use 127.0.0.1, or set {ALLOW_REMOTE}=true")


async def run_control_listener(broker: Broker, task_status: Any = None) -> None:
    """Serve the control endpoint on ``samsa.control.listener`` until cancelled."""
    import importlib

    import trio

    from broker.network.http_serve import Routes, serve_http

    # hypercorn is a large import: done off the event loop, so Kafka requests are not held up
    await trio.to_thread.run_sync(importlib.import_module, "hypercorn.trio")

    listener = str(broker.config["samsa.control.listener"])
    routes = Routes()
    routes.mount("/", control_app(broker))
    status = task_status if task_status is not None else trio.TASK_STATUS_IGNORED
    await serve_http(routes, listener, "control", task_status=status)
