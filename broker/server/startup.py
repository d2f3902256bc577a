"""``samsa serve`` listens first and loads afterwards.

Clients open with ApiVersions, and answering it needs only the API table; everything else (trio
itself, the API handlers, the coordinators, kafka-python's message classes, the log, structlog)
takes most of the start-up time — ``import trio`` alone costs about 100 ms here. So the listeners
are bound with the standard library at once, and a small lobby answers ApiVersions while the main
thread imports trio and the rest and builds the broker. A connection that sends anything else
waits in the lobby, its frame kept; once the broker is built, serving.py's ``serve`` takes over the
listening sockets and every lobby connection (its decoder and unanswered frames), and answers
them in order as if they had arrived at a running broker.

The lobby is a ``selectors`` loop in one thread, because nothing else can run while the main
thread imports (and trio, the structured way to run anything, is what is being imported). The
thread is scoped like a nursery child: started by :func:`serve_fast`, stopped and joined before
``trio.run`` starts, and it hands everything it holds back to the main thread; no thread
outlives start-up.

This module imports only what the lobby needs (the standard library, the frame decoder, the API
table and kafka-python's ApiVersions classes).
"""
from __future__ import annotations

import errno
import gc
import selectors
import signal
import socket
import sys
import threading
from typing import TYPE_CHECKING, Any

from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED
from protocol.frame import FrameDecoder, FrameError, peek_header
from protocol.kafka_import import import_submodule_alone
from broker.common.structlog_import import load_structlog

from .api_table import advertised_table
from broker.common.config import BrokerConfig, Listener

_av = import_submodule_alone("kafka.protocol.metadata.api_versions")  # not the whole metadata family
ApiVersionsRequest, ApiVersionsResponse = _av.ApiVersionsRequest, _av.ApiVersionsResponse

if TYPE_CHECKING:
    import trio

    from broker.server.broker_server import Broker

API_VERSIONS = ApiKey.API_VERSIONS
UNSUPPORTED_VERSION = 35
_SEND_TIMEOUT_S = 5.0   # an ApiVersions answer is < 1 KiB; a client that never reads it is dropped


class LobbyConnection:
    """A connection the lobby accepted: its socket, listener, decoder and the frames it keeps for
    ``serve`` (a plain class: a dataclass definition is ~1 ms of start-up)."""

    __slots__ = ("sock", "listener", "decoder", "pending")

    def __init__(self, sock: socket.socket, listener: str, decoder: FrameDecoder,
                 pending: list[bytes | bytearray] | None = None) -> None:
        self.sock = sock
        self.listener = listener
        self.decoder = decoder
        self.pending: list[bytes | bytearray] = [] if pending is None else pending


class Startup:
    """What the lobby hands to ``serve``: bound sockets by listener name, and connections."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.table = SUPPORTED
        self.sockets: dict[str, list[socket.socket]] = {}
        self.connections: list[LobbyConnection] = []

    def answer(self, frame: bytes | bytearray) -> bytes | None:
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
            c.sock.close()
        for sockets in self.sockets.values():
            for s in sockets:
                s.close()
        self.connections = []

    def listeners(self) -> dict[str, list[trio.SocketListener]]:
        """The bound sockets as trio listeners (inside ``trio.run``), for serving.py's ``serve``."""
        import trio

        return {name: [trio.SocketListener(trio.socket.from_stdlib_socket(s)) for s in socks]
                for name, socks in self.sockets.items()}

    def adopt(self, broker: Broker, conns: trio.Nursery, readers: set[trio.CancelScope]) -> None:
        """Called by ``serve`` once it listens: its connection tasks take over the lobby's."""
        import trio

        from broker.network.listeners import handle_connection

        for c in self.connections:
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(c.sock))
            conns.start_soon(handle_connection, broker, stream, c.listener, readers, c.decoder, c.pending)
        self.connections = []


