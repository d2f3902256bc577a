"""``kafka-consumer-groups``: list, describe (offsets with LAG, members, state), delete, and
reset offsets (``--to-earliest``, ``--to-latest``, ``--to-offset``, ``--to-datetime``,
``--by-duration``, ``--shift-by``, ``--to-current`` with ``--dry-run``/``--execute``) as Kafka's
``ConsumerGroupCommand`` prints them, on confluent-kafka's AdminClient (which describes classic and
KIP-848 consumer groups alike).

As in Kafka, failures of an action print ``\\nError: ...`` on stdout and exit 0; usage errors exit 1.
"""
from __future__ import annotations

import datetime as dt
import re
import sys
from typing import Any

from .common import (
    check_describe_options,
    error_message,
    ToolError,
    admin_client,
    client_config,
    java_hashmap_order,
    java_string_hash,
    require_bootstrap,
    run,
    tool_parser,
    topic_partition_hash,
)

MISSING = "-"
# librdkafka's state names -> Kafka's GroupState.toString()
STATE_NAMES = {
    "UNKNOWN": "Unknown", "PREPARING_REBALANCING": "PreparingRebalance", "PREPARING_REBALANCE": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance", "COMPLETING_REBALANCE": "CompletingRebalance",
    "STABLE": "Stable", "DEAD": "Dead", "EMPTY": "Empty", "ASSIGNING": "Assigning", "RECONCILING": "Reconciling",
}
TYPE_NAMES = {"UNKNOWN": "Unknown", "CONSUMER": "Consumer", "CLASSIC": "Classic", "SHARE": "Share", "STREAMS": "Streams"}
SCENARIOS = ("to_datetime", "by_duration", "to_earliest", "to_latest", "shift_by", "from_file", "to_current", "to_offset")


def build_parser() -> Any:
    p = tool_parser("kafka-consumer-groups", "This tool helps to list all consumer groups, describe a consumer group, "
                                             "delete consumer group info, or reset consumer group offsets.")
    p.add_argument("--group", action="append", default=[], help="The consumer group we wish to act on.")
    p.add_argument("--topic", action="append", default=[], help="The topic whose consumer group information should be "
                                                                "deleted or topic whose should be included in the reset offset process "
                                                                "(topic or topic:partition,partition).")
    p.add_argument("--all-topics", action="store_true", help="Consider all topics assigned to a group in the `reset-offsets` process.")
    for flag, text in (("list", "List all consumer groups."), ("describe", "Describe consumer group and list offset lag."),
                       ("all-groups", "Apply to all consumer groups."), ("delete", "Pass in groups to delete topic partition offsets."),
                       ("reset-offsets", "Reset offsets of consumer group."), ("delete-offsets", "Delete offsets of consumer group."),
                       ("dry-run", "Only show results without executing changes on Consumer Groups."),
                       ("execute", "Execute operation."), ("export", "Export operation execution to a CSV file."),
                       ("to-earliest", "Reset offsets to earliest offset."), ("to-latest", "Reset offsets to latest offset."),
                       ("to-current", "Reset offsets to current offset."), ("members", "Describe members of the group."),
                       ("verbose", "Provide additional information, if any, when describing the group."),
                       ("offsets", "Describe the group and list all topic partitions in the group along with their offset lag.")):
        p.add_argument(f"--{flag}", action="store_true", help=text)
    p.add_argument("--timeout", type=int, default=5000, help="The timeout that can be set for some use cases.")
    p.add_argument("--to-offset", type=int, help="Reset offsets to a specific offset.")
    p.add_argument("--from-file", help="Reset offsets to values defined in CSV file.")
    p.add_argument("--to-datetime", help="Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'")
    p.add_argument("--by-duration", help="Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'")
    p.add_argument("--shift-by", type=int, help="Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.")
    p.add_argument("--state", nargs="?", const="", help="When specified with '--describe', includes the state of the group. "
                                                        "When specified with '--list', it displays the state of all groups.")
    p.add_argument("--type", nargs="?", const="", help="When specified with '--list', it displays the types of all the groups.")
    return p


