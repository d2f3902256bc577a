"""``kafka-transactions list`` and ``kafka-transactions describe --transactional-id ID``: Kafka's
``TransactionsCommand`` tables (columns padded to the widest cell, each cell followed by a tab).
On kafka-python's KafkaAdminClient: confluent-kafka has no ListTransactions/DescribeTransactions.
``describe-producers``, ``abort`` and ``find-hanging`` are not offered."""
from __future__ import annotations

import time
from typing import Any

from .common import ToolError, kafka_python_config, load_properties, require_bootstrap, run, tool_parser


def pretty_table(headers: list[str], rows: list[list[str]]) -> str:
    """Kafka's ``ToolsUtils.prettyPrintTable``."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return "".join("".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths)) + "\n" for row in [headers, *rows])


def build_parser() -> Any:
    p = tool_parser("kafka-transactions", "This tool is used to analyze the transactional state of producers in the cluster.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    lst = sub.add_parser("list", help="list transactions")
    lst.add_argument("--duration-filter", type=int, help="Duration (in millis) to filter by.")
    desc = sub.add_parser("describe", help="describe the state of an active transactional-id")
    desc.add_argument("--transactional-id", required=True, help="transactional id")
    return p


def error_text(e: BaseException) -> str:
    description = getattr(e, "description", None)
    return str(description) if description else str(e)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    require_bootstrap(parser, args, usage="one of the arguments --bootstrap-server --bootstrap-controller is required")
    if args.command is None:
        parser.usage_and_exit("too few arguments")
    from kafka.admin import KafkaAdminClient

    props = load_properties(args.command_config) if args.command_config else {}
    admin = KafkaAdminClient(**kafka_python_config(props, args.bootstrap_server))
    if args.command == "list":
        try:
            kwargs: dict[str, Any] = {}
            if args.duration_filter is not None and args.duration_filter >= 0:
                kwargs["duration_filter_ms"] = args.duration_filter
            by_broker = admin.list_transactions(**kwargs)
        except Exception as e:
            raise ToolError(f"Failed to list transactions: {error_text(e)}. Enable debug logging for additional detail.",
                            stream="stderr") from e
        rows = [[t.transactional_id, str(broker), str(t.producer_id), str(getattr(t.state, "value", t.state))]
                for broker, listings in by_broker.items() for t in listings]
        print(pretty_table(["TransactionalId", "Coordinator", "ProducerId", "TransactionState"], rows), end="")
        return 0
    tid = args.transactional_id
    try:
        d = admin.describe_transactions([tid])[tid]
    except Exception as e:
        raise ToolError(f"Failed to describe transaction state of transactional-id `{tid}`: {error_text(e)}. "
                        "Enable debug logging for additional detail.", stream="stderr") from e
    start = d.transaction_start_time_ms
    started = start is not None and start >= 0
    row = [str(d.coordinator_id), tid, str(d.producer_id), str(d.producer_epoch), str(getattr(d.state, "value", d.state)),
           str(d.transaction_timeout_ms), str(start) if started else "None",
           str(int(time.time() * 1000) - start) if started else "None",
           ",".join(f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions)]
    print(pretty_table(["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                        "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                        "TopicPartitions"], [row]), end="")
    return 0


def entry() -> None:
    run(main)


if __name__ == "__main__":
    entry()
