"""A minimal blocking Kafka protocol client for tests and benchmarks that need exact requests:
kafka-python's message classes encode/decode, this module only moves the bytes. The tests import it
through tests/support/rawclient.py (bench never imports tests)."""
from __future__ import annotations

import socket
import struct
from typing import Any

from protocol.messages import REQUESTS, RESPONSES


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exact(4))
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker")
            buf += chunk
        return bytes(buf)

    def send(self, api_key: int, version: int, **fields: Any) -> int:
        self.correlation_id += 1
        req = REQUESTS[api_key](**fields)
        req.with_header(correlation_id=self.correlation_id, client_id="samsa-tests")
        self.sock.sendall(bytes(req.encode(version=version, header=True, framed=True)))
        return self.correlation_id

    def receive(self, api_key: int, version: int) -> Any:
        frame = self.recv_frame()
        return RESPONSES[api_key].decode(frame, version=version, header=True)

    def request(self, api_key: int, version: int, **fields: Any) -> Any:
        corr = self.send(api_key, version, **fields)
        resp = self.receive(api_key, version)
        assert resp.header.correlation_id == corr
        return resp

    def call(self, req: Any, response_cls: Any, version: int) -> Any:
        """One round trip with a request object built by the caller."""
        self.correlation_id += 1
        req.with_header(correlation_id=self.correlation_id, client_id="samsa-tests")
        self.sock.sendall(bytes(req.encode(version=version, header=True, framed=True)))
        resp = response_cls.decode(self.recv_frame(), version=version, header=True)
        assert resp.header.correlation_id == self.correlation_id
        return resp

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True when the broker closed the connection (EOF or reset) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