def kafka_datetime(text: str) -> int:
    """Kafka's ``Utils.getDateTime``: ISO 8601 with milliseconds, UTC when no zone is given."""
    if "T" not in text:
        raise ToolError("Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
    second = text.split("T", 1)[1]
    if not any(c in second for c in "+-Z"):
        text += "Z"
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3})(Z|[+-]\d{2}(?::?\d{2})?)", text)
    if not m:
        raise ToolError(f'Unparseable date: "{text}"')
    zone = m.group(2)
    if zone == "Z":
        tz = dt.timezone.utc
    else:
        digits = zone[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0)
        tz = dt.timezone(dt.timedelta(minutes=minutes if zone[0] == "+" else -minutes))
    stamp = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=tz)
    return int(stamp.timestamp() * 1000)


def iso_duration_ms(text: str) -> int:
    """``java.time.Duration.parse``: PnDTnHnMn.nS."""
    m = re.fullmatch(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+(?:\.\d+)?)S)?)?", text.upper())
    if not m or text.upper() in ("P", "PT") or text.upper().endswith("T"):
        raise ToolError(f"Text cannot be parsed to a Duration: {text}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups()[1:])
    ms = int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)
    return -ms if m.group(1) == "-" else ms


def state_name(state: Any) -> str:
    return STATE_NAMES.get(getattr(state, "name", str(state)), "Unknown")


