"""``kafka-console-consumer``: records to standard output in the format of Kafka's
``DefaultMessageFormatter`` (``print.key``, ``print.timestamp``, ``print.partition``,
``print.offset``, ``print.headers``, ``key.separator``, ``line.separator``...), with
``--from-beginning``, ``--group``, ``--partition``/``--offset``, ``--max-messages`` and
``--timeout-ms``; "Processed a total of N messages" on stderr at the end, as Kafka's tool prints.
On confluent-kafka's Consumer."""
from __future__ import annotations

import random
import re
import signal
import sys
import time
from typing import Any

from .common import (
    ToolError,
    client_config,
    load_properties,
    parse_key_values,
    require_bootstrap,
    run,
    tool_parser,
    with_known_keys,
)

TIMESTAMP_TYPES = {0: None, 1: "CreateTime", 2: "LogAppendTime"}


def build_parser() -> Any:
    p = tool_parser("kafka-console-consumer", "This tool helps to read data from Kafka topics and outputs it to standard output.")
    p.add_argument("--topic", help="The topic to consume on.")
    p.add_argument("--include", "--whitelist", dest="include", help="Regular expression specifying list of topics to include for consumption.")
    p.add_argument("--partition", type=int, help="The partition to consume from.")
    p.add_argument("--offset", default="latest", help="The offset to consume from (a non-negative number), or 'earliest' or 'latest' (default).")
    p.add_argument("--consumer-property", action="append", default=[], help="key=value consumer properties.")
    p.add_argument("--consumer.config", dest="consumer_config", help="Consumer config properties file.")
    p.add_argument("--formatter", help="Only Kafka's default formatter (org.apache.kafka.tools.consumer.DefaultMessageFormatter) is supported.")
    p.add_argument("--property", "--formatter-property", action="append", default=[], dest="property",
                   help="Formatter properties: print.timestamp, print.key, print.offset, print.partition, print.headers, "
                        "print.value, key.separator, line.separator, headers.separator, null.literal")
    p.add_argument("--formatter-config", help="Formatter properties file.")
    p.add_argument("--from-beginning", action="store_true", help="Start with the earliest message when the group has no committed offset.")
    p.add_argument("--max-messages", type=int, default=-1, help="The maximum number of messages to consume before exiting.")
    p.add_argument("--timeout-ms", type=int, default=-1, help="Exit if no message is available for consumption for the specified interval.")
    p.add_argument("--skip-message-on-error", action="store_true", help="Skip a message that cannot be processed.")
    p.add_argument("--key-deserializer", help="Ignored: keys are printed as their bytes (UTF-8).")
    p.add_argument("--value-deserializer", help="Ignored: values are printed as their bytes (UTF-8).")
    p.add_argument("--isolation-level", default="read_uncommitted", help="read_committed or read_uncommitted (default).")
    p.add_argument("--group", help="The consumer group id of the consumer.")
    return p


def unescape(s: str) -> str:
    return s.encode("utf-8").decode("unicode_escape")


