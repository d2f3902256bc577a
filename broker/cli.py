"""``samsa serve`` runs the broker; ``samsa healthcheck`` asks one for ApiVersions; ``samsa ctl``
arms faults, moves the clock and cuts the links of brokers through their control endpoints
(broker/control/endpoint.py): ``samsa ctl --url A,B,C partition 1 2,3`` / ``isolate 1`` / ``heal``."""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from broker.common.config import BrokerConfig, ConfigError
from broker.control.healthcheck import healthcheck, probe  # noqa: F401  (healthcheck: public, tests import it from here)

if TYPE_CHECKING:
    import argparse


def _serve(args: argparse.Namespace) -> int:
    return _serve_with(args.config, args.override, args.json_logs)


def plain_serve_args(argv: list[str]) -> tuple[str | None, list[str], bool] | None:
    """``serve`` with only ``--config FILE``, ``--override NAME=VALUE`` (each also as
    ``--option=value``) and ``--json-logs``, spelt out, as ``(config, overrides, json_logs)``; None
    for anything else, which argparse parses. What ``samsa serve`` is run with (the image, the
    tests, the bench) then starts without argparse and the whole command tree (~4 ms of start-up);
    tests/unit/test_lazy_loading.py checks these against argparse's."""
    if not argv or argv[0] != "serve":
        return None
    config: str | None = None
    overrides: list[str] = []
    json_logs = False
    i = 1
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if arg == "--json-logs":
            json_logs = True
        elif name in ("--config", "--override"):
            if not eq:          # the value is the next argument, unless it looks like an option
                if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                    return None
                i += 1
                value = argv[i]
            if name == "--config":
                config = value
            else:
                overrides.append(value)
        else:
            return None
        i += 1
    return config, overrides, json_logs


def _serve_with(config_file: str | None, overrides: list[str], json_logs: bool) -> int:
    import gc

    # start-up makes objects that live (modules, classes, the broker) and next to no garbage: the
    # collector's ~50 passes over them until the first answers are ~5-10 ms; serve_fast resumes it
    resume_gc = gc.isenabled()
    gc.disable()
    from broker.common.structlog_import import defer_structlog
    from protocol.kafka_import import skip_client_package_init

    skip_client_package_init()          # kafka-python's message classes without its client
    defer_structlog()   # imported once the first requests are served, without rich or colorama

    from broker.server.startup import serve_fast  # listens first; the rest is loaded while it answers ApiVersions

    extra = dict(kv.split("=", 1) for kv in overrides)
    try:
        # no properties file: Kafka's quick-start settings (config.QUICK_START_PROPERTIES)
        config = BrokerConfig.load(config_file, extra=extra, quick_start=not config_file)
        if config.get("samsa.http.listener"):
            from broker.network.http_serve import HttpListenerError, parse_http_listener
            try:
                parse_http_listener(str(config["samsa.http.listener"]))
            except HttpListenerError as exc:
                print(f"samsa: samsa.http.listener: {exc}", file=sys.stderr)
                return 2
        serve_fast(config, json_logs or os.environ.get("SAMSA_LOG_FORMAT") == "json",
                   os.environ.get("SAMSA_LOG_LEVEL", "INFO"), resume_gc=resume_gc)
    except ConfigError as exc:   # a clear line, not a traceback (Kafka exits on a bad config too)
        print(f"samsa serve: invalid configuration: {exc}", file=sys.stderr)
        return 2
    finally:
        if resume_gc:
            gc.enable()
    return 0


def _add_match(p: argparse.ArgumentParser) -> None:
    for name in ("topic", "group", "client-id"):
        p.add_argument(f"--{name}", help=f"only requests with this {name.replace('-', ' ')}")