class GroupService:
    def __init__(self, conf: dict[str, Any], timeout_ms: int) -> None:
        self.admin = admin_client(conf)
        self.timeout = max(timeout_ms / 1000.0, 1.0) + 10.0
        self.request_timeout = max(timeout_ms / 1000.0, 1.0)

    def _get(self, fut: Any) -> Any:
        return fut.result(timeout=self.timeout)

    # --- list ------------------------------------------------------------------------------
    def list_groups(self, args: Any) -> list[Any]:
        from confluent_kafka import ConsumerGroupState, ConsumerGroupType

        kwargs: dict[str, Any] = {"request_timeout": self.request_timeout}
        if args.state:
            wanted = {s.strip().lower() for s in args.state.split(",")}
            by_name = {state_name(s).lower(): s for s in ConsumerGroupState}
            unknown = wanted - set(by_name)
            if unknown:
                raise ToolError(f"Invalid state list '{args.state}'. Valid states are: " +
                                ", ".join(state_name(s) for s in ConsumerGroupState), exit_code=1, stream="stderr")
            kwargs["states"] = {by_name[s] for s in wanted}
        if args.type:
            wanted = {s.strip().lower() for s in args.type.split(",")}
            valid = {t.name.lower(): t for t in ConsumerGroupType if t.name != "UNKNOWN"}
            if wanted - set(valid):
                raise ToolError(f"Invalid types list '{args.type}'. Valid types are: " +
                                ", ".join(TYPE_NAMES[t.name] for t in ConsumerGroupType if t.name != "UNKNOWN"),
                                stream="stderr")
            kwargs["types"] = {valid[t] for t in wanted}
        result = self._get(self.admin.list_consumer_groups(**kwargs))
        return list(result.valid)

    def list_action(self, args: Any) -> None:
        listings = self.list_groups(args)
        include_type, include_state = args.type is not None, args.state is not None
        if not include_type and not include_state:
            for g in listings:
                print(g.group_id)
            return
        width = max([max(15, len(g.group_id)) for g in listings] or [15]) + 10
        header, rows = ["GROUP"], [[g.group_id] for g in listings]
        fmt = f"{{:<{width}}}"
        if include_type:
            header.append("TYPE")
            for r, g in zip(rows, listings):
                r.append(TYPE_NAMES.get(getattr(g.type, "name", ""), "Unknown"))
        if include_state:
            header.append("STATE")
            for r, g in zip(rows, listings):
                r.append(state_name(g.state))
        fmt += " {:<20}" * (len(header) - 1)
        print(fmt.format(*header))
        for r in rows:
            print(fmt.format(*r))

    # --- shared lookups ----------------------------------------------------------------------
    def group_ids(self, args: Any) -> list[str]:
        if args.all_groups:
            return [g.group_id for g in self.list_groups(type("A", (), {"state": None, "type": None})())]
        return list(args.group)

    def describe_groups(self, groups: list[str]) -> dict[str, Any]:
        if not groups:
            return {}
        futs = self.admin.describe_consumer_groups(groups, request_timeout=self.request_timeout)
        out = {}
        for g, f in futs.items():
            try:
                out[g] = self._get(f)
            except Exception as e:
                err = e.args[0] if e.args else None
                if getattr(err, "name", lambda: "")() == "GROUP_ID_NOT_FOUND":
                    out[g] = None
                else:
                    raise
        return out

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        from confluent_kafka import ConsumerGroupTopicPartitions

        res = self._get(self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                               request_timeout=self.request_timeout)[group])
        return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}

    def log_offsets(self, tps: list[tuple[str, int]], spec: Any) -> dict[tuple[str, int], int]:
        from confluent_kafka import TopicPartition

        if not tps:
            return {}
        futs = self.admin.list_offsets({TopicPartition(t, p): spec for t, p in tps}, request_timeout=self.request_timeout)
        out = {}
        for tp, f in futs.items():
            try:
                out[(tp.topic, tp.partition)] = self._get(f).offset
            except Exception:
                continue
        return out

    def latest(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        from confluent_kafka.admin import OffsetSpec

        return self.log_offsets(tps, OffsetSpec.latest())

    def earliest(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        from confluent_kafka.admin import OffsetSpec

        return self.log_offsets(tps, OffsetSpec.earliest())

    # --- describe ----------------------------------------------------------------------------
    def _state_check(self, group: str, desc: Any, rows: int | None) -> bool:
        if rows is None or desc is None:
            print(f"\nError: Consumer group '{group}' does not exist.")
            return False
        state = state_name(desc.state)
        if state == "Dead":
            print(f"\nError: Consumer group '{group}' does not exist.")
        elif state == "Empty":
            sys.stderr.write(f"\nConsumer group '{group}' has no active members.\n")
        elif state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
            sys.stderr.write(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
        return state != "Dead" and rows > 0

    def describe(self, args: Any) -> None:
        groups = self.group_ids(args)
        descs = self.describe_groups(groups)
        for group in sorted(descs):
            desc = descs[group]
            if args.members:
                self._print_members(group, desc, args.verbose)
            elif args.state is not None and not args.offsets:
                self._print_state(group, desc)
            else:
                self._print_offsets(group, desc)
        sys.stdout.flush()

    def offset_rows(self, group: str, desc: Any) -> list[list[str]]:
        committed = self.committed(group)
        members = [m for m in desc.members if m.assignment and m.assignment.topic_partitions]
        members.sort(key=lambda m: -len(m.assignment.topic_partitions))
        rows: list[list[str]] = []
        assigned: set[tuple[str, int]] = set()

        def partition_rows(tps: list[tuple[str, int]], cid: str, host: str, client: str) -> None:
            tps = sorted(tps, key=lambda tp: tp[1])
            ends = self.latest(tps)
            # Kafka iterates the HashMap<TopicPartition, ...> of log-end offsets
            for t, p in java_hashmap_order(tps, lambda tp: topic_partition_hash(*tp)):
                off = committed.get((t, p))
                end = ends.get((t, p))
                lag = str(end - off) if off is not None and end is not None else MISSING
                rows.append([group, t, str(p), MISSING if off is None else str(off),
                             MISSING if end is None else str(end), lag, cid, host, client])

        for m in members:
            tps = [(tp.topic, tp.partition) for tp in m.assignment.topic_partitions]
            assigned.update(tps)
            partition_rows(tps, m.member_id, m.host, m.client_id)
        unassigned = [tp for tp in committed if tp not in assigned]
        if unassigned:
            partition_rows(java_hashmap_order(unassigned, lambda tp: topic_partition_hash(*tp)), MISSING, MISSING, MISSING)
        return rows

    def _print_offsets(self, group: str, desc: Any) -> None:
        rows = self.offset_rows(group, desc) if desc is not None else None
        if not self._state_check(group, desc, None if rows is None else len(rows)):
            return
        assert rows is not None
        wg = max([15] + [len(r[0]) for r in rows])
        wt = max([15] + [len(r[1]) for r in rows])
        wc = max([15] + [len(r[6]) for r in rows])
        wh = max([15] + [len(r[7]) for r in rows])
        fmt = f"\n{{:<{wg}}} {{:<{wt}}} {{:<10}} {{:<15}} {{:<15}} {{:<15}} {{:<{wc}}} {{:<{wh}}} {{}}"
        out = fmt.format("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                         "CONSUMER-ID", "HOST", "CLIENT-ID")
        for r in rows:
            out += fmt.format(*r)
        print(out)

    def _print_members(self, group: str, desc: Any, verbose: bool) -> None:
        members = list(desc.members) if desc is not None else None
        ok = self._state_check(group, desc, None if members is None else len(members))
        wg = wc = wh = wcl = 15
        wi = 17
        include_instance = False
        if ok and members:
            for m in members:
                wg = max(wg, len(group))
                wc = max(wc, len(m.member_id))
                wi = max(wi, len(m.group_instance_id or ""))
                wh = max(wh, len(m.host))
                wcl = max(wcl, len(m.client_id))
                include_instance = include_instance or bool(m.group_instance_id)
        if include_instance:
            fmt = f"{{:<{wg}}} {{:<{wc}}} {{:<{wi}}} {{:<{wh}}} {{:<{wcl}}} {{:<15}} "
            head = fmt.format("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
        else:
            fmt = f"{{:<{wg}}} {{:<{wc}}} {{:<{wh}}} {{:<{wcl}}} {{:<15}} "
            head = fmt.format("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
        out = "\n" + head + ("ASSIGNMENT" if verbose else "") + "\n"
        for m in members or []:
            tps = list(m.assignment.topic_partitions) if m.assignment else []
            cells = [group, m.member_id] + ([m.group_instance_id or ""] if include_instance else []) + \
                [m.host, m.client_id, str(len(tps))]
            out += fmt.format(*cells)
            if verbose:
                if not tps:
                    out += MISSING
                else:
                    by_topic: dict[str, list[str]] = {}
                    for tp in tps:
                        by_topic.setdefault(tp.topic, []).append(str(tp.partition))
                    out += ", ".join(sorted("(" + ",".join(sorted(ps)) + ")" for ps in by_topic.values()))
            out += "\n"
        sys.stdout.write(out)

    def _print_state(self, group: str, desc: Any) -> None:
        if not self._state_check(group, desc, 1 if desc is not None else None):
            return
        c = desc.coordinator
        coordinator = f"{c.host}:{c.port}  ({c.id})"
        width = max(25, len(coordinator))
        fmt = f"\n{{:<{width}}} {{:<25}} {{:<20}} {{:<15}} {{}}"
        print(fmt.format("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
              + fmt.format(group, coordinator, desc.partition_assignor or "", state_name(desc.state), len(desc.members)))

    # --- delete ------------------------------------------------------------------------------
    def delete(self, args: Any) -> None:
        groups = self.group_ids(args)
        futs = self.admin.delete_consumer_groups(groups, request_timeout=self.request_timeout) if groups else {}
        success, failed = [], {}
        for g, f in futs.items():
            try:
                self._get(f)
                success.append(g)
            except Exception as e:
                failed[g] = e
        success = java_hashmap_order(success, java_string_hash)
        if not failed:
            print("Deletion of requested consumer groups ('" + ", ".join(success) + "') was successful.")
        else:
            print("\nError: Deletion of some consumer groups failed:")
            for g in java_hashmap_order(list(failed), java_string_hash):
                print(f"* Group '{g}' could not be deleted due to: {error_message(failed[g])}")
            if success:
                print("\nThese consumer groups were deleted successfully: '" + "'".join(success) + "', '")

    # --- delete offsets ----------------------------------------------------------------------
    def delete_offsets(self, args: Any) -> None:
        """Kafka's ``--delete-offsets``: OffsetDelete through kafka-python (confluent-kafka has no
        OffsetDelete API); the summary line, then the TOPIC PARTITION STATUS table."""
        import kafka.errors as Errors
        from confluent_kafka import TopicCollection
        from kafka import TopicPartition as KpTopicPartition
        from kafka.admin import KafkaAdminClient

        from .common import kafka_python_config, load_properties

        group = args.group[0]
        results: dict[tuple[str, int], str | None] = {}
        partitions: list[tuple[str, int]] = []
        whole = [t for t in args.topic if ":" not in t]
        for arg in args.topic:
            if ":" in arg:
                parts = arg.split(":")
                if len(parts) != 2:
                    raise ToolError(f"Invalid topic arg '{arg}', expected topic name and partitions", stream="stderr")
                partitions.extend((parts[0], int(p)) for p in parts[1].split(","))
        if whole:
            futs = self.admin.describe_topics(TopicCollection(whole))
            for t in whole:
                try:
                    partitions.extend((t, p.id) for p in self._get(futs[t]).partitions)
                except Exception as e:
                    err = e.args[0] if e.args else None
                    results[(t, -1)] = (java_error(Errors.UnknownTopicOrPartitionError)
                                        if getattr(err, "name", lambda: "")() == "UNKNOWN_TOPIC_OR_PART"
                                        else error_message(e))
        props = load_properties(args.command_config) if args.command_config else {}
        kp = KafkaAdminClient(**kafka_python_config(props, args.bootstrap_server))
        top: Any = None
        try:
            answers = kp.delete_group_offsets(group, [KpTopicPartition(t, p) for t, p in partitions])
            for tp, err in answers.items():
                results[(tp.topic, tp.partition)] = None if err is Errors.NoError else java_error(err)
        except Errors.KafkaError as e:
            top = type(e)
            for tp in partitions:
                results[tp] = java_error(top)
        finally:
            kp.close()
        name = getattr(top, "__name__", "")
        if top is None:
            if any(v is not None for tp, v in results.items() if tp[1] >= 0):
                print("\nError: Encounter some partition level error, see the follow-up details:")
            else:
                print(f"Request succeed for deleting offsets with topic {', '.join(args.topic)} group {group}")
        elif name == "InvalidGroupIdError":
            print(f"\nError: '{group}' is not valid.")
        elif name == "GroupIdNotFoundError":
            print(f"\nError: '{group}' does not exist.")
        elif name == "GroupAuthorizationFailedError":
            print(f"\nError: Access to '{group}' is not authorized.")
        elif name == "NonEmptyGroupError":
            print(f"\nError: Deleting offsets of a consumer group '{group}' is forbidden if the group is not empty.")
        else:
            print(f"\nError: Encounter some unknown error: {JAVA_ERRORS.get(name, (name, ''))[0]}")
        fmt = "\n{:<30} {:<15} {:<15}"
        out = fmt.format("TOPIC", "PARTITION", "STATUS")
        for (t, p), err in sorted(results.items(), key=lambda kv: kv[0][0] + str(kv[0][1])):
            out += fmt.format(t, p if p >= 0 else "Not Provided", "Successful" if err is None else f"Error: :{err}")
        print(out)

    # --- reset offsets -----------------------------------------------------------------------
    def partitions_to_reset(self, group: str, args: Any) -> list[tuple[str, int]]:
        from confluent_kafka import TopicCollection

        if args.all_topics:
            return java_hashmap_order(list(self.committed(group)), lambda tp: topic_partition_hash(*tp))
        specified: list[tuple[str, int]] = []
        whole: list[str] = []
        for arg in args.topic:
            if ":" in arg:
                parts = arg.split(":")
                if len(parts) != 2:
                    raise ToolError(f"Invalid topic arg '{arg}', expected topic name and partitions")
                for p in parts[1].split(","):
                    if not re.fullmatch(r"-?\d+", p):
                        raise ToolError(f"Invalid partition '{p}' specified in topic arg '{arg}''")
                    specified.append((parts[0], int(p)))
            else:
                whole.append(arg)
        if whole:
            futs = self.admin.describe_topics(TopicCollection(whole))
            for t in java_hashmap_order(whole, java_string_hash):
                try:
                    d = self._get(futs[t])
                except Exception as e:
                    raise ToolError(f"\nError: Executing consumer group command failed due to "
                                    f"{error_message(e)}", exit_code=0) from e
                specified.extend((t, p.id) for p in d.partitions)
        return specified

    def check_range(self, requested: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        tps = list(requested)
        starts, ends = self.earliest(tps), self.latest(tps)
        out = {}
        for tp, off in requested.items():
            if tp in ends and off > ends[tp]:
                out[tp] = ends[tp]
            elif tp in starts and off < starts[tp]:
                out[tp] = starts[tp]
            else:
                out[tp] = off
        return out

    def prepare(self, group: str, tps: list[tuple[str, int]], args: Any) -> dict[tuple[str, int], int]:
        from confluent_kafka.admin import OffsetSpec

        if args.to_offset is not None:
            return self.check_range({tp: args.to_offset for tp in tps})
        if args.to_earliest or args.to_latest:
            found = self.earliest(tps) if args.to_earliest else self.latest(tps)
            for tp in tps:
                if tp not in found:
                    which = "starting" if args.to_earliest else "ending"
                    raise ToolError(f"Error getting {which} offset of topic partition: {tp[0]}-{tp[1]}", stream="stderr")
            return {tp: found[tp] for tp in tps}
        if args.shift_by is not None:
            current = self.committed(group)
            requested = {}
            for tp in tps:
                if tp not in current:
                    raise ToolError(f"Cannot shift offset for partition {tp[0]}-{tp[1]} since there is no current "
                                    "committed offset", stream="stderr")
                requested[tp] = current[tp] + args.shift_by
            return self.check_range(requested)
        if args.to_datetime is not None or args.by_duration is not None:
            if args.to_datetime is not None:
                ts = kafka_datetime(args.to_datetime)
            else:
                ts = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000) - iso_duration_ms(args.by_duration)
            found = self.log_offsets(tps, OffsetSpec.for_timestamp(ts))
            empty = [tp for tp in tps if found.get(tp, -1) < 0]
            for t, p in empty:
                print(f"\nWarn: Partition {p} from topic {t} is empty. Falling back to latest known offset.")
            found.update(self.latest(empty))
            return {tp: found[tp] for tp in tps}
        if args.to_current:
            current = self.committed(group)
            ends = self.latest([tp for tp in tps if tp not in current])
            return {tp: current.get(tp, ends.get(tp, -1)) for tp in tps}
        if args.from_file:
            plan = read_reset_plan(args.from_file, args.group)
            if group not in plan:
                print(f"\nError: No reset plan for group {group} found")
                return {}
            return self.check_range(plan[group])
        raise ToolError("Option '[reset-offsets]' requires one of the following scenarios: [to-datetime, by-duration, "
                        "to-earliest, to-latest, shift-by, from-file, to-current, to-offset]", stream="stderr")

    def reset(self, args: Any) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        groups = self.group_ids(args)
        descs = self.describe_groups(groups)
        result: dict[str, dict[tuple[str, int], int]] = {}
        for group in groups:
            desc = descs.get(group)
            state = state_name(desc.state) if desc is not None else "Dead"
            if state not in ("Empty", "Dead"):
                print(f"\nError: Assignments can only be reset if the group '{group}' is inactive, but the current "
                      f"state is {state}.")
                result[group] = {}
                continue
            if not args.all_topics and not args.topic and not args.from_file:
                raise ToolError("One of the reset scopes should be defined: --all-topics, --topic.", stream="stderr")
            tps = self.partitions_to_reset(group, args) if not args.from_file else []
            prepared = self.prepare(group, tps, args)
            if args.execute:
                tpl = [TopicPartition(t, p, off) for (t, p), off in prepared.items()]
                self._get(self.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tpl)],
                                                                  request_timeout=self.request_timeout)[group])
            result[group] = prepared
        if args.export:
            single = len(args.group) == 1
            lines = []
            for group, offsets in result.items():
                for (t, p), off in java_hashmap_order(list(offsets.items()), lambda kv: topic_partition_hash(*kv[0])):
                    lines.append(f"{t},{p},{off}\n" if single else f"{group},{t},{p},{off}\n")
            print("".join(lines))
            return
        fmt = "\n{:<30} {:<30} {:<10} {:<15}"
        out = fmt.format("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET") if result else ""
        for group in java_hashmap_order(list(result), java_string_hash):
            items = java_hashmap_order(list(result[group].items()), lambda kv: topic_partition_hash(*kv[0]))
            for (t, p), off in items:
                out += fmt.format(group, t, p, off)
        print(out)


def read_reset_plan(path: str, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    with open(path, encoding="utf-8") as f:
        lines = [ln.strip() for ln in f.read().split("\n") if ln.strip()]
    plan: dict[str, dict[tuple[str, int], int]] = {}
    for ln in lines:
        cells = ln.split(",")
        if len(cells) == 3 and len(groups) == 1:
            plan.setdefault(groups[0], {})[(cells[0], int(cells[1]))] = int(cells[2])
        elif len(cells) == 4:
            plan.setdefault(cells[0], {})[(cells[1], int(cells[2]))] = int(cells[3])
        else:
            raise ToolError(f"Invalid reset plan line: {ln}")
    return plan


# kafka-python's error classes -> (Kafka's Errors name, Java exception class)
JAVA_ERRORS: dict[str, tuple[str, ...]] = {
    "NonEmptyGroupError": ("NON_EMPTY_GROUP", "GroupNotEmptyException"),
    "GroupIdNotFoundError": ("GROUP_ID_NOT_FOUND", "GroupIdNotFoundException"),
    "GroupSubscribedToTopicError": ("GROUP_SUBSCRIBED_TO_TOPIC", "GroupSubscribedToTopicException"),
    "UnknownTopicOrPartitionError": ("UNKNOWN_TOPIC_OR_PARTITION", "UnknownTopicOrPartitionException",
                                     "This server does not host this topic-partition."),
    "GroupAuthorizationFailedError": ("GROUP_AUTHORIZATION_FAILED", "GroupAuthorizationException"),
    "TopicAuthorizationFailedError": ("TOPIC_AUTHORIZATION_FAILED", "TopicAuthorizationException"),
    "InvalidGroupIdError": ("INVALID_GROUP_ID", "InvalidGroupIdException"),
}


def java_error(err: Any) -> str:
    """An ExecutionException's message in Kafka's tool: the Java exception class and its message."""
    name = getattr(err, "__name__", type(err).__name__)
    known = JAVA_ERRORS.get(name, ("", name.replace("Error", "Exception")))
    message = known[2] if len(known) > 2 else getattr(err, "description", "")
    return f"org.apache.kafka.common.errors.{known[1]}: {message}"


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not argv:
        parser.usage_and_exit("This tool helps to list all consumer groups, describe a consumer group, delete consumer "
                              "group info, or reset consumer group offsets.")
    bootstrap = require_bootstrap(parser, args)
    actions = [a for a in ("list", "describe", "delete", "reset_offsets", "delete_offsets") if getattr(args, a)]
    if len(actions) != 1:
        parser.usage_and_exit("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                              "--delete-offsets")
    scope = "[group], [all-groups]"
    if args.describe:
        check_describe_options(parser, args)
    if args.delete:
        if not args.group and not args.all_groups:
            parser.usage_and_exit(f"Option [delete] takes one of these options: {scope}")
        if args.topic:
            parser.usage_and_exit("The consumer does not support topic-specific offset deletion from a consumer group.")
    if args.reset_offsets:
        if args.dry_run and args.execute:
            parser.usage_and_exit("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not args.dry_run and not args.execute:
            sys.stderr.write("WARN: No action will be performed as the --execute option is missing.In a future major "
                             "release, the default behavior of this command will be to prompt the user before executing "
                             "the reset rather than doing a dry run. You should add the --dry-run option explicitly if "
                             "you are scripting this command and want to keep the current default behavior without "
                             "prompting.\n")
        if not args.group and not args.all_groups:
            parser.usage_and_exit(f"Option [reset-offsets] takes one of these options: {scope}")
        used = [s for s in SCENARIOS if getattr(args, s) not in (None, False)]
        if len(used) > 1:
            parser.usage_and_exit(f'Option "[{used[1].replace("_", "-")}]" can\'t be used with option '
                                  f'"[{used[0].replace("_", "-")}]"')
    if args.delete_offsets and (len(args.group) != 1 or not args.topic):
        parser.usage_and_exit("Option [delete-offsets] takes the following options: [group], [topic]")
    service = GroupService(client_config(args, bootstrap), args.timeout)
    try:
        {"list": service.list_action, "describe": service.describe, "delete": service.delete,
         "reset_offsets": service.reset, "delete_offsets": service.delete_offsets}[actions[0]](args)
    except ToolError:
        raise
    except Exception as e:
        print(f"\nError: Executing consumer group command failed due to {error_message(e)}")
    return 0


def entry() -> None:
    run(main, failure=lambda e: ToolError("\nError: Executing consumer group command failed due to " + error_message(e),
                                          exit_code=0))


if __name__ == "__main__":
    entry()
