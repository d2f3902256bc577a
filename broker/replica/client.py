"""A broker's own Kafka client for talking to another broker (Kafka's NetworkClient as the
replica fetcher and the transaction marker sender use it): one trio connection, requests
encoded and responses decoded with kafka-python's message classes, one request in flight.

Its client id names the sending broker (``samsa-<purpose>-<node id>``,
broker/common/link_cuts.py's ``inter_broker_client_id``), so the other broker can tell a peer's
requests from a client's; and it honours the broker's cut links (the same module): a call to a
cut peer gets no answer, as on a dropped network."""
from __future__ import annotations

import struct
from typing import Any

import trio

from protocol.messages import RESPONSES

from broker.common.link_cuts import LinkCuts, current_links, node_of_client_id

_SIZE = struct.Struct(">i")
# Kafka clients' connections.max.idle.ms default: a connection unused this long is replaced before
# use rather than found closed by the other broker's connections.max.idle.ms (10 minutes)
CLIENT_MAX_IDLE_S = 540.0


class BrokerConnectionError(Exception):
    """The other broker could not be reached or closed the connection."""


class BrokerConnection:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 30.0) -> None:
        if node_of_client_id(client_id) is None:
            raise ValueError(f"inter-broker client id {client_id!r} does not name the sending node "
                             "(samsa-<purpose>-<node id>: broker/common/link_cuts.py)")
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._stream: trio.SocketStream | None = None
        self._correlation_id = 0
        self._buf = bytearray()
        self._last_used = 0.0

    async def _connect(self) -> trio.SocketStream:
        if self._stream is not None and trio.current_time() - self._last_used > CLIENT_MAX_IDLE_S:
            await self.close()
        if self._stream is None:
            try:
                with trio.fail_after(self.timeout_s):
                    self._stream = await trio.open_tcp_stream(self.host, self.port)
            except (OSError, trio.TooSlowError) as exc:
                raise BrokerConnectionError(f"cannot connect to {self.host}:{self.port}: {exc}") from None
            self._buf = bytearray()
        return self._stream

    async def _recv_exact(self, stream: trio.SocketStream, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = await stream.receive_some(max(65536, n - len(self._buf)))
            if not chunk:
                raise BrokerConnectionError(f"{self.host}:{self.port} closed the connection")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def _unanswered(self, links: LinkCuts, peer: int, timeout_s: float) -> None:
        """The link to ``peer`` is cut: what a dropped network does to this call. A new
        connection waits its connect timeout; a request on an open one waits ``timeout_s``; both
        fail then, and the socket given up is closed only once the link heals. If the link heals
        first, a connection attempt goes on; a request that was sent into the cut is lost (the
        connection is reset) and the call fails at once, so the caller retries."""
        had_stream = self._stream is not None
        healed = await links.wait_healed(peer, timeout_s if had_stream else self.timeout_s)
        if healed and not had_stream:
            return
        links.lost += 1
        self._detach(links, peer)
        what = "no answer" if had_stream else "connection timed out"
        raise BrokerConnectionError(f"{what} from broker {peer} at {self.host}:{self.port}: "
                                    f"{'the link was cut' if healed else 'the link is cut'}")

    def _detach(self, links: LinkCuts, peer: int) -> None:
        """Give up the connection without a FIN on a cut link: closed once the link heals."""
        stream, self._stream = self._stream, None
        if stream is not None:
            links.defer_close(peer, stream.socket)

    async def call(self, request: Any, version: int, timeout_s: float | None = None) -> Any:
        """Send one request and wait for its response (``timeout_s`` beyond the socket timeout,
        e.g. for a long-polling fetch)."""
        links = current_links()
        wait_s = timeout_s if timeout_s is not None else self.timeout_s
        if links is not None:
            peer = links.peer_cut_at(self.host, self.port)
            if peer is not None:
                await self._unanswered(links, peer, wait_s)
        stream = await self._connect()
        self._correlation_id += 1
        request.with_header(correlation_id=self._correlation_id, client_id=self.client_id)
        frame = bytes(request.encode(version=version, header=True, framed=True))
        try:
            with trio.fail_after(wait_s):
                await stream.send_all(frame)
                (size,) = _SIZE.unpack(await self._recv_exact(stream, 4))
                body = await self._recv_exact(stream, size)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError,
                BrokerConnectionError) as exc:
            if links is not None and links.peer_cut_at(self.host, self.port) is not None:
                links.lost += 1       # cut while the request was out (close() keeps the FIN back)
            await self.close()
            raise BrokerConnectionError(f"request to {self.host}:{self.port} failed: {exc!r}") from None
        if links is not None:
            peer = links.peer_cut_at(self.host, self.port)
            if peer is not None:     # cut while the request was out: its answer is dropped
                await self._unanswered(links, peer, wait_s)
        self._last_used = trio.current_time()
        response = RESPONSES[request.API_KEY].decode(body, version=version, header=True)
        if response.header.correlation_id != self._correlation_id:
            await self.close()
            raise BrokerConnectionError("correlation id mismatch")
        return response

    async def close(self) -> None:
        links = current_links()
        peer = links.peer_cut_at(self.host, self.port) if links is not None else None
        if links is not None and peer is not None:
            self._detach(links, peer)       # no FIN through a cut link
            return
        stream, self._stream = self._stream, None
        if stream is not None:
            with trio.CancelScope(shield=True):
                await stream.aclose()
