"""Trio listeners and connections.

One nursery per listener and one per connection. A connection's frames are answered strictly in
arrival order (clients pipeline requests and match responses by order as well as correlation id):
a plain-TCP connection reads and answers in one task (``_serve_socket``), a TLS connection reads
frames in one task and answers them in another (``_read_frames``, ``_answer``). Frames already
received are still processed after the client half-closes, so acks=0 produce data is never dropped.
"""
from __future__ import annotations

import errno
import socket
from collections import deque
from time import perf_counter
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Sequence

import structlog
import trio

from protocol.frame import FrameDecoder, FrameError

from broker.common.config import Listener
from broker.common.connection_close import CloseConnection
from .dispatch import dispatch
from .idle_expiry import IdleExpiry
from broker.security.session import FailedAuthentication, Session, illegal_state_answer
from broker.security.transport import secure
from .sendfile import send_parts
from . import request_log, sockio

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

log = structlog.get_logger("samsa.server")

_QUEUE = 64


async def _read_frames(stream: trio.abc.Stream, decoder: FrameDecoder,
                       send: trio.MemorySendChannel, peer: str, readers: set[trio.CancelScope],
                       idle: IdleExpiry) -> None:
    async with send:
        with trio.CancelScope() as scope:
            readers.add(scope)
            try:
                await _read_stream_loop(stream, decoder, send, peer, idle)
            finally:
                readers.discard(scope)


async def _forward(take: Callable[[Any], Sequence[bytes | bytearray]], received: Any,
                   send: trio.MemorySendChannel, peer: str, idle: IdleExpiry) -> bool:
    """Hand the frames completed by what was just received to the answering task (TLS connections).
    On a bad frame the error goes down the channel (the answerer closes) and False says stop."""
    idle.touch()
    try:
        frames = take(received)
    except FrameError as exc:
        log.warning("closing connection: bad frame", peer=peer, reason=str(exc))
        await send.send(exc)
        return False
    try:
        for frame in frames:
            try:   # without the yield of send(): the reader yields when it waits or reads on
                send.send_nowait(frame)
            except trio.WouldBlock:
                await send.send(frame)
    except (trio.BrokenResourceError, trio.ClosedResourceError):   # the answering task has ended
        return False
    return True


async def _read_stream_loop(stream: trio.abc.Stream, decoder: FrameDecoder,
                            send: trio.MemorySendChannel, peer: str, idle: IdleExpiry) -> None:
    """TLS connections: the bytes come decrypted from the SSLStream, not from the socket."""
    while True:
        try:
            data = await stream.receive_some(1 << 16)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return
        if not data:
            return
        if not await _forward(decoder.feed, data, send, peer, idle):
            return


async def _answer(broker: Broker, stream: trio.abc.Stream, receive: trio.MemoryReceiveChannel,
                  peer: str, host: str, listener: str, cancel: trio.CancelScope, session: Session,
                  idle: IdleExpiry) -> None:
    """The answering task of a TLS connection (its reader is ``_read_frames``)."""
    async with receive:
        async for frame in receive:
            if isinstance(frame, FrameError):
                if session.authenticating:   # e.g. a frame over sasl.server.max.receive.size
                    await trio.sleep(broker.security.failed_auth_delay_s)
                break
            if not await _answer_frame(broker, stream, frame, peer, host, listener, session, idle):
                break
    cancel.cancel()


