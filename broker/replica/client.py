"""A broker's own Kafka client for talking to another broker (Kafka's NetworkClient as the
replica fetcher and the transaction marker sender use it): one trio connection, requests
encoded and responses decoded with kafka-python's message classes, one request in flight."""
from __future__ import annotations

import struct
from typing import Any

import trio

from protocol.messages import RESPONSES

_SIZE = struct.Struct(">i")
# Kafka clients' connections.max.idle.ms default: a connection unused this long is replaced before
# use rather than found closed by the other broker's connections.max.idle.ms (10 minutes)
CLIENT_MAX_IDLE_S = 540.0


class BrokerConnectionError(Exception):
    """The other broker could not be reached or closed the connection."""


class BrokerConnection:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 30.0) -> None:
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

    async def call(self, request: Any, version: int, timeout_s: float | None = None) -> Any:
        """Send one request and wait for its response (``timeout_s`` beyond the socket timeout,
        e.g. for a long-polling fetch)."""
        stream = await self._connect()
        self._correlation_id += 1
        request.with_header(correlation_id=self._correlation_id, client_id=self.client_id)
        frame = bytes(request.encode(version=version, header=True, framed=True))
        try:
            with trio.fail_after(timeout_s if timeout_s is not None else self.timeout_s):
                await stream.send_all(frame)
                (size,) = _SIZE.unpack(await self._recv_exact(stream, 4))
                body = await self._recv_exact(stream, size)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError,
                BrokerConnectionError) as exc:
            await self.close()
            raise BrokerConnectionError(f"request to {self.host}:{self.port} failed: {exc!r}") from None
        self._last_used = trio.current_time()
        response = RESPONSES[request.API_KEY].decode(body, version=version, header=True)
        if response.header.correlation_id != self._correlation_id:
            await self.close()
            raise BrokerConnectionError("correlation id mismatch")
        return response

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            with trio.CancelScope(shield=True):
                await stream.aclose()
