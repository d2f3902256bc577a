"""``kafka-share-groups``: list share groups (with ``--state``), describe them (``--members``,
``--state``, with ``--verbose``) and delete them, as Kafka's ``ShareGroupCommand`` (KIP-932) prints
them.

Neither confluent-kafka nor kafka-python has the share-group admin APIs, so this tool is built on
kafka-python's admin client (its connection manager, coordinator lookup, ListGroups with a types
filter and DeleteGroups) and sends ShareGroupDescribe (API 77) as the message class Kafka's own
JSON definition yields through kafka-python's schema loader (``protocol.schema_messages``): no
protocol code of its own.

Offsets: plain ``--describe`` sends DescribeShareGroupOffsets (API 90; v1 carries the lag),
``--reset-offsets`` (``--to-earliest``, ``--to-latest``, ``--to-offset``, ``--to-datetime``; ``--topic``
or ``--all-topics``; ``--dry-run`` or ``--execute``) prints Kafka's GroupOffsetsResetter table and with
``--execute`` sends AlterShareGroupOffsets (91), ``--delete-offsets`` sends DeleteShareGroupOffsets (92);
each to the group's coordinator, the log offsets a reset needs through kafka-python's ListOffsets.
Against a broker without API 90 the describe fails as Kafka's does. (``--from-file`` and
``--to-current`` are not built.)

As in Kafka, usage errors print the message and the help on stderr and exit 1; a failed command
prints ``\\nError: Executing share group command failed due to ...`` and exits 1; a delete that
fails for some groups reports them and exits 0.
"""
from __future__ import annotations

import functools
import sys
from typing import Any

from .common import (
    check_describe_options,
    error_message,
    ToolError,
    java_hashmap_order,
    java_string_hash,
    kafka_python_config,
    topic_partition_hash,
    load_properties,
    require_bootstrap,
    run,
    tool_parser,
)

DESCRIPTION = "This tool helps to list, describe, reset and delete share groups."
# GroupState.groupStatesForType(GroupType.SHARE)
SHARE_STATES = ("Empty", "Stable", "Dead")
DESCRIBE_SHARE_GROUP_OFFSETS = 90
# kafka-python's error classes -> Java's exception classes, for the messages Kafka's tool prints
JAVA_EXCEPTIONS = {
    "GroupIdNotFoundError": "GroupIdNotFoundException",
    "NonEmptyGroupError": "GroupNotEmptyException",
    "GroupAuthorizationFailedError": "GroupAuthorizationException",
    "InvalidGroupIdError": "InvalidGroupIdException",
    "CoordinatorNotAvailableError": "CoordinatorNotAvailableException",
    "NotCoordinatorError": "NotCoordinatorException",
    "UnsupportedVersionError": "UnsupportedVersionException",
}


def build_parser() -> Any:
    p = tool_parser("kafka-share-groups", DESCRIPTION)
    p.add_argument("--group", action="append", default=[], metavar="share group",
                   help="The share group we wish to act on.")
    p.add_argument("--topic", action="append", default=[], metavar="topic",
                   help="The topic whose offset information should be deleted or included in the reset offset process.")
    for flag, text in (("list", "List all share groups."),
                       ("describe", "Describe share group, members and offset information."),
                       ("all-groups", "Apply to all share groups."), ("delete", "Delete share group."),
                       ("all-topics", "Consider all topics assigned to a share group in the 'reset-offsets' process."),
                       ("reset-offsets", "Reset offsets of share group. Supports one share group at the time, and "
                                         "instances must be inactive."),
                       ("delete-offsets", "Delete offsets of share group. Supports one share group at the time, and "
                                          "multiple topics."),
                       ("dry-run", "Only show results without executing changes on share groups. Supported "
                                   "operations: reset-offsets."),
                       ("execute", "Execute operation. Supported operations: reset-offsets."),
                       ("to-earliest", "Reset offsets to earliest offset."), ("to-latest", "Reset offsets to latest offset."),
                       ("members", "Describe members of the group. This option may be used with the '--describe' "
                                   "option only."),
                       ("offsets", "Describe the group and list all topic partitions in the group along with their "
                                   "offset information. This is the default sub-action and may be used with the "
                                   "'--describe' option only."),
                       ("verbose", "Provide additional information, if any, when describing the group. This option "
                                   "may be used with the '--describe' option only.")):
        p.add_argument(f"--{flag}", action="store_true", help=text)
    p.add_argument("--timeout", type=int, default=30000, metavar="timeout (ms)",
                   help="The timeout that can be set for some use cases.")
    p.add_argument("--to-offset", type=int, metavar="offset", help="Reset offsets to a specific offset.")
    p.add_argument("--to-datetime", metavar="datetime",
                   help="Reset offsets to offset from datetime. Format: 'YYYY-MM-DDThh:mm:ss.sss'")
    p.add_argument("--state", nargs="?", const="",
                   help="When specified with '--describe', includes the state of the group. When specified with "
                        "'--list', it displays the state of all groups. It can also be used to list groups with "
                        "specific states. Valid values are Empty, Stable and Dead.")
    return p


