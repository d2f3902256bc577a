"""``kafka-topics``: create, list, describe, alter (partitions) and delete topics, with Kafka's
flags, output lines and messages (Kafka's ``TopicCommand``), on confluent-kafka's AdminClient.

Errors of an action print ``Error while executing topic command : <message>`` on stdout and exit 1,
as Kafka's tool does (e.g. ``Topic 't' already exists.``); usage errors print the message and the
help on stderr and exit 1.
"""
from __future__ import annotations

import argparse
import re
from typing import Any

from .common import (
    error_message,
    ToolError,
    admin_client,
    client_config,
    java_hashmap_order,
    java_string_hash,
    require_bootstrap,
    run,
    tool_parser,
)

INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state", "__share_group_state"}
TIMEOUT_S = 60.0
# ConfigEntry.isDefault(): the source is DEFAULT_CONFIG
DEFAULT_CONFIG_SOURCE = 5


def kafka_uuid(value: Any) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding (librdkafka prints the
    standard alphabet)."""
    return str(value).replace("+", "-").replace("/", "_").rstrip("=")


def build_parser() -> Any:
    p = tool_parser("kafka-topics", "Create, delete, describe, or change a topic.")
    for action, text in (("list", "List all available topics."), ("create", "Create a new topic."),
                         ("delete", "Delete a topic."),
                         ("alter", "Alter the number of partitions and replica assignment. (To alter topic "
                                   "configurations, the kafka-configs tool can be used.)"),
                         ("describe", "List details for the given topics.")):
        p.add_argument(f"--{action}", action="store_true", help=text)
    p.add_argument("--topic", help="The topic to create, alter, describe or delete. It also accepts a regular "
                                   "expression, except for --create option.")
    p.add_argument("--topic-id", help="The topic-id to describe.")
    p.add_argument("--config", action="append", default=[], metavar="name=value",
                   help="A topic configuration override for the topic being created.")
    p.add_argument("--delete-config", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--partitions", type=int, metavar="# of partitions",
                   help="The number of partitions for the topic being created or altered.")
    p.add_argument("--replication-factor", type=int, metavar="replication factor",
                   help="The replication factor for each partition in the topic being created.")
    p.add_argument("--replica-assignment", metavar="broker_id_for_part1_replica1 : broker_id_for_part1_replica2 , ...",
                   help="A list of manual partition-to-broker assignments for the topic being created or altered.")
    for flag, text in (("under-replicated-partitions", "if set when describing topics, only show under replicated partitions"),
                       ("unavailable-partitions", "if set when describing topics, only show partitions whose leader is not available"),
                       ("under-min-isr-partitions", "if set when describing topics, only show partitions whose isr count is less than the configured minimum."),
                       ("at-min-isr-partitions", "if set when describing topics, only show partitions whose isr count is equal to the configured minimum."),
                       ("topics-with-overrides", "if set when describing topics, only show topics that have overridden configs"),
                       ("if-exists", "if set when altering or deleting or describing topics, the action will only execute if the topic exists."),
                       ("if-not-exists", "if set when creating topics, the action will only execute if the topic does not already exist."),
                       ("exclude-internal", "exclude internal topics when running list or describe command.")):
        p.add_argument(f"--{flag}", action="store_true", help=text)
    p.add_argument("--partition-size-limit-per-response", type=int, help="The maximum partition size to be included in one DescribeTopicPartitions response.")
    return p


def parse_replica_assignment(text: str) -> list[list[int]]:
    out: list[list[int]] = []
    for i, part in enumerate(text.split(",")):
        brokers = [int(b.strip()) for b in part.split(":")]
        dups = sorted({b for b in brokers if brokers.count(b) > 1})
        if dups:
            raise ToolError("Error while executing topic command : Partition replica lists may not contain "
                            "duplicate entries: " + ",".join(map(str, dups)))
        if out and len(brokers) != len(out[0]):
            raise ToolError(f"Error while executing topic command : Partition {i} has different replication "
                            f"factor: [{', '.join(map(str, brokers))}]")
        out.append(brokers)
    return out


def parse_configs(items: list[str]) -> dict[str, str]:
    pairs = [re.split(r"\s*=\s*", s) for s in items]
    if not all(len(pair) == 2 for pair in pairs):
        raise ToolError('Error while executing topic command : requirement failed: Invalid topic config: all configs '
                        'to be added must be in the format "key=val".')
    return {k.strip(): v.strip() for k, v in pairs}


def topic_filter(topic_arg: str | None, exclude_internal: bool):
    """Kafka's ``IncludeList``: commas are alternatives, surrounding quotes dropped, full match."""
    pattern = None
    if topic_arg is not None:
        regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", topic_arg.strip().replace(",", "|")))
        pattern = re.compile(regex)

    def allowed(topic: str) -> bool:
        if exclude_internal and topic in INTERNAL_TOPICS:
            return False
        return pattern is None or pattern.fullmatch(topic) is not None

    return allowed