async def _answer_frame(broker: Broker, stream: trio.abc.Stream, frame: Any, peer: str, host: str,
                        listener: str, session: Session, idle: IdleExpiry) -> bool:
    """Answer one request frame (bytes or the decoder's bytearray); False when the connection must
    close instead (bad request, failed authentication, a handler's error, a peer that went away)."""
    idle.begin()
    started = request_log.now()
    try:
        if session.gated:   # SASL: not yet authenticated, raw tokens, or a session that expires
            session.admit(frame)
            if session.raw_tokens:   # after a SaslHandshake v0: a bare token
                await stream.send_all(session.raw_answer(frame))
                idle.end()
                return True
        response = await dispatch(broker, frame, host, listener, session)
    except FailedAuthentication as exc:   # Kafka's delayed close (and answer) on failed authentication
        log.info("closing connection: failed authentication", peer=peer, reason=str(exc))
        await _after_failed_authentication(broker, stream, illegal_state_answer(frame) if exc.answer else None)
        return False
    except FrameError as exc:
        log.warning("closing connection: bad request", peer=peer, reason=str(exc))
        return False
    except CloseConnection as exc:   # Kafka's answer is the close itself (acks=0 Produce errors)
        log.info("closing connection", peer=peer, reason=str(exc))
        return False
    except Exception:
        log.exception("request failed; closing connection", peer=peer)
        return False
    if broker.metrics is not None or request_log.enabled:
        request_log.request_answered(broker, frame, started, host, listener)
    if session.close_after:   # a failed authentication: the answer and the close wait
        await _after_failed_authentication(broker, stream, response)
        return False
    if response is not None:
        try:
            if isinstance(response, list):
                await send_parts(stream, response)
            else:
                await sockio.send_all(stream, response)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return False
    idle.end()
    return True


async def _serve_socket(broker: Broker, stream: trio.SocketStream, decoder: FrameDecoder,
                        frames: deque[bytes | bytearray], peer: str, host: str, listener: str, session: Session,
                        idle: IdleExpiry, readers: set[trio.CancelScope], cancel: trio.CancelScope) -> None:
    """A plain-TCP connection in one task: read, answer every frame read, in order, read again.

    A reader task and an answering task joined by a memory channel (as TLS connections keep,
    ``_read_frames``/``_answer``) cost every request two task switches, a channel hand-over and an
    extra pass of trio's scheduler (another ``epoll_wait``): about a third of the network path's CPU
    for a small request such as OffsetCommit. Nothing is lost by reading after answering: Kafka
    itself mutes a connection while its request is processed, and the kernel keeps what arrives.
    Shutdown still stops the reading only: while the task waits for bytes (every frame read is
    answered by then) the connection's cancel scope is in ``readers``, which broker/server/serving.py
    cancels, and once ``broker.stopping`` is set no new read starts, so frames already read are
    answered first. (A cancel scope entered around each wait instead cost ~5 us per request.) The task yields at least once per read
    (the wait for readability, or a checkpoint) and between frames read together, so a client
    pipelining requests does not starve the other connections.

    Busy polling (broker/network/busy_poll.py): when this connection's last request arrived
    within the window of the answers before it, answering it keeps the broker's loop awake for
    another window, so the client's next request does not find the broker asleep."""
    sock = stream.socket
    drained = False
    busy_poll = broker.busy_poll
    window = busy_poll.window_s
    answered = -1e9    # perf_counter() when the last answers went out
    came_back = False  # the last request arrived within the window of the answers before it
    try:
        while True:
            if frames:
                while frames:
                    if not await _answer_frame(broker, stream, frames.popleft(), peer, host, listener, session, idle):
                        return
                    if frames:
                        await trio.lowlevel.checkpoint()
                if window:
                    answered = perf_counter()
                    if came_back:
                        busy_poll.keep_awake(answered)
            if broker.stopping.is_set():   # shutdown: what was read is answered, nothing more is read
                return
            into = decoder.buffer()
            offered = len(into)
            readers.add(cancel)   # waiting, nothing in hand: shutdown may cancel the whole connection
            try:
                n = await sockio.recv_into(sock, into, drained)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return
            finally:
                readers.discard(cancel)
                into.release()
            if not n:
                return
            if window:
                came_back = perf_counter() - answered < window
            drained = n < offered
            idle.touch()
            try:
                frames.extend(decoder.consumed(n))
            except FrameError as exc:
                log.warning("closing connection: bad frame", peer=peer, reason=str(exc))
                if session.authenticating:   # e.g. a frame over sasl.server.max.receive.size
                    await trio.sleep(broker.security.failed_auth_delay_s)
                return
            if not drained:   # more may be waiting: read it after the answers, letting other tasks run first
                await trio.lowlevel.checkpoint()
    finally:
        cancel.cancel()