def _add_ctl(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("ctl", help="faults and clock of a broker with samsa.control.listener")
    c.add_argument("--url", default=os.environ.get("SAMSA_CONTROL_URL"),
                   help="the control endpoint, e.g. http://127.0.0.1:8091 (default: $SAMSA_CONTROL_URL); "
                        "partition, isolate and heal take every broker's, comma-separated")
    ops = c.add_subparsers(dest="op", required=True)
    p = ops.add_parser("fail", help="answer the next COUNT matching requests with a Kafka error")
    p.add_argument("api"), p.add_argument("error"), p.add_argument("--count", type=int, default=1)
    _add_match(p)
    p = ops.add_parser("delay", help="answer matching requests MS later")
    p.add_argument("api"), p.add_argument("ms", type=int), p.add_argument("--count", type=int)
    _add_match(p)
    p = ops.add_parser("drop", help="close the connection instead of answering")
    p.add_argument("api"), p.add_argument("--count", type=int, default=1)
    _add_match(p)
    p = ops.add_parser("hold", help="matching requests wait until `samsa ctl release ID`")
    p.add_argument("api"), p.add_argument("--count", type=int)
    _add_match(p)
    ops.add_parser("release", help="release a hold").add_argument("id", type=int)
    ops.add_parser("clear", help="disarm every fault, release holds")
    ops.add_parser("faults", help="the armed faults")
    ops.add_parser("log", help="the faults that fired, on which requests")
    ops.add_parser("advance", help="move the broker's clock forward").add_argument("ms", type=int)
    ops.add_parser("now", help="the broker's clock")
    ops.add_parser("links", help="the cut links of each broker")
    p = ops.add_parser("partition", help="cut every link between groups of brokers: "
                                         "`partition 1 2,3` (etcd stays with the group that names it: 2,3,etcd)")
    p.add_argument("groups", nargs="+", help="comma-separated node ids, optionally with 'etcd'")
    p = ops.add_parser("isolate", help="cut a broker from the other brokers and etcd (clients still reach it)")
    p.add_argument("node_id", type=int)
    p.add_argument("--keep-peers", action="store_true", help="cut only etcd")
    p.add_argument("--keep-etcd", action="store_true", help="cut only the other brokers")
    ops.add_parser("heal", help="every link of every broker works again")


def _group(text: str) -> set[int | str]:
    out: set[int | str] = set()
    for item in text.split(","):
        item = item.strip()
        if item == "etcd":
            out.add(item)
        elif item.isdigit():
            out.add(int(item))
        elif item:
            raise ValueError(f"a partition group is node ids and 'etcd', comma-separated; got {item!r}")
    return out


def _cluster_op(args: argparse.Namespace) -> object:
    """partition/isolate/heal/links over every broker's control endpoint (--url a,b,c)."""
    from broker.control.client import SamsaClusterControl

    urls = [u.strip() for u in args.url.split(",") if u.strip()]
    with SamsaClusterControl(urls, connect_wait=0.5) as cluster:
        if args.op == "partition":
            out = cluster.partition(*(_group(g) for g in args.groups))
        elif args.op == "isolate":
            out = cluster.isolate(args.node_id, peers=not args.keep_peers, etcd=not args.keep_etcd)
        elif args.op == "heal":
            out = cluster.heal()
        else:
            out = cluster.links()
    return {str(node): links for node, links in sorted(out.items())}


CLUSTER_OPS = ("links", "partition", "isolate", "heal")


def _ctl(args: argparse.Namespace) -> int:
    import json

    from broker.control.client import ControlUnavailable, http_call

    if not args.url:
        print("samsa ctl: give --url http://HOST:PORT (the broker's samsa.control.listener) or set "
              "SAMSA_CONTROL_URL", file=sys.stderr)
        return 2
    op = args.op
    params = {k: v for k, v in vars(args).items() if k not in ("command", "url", "op") and v is not None}
    try:
        if op in CLUSTER_OPS:
            print(json.dumps(_cluster_op(args), indent=2))
        else:
            print(json.dumps(http_call(args.url, connect_wait=0.5)(op, params), indent=2))
    except ValueError as exc:
        print(f"samsa ctl {op}: {exc}", file=sys.stderr)
        return 2
    except ControlUnavailable as exc:
        print(f"samsa ctl: {exc}", file=sys.stderr)
        return 1
    return 0


def command_parser() -> argparse.ArgumentParser:
    """The whole command tree (``samsa serve`` with plain arguments does without it)."""
    import argparse

    parser = argparse.ArgumentParser(prog="samsa", description="Samsa: a Kafka broker in Python")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the broker")
    s.add_argument("--config", help="server.properties file (Kafka property names); without one, "
                                    "Kafka's quick-start settings (group.initial.rebalance.delay.ms=0)")
    s.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="set one property, e.g. --override num.partitions=3")
    s.add_argument("--json-logs", action="store_true", help="log JSON lines instead of console lines")
    c = sub.add_parser("cluster", help="run etcd and N brokers on 127.0.0.1 (development, CI)")
    c.add_argument("--brokers", type=int, default=3)
    c.add_argument("--base-port", type=int, default=9092, help="broker i listens on base-port + i - 1")
    c.add_argument("--data-dir", help="where etcd and the brokers keep their data (default: a temporary dir)")
    c.add_argument("--config", help="server.properties applied to every broker")
    c.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="set one property on every broker, e.g. --override num.partitions=4")
    h = sub.add_parser("healthcheck", help="exit 0 when the broker answers ApiVersions")
    h.add_argument("--bootstrap", default=os.environ.get("SAMSA_BOOTSTRAP"),
                   help="HOST:PORT of a PLAINTEXT listener (default: SAMSA_BOOTSTRAP, else the broker's own "
                        "first listener from KAFKA_LISTENERS, over TLS/SASL as configured)")
    h.add_argument("--timeout", type=float, default=2.0)
    _add_ctl(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    plain = plain_serve_args(sys.argv[1:] if argv is None else argv)
    if plain is not None:
        return _serve_with(*plain)
    args = command_parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "ctl":
        return _ctl(args)
    if args.command == "cluster":
        from broker.testing.local_cluster import run_cluster

        return run_cluster(args.brokers, args.base_port, args.data_dir, args.config,
                           dict(kv.split("=", 1) for kv in args.override))
    if args.bootstrap:
        what, asked, problem = args.bootstrap, "ApiVersions and Metadata", probe(args.bootstrap, args.timeout)
    else:
        from broker.control.healthcheck import own_listener_probe
        what, asked, problem = own_listener_probe(timeout=args.timeout)
    if problem is not None:
        # Shown by `docker inspect` (State.Health.Log) when the container's HEALTHCHECK fails.
        print(f"samsa healthcheck: no ApiVersions answer from {what}: {problem}", file=sys.stderr)
        return 1
    print(f"samsa healthcheck: {what} answered {asked}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