class CommandFailed(Exception):
    """A failure Kafka's tool reports as ``Executing share group command failed due to <message>``
    on stdout, with the exception's stack trace on stderr (``trace``: its first line)."""

    def __init__(self, message: str, trace: str | None = None) -> None:
        super().__init__(message)
        self.trace = trace


def java_error(err: Any, message: str | None = None) -> str:
    """``Throwable.toString()`` of the Java exception Kafka's admin client raises for ``err``."""
    name = getattr(err, "__name__", type(err).__name__)
    java = JAVA_EXCEPTIONS.get(name, name.replace("Error", "Exception"))
    text = message if message is not None else getattr(err, "description", "")
    return f"org.apache.kafka.common.errors.{java}: {text}"


class ShareGroupService:
    """kafka-python's admin client, its connection manager carrying the share-group requests."""

    def __init__(self, props: dict[str, str], bootstrap: str, timeout_ms: int) -> None:
        from kafka.admin import KafkaAdminClient

        conf = kafka_python_config(props, bootstrap)
        conf["request_timeout_ms"] = max(timeout_ms, 1000)
        self.admin = KafkaAdminClient(**conf)

    def close(self) -> None:
        self.admin.close()

    # --- list ------------------------------------------------------------------------------
    def listings(self, states: list[str] | None = None) -> list[dict[str, Any]]:
        """ListGroups (v5) on every broker, of type ``share``."""
        return list(self.admin.list_groups(types_filter=["share"], states_filter=states or None))

    def list_groups(self, state: str | None) -> None:
        if state is None:
            for g in self.listings():
                print(g["group_id"])
            return
        states: list[str] = []
        if state:
            parsed = {s.strip().upper() for s in state.split(",")}
            valid = {s.upper(): s for s in SHARE_STATES}
            if parsed - set(valid):
                raise ToolError(f"Invalid state list '{state}'. Valid states are: " + ", ".join(SHARE_STATES),
                                stream="stderr")
            states = [valid[s] for s in parsed]
        groups = self.listings(states)
        width = max([15] + [len(g["group_id"]) for g in groups])
        print(f"{'GROUP':<{width}} STATE")
        for g in groups:
            print(f"{g['group_id']:<{width}} {g.get('group_state') or 'Unknown'}")

    # --- describe --------------------------------------------------------------------------
    def describe_group(self, group: str) -> tuple[Any, str]:
        """The ShareGroupDescribe answer of ``group``'s coordinator, and the coordinator as Kafka's
        tool prints it (``host:port  (id)``)."""
        import kafka.errors as Errors

        from protocol.schema_messages import ShareGroupDescribeRequest

        admin = self.admin
        node = admin._manager.run(admin._find_coordinator_id, group)
        request = ShareGroupDescribeRequest(group_ids=[group], include_authorized_operations=False)
        try:
            response = admin._manager.run(functools.partial(admin._manager.send, request, node_id=node))
        except Errors.IncompatibleBrokerVersion as e:
            # a broker without share groups: Kafka's admin client fails the describe with this
            raise CommandFailed("org.apache.kafka.common.errors.UnsupportedVersionException: "
                                "The node does not support SHARE_GROUP_DESCRIBE") from e
        (described,) = response.groups
        if described.error_code:
            err = Errors.for_code(described.error_code)
            raise CommandFailed(java_error(err, described.error_message or err.description))
        broker = admin._manager.cluster.broker_metadata(node)
        coordinator = f"{broker.host}:{broker.port}  ({node})" if broker is not None else f"-  ({node})"
        return described, coordinator

    def group_ids(self, args: Any) -> list[str]:
        return [g["group_id"] for g in self.listings()] if args.all_groups else list(args.group)

    def describe(self, args: Any) -> None:
        groups = self.group_ids(args)
        described = {g: self.describe_group(g) for g in groups}
        if described and not args.members and args.state is None:
            self.check_offsets_api()
            for group in sorted(described):
                print_offsets(group, self.share_group_offsets(group), args.verbose)
            return
        for group in sorted(described):
            desc, coordinator = described[group]
            if args.members:
                print_members(group, desc, args.verbose)
            else:
                print_state(group, desc, coordinator, args.verbose)

    def check_offsets_api(self) -> None:
        """The offsets of a share group come from DescribeShareGroupOffsets (API 90): a broker without
        it fails the command as Kafka's admin client fails it (UnsupportedVersionException)."""
        version = self.admin._manager.broker_version_data
        if DESCRIBE_SHARE_GROUP_OFFSETS not in (getattr(version, "api_versions", None) or {}):
            raise CommandFailed("The node does not support DESCRIBE_SHARE_GROUP_OFFSETS",
                                trace="org.apache.kafka.common.errors.UnsupportedVersionException: "
                                      "The node does not support DESCRIBE_SHARE_GROUP_OFFSETS")

    def send_to_coordinator(self, group: str, request: Any) -> Any:
        admin = self.admin
        node = admin._manager.run(admin._find_coordinator_id, group)
        return admin._manager.run(functools.partial(admin._manager.send, request, node_id=node))

    def share_group_offsets(self, group: str) -> dict[tuple[str, int], tuple[int, int, int] | None]:
        """The Admin's ``listShareGroupOffsets``: (topic, partition) -> (start offset, leader epoch,
        lag), -1 for an epoch or lag the broker does not know; ``None`` for a partition without a
        start offset. A group error fails the command with its Java exception."""
        import kafka.errors as Errors

        from protocol.schema_messages import DescribeShareGroupOffsetsRequest

        G = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
        response = self.send_to_coordinator(group, DescribeShareGroupOffsetsRequest(
            groups=[G(group_id=group, topics=None)]))
        (g,) = response.groups
        if g.error_code:
            err = Errors.for_code(g.error_code)
            raise CommandFailed(java_error(err, g.error_message or err.description))
        out: dict[tuple[str, int], tuple[int, int, int] | None] = {}
        for t in g.topics:
            for p in t.partitions:
                if p.error_code:
                    continue      # Kafka's ListShareGroupOffsetsHandler logs and leaves such partitions out
                lag = getattr(p, "lag", -1)
                out[(t.topic_name, p.partition_index)] = (
                    None if p.start_offset < 0 else (p.start_offset, p.leader_epoch, -1 if lag is None else lag))
        return out

    # --- reset-offsets / delete-offsets ------------------------------------------------------
    def log_offsets(self, tps: list[tuple[str, int]], spec: Any) -> dict[tuple[str, int], int]:
        """ListOffsets for ``tps`` (kafka-python's admin routes them to their leaders)."""
        from kafka import TopicPartition

        if not tps:
            return {}
        found = self.admin.list_partition_offsets({TopicPartition(t, p): spec for t, p in tps})
        return {(tp.topic, tp.partition): o.offset for tp, o in found.items()}

    def partitions_to_reset(self, group: str, args: Any) -> list[tuple[str, int]]:
        """GroupOffsetsResetter's ``parseTopicPartitionsToReset`` (``topic`` or ``topic:0,1``), or
        with ``--all-topics`` the partitions the group has offsets for."""
        if not args.topic:
            return list(self.share_group_offsets(group))
        specified: list[tuple[str, int]] = []
        whole: list[str] = []
        for arg in args.topic:
            if ":" not in arg:
                whole.append(arg)
                continue
            parts = arg.split(":")
            if len(parts) != 2:
                raise ToolError(f"Invalid topic arg '{arg}', expected topic name and partitions", stream="stderr")
            for p in parts[1].split(","):
                if not p.lstrip("-").isdigit():
                    raise ToolError(f"Invalid partition '{p}' specified in topic arg '{arg}''", stream="stderr")
                specified.append((parts[0], int(p)))
        if whole:
            import kafka.errors as Errors

            for t in self.admin.describe_topics(whole):
                if t["error_code"]:
                    err = Errors.for_code(t["error_code"])
                    raise CommandFailed(java_error(err))
                indexes = sorted(p["partition_index"] for p in t["partitions"])
                specified.extend((t["name"], p) for p in indexes)
        return specified

    def prepare(self, tps: list[tuple[str, int]], args: Any) -> dict[tuple[str, int], int]:
        """GroupOffsetsResetter's resetToOffset / resetToEarliest / resetToLatest / resetToDateTime."""
        from kafka.admin import OffsetSpec

        if args.to_offset is not None:        # checkOffsetsRange: clamped into [earliest, latest]
            starts, ends = self.log_offsets(tps, OffsetSpec.EARLIEST), self.log_offsets(tps, OffsetSpec.LATEST)
            return {tp: min(max(args.to_offset, starts.get(tp, args.to_offset)), ends.get(tp, args.to_offset))
                    for tp in tps}
        if args.to_earliest or args.to_latest:
            found = self.log_offsets(tps, OffsetSpec.EARLIEST if args.to_earliest else OffsetSpec.LATEST)
            for t, p in tps:
                if (t, p) not in found:
                    which = "starting" if args.to_earliest else "ending"
                    raise ToolError(f"Error getting {which} offset of topic partition: {t}-{p}", stream="stderr")
            return {tp: found[tp] for tp in tps}
        from .kafka_consumer_groups import kafka_datetime

        found = self.log_offsets(tps, kafka_datetime(args.to_datetime))
        empty = [tp for tp in tps if found.get(tp, -1) < 0]
        for t, p in empty:
            print(f"\nWarn: Partition {p} from topic {t} is empty. Falling back to latest known offset.")
        found.update(self.log_offsets(empty, OffsetSpec.LATEST))
        return {tp: found[tp] for tp in tps}

    def reset_offsets(self, args: Any) -> None:
        """ShareGroupCommand's ``resetOffsets``: only an Empty (or unknown) group; the plan printed
        as GroupOffsetsResetter's ``printOffsetsToReset``, sent with ``--execute``."""
        import kafka.errors as Errors

        from protocol.schema_messages import AlterShareGroupOffsetsRequest

        (group,) = args.group[:1]
        try:
            desc, _ = self.describe_group(group)
            state = desc.group_state
        except CommandFailed as e:
            if "GroupIdNotFoundException" not in str(e):
                raise
            state = "Dead"
        if state not in ("Empty", "Dead"):
            raise ToolError(f"Share group '{group}' is not empty.", stream="stderr")
        prepared = self.prepare(self.partitions_to_reset(group, args), args)
        if args.execute and prepared:
            T = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
            P = T.AlterShareGroupOffsetsRequestPartition
            by_topic: dict[str, list[Any]] = {}
            for (t, p), off in prepared.items():
                by_topic.setdefault(t, []).append(P(partition_index=p, start_offset=off))
            response = self.send_to_coordinator(group, AlterShareGroupOffsetsRequest(
                group_id=group, topics=[T(topic_name=t, partitions=ps) for t, ps in by_topic.items()]))
            if response.error_code:
                err = Errors.for_code(response.error_code)
                raise CommandFailed(java_error(err, response.error_message or err.description))
            for t in response.responses:
                for p in t.partitions:
                    if p.error_code:
                        err = Errors.for_code(p.error_code)
                        raise CommandFailed(java_error(err, p.error_message or err.description))
        if not prepared:
            print()
            return
        wg = max(15, len(group))
        wt = max([15] + [len(t) for t, _ in prepared])
        fmt = f"\n{{:<{wg}}} {{:<{wt}}} {{:<10}} {{}}"
        out = fmt.format("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
        # Kafka keeps the plan in a HashMap<TopicPartition, OffsetAndMetadata>
        for (t, p), off in java_hashmap_order(list(prepared.items()), lambda kv: topic_partition_hash(*kv[0])):
            out += fmt.format(group, t, p, off)
        print(out)

    def delete_offsets(self, args: Any) -> None:
        """ShareGroupCommand's ``deleteOffsets``: a group-level error printed as ``Error: <message>``,
        then each topic's ``Successful`` or ``Error: <message>`` (the group's error for every topic
        when the group failed, as the Admin's per-topic futures do)."""
        import kafka.errors as Errors

        from protocol.schema_messages import DeleteShareGroupOffsetsRequest

        group = args.group[0]
        topics = list(dict.fromkeys(args.topic))
        T = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic
        response = self.send_to_coordinator(group, DeleteShareGroupOffsetsRequest(
            group_id=group, topics=[T(topic_name=t) for t in topics]))
        results: dict[str, str | None] = {}
        if response.error_code:
            err = Errors.for_code(response.error_code)
            message = response.error_message or err.description
            if response.error_code in (24, 69, 30, 68):  # INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, GROUP_AUTH, NON_EMPTY
                print(f"\nError: {message}")
            else:
                print(f"\nError: Encounter some unknown error: {java_error(err, message)}")
            results = {t: message for t in topics}
        else:
            for t in response.responses:
                if t.error_code:
                    err = Errors.for_code(t.error_code)
                    results[t.topic_name] = t.error_message or err.description
                else:
                    results[t.topic_name] = None
        out = ""
        if results:
            width = max([15] + [len(t) for t in results])
            fmt = f"\n{{:<{width}}} {{}}"
            out = fmt.format("TOPIC", "STATUS")
            for t in sorted(results):
                out += fmt.format(t, "Successful" if results[t] is None else f"Error: {results[t]}")
        print(out)

    # --- delete ----------------------------------------------------------------------------
    def delete(self, args: Any) -> None:
        listed = {g["group_id"]: g.get("group_state") for g in self.listings()}
        wanted = list(dict.fromkeys(list(listed) if args.all_groups else args.group))
        failed: dict[str, str] = {}
        for group in wanted:
            if group not in listed:
                failed[group] = java_error(type("GroupIdNotFoundError", (), {}),
                                           f"Group '{group}' is not a share group.")
            elif listed[group] == "Dead":
                failed[group] = f"java.lang.IllegalStateException: Share group '{group}' group state is DEAD."
            elif listed[group] not in (None, "Empty"):
                failed[group] = java_error(type("NonEmptyGroupError", (), {}), f"Share group '{group}' is not EMPTY.")
        to_delete = [g for g in wanted if g not in failed]
        success: list[str] = []
        if to_delete:
            import kafka.errors as Errors

            for group, outcome in self.admin.delete_groups(to_delete).items():
                if outcome == "OK":
                    success.append(group)
                else:
                    err = getattr(Errors, outcome, Errors.UnknownError)
                    failed[group] = java_error(err)
        # Kafka's tool keeps both in HashMaps
        success = java_hashmap_order(success, java_string_hash)
        if not failed:
            print("Deletion of requested share groups (" + ", ".join(f"'{g}'" for g in success) + ") was successful.")
            return
        print("\nError: Deletion of some share groups failed:")
        for group in java_hashmap_order(list(failed), java_string_hash):
            print(f"* Group '{group}' could not be deleted due to: {failed[group]}")
        if success:
            print("\nThese share groups were deleted successfully: " + ", ".join(f"'{g}'" for g in success))


def maybe_print_empty_group_state(group: str, state: str, rows: int) -> bool:
    """Kafka's ``maybePrintEmptyGroupState``: whether the group's table is printed."""
    if state == "Dead":
        print(f"\nError: Share group '{group}' does not exist.")
    elif state == "Empty":
        sys.stderr.write(f"\nShare group '{group}' has no active members.\n")
    return state != "Dead" and rows > 0


def assignment_string(member: Any) -> str:
    """``topic:0,1;other:2``: partitions ascending per topic, topics in string order."""
    by_topic: dict[str, list[int]] = {}
    for tp in member.assignment.topic_partitions:
        by_topic.setdefault(tp.topic_name, []).extend(tp.partitions)
    return ";".join(sorted(f"{t}:" + ",".join(str(p) for p in sorted(ps)) for t, ps in by_topic.items()))


def member_partitions(member: Any) -> int:
    return sum(len(tp.partitions) for tp in member.assignment.topic_partitions)


def print_offsets(group: str, offsets: dict[tuple[str, int], tuple[int, int, int] | None], verbose: bool) -> None:
    """ShareGroupCommand's ``printOffsets``: rows by topic then partition, ``-`` for what is unknown."""
    if not offsets:
        print(f"\nShare group '{group}' has no offset information.")
        return
    wg = max(15, len(group))
    wt = max([15] + [len(t) for t, _ in offsets])

    def cell(v: int | None) -> str:
        return "-" if v is None or v < 0 else str(v)

    if verbose:
        fmt = f"\n{{:<{wg}}} {{:<{wt}}} {{:<10}} {{:<13}} {{:<13}} {{}}"
        out = fmt.format("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG")
    else:
        fmt = f"\n{{:<{wg}}} {{:<{wt}}} {{:<10}} {{:<13}} {{}}"
        out = fmt.format("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")
    for (t, p), info in sorted(offsets.items()):
        start, epoch, lag = info if info is not None else (None, None, None)
        if verbose:
            out += fmt.format(group, t, p, cell(epoch), cell(start), cell(lag))
        else:
            out += fmt.format(group, t, p, cell(start), cell(lag))
    print(out)


def print_members(group: str, desc: Any, verbose: bool) -> None:
    members = sorted(desc.members, key=lambda m: m.member_id)
    if not maybe_print_empty_group_state(group, desc.group_state, len(members)):
        return
    wg = max(15, len(group))
    wc = max([15] + [len(m.member_id) for m in members])
    wh = max([15] + [len(m.client_host) for m in members])
    wl = max([15] + [len(m.client_id) for m in members])
    if verbose:
        fmt = f"\n{{:<{wg}}} {{:<{wc}}} {{:<{wh}}} {{:<{wl}}} {{:<12}} {{:<13}} {{}}"
        out = fmt.format("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT")
        for m in members:
            out += fmt.format(group, m.member_id, m.client_host, m.client_id, member_partitions(m), m.member_epoch,
                              assignment_string(m))
    else:
        fmt = f"\n{{:<{wg}}} {{:<{wc}}} {{:<{wh}}} {{:<{wl}}} {{:<12}} {{}}"
        out = fmt.format("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")
        for m in members:
            out += fmt.format(group, m.member_id, m.client_host, m.client_id, member_partitions(m),
                              assignment_string(m))
    print(out)


def print_state(group: str, desc: Any, coordinator: str, verbose: bool) -> None:
    maybe_print_empty_group_state(group, desc.group_state, 1)
    wg, wc = max(15, len(group)), max(25, len(coordinator))
    if verbose:
        fmt = f"\n{{:<{wg}}} {{:<{wc}}} {{:<15}} {{:<12}} {{:<17}} {{}}"
        out = fmt.format("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS")
        out += fmt.format(group, coordinator, desc.group_state, desc.group_epoch, desc.assignment_epoch,
                          len(desc.members))
    else:
        fmt = f"\n{{:<{wg}}} {{:<{wc}}} {{:<15}} {{}}"
        out = fmt.format("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS")
        out += fmt.format(group, coordinator, desc.group_state, len(desc.members))
    print(out)


def check_args(parser: Any, args: Any, argv: list[str]) -> None:
    """Kafka's ``ShareGroupCommandOptions.checkArgs`` and the one-action check, in its order."""
    if not argv:
        parser.usage_and_exit(DESCRIPTION)
    require_bootstrap(parser, args)
    if args.describe:
        check_describe_options(parser, args)
    for flag in ("members", "offsets", "verbose"):
        if getattr(args, flag) and not args.describe:
            parser.usage_and_exit(f"Option [{flag}] can be specified only if [describe] is specified")
    if args.state is not None and not (args.describe or args.list):
        parser.usage_and_exit("Option [state] can be specified only if [describe] or [list] is specified")
    if args.delete:
        if not args.group and not args.all_groups:
            parser.usage_and_exit("Option [delete] takes the options [group] or [all-groups]")
        if args.group and args.all_groups:
            parser.usage_and_exit("Option [delete] takes either [group] or [all-groups], not both.")
        if args.topic:
            parser.usage_and_exit("Option [delete] does not take the option: [topic]")
    if args.delete_offsets and (not args.group or not args.topic):
        parser.usage_and_exit("Option [delete-offsets] takes the following options: [group], [topic]")
    if args.reset_offsets:
        if args.dry_run and args.execute:
            parser.usage_and_exit("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not args.dry_run and not args.execute:
            parser.usage_and_exit("Option [reset-offsets] takes the option: [execute] or [dry-run]")
        if not args.group:
            parser.usage_and_exit("Option [reset-offsets] takes the option: [group]")
        if not args.topic and not args.all_topics:
            parser.usage_and_exit("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
        if args.topic and args.all_topics:
            parser.usage_and_exit('Option "[topic]" can\'t be used with option "[all-topics]"')
        scenarios = [s for s in ("to_offset", "to_datetime", "to_earliest", "to_latest")
                     if getattr(args, s) is not None and getattr(args, s) is not False]
        if not scenarios:
            parser.usage_and_exit("Option [reset-offsets] takes one of these options: [to-datetime], "
                                  "[to-earliest], [to-latest], [to-offset]")
        if len(scenarios) > 1:
            first = scenarios[0].replace("_", "-")
            parser.usage_and_exit(f'Option "[{first}]" can\'t be used with option "[{scenarios[1].replace("_", "-")}]"')
    if args.group and args.all_groups:
        parser.usage_and_exit('Option "[group]" can\'t be used with option "[all-groups]"')
    if args.group and (args.list):
        parser.usage_and_exit('Option "[group]" can\'t be used with option "[list]"')
    if args.topic and (args.list or args.describe):
        parser.usage_and_exit(f'Option "[topic]" can\'t be used with option "[{"list" if args.list else "describe"}]"')
    actions = [a for a in ("list", "describe", "delete", "reset_offsets", "delete_offsets") if getattr(args, a)]
    if len(actions) != 1:
        parser.usage_and_exit("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                              "--delete-offsets.")


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args, argv)
    props = load_properties(args.command_config) if args.command_config else {}
    service = ShareGroupService(props, args.bootstrap_server, args.timeout)
    try:
        if args.list:
            service.list_groups(args.state)
        elif args.describe:
            service.describe(args)
        elif args.reset_offsets:
            service.reset_offsets(args)
        elif args.delete_offsets:
            service.delete_offsets(args)
        else:
            service.delete(args)
    except CommandFailed as e:
        sys.stdout.flush()
        print(f"\nError: Executing share group command failed due to {e}")
        sys.stdout.flush()
        if e.trace is not None:
            sys.stderr.write(f"{e.trace}\n")
        return 1
    finally:
        service.close()
    return 0


def failure(exc: BaseException) -> ToolError:
    return ToolError(f"\nError: Executing share group command failed due to {error_message(exc)}")


def entry() -> None:
    run(main, failure=failure)


if __name__ == "__main__":
    entry()
