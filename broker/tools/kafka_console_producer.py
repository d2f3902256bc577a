"""``kafka-console-producer``: one record per line of standard input, as Kafka's
``ConsoleProducer`` with its ``LineMessageReader`` (``parse.key``/``key.separator``,
``parse.headers``, ``null.marker``, ``ignore.error``), on confluent-kafka's Producer."""
from __future__ import annotations

import sys
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


def build_parser() -> Any:
    p = tool_parser("kafka-console-producer", "This tool helps to read data from standard input and publish it to Kafka.")
    p.add_argument("--topic", help="REQUIRED: The topic name to produce messages to.")
    p.add_argument("--sync", action="store_true", help="If set message send requests to the brokers are synchronously, one at a time as they arrive.")
    p.add_argument("--compression-codec", nargs="?", const="gzip", help="The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'.")
    p.add_argument("--batch-size", type=int, help="Number of messages to send in a single batch.")
    p.add_argument("--message-send-max-retries", type=int, help="Retries of a failed send.")
    p.add_argument("--retry-backoff-ms", type=int, help="Backoff before a retry.")
    p.add_argument("--timeout", type=int, help="linger.ms: the time a message may wait to fill a batch.")
    p.add_argument("--request-required-acks", help="The required `acks` of the producer requests (default -1).")
    p.add_argument("--request-timeout-ms", type=int, help="The ack timeout of the producer requests.")
    p.add_argument("--max-block-ms", type=int, help=argparse_suppress())
    p.add_argument("--line-reader", help="Only Kafka's default reader (org.apache.kafka.tools.LineMessageReader) is supported.")
    p.add_argument("--property", "--reader-property", action="append", default=[], dest="property",
                   help="key=value for the line reader: parse.key, key.separator, parse.headers, headers.delimiter, "
                        "headers.separator, headers.key.separator, null.marker, ignore.error")
    p.add_argument("--reader-config", help="Properties file for the line reader.")
    p.add_argument("--producer-property", action="append", default=[], help="key=value producer properties.")
    p.add_argument("--producer.config", dest="producer_config", help="Producer config properties file.")
    return p


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


class LineReader:
    """Kafka's LineMessageReader: ``[headers<delim>][key<sep>]value`` per line."""

    def __init__(self, props: dict[str, str]) -> None:
        def flag(k: str) -> bool:
            return props.get(k, "false").strip().lower() == "true"

        self.parse_key = flag("parse.key")
        self.key_sep = props.get("key.separator", "\t")
        self.parse_headers = flag("parse.headers")
        self.headers_delim = props.get("headers.delimiter", "\t")
        self.headers_sep = props.get("headers.separator", ",")
        self.headers_key_sep = props.get("headers.key.separator", ":")
        self.ignore_error = flag("ignore.error")
        self.null_marker = props.get("null.marker")
        for a, b, an, bn in ((self.headers_delim, self.headers_sep, "headers.delimiter", "headers.separator"),
                             (self.headers_delim, self.headers_key_sep, "headers.delimiter", "headers.key.separator"),
                             (self.headers_sep, self.headers_key_sep, "headers.separator", "headers.key.separator")):
            if self.parse_headers and a == b:
                raise ToolError(f"{an} and {bn} may not be equal", stream="stderr")
        if self.null_marker is not None:
            for other, name in ((self.key_sep, "key.separator"), (self.headers_sep, "headers.separator"),
                                (self.headers_delim, "headers.delimiter"), (self.headers_key_sep, "headers.key.separator")):
                if self.null_marker == other:
                    raise ToolError(f"null.marker and {name} may not be equal", stream="stderr")

    def _split(self, enabled: bool, line: str, start: int, sep: str, what: str, number: int) -> str | None:
        if not enabled:
            return None
        idx = line.find(sep, start)
        if idx == -1:
            if self.ignore_error:
                return None
            raise ToolError(f"No {what} found on line number {number}: '{line}'", stream="stderr")
        return line[start:idx]

    def parse(self, line: str, number: int) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]:
        headers_text = self._split(self.parse_headers, line, 0, self.headers_delim, "headers delimiter", number)
        offset = 0 if headers_text is None else len(headers_text) + len(self.headers_delim)
        key = self._split(self.parse_key, line, offset, self.key_sep, "key separator", number)
        if key is not None:
            offset += len(key) + len(self.key_sep)
        value = line[offset:]
        headers: list[tuple[str, bytes | None]] = []
        if headers_text is not None and headers_text != self.null_marker:
            for pair in headers_text.split(self.headers_sep):
                k, sep, v = pair.partition(self.headers_key_sep)
                if not sep:
                    if self.ignore_error:
                        continue
                    raise ToolError(f"No header key separator found in pair '{pair}' on line number {number}", stream="stderr")
                if k == self.null_marker:
                    raise ToolError(f"Header keys should not be equal to the null marker '{self.null_marker}' as they can't be null",
                                    stream="stderr")
                headers.append((k, None if v == self.null_marker else v.encode()))

        def enc(s: str | None) -> bytes | None:
            return None if s is None or s == self.null_marker else s.encode()

        return enc(key), enc(value), headers


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    bootstrap = require_bootstrap(parser, args)
    if not args.topic:
        parser.usage_and_exit('Missing required argument "[topic]"')
    if args.line_reader and args.line_reader not in ("org.apache.kafka.tools.LineMessageReader", "kafka.tools.LineMessageReader"):
        parser.usage_and_exit(f"Only the default line reader is supported, not {args.line_reader}")
    reader_props = load_properties(args.reader_config) if args.reader_config else {}
    reader_props.update(parse_key_values(args.property))
    reader = LineReader(reader_props)
    extra: dict[str, str] = load_properties(args.producer_config) if args.producer_config else {}
    extra.update(parse_key_values(args.producer_property))
    conf = client_config(args, bootstrap, extra)
    conf.setdefault("acks", args.request_required_acks or conf.get("acks", "-1"))
    if args.request_required_acks:
        conf["acks"] = args.request_required_acks
    if args.compression_codec:
        conf["compression.type"] = args.compression_codec
    if args.batch_size is not None:
        conf["batch.num.messages"] = args.batch_size
    if args.message_send_max_retries is not None:
        conf["retries"] = args.message_send_max_retries
    if args.retry_backoff_ms is not None:
        conf["retry.backoff.ms"] = args.retry_backoff_ms
    if args.timeout is not None:
        conf["linger.ms"] = args.timeout
    if args.request_timeout_ms is not None:
        conf["request.timeout.ms"] = args.request_timeout_ms
    from confluent_kafka import Producer

    producer = with_known_keys(Producer, conf)
    failures: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(f"Error when sending message to topic {args.topic} with key: "
                            f"{'null' if msg.key() is None else f'{len(msg.key())} bytes'}, value: "
                            f"{'null' if msg.value() is None else f'{len(msg.value())} bytes'} with error: {err.str()}")
            sys.stderr.write("ERROR " + failures[-1] + "\n")

    prompt = sys.stdin.isatty()
    number = 0
    while True:
        if prompt:
            sys.stdout.write(">")
            sys.stdout.flush()
        raw = sys.stdin.buffer.readline()
        if not raw:
            break
        number += 1
        line = raw.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r")
        key, value, headers = reader.parse(line, number)
        while True:
            try:
                producer.produce(args.topic, value=value, key=key, headers=list(headers) or None,  # type: ignore[arg-type]
                                  on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
        if args.sync:
            producer.flush()
    producer.flush()
    return 1 if failures else 0


def entry() -> None:
    run(main)


if __name__ == "__main__":
    entry()
