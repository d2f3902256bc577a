"""``kafka-get-offsets``: ``topic:partition:offset`` lines for the partitions matching
``--topic``/``--partitions`` or ``--topic-partitions`` at ``--time`` (latest, earliest,
max-timestamp, a timestamp...), sorted as Kafka's ``GetOffsetShell`` sorts them (by the text
``topic-partition``), on confluent-kafka's AdminClient. Errors: ``Error occurred: ...`` on stderr,
exit 1."""
from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from .common import error_message, ToolError, admin_client, client_config, require_bootstrap, run, tool_parser
from .kafka_topics import INTERNAL_TOPICS, topic_filter

TOPIC_PARTITION_PATTERN = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
MALFORMED = ("Malformed time argument {}. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / "
             "-4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp")


def build_parser() -> Any:
    p = tool_parser("kafka-get-offsets", "An interactive shell for getting topic-partition offsets.")
    p.add_argument("--topic-partitions", help="Comma separated list of topic-partition patterns to get the offsets for, "
                                              "with the format of 'topic-regex:partition' (or :n-m ranges).")
    p.add_argument("--topic", help="The topic to get the offsets for. It also accepts a regular expression.")
    p.add_argument("--partitions", help="Comma separated list of partition ids to get the offsets for.")
    p.add_argument("--time", default="latest", help="<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp "
                                                    "(-4 earliest-local and -5 latest-tiered are not supported).")
    p.add_argument("--exclude-internal-topics", action="store_true", help="Exclude internal topics.")
    return p


def offset_spec(text: str) -> Any:
    from confluent_kafka.admin import OffsetSpec

    named = {"earliest": OffsetSpec.earliest, "latest": OffsetSpec.latest, "max-timestamp": OffsetSpec.max_timestamp,
             "-2": OffsetSpec.earliest, "-1": OffsetSpec.latest, "-3": OffsetSpec.max_timestamp}
    if text in named:
        return named[text]()
    if text in ("earliest-local", "latest-tiered", "-4", "-5"):
        raise ToolError(f"Error occurred: {text} is not supported by this kafka-get-offsets (librdkafka has no such "
                        "offset spec)", stream="stderr")
    try:
        return OffsetSpec.for_timestamp(int(text))
    except ValueError:
        raise ToolError("Error occurred: " + MALFORMED.format(text), stream="stderr") from None


Filter = Callable[[str, int], bool]


def rule_filters(spec: str) -> tuple[Callable[[str], bool], Filter]:
    rules: list[tuple[Callable[[str], bool], Callable[[int], bool]]] = []
    for rule in spec.split(","):
        m = TOPIC_PARTITION_PATTERN.fullmatch(rule)
        if not m:
            raise ToolError(f"Error occurred: Invalid rule specification: {rule}", stream="stderr")
        g = [x if x else None for x in m.groups()]
        topic_ok = topic_filter(g[0] or ".*", False)
        if g[1] is not None:
            low, high = int(g[1]), int(g[1]) + 1
        else:
            # Kafka's PartitionRangeFilter: lower inclusive, upper exclusive
            low = int(g[2]) if g[2] else 0
            high = int(g[3]) if g[3] else 2**31 - 1
        rules.append((topic_ok, range(low, high).__contains__))
    return (lambda t: any(tf(t) for tf, _ in rules)), (lambda t, p: any(tf(t) and pf(p) for tf, pf in rules))


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    bootstrap = require_bootstrap(parser, args)
    if args.topic_partitions and (args.topic or args.partitions):
        raise ToolError("Error occurred: --topic-partitions cannot be used with --topic or --partitions", stream="stderr")
    spec = offset_spec(args.time)
    if args.topic_partitions:
        topic_ok, partition_ok = rule_filters(args.topic_partitions)
    else:
        wanted: set[int] = set()
        if args.partitions:
            try:
                wanted = {int(x) for x in args.partitions.split(",")}
            except ValueError:
                raise ToolError("Error occurred: --partitions expects a comma separated list of numeric partition ids, "
                                f"but received: {args.partitions}", stream="stderr") from None
        topic_ok = topic_filter(args.topic or ".*", False)

        def partition_ok(t: str, p: int) -> bool:
            return not wanted or p in wanted
    from confluent_kafka import TopicPartition

    conf = client_config(args, bootstrap)
    conf.setdefault("client.id", "GetOffsetShell")
    admin = admin_client(conf)
    md = admin.list_topics(timeout=60)
    tps = [(t, p) for t, tm in md.topics.items()
           if not (args.exclude_internal_topics and t in INTERNAL_TOPICS) and topic_ok(t)
           for p in tm.partitions if partition_ok(t, p)]
    if not tps:
        raise ToolError("Error occurred: Could not match any topic-partitions with the specified filters", stream="stderr")
    futs = admin.list_offsets({TopicPartition(t, p): spec for t, p in tps})
    found: dict[tuple[str, int], int] = {}
    for tp, fut in futs.items():
        try:
            offset = fut.result(timeout=60).offset
        except Exception as e:
            err = e.args[0] if e.args else None
            text = err.str() if err is not None and hasattr(err, "str") else str(e)
            sys.stderr.write(f"Skip getting offsets for topic-partition {tp.topic}-{tp.partition} due to error: {text}\n")
            continue
        if offset != -1:
            found[(tp.topic, tp.partition)] = offset
    for (t, p) in sorted(found, key=lambda tp: f"{tp[0]}-{tp[1]}"):
        print(f"{t}:{p}:{found[(t, p)]}")
    return 0


def entry() -> None:
    run(main, failure=lambda e: ToolError("Error occurred: " + error_message(e), stream="stderr"))


if __name__ == "__main__":
    entry()