async def _after_failed_authentication(broker: Broker, stream: trio.abc.Stream, answer: Any) -> None:
    """Kafka's ``connection.failed.authentication.delay.ms`` (Selector's delayed close): the
    failure's answer, if any, goes out after the delay, and the connection closes right after, so
    password guessing is slowed down without holding anything but this connection's task."""
    await trio.sleep(broker.security.failed_auth_delay_s)
    if answer is None:
        return
    try:
        if isinstance(answer, list):
            await send_parts(stream, answer)
        else:
            await stream.send_all(answer)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


async def handle_connection(broker: Broker, stream: trio.SocketStream, listener: str,
                            readers: set[trio.CancelScope], decoder: FrameDecoder | None = None,
                            pending: Sequence[bytes | bytearray] = ()) -> None:
    """Serve one connection; ``decoder`` and ``pending`` (frames received but not answered) come
    from broker/server/startup.py when the connection arrived while the broker was loading."""
    try:
        addr = stream.socket.getpeername()
        host, peer = addr[0], f"{addr[0]}:{addr[1]}"
    except OSError:
        host = peer = "unknown"
    try:
        stream.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # -1 keeps the OS default, as in Kafka
        for prop, opt in (("socket.send.buffer.bytes", socket.SO_SNDBUF),
                          ("socket.receive.buffer.bytes", socket.SO_RCVBUF)):
            size = int(broker.config[prop])
            if size > 0:
                stream.socket.setsockopt(socket.SOL_SOCKET, opt, size)
    except OSError:
        pass
    decoder = decoder or FrameDecoder(int(broker.config["socket.request.max.bytes"]))
    metrics = broker.metrics
    if metrics is not None:
        metrics.connection_opened(listener)
    conn: trio.abc.Stream = stream
    try:
        secured = await secure(broker.security, broker.security.listeners[listener], stream, host, peer)
        if secured is None:
            return
        conn, session = secured
        if session.gated:
            session.limit_frames(decoder)
        async with trio.open_nursery() as nursery:
            idle = IdleExpiry(nursery.cancel_scope, int(broker.config["connections.max.idle.ms"]))
            if idle.enabled:
                nursery.start_soon(idle.watch)
            if isinstance(conn, trio.SocketStream):
                nursery.start_soon(_serve_socket, broker, conn, decoder, deque(pending), peer, host, listener,
                                   session, idle, readers, nursery.cancel_scope)
            else:
                send, receive = trio.open_memory_channel(_QUEUE)
                nursery.start_soon(_answer, broker, conn, receive, peer, host, listener, nursery.cancel_scope,
                                   session, idle)
                for frame in pending:           # answered first, in order, before anything read later
                    await send.send(frame)
                nursery.start_soon(_read_frames, conn, decoder, send, peer, readers, idle)
        if nursery.cancel_scope.cancelled_caught and idle.expired():
            log.debug("closed idle connection (connections.max.idle.ms)", peer=peer, listener=listener)
    finally:
        if metrics is not None:
            metrics.connection_closed(listener)
        with trio.CancelScope(shield=True):
            with trio.move_on_after(1.0):   # TLS close_notify must not wait on a peer that never reads
                try:
                    await conn.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass
            if conn is not stream:
                await stream.aclose()


async def run_listener(broker: Broker, listener: Listener, conn_nursery: trio.Nursery,
                       readers: set[trio.CancelScope], bound_sockets: list[trio.SocketListener] | None = None,
                       task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
    host = listener.host or None
    listeners = bound_sockets or await trio.open_tcp_listeners(listener.port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    log.info("listening", listener=listener.name, security_protocol=listener.security_protocol,
             host=listener.host or "0.0.0.0", port=bound)
    task_status.started(bound)
    async with trio.open_nursery() as nursery:
        for lst in listeners:
            nursery.start_soon(_accept_loop, broker, lst, listener.name, conn_nursery, readers)


async def _accept_loop(broker: Broker, lst: trio.SocketListener, listener: str, conn_nursery: trio.Nursery,
                       readers: set[trio.CancelScope]) -> None:
    async with lst:
        while True:
            try:
                stream = await lst.accept()
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("accept failed", error=str(exc))
                    await trio.sleep(0.1)
                    continue
                raise
            conn_nursery.start_soon(handle_connection, broker, stream, listener, readers)
