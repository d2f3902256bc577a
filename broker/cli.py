"""``samsa serve`` runs the broker; ``samsa healthcheck`` asks one for ApiVersions."""
from __future__ import annotations

import argparse
import os
import socket
import struct
import sys

from .config import BrokerConfig


def _serve(args: argparse.Namespace) -> int:
    from protocol.kafka_import import skip_client_package_init

    skip_client_package_init()
    import trio

    from . import apis  # noqa: F401  (registers the API handlers)
    from .broker import Broker
    from .logging import configure
    from .server import serve

    from .dispatch import set_request_logging

    level = os.environ.get("SAMSA_LOG_LEVEL", "INFO")
    configure(json=args.json_logs or os.environ.get("SAMSA_LOG_FORMAT") == "json", level=level)
    set_request_logging(level.upper() == "DEBUG")
    extra = dict(kv.split("=", 1) for kv in args.override)
    config = BrokerConfig.load(args.config, extra=extra)
    trio.run(serve, Broker(config))
    return 0


def healthcheck(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the broker answers an ApiVersions v0 request with error code 0."""
    return probe(bootstrap, timeout) is None


def probe(bootstrap: str, timeout: float = 2.0) -> str | None:
    """None when the broker at ``bootstrap`` answers ApiVersions v0 with error code 0, else why not
    (one phrase: what failed and how), so a failing container HEALTHCHECK says what it tried."""
    host, _, port = bootstrap.rpartition(":")
    try:
        port_number = int(port)
    except ValueError:
        return f"{bootstrap!r} is not HOST:PORT"
    step = "connect"
    try:
        with socket.create_connection((host or "localhost", port_number), timeout=timeout) as s:
            step = "ApiVersions request"
            body = struct.pack(">hhih", 18, 0, 1, len(b"samsa-healthcheck")) + b"samsa-healthcheck"
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(s, 4)
            (size,) = struct.unpack(">i", head)
            payload = _recv_exact(s, size)
            corr, err = struct.unpack_from(">ih", payload)
    except socket.timeout:
        return f"{step} timed out after {timeout:g} s"
    except (OSError, struct.error) as exc:
        return f"{step} failed: {exc.strerror or exc}" if isinstance(exc, OSError) else f"{step}: bad answer ({exc})"
    if corr != 1:
        return f"ApiVersions answer has correlation id {corr}, expected 1"
    if err != 0:
        return f"ApiVersions answered with error code {err}"
    return None


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="samsa", description="Samsa: a Kafka broker in Python")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the broker")
    s.add_argument("--config", help="server.properties file (Kafka property names)")
    s.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="set one property, e.g. --override num.partitions=3")
    s.add_argument("--json-logs", action="store_true", help="log JSON lines instead of console lines")
    h = sub.add_parser("healthcheck", help="exit 0 when the broker answers ApiVersions")
    h.add_argument("--bootstrap", default=os.environ.get("SAMSA_BOOTSTRAP", "localhost:9092"))
    h.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    problem = probe(args.bootstrap, args.timeout)
    if problem is not None:
        # Shown by `docker inspect` (State.Health.Log) when the container's HEALTHCHECK fails.
        print(f"samsa healthcheck: no ApiVersions answer from {args.bootstrap}: {problem}", file=sys.stderr)
        return 1
    print(f"samsa healthcheck: {args.bootstrap} answered ApiVersions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