def bind(listener: Listener) -> list[socket.socket]:
    """Listening sockets for ``listener`` as ``trio.open_tcp_listeners`` makes them: one per
    address of the host (every interface when it is empty), SO_REUSEADDR, IPv6 sockets v6-only."""
    # an ASCII host goes as bytes: a str is encoded with the ``idna`` codec, whose import (with
    # ``stringprep`` and ``unicodedata``) is a few ms of start-up; the addresses are the same
    host = (listener.host.encode("ascii") if listener.host.isascii() else listener.host) if listener.host else None
    infos = socket.getaddrinfo(host, listener.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    out: list[socket.socket] = []
    try:
        for family, type_, proto, _, addr in infos:
            s = socket.socket(family, type_, proto)
            out.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind(addr)
            s.listen(min(socket.SOMAXCONN, 0xFFFF))
    except BaseException:
        for s in out:
            s.close()
        raise
    return out


class Lobby:
    """Answers ApiVersions on the PLAINTEXT listeners while the main thread loads (see the module
    docstring). TLS and SASL connections wait in the kernel's backlog until ``serve`` accepts."""

    def __init__(self, startup: Startup) -> None:
        self.startup = startup
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._run, name="samsa-startup-lobby", daemon=True)
        self._max_frame = int(startup.config["socket.request.max.bytes"])
        self._conns: dict[socket.socket, LobbyConnection] = {}

    def __enter__(self) -> Lobby:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        """Stop and join the thread; the connections it holds go to ``startup.connections``."""
        self._wake_w.send(b"x")
        self._thread.join()
        self._wake_r.close()
        self._wake_w.close()
        self.startup.connections = list(self._conns.values())

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        try:
            for listener in self.startup.config.listeners:
                if listener.security_protocol != "PLAINTEXT":
                    continue
                for s in self.startup.sockets[listener.name]:
                    s.setblocking(False)
                    sel.register(s, selectors.EVENT_READ, listener.name)
            sel.register(self._wake_r, selectors.EVENT_READ, None)
            while True:
                for key, _ in sel.select():
                    if key.fileobj is self._wake_r:
                        return
                    if isinstance(key.data, str):
                        self._accept(sel, key.fileobj, key.data)   # type: ignore[arg-type]
                    else:
                        self._read(sel, key.data)
        finally:
            sel.close()

    def _accept(self, sel: selectors.BaseSelector, lst: socket.socket, listener: str) -> None:
        while True:
            try:
                sock, _ = lst.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    return      # the next select() tries again; ``serve`` accepts later anyway
                raise
            sock.setblocking(False)
            conn = LobbyConnection(sock, listener, FrameDecoder(self._max_frame))
            self._conns[sock] = conn
            sel.register(sock, selectors.EVENT_READ, conn)

    def _read(self, sel: selectors.BaseSelector, conn: LobbyConnection) -> None:
        into = conn.decoder.buffer()
        try:
            n = conn.sock.recv_into(into)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            n = 0
        finally:
            into.release()
        try:
            if not n:
                raise ConnectionError("closed by the client")
            for frame in conn.decoder.consumed(n):
                answer = None if conn.pending else self.startup.answer(frame)
                if answer is None:
                    conn.pending.append(frame)
                else:
                    conn.sock.settimeout(_SEND_TIMEOUT_S)
                    conn.sock.sendall(answer)
                    conn.sock.setblocking(False)
        except Exception:   # noqa: BLE001
            # as the running broker does: a bad frame (or a gone client) closes the connection
            sel.unregister(conn.sock)
            del self._conns[conn.sock]
            conn.sock.close()


def _load(config: BrokerConfig, json_logs: bool, level: str) -> Broker:
    """Import the broker and build it (its log is loaded by ``serve``)."""
    from broker.common.structlog_import import configure_when_loaded
    if not configure_when_loaded(json_logs, level):   # samsa serve: once it has served (_load_log_when_idle)
        from broker.common.logging_setup import configure
        configure(json=json_logs, level=level)
    from broker import apis  # noqa: F401  (registers the API handlers)
    from broker.server.broker_server import Broker
    from broker.network.request_log import set_request_logging

    set_request_logging(level.upper() == "DEBUG")   # one debug line per request
    return Broker(config)