class TopicService:
    def __init__(self, conf: dict[str, Any]) -> None:
        self.admin = admin_client(conf)

    def _result(self, future: Any) -> Any:
        return future.result(timeout=TIMEOUT_S)

    def topics(self, topic_arg: str | None, exclude_internal: bool) -> list[str]:
        md = self.admin.list_topics(timeout=TIMEOUT_S)
        allowed = topic_filter(topic_arg, exclude_internal)
        return [t for t in sorted(md.topics) if allowed(t)]

    def create(self, args: argparse.Namespace) -> None:
        name = args.topic
        if "." in name or "_" in name:
            print("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
                  "collide. To avoid issues it is best to use either, but not both.")
        rf = args.replication_factor
        if rf is not None and not 1 <= rf <= 32767:
            raise ToolError("Error while executing topic command : The replication factor must be between 1 and 32767 inclusive")
        if args.partitions is not None and args.partitions < 1:
            raise ToolError("Error while executing topic command : The partitions must be greater than 0")
        from confluent_kafka.admin import NewTopic

        configs = parse_configs(args.config)
        if args.replica_assignment:
            new = NewTopic(name, replica_assignment=parse_replica_assignment(args.replica_assignment), config=configs)
        else:
            new = NewTopic(name, num_partitions=-1 if args.partitions is None else args.partitions,
                           replication_factor=-1 if rf is None else rf, config=configs)
        try:
            self._result(self.admin.create_topics([new], operation_timeout=30)[name])
        except Exception as e:
            err = e.args[0] if e.args else None
            if args.if_not_exists and getattr(err, "name", lambda: "")() == "TOPIC_ALREADY_EXISTS":
                return
            raise ToolError("Error while executing topic command : " + error_message(e)) from e
        print(f"Created topic {name}.")

    def list_action(self, args: argparse.Namespace) -> None:
        print("\n".join(self.topics(args.topic, args.exclude_internal)))

    def _ensure_exists(self, found: list[str], args: argparse.Namespace) -> None:
        if args.topic and not args.if_exists and not found:
            raise ToolError(f"Error while executing topic command : Topic 'Optional[{args.topic}]' does not exist as expected")

    def alter(self, args: argparse.Namespace) -> None:
        from confluent_kafka import TopicCollection
        from confluent_kafka.admin import NewPartitions

        topics = self.topics(args.topic, args.exclude_internal)
        self._ensure_exists(topics, args)
        if not topics:
            return
        assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
        news = []
        for name, fut in self.admin.describe_topics(TopicCollection(topics)).items():
            if assignment is not None:
                current = len(self._result(fut).partitions)
                news.append(NewPartitions(name, args.partitions, assignment[current:]))
            else:
                news.append(NewPartitions(name, args.partitions))
        try:
            for fut in self.admin.create_partitions(news, operation_timeout=30).values():
                self._result(fut)
        except Exception as e:
            raise ToolError("Error while executing topic command : " + error_message(e)) from e

    def delete(self, args: argparse.Namespace) -> None:
        topics = self.topics(args.topic, args.exclude_internal)
        self._ensure_exists(topics, args)
        if not topics:
            return
        try:
            for fut in self.admin.delete_topics(topics, operation_timeout=30).values():
                self._result(fut)
        except Exception as e:
            raise ToolError("Error while executing topic command : " + error_message(e)) from e

    def describe(self, args: argparse.Namespace) -> None:
        from confluent_kafka import TopicCollection
        from confluent_kafka.admin import ConfigResource, ResourceType

        topic_id = args.topic_id if args.topic_id and args.topic_id != "AAAAAAAAAAAAAAAAAAAAAA" else None
        if topic_id is not None:
            md = self.admin.list_topics(timeout=TIMEOUT_S)
            names = sorted(md.topics)
            descs = self.admin.describe_topics(TopicCollection(names))
            by_id = {}
            for fut in descs.values():
                try:
                    d = self._result(fut)
                except Exception:
                    continue
                by_id[kafka_uuid(d.topic_id)] = d
            if topic_id not in by_id:
                if args.if_exists:
                    return
                raise ToolError(f"Error while executing topic command : TopicId '{topic_id}' does not exist as expected")
            descriptions = [by_id[topic_id]]
        else:
            topics = self.topics(args.topic, args.exclude_internal)
            self._ensure_exists(topics, args)
            if not topics:
                return
            try:
                futs = self.admin.describe_topics(TopicCollection(topics))
                descriptions = [self._result(futs[t]) for t in topics]
            except Exception as e:
                raise ToolError("Error while executing topic command : " + error_message(e)) from e
        resources = [ConfigResource(ResourceType.TOPIC, d.name) for d in descriptions]
        config_futs = {r.name: f for r, f in self.admin.describe_configs(resources).items()}
        live = {b.id for b in self._result(self.admin.describe_cluster()).nodes}
        report = args.under_replicated_partitions or args.unavailable_partitions or args.under_min_isr_partitions \
            or args.at_min_isr_partitions
        describe_configs = not report
        describe_partitions = not args.topics_with_overrides
        for d in descriptions:
            entries = list(self._result(config_futs[d.name]).values())
            # Kafka's Config keeps its entries in a HashMap keyed by name
            entries = java_hashmap_order(entries, lambda e: java_string_hash(e.name))
            overrides = [e for e in entries if int(e.source) != DEFAULT_CONFIG_SOURCE]
            partitions = sorted(d.partitions, key=lambda p: p.id)
            min_isr = next((int(e.value) for e in entries if e.name == "min.insync.replicas"), 1)
            if describe_configs and (not args.topics_with_overrides or overrides):
                line = f"Topic: {d.name}"
                tid = kafka_uuid(d.topic_id)
                if tid != "AAAAAAAAAAAAAAAAAAAAAA":
                    line += f"\tTopicId: {tid}"
                line += f"\tPartitionCount: {len(partitions)}"
                line += f"\tReplicationFactor: {len(partitions[0].replicas) if partitions else 0}"
                line += "\tConfigs: " + ",".join(f"{e.name}={e.value}" for e in overrides)
                print(line)
            if not describe_partitions:
                continue
            for p in partitions:
                leader = p.leader.id if p.leader is not None and p.leader.id >= 0 else None
                isr = [n.id for n in p.isr]
                if report:
                    show = ((args.under_replicated_partitions and len(p.replicas) - len(isr) > 0)
                            or (args.unavailable_partitions and (leader is None or leader not in live))
                            or (args.under_min_isr_partitions and (leader is None or len(isr) < min_isr))
                            or (args.at_min_isr_partitions and len(isr) == min_isr))
                    if not show:
                        continue
                print(f"\tTopic: {d.name}\tPartition: {p.id}\tLeader: {'none' if leader is None else leader}"
                      f"\tReplicas: {','.join(str(n.id) for n in p.replicas)}\tIsr: {','.join(map(str, isr))}"
                      "\tElr: \tLastKnownElr: ")


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    actions = [a for a in ("list", "describe", "create", "alter", "delete") if getattr(args, a)]
    if not argv:
        parser.usage_and_exit("Create, delete, describe, or change a topic.")
    if len(actions) != 1:
        parser.usage_and_exit("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    action = actions[0]
    if args.delete_config:
        print("delete-config option is no longer supported and deprecated since version 4.0. "
              "The config will be fully removed in future releases.", file=__import__("sys").stderr)
    bootstrap = require_bootstrap(parser, args, "--bootstrap-server must be specified")
    if action not in ("list", "describe") and not args.topic:
        parser.usage_and_exit('Missing required argument "[topic]"')
    if action == "describe" and args.if_exists and not args.topic and not args.topic_id:
        parser.usage_and_exit("--topic or --topic-id is required to describe a topic")
    if action == "alter":
        if args.config:
            parser.usage_and_exit('Option "[alter]" can\'t be used with option "[config]" (To alter topic '
                                  "configurations, the kafka-configs tool can be used.)")
        if args.partitions is None:
            parser.usage_and_exit('Missing required argument "[partitions]"')
    for opt, allowed in (("config", ("alter", "create")), ("partitions", ("alter", "create")),
                         ("replication_factor", ("create",)), ("replica_assignment", ("alter", "create"))):
        if getattr(args, opt) not in (None, []) and action not in allowed:
            parser.usage_and_exit(f'Option "[{opt.replace("_", "-")}]" can\'t be used with option "[{action}]"')
    if action == "create" and args.replica_assignment and (args.partitions is not None or args.replication_factor is not None):
        other = "partitions" if args.partitions is not None else "replication-factor"
        parser.usage_and_exit(f'Option "[replica-assignment]" can\'t be used with option "[{other}]"')
    service = TopicService(client_config(args, bootstrap))
    {"list": service.list_action, "describe": service.describe, "create": service.create,
     "alter": service.alter, "delete": service.delete}[action](args)
    return 0


def entry() -> None:
    run(main, failure=lambda e: ToolError("Error while executing topic command : " + error_message(e)))


if __name__ == "__main__":
    entry()
