"""``samsa serve`` listens first and loads afterwards.

Clients open with ApiVersions, and answering it needs only the API table; everything else (the
API handlers, the coordinators, kafka-python's message classes, the log, structlog) takes most
of the start-up time. So the listeners are bound at once and a small lobby answers ApiVersions
while the rest is imported in a worker thread (``trio.to_thread``: the event loop keeps
answering meanwhile) and the broker is built. A connection that sends anything else waits in
the lobby, its frame kept; once the broker is loaded, server.py's ``serve`` takes over the
listening sockets and every lobby connection (its decoder and unanswered frames), and answers
them in order as if they had arrived at a running broker.

This module imports only what the lobby needs (trio, the frame decoder, the API table and
kafka-python's ApiVersions classes).
"""
from __future__ import annotations

import errno
import signal
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import trio

from protocol.api_versions import SUPPORTED
from protocol.kafka_import import import_submodule_alone
from protocol.frame import FrameDecoder, FrameError, peek_header

from .config import BrokerConfig

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

_av = import_submodule_alone("kafka.protocol.metadata.api_versions")  # not the whole metadata family
ApiVersionsRequest, ApiVersionsResponse = _av.ApiVersionsRequest, _av.ApiVersionsResponse

if TYPE_CHECKING:
    from .broker import Broker

API_VERSIONS = 18
UNSUPPORTED_VERSION = 35


@dataclass
class LobbyConnection:
    stream: trio.SocketStream
    listener: str
    decoder: FrameDecoder
    pending: list[bytes] = field(default_factory=list)


class Startup:
    """What the lobby hands to ``serve``: bound sockets by listener name, and connections."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.table = SUPPORTED
        self.sockets: dict[str, list[trio.SocketListener]] = {}
        self.connections: list[LobbyConnection] = []

    def answer(self, frame: bytes) -> bytes | None:
        """The answer to an ApiVersions frame (KIP-511 downgrade included), else None."""
        prefix = peek_header(frame)
        if prefix.api_key != API_VERSIONS:
            return None
        lo, hi = self.table[API_VERSIONS]
        if not lo <= prefix.api_version <= hi:
            resp = ApiVersionsResponse(version=0, error_code=UNSUPPORTED_VERSION, api_keys=self._keys())
        else:
            try:                        # a malformed one closes the connection, as dispatch.py does
                ApiVersionsRequest.decode(frame, version=prefix.api_version, header=True)
            except Exception as exc:
                raise FrameError(f"cannot decode ApiVersionsRequest v{prefix.api_version}: {exc!r}") from None
            resp = ApiVersionsResponse(version=prefix.api_version, error_code=0, api_keys=self._keys(),
                                       throttle_time_ms=0)
        resp.with_header(correlation_id=prefix.correlation_id)
        return bytes(resp.encode(header=True, framed=True))

    def _keys(self) -> list:
        return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in sorted(self.table.items())]

    def close(self) -> None:
        """Start-up ended without a broker: close what the lobby holds."""
        for c in self.connections:
            c.stream.socket.close()
        for sockets in self.sockets.values():
            for lst in sockets:
                lst.socket.close()
        self.connections = []

    def adopt(self, broker: "Broker", conns: trio.Nursery, readers: set[trio.CancelScope]) -> None:
        """Called by ``serve`` once it listens: its connection tasks take over the lobby's."""
        from .server import handle_connection

        for c in self.connections:
            conns.start_soon(handle_connection, broker, c.stream, c.listener, readers, c.decoder, c.pending)
        self.connections = []


async def _lobby_connection(startup: Startup, stream: trio.SocketStream, listener: str) -> None:
    """Answer ApiVersions until cancelled (the broker is loaded), then leave the connection,
    its decoder and unanswered frames to ``serve``; keep any other request unanswered."""
    conn = LobbyConnection(stream, listener, FrameDecoder(int(startup.config["socket.request.max.bytes"])))
    handed = False
    try:
        while True:
            into = conn.decoder.buffer()
            try:
                n = await stream.socket.recv_into(into)
            finally:
                into.release()
            if not n:
                return
            for frame in conn.decoder.consumed(n):
                answer = None if conn.pending else startup.answer(frame)
                if answer is None:
                    conn.pending.append(frame)
                else:
                    with trio.CancelScope(shield=True):
                        await stream.send_all(answer)
    except trio.Cancelled:
        startup.connections.append(conn)
        handed = True
        raise
    except (FrameError, OSError, trio.BrokenResourceError, trio.ClosedResourceError):
        return                          # as the running broker does: a bad frame closes the connection
    finally:
        if not handed:
            with trio.CancelScope(shield=True):
                await stream.aclose()


