"""Is a broker up? The probe behind ``samsa healthcheck`` (the container HEALTHCHECK) and the
test fixtures' wait for start-up: plain sockets, no client library. Its own module so the
fixtures (broker/testing/plugin.py) need not import the command line (broker/cli.py), which imports
the dev cluster, which imports the fixtures' broker process."""
from __future__ import annotations

import os
import socket
import ssl
import struct
from collections.abc import Mapping


def healthcheck(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the broker answers ApiVersions v0 with error code 0 and then Metadata v1."""
    return probe(bootstrap, timeout) is None


def probe(bootstrap: str, timeout: float = 2.0, tls: ssl.SSLContext | None = None,
          sasl: bool = False) -> str | None:
    """None when the broker at ``bootstrap`` answers ApiVersions v0 with error code 0 and then a
    Metadata v1 request for no topics (ApiVersions alone is answered while the broker is still
    loading: broker/server/startup.py; Metadata once it serves), else why not (one phrase: what failed
    and how), so a failing container HEALTHCHECK says what it tried. ``tls``: the connection is
    TLS first (SSL, SASL_SSL listeners). ``sasl``: ApiVersions only, as a SASL listener closes a
    connection that asks anything else before authenticating (TLS listeners are served only once
    the broker runs: the start-up lobby answers PLAINTEXT only, so the answer still means up)."""
    host, _, port = bootstrap.rpartition(":")
    client = struct.pack(">h", len(b"samsa-healthcheck")) + b"samsa-healthcheck"
    try:
        port_number = int(port)
    except ValueError:
        return f"{bootstrap!r} is not HOST:PORT"
    step = "connect"
    try:
        with socket.create_connection((host or "localhost", port_number), timeout=timeout) as raw:
            s = raw
            if tls is not None:
                step = "TLS handshake"
                s = tls.wrap_socket(raw)
            step = "ApiVersions request"
            api_versions = struct.pack(">hhi", 18, 0, 1) + client
            metadata = struct.pack(">hhi", 3, 1, 2) + client + struct.pack(">i", 0)
            requests = (api_versions,) if sasl else (api_versions, metadata)
            s.sendall(b"".join(struct.pack(">i", len(r)) + r for r in requests))
            corr, err = struct.unpack_from(">ih", _recv_frame(s))
            if corr != 1:
                return f"ApiVersions answer has correlation id {corr}, expected 1"
            if err != 0:
                return f"ApiVersions answered with error code {err}"
            if not sasl:
                step = "Metadata request"
                (corr,) = struct.unpack_from(">i", _recv_frame(s))
                if corr != 2:
                    return f"Metadata answer has correlation id {corr}, expected 2"
    except TimeoutError:
        return f"{step} timed out after {timeout:g} s"
    except (OSError, struct.error) as exc:
        if isinstance(exc, ssl.SSLError):
            return f"{step} failed: {exc.reason or exc}"
        return f"{step} failed: {exc.strerror or exc}" if isinstance(exc, OSError) else f"{step}: bad answer ({exc})"
    return None


# Which listener the probe asks when it is not told: the one it can ask the most without credentials.
_PREFERENCE = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def own_listener_probe(environ: Mapping[str, str] | None = None,
                       timeout: float = 2.0) -> tuple[str, str, str | None]:
    """The container HEALTHCHECK without an address: probe this broker's own listener, read from
    the same ``KAFKA_*`` environment ``samsa serve`` reads (``listeners``,
    ``listener.security.protocol.map``, ``ssl.*``). PLAINTEXT is preferred, then SSL (TLS,
    presenting the broker's own key store, so an ``ssl.client.auth=required`` listener accepts
    it; the broker's certificate is not verified: the probe asks its own process), then SASL
    listeners (ApiVersions only). Returns (whom it asked, what it asked, None or why it failed)."""
    from broker.common.config import BrokerConfig, ConfigError  # not for the fixtures' import of probe()
    try:
        config = BrokerConfig.load(environ=os.environ if environ is None else environ)
        listeners = sorted(config.listeners, key=lambda lst: _PREFERENCE.index(lst.security_protocol))
    except (ConfigError, ValueError, KeyError) as exc:
        return "the broker's listeners", "", f"cannot read them from KAFKA_LISTENERS: {exc}"
    if not listeners:
        return "the broker's listeners", "", "KAFKA_LISTENERS names none"
    listener = listeners[0]
    host = listener.host if listener.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
    bootstrap = f"{host}:{listener.port}"
    what = bootstrap if listener.security_protocol == "PLAINTEXT" else \
        f"{bootstrap} ({listener.name}, {listener.security_protocol})"
    asked = "ApiVersions" if listener.sasl else "ApiVersions and Metadata"
    tls = None
    if listener.tls:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
        if not listener.sasl:
            from broker.security.tls import load_keystore
            try:
                load_keystore(tls, config, listener.name)
            except (ConfigError, OSError, ssl.SSLError, ValueError) as exc:
                return what, asked, f"cannot load the listener's key store: {exc}"
    return what, asked, probe(bootstrap, timeout, tls=tls, sasl=listener.sasl)


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