class Formatter:
    def __init__(self, props: dict[str, str]) -> None:
        def flag(k: str, default: bool = False) -> bool:
            return props.get(k, str(default)).strip().lower() == "true"

        self.ts, self.key, self.offset = flag("print.timestamp"), flag("print.key"), flag("print.offset")
        self.partition, self.headers, self.value = flag("print.partition"), flag("print.headers"), flag("print.value", True)
        self.key_sep = unescape(props.get("key.separator", "\t")).encode()
        self.line_sep = unescape(props.get("line.separator", "\n")).encode()
        self.headers_sep = unescape(props.get("headers.separator", ",")).encode()
        self.null = props.get("null.literal", "null").encode()

    def format(self, msg: Any) -> bytes:
        parts: list[bytes] = []
        if self.ts:
            kind, ts = msg.timestamp()
            name = TIMESTAMP_TYPES.get(kind)
            parts.append(f"{name}:{ts}".encode() if name else b"NO_TIMESTAMP")
        if self.partition:
            parts.append(f"Partition:{msg.partition()}".encode())
        if self.offset:
            parts.append(f"Offset:{msg.offset()}".encode())
        if self.headers:
            hs = msg.headers() or []
            parts.append(self.headers_sep.join(k.encode() + b":" + (self.null if v is None else v) for k, v in hs)
                         if hs else b"NO_HEADERS")
        if self.key:
            parts.append(self.null if msg.key() is None else msg.key())
        out = self.key_sep.join(parts)
        if self.value:
            if parts:
                out += self.key_sep
            out += (self.null if msg.value() is None else msg.value()) + self.line_sep
        return out


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    bootstrap = require_bootstrap(parser, args)
    if bool(args.topic) == bool(args.include):
        parser.usage_and_exit("Exactly one of --include/--topic is required. ")
    if args.partition is not None and not args.topic:
        parser.usage_and_exit("The topic is required when partition is specified.")
    if args.from_beginning and args.partition is not None and args.offset != "latest":
        parser.usage_and_exit("Options from-beginning and offset cannot be specified together.")
    if args.offset != "latest" and args.partition is None:
        parser.usage_and_exit("The partition is required when offset is specified.")
    if args.group and args.partition is not None:
        parser.usage_and_exit("Options group and partition cannot be specified together.")
    if args.formatter and not args.formatter.endswith("DefaultMessageFormatter"):
        parser.usage_and_exit(f"Only the default formatter is supported, not {args.formatter}")
    fprops = load_properties(args.formatter_config) if args.formatter_config else {}
    fprops.update(parse_key_values(args.property))
    formatter = Formatter(fprops)
    extra = load_properties(args.consumer_config) if args.consumer_config else {}
    extra.update(parse_key_values(args.consumer_property))
    if args.group and extra.get("group.id", args.group) != args.group:
        raise ToolError(f"Group ID provided in consumer config ({extra['group.id']}) and command line ({args.group}) "
                        "must be the same", stream="stderr")
    conf = client_config(args, bootstrap, extra)
    if args.group:
        conf["group.id"] = args.group
    elif "group.id" not in conf:
        conf["group.id"] = f"console-consumer-{random.randrange(100000)}"
        conf.setdefault("enable.auto.commit", "false")
    conf.setdefault("auto.offset.reset", "earliest" if args.from_beginning else "latest")
    conf["isolation.level"] = args.isolation_level
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, TopicPartition

    consumer = with_known_keys(Consumer, conf)
    if args.partition is not None:
        if args.offset == "earliest" or (args.from_beginning and args.offset == "latest"):
            start = OFFSET_BEGINNING
        elif args.offset == "latest":
            start = OFFSET_END
        elif re.fullmatch(r"\d+", args.offset):
            start = int(args.offset)
        else:
            parser.usage_and_exit("The provided offset value is incorrect. Valid values are 'earliest', 'latest', "
                                  "or a non-negative long.")
        consumer.assign([TopicPartition(args.topic, args.partition, start)])
    else:
        consumer.subscribe([args.topic] if args.topic else ["^" + args.include.lstrip("^")])
    count = 0
    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    last = time.monotonic()
    out = sys.stdout.buffer
    try:
        while not stopping and (args.max_messages < 0 or count < args.max_messages):
            msg = consumer.poll(0.2)
            if msg is None:
                if args.timeout_ms >= 0 and (time.monotonic() - last) * 1000 >= args.timeout_ms:
                    sys.stderr.write("ERROR Error processing message, terminating consumer process: \n"
                                     "org.apache.kafka.common.errors.TimeoutException\n")
                    break
                continue
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                if args.skip_message_on_error:
                    continue
                sys.stderr.write(f"ERROR Error processing message, terminating consumer process: {error.str()}\n")
                break
            last = time.monotonic()
            count += 1
            out.write(formatter.format(msg))
            out.flush()
    finally:
        try:
            consumer.close()
        finally:
            sys.stderr.write(f"Processed a total of {count} messages\n")
            sys.stderr.flush()
    return 0


def entry() -> None:
    run(main)


if __name__ == "__main__":
    entry()