async def _lobby_accept(startup: Startup, lst: trio.SocketListener, listener: str, nursery: trio.Nursery) -> None:
    while True:
        try:
            stream = await lst.accept()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                await trio.sleep(0.1)
                continue
            raise
        nursery.start_soon(_lobby_connection, startup, stream, listener)


def _load(config: BrokerConfig, json_logs: bool, level: str) -> "Broker":
    """In a worker thread: import the broker and build it (its log is loaded by ``serve``)."""
    from . import apis  # noqa: F401  (registers the API handlers)
    from .broker import Broker
    from .logging import configure

    configure(json=json_logs, level=level)
    from .request_log import set_request_logging
    set_request_logging(level.upper() == "DEBUG")   # one debug line per request
    return Broker(config)


async def serve_fast(config: BrokerConfig, json_logs: bool = False, level: str = "INFO") -> None:
    """``samsa serve``: listen, answer ApiVersions while loading, then run the broker."""
    startup = Startup(config)
    control = config.get("samsa.control.listener")
    if control:                    # refused before listening, not after the first answers
        from .control import ALLOW_REMOTE, check_bind
        check_bind(str(control), bool(config.get(ALLOW_REMOTE)))
    release = config.get("samsa.emulate.kafka.version")
    if release:
        from protocol.emulation import emulated_table
        try:
            startup.table = emulated_table(release)
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    for listener in config.listeners:
        startup.sockets[listener.name] = await trio.open_tcp_listeners(listener.port, host=listener.host or None)
    # SIGTERM/SIGINT are ours from here on: while loading they stop the start-up cleanly, later
    # they stop the broker (serve's clean shutdown, through ``stop``)
    stop = trio.Event()
    try:
        await _run(startup, config, json_logs, level, stop)
    except BaseExceptionGroup as group:   # a refusal to start (SystemExit) reads as before, not as a group
        exits = group.subgroup(SystemExit)
        if exits is not None:
            leaf: BaseException = exits
            while isinstance(leaf, BaseExceptionGroup):
                leaf = leaf.exceptions[0]
            raise leaf from None
        raise


async def _run(startup: Startup, config: BrokerConfig, json_logs: bool, level: str, stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as top:
            async def watch() -> None:
                async for _ in signals:
                    stop.set()
                    return
            top.start_soon(watch)
            broker = await _load_while_answering(startup, config, json_logs, level)
            if not stop.is_set():
                from .server import serve
                await serve(broker, stop=stop, startup=startup)
            else:
                startup.close()
            top.cancel_scope.cancel()


async def _load_while_answering(startup: Startup, config: BrokerConfig, json_logs: bool, level: str) -> "Broker":
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)   # while the loader thread runs, the event loop gets the GIL sooner
    loaded: list[Broker] = []
    failed: list[BaseException] = []
    try:
        async with trio.open_nursery() as lobby:
            for listener in config.listeners:
                if listener.security_protocol != "PLAINTEXT":
                    continue   # TLS and SASL connections wait in the backlog until the broker serves
                for lst in startup.sockets[listener.name]:
                    lobby.start_soon(_lobby_accept, startup, lst, listener.name, lobby)
            try:
                loaded.append(await trio.to_thread.run_sync(_load, config, json_logs, level))
            except BaseException as exc:  # noqa: BLE001 - re-raised below, outside the nursery
                failed.append(exc)
            lobby.cancel_scope.cancel()
    finally:
        sys.setswitchinterval(interval)
    if failed:
        startup.close()
        raise failed[0]
    return loaded[0]
