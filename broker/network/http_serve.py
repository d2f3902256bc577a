"""Serve ASGI routes on an ``http://host:port`` listener from the broker's trio nursery.

hypercorn (a maintained ASGI server with a native trio worker) does the HTTP; Samsa only maps
paths to small ASGI handlers. A :class:`Routes` table is itself an ASGI app, so the metrics and
console routes and the control routes can share one listener or use two.
"""
from __future__ import annotations

import json
from typing import Any
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import trio

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class HttpListenerError(ValueError):
    """A ``samsa.*.listener`` value that is not ``http://host:port``."""


def parse_http_listener(value: str) -> tuple[str, int]:
    """``http://127.0.0.1:8090`` → ``("127.0.0.1", 8090)``; port 0 picks a free one."""
    parts = urlsplit(value.strip())
    if parts.scheme != "http" or parts.port is None or parts.path not in ("", "/"):
        raise HttpListenerError(f"expected http://host:port, got {value!r}")
    return parts.hostname or "0.0.0.0", parts.port


async def read_body(receive: Receive, limit: int = 1 << 20) -> bytes:
    """The request body, refusing more than ``limit`` bytes (a clear 413 beats a memory spike)."""
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if len(body) > limit:
            raise ValueError("request body too large")
        if not message.get("more_body"):
            return bytes(body)


async def respond(send: Send, status: int, body: bytes | str, content_type: str = "text/plain; charset=utf-8",
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    data = body.encode() if isinstance(body, str) else body
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()),
                            (b"content-length", str(len(data)).encode())] + (headers or [])})
    await send({"type": "http.response.body", "body": data})


async def respond_json(send: Send, status: int, payload: Any) -> None:
    await respond(send, status, json.dumps(payload), "application/json")


class Routes:
    """Path-prefix routing to ASGI apps; the longest matching prefix wins."""

    def __init__(self) -> None:
        self._routes: list[tuple[str, ASGIApp]] = []

    def mount(self, prefix: str, app: ASGIApp) -> None:
        self._routes.append((prefix, app))
        self._routes.sort(key=lambda r: len(r[0]), reverse=True)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        path = scope.get("path", "/")
        for prefix, app in self._routes:
            if path == prefix or path.startswith(prefix.rstrip("/") + "/") or prefix == "/":
                await app(scope, receive, send)
                return
        await respond(send, 404, "not found\n")


async def serve_http(app: ASGIApp, listener: str, name: str,
                     task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``app`` on ``listener`` until cancelled; ``task_status.started`` gets the bound port."""
    from hypercorn.config import Config
    from hypercorn.trio import serve

    import structlog

    host, port = parse_http_listener(listener)
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    log = structlog.get_logger("samsa.http")

    async def started(*, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        await serve(app, config, task_status=task_status)  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(started)
        bound = int(str(binds[0]).rsplit(":", 1)[1]) if binds else port
        log.info("http listening", listener=name, host=host, port=bound)
        task_status.started(bound)
