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

    from .request_log import set_request_logging

    level = os.environ.get("SAMSA_LOG_LEVEL", "INFO")
    configure(json=args.json_logs or os.environ.get("SAMSA_LOG_FORMAT") == "json", level=level)
    set_request_logging(level.upper() == "DEBUG")
    extra = dict(kv.split("=", 1) for kv in args.override)
    config = BrokerConfig.load(args.config, extra=extra)
    if config.get("samsa.http.listener"):
        from .http.serve import HttpListenerError, parse_http_listener
        try:
            parse_http_listener(str(config["samsa.http.listener"]))
        except HttpListenerError as exc:
            print(f"samsa: samsa.http.listener: {exc}", file=sys.stderr)
            return 2
    trio.run(serve, Broker(config))
    return 0


def healthcheck(bootstrap: str, timeout: float = 2.0) -> bool:
    """True when the broker answers an ApiVersions v0 request with error code 0."""
    host, _, port = bootstrap.rpartition(":")
    try:
        with socket.create_connection((host or "localhost", int(port)), timeout=timeout) as s:
            body = struct.pack(">hhih", 18, 0, 1, len(b"samsa-healthcheck")) + b"samsa-healthcheck"
            s.sendall(struct.pack(">i", len(body)) + body)
            head = _recv_exact(s, 4)
            (size,) = struct.unpack(">i", head)
            payload = _recv_exact(s, size)
            corr, err = struct.unpack_from(">ih", payload)
            return corr == 1 and err == 0
    except (OSError, struct.error, ValueError):
        return False


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
    return 0 if healthcheck(args.bootstrap, args.timeout) else 1


if __name__ == "__main__":
    sys.exit(main())