def serve_fast(config: BrokerConfig, json_logs: bool = False, level: str = "INFO", resume_gc: bool = False) -> None:
    """``samsa serve``: listen, answer ApiVersions while loading, then run the broker until
    SIGTERM/SIGINT. A signal that arrives while loading ends start-up cleanly, unserved.
    ``resume_gc``: the caller paused the garbage collector for start-up; it is enabled again
    once the first answers are out (``_after_first_answers``), or when start-up ends unserved."""
    startup = Startup(config)
    control = config.get("samsa.control.listener")
    if control:                    # refused before listening, not after the first answers
        from broker.control.endpoint import ALLOW_REMOTE, check_bind
        check_bind(str(control), bool(config.get(ALLOW_REMOTE)))
    startup.table = advertised_table(config)
    signalled: list[int] = []      # SIGTERM/SIGINT while loading (trio's handlers come later)
    previous = {sig: signal.signal(sig, lambda signum, _frame: signalled.append(signum))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    interval = sys.getswitchinterval()
    try:
        try:
            for listener in config.listeners:
                startup.sockets[listener.name] = bind(listener)
            sys.setswitchinterval(0.001)   # while the main thread imports, the lobby gets the GIL sooner
            with Lobby(startup):
                broker = _load(config, json_logs, level)
        except BaseException:
            startup.close()
            raise
        finally:
            sys.setswitchinterval(interval)
        if signalled:
            startup.close()
            return
        import trio

        trio.run(_serve, broker, startup, signalled, resume_gc)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        load_structlog()   # structlog itself from here (start-up that ended before serving included)
        if resume_gc:
            gc.enable()


async def _serve(broker: Broker, startup: Startup, signalled: list[int], resume_gc: bool = False) -> None:
    """Serve until SIGTERM/SIGINT, including one that arrived while trio was starting."""
    import trio

    from broker.server.serving import serve

    startup.sockets = startup.listeners()   # type: ignore[assignment]  # trio's from here on
    stop = trio.Event()
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            async def watch() -> None:
                if not signalled:
                    async for _ in signals:
                        break
                stop.set()
            nursery.start_soon(watch)
            nursery.start_soon(_freeze_start_up_objects, broker)
            nursery.start_soon(_after_first_answers, resume_gc)
            await serve(broker, stop=stop, startup=startup)
            nursery.cancel_scope.cancel()


async def _after_first_answers(resume_gc: bool) -> None:
    """Once the broker has answered what its first clients sent (every task waits, for 5 ms),
    and at most ``WARM_UP_DELAY_S`` after it serves: import structlog (until then the stand-in of
    broker/common/structlog_import.py writes the start-up lines: its ~30 ms import no longer comes
    before the first Metadata answer) and resume the garbage collector paused for start-up.
    ``trio.testing`` (which re-exports the wait) imports pytest, so the wait is taken from
    ``trio._core``."""
    import trio

    from broker.server.broker_server import WARM_UP_DELAY_S

    with trio.move_on_after(WARM_UP_DELAY_S):
        try:   # private: a trio release that moves it costs only the early load, never the start-up
            from trio._core import wait_all_tasks_blocked
        except ImportError:
            await trio.sleep(WARM_UP_DELAY_S)
        else:
            await wait_all_tasks_blocked(0.005)
    load_structlog()
    if resume_gc:
        gc.enable()


async def _freeze_start_up_objects(broker: Broker) -> None:
    """``gc.freeze()`` once the broker has warmed up (coordinators built, API modules imported):
    the ~55,000 objects of start-up (modules, classes, the broker's parts) leave the collector's
    generations, so a full collection no longer walks them (~48 ms each at load ~3, ~6 % of the
    broker's CPU under commit loops, issue 23). A full collection at that point finds no garbage,
    so nothing is pinned. ``samsa serve`` only: a test process that runs in-process brokers one
    after another would pin each one's objects, and its own garbage, for good."""
    await broker.warmed_up.wait()
    gc.freeze()

