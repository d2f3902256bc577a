"""Is a broker up? The probe behind ``samsa healthcheck`` (the container HEALTHCHECK) and the
test fixtures' wait for start-up: plain sockets, no client library. Its own module so the
fixtures (broker/testing.py) need not import the command line (broker/cli.py), which imports
the dev cluster, which imports the fixtures' broker process."""
from __future__ import annotations

import socket
import struct


def healthcheck(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the broker answers ApiVersions v0 with error code 0 and then Metadata v1."""
    return probe(bootstrap, timeout) is None


def probe(bootstrap: str, timeout: float = 2.0) -> str | None:
    """None when the broker at ``bootstrap`` answers ApiVersions v0 with error code 0 and then a
    Metadata v1 request for no topics (ApiVersions alone is answered while the broker is still
    loading: broker/startup.py; Metadata once it serves), else why not (one phrase: what failed
    and how), so a failing container HEALTHCHECK says what it tried."""
    host, _, port = bootstrap.rpartition(":")
    client = struct.pack(">h", len(b"samsa-healthcheck")) + b"samsa-healthcheck"
    try:
        port_number = int(port)
    except ValueError:
        return f"{bootstrap!r} is not HOST:PORT"
    step = "connect"
    try:
        with socket.create_connection((host or "localhost", port_number), timeout=timeout) as s:
            step = "ApiVersions request"
            api_versions = struct.pack(">hhi", 18, 0, 1) + client
            metadata = struct.pack(">hhi", 3, 1, 2) + client + struct.pack(">i", 0)
            s.sendall(b"".join(struct.pack(">i", len(r)) + r for r in (api_versions, metadata)))
            corr, err = struct.unpack_from(">ih", _recv_frame(s))
            if corr != 1:
                return f"ApiVersions answer has correlation id {corr}, expected 1"
            if err != 0:
                return f"ApiVersions answered with error code {err}"
            step = "Metadata request"
            (corr,) = struct.unpack_from(">i", _recv_frame(s))
            if corr != 2:
                return f"Metadata answer has correlation id {corr}, expected 2"
    except socket.timeout:
        return f"{step} timed out after {timeout:g} s"
    except (OSError, struct.error) as exc:
        return f"{step} failed: {exc.strerror or exc}" if isinstance(exc, OSError) else f"{step}: bad answer ({exc})"
    return None


def _recv_frame(s: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", _recv_exact(s, 4))
    return _recv_exact(s, size)


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf
