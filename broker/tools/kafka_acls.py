"""``kafka-acls``: add, remove and list ACLs with Kafka's ``AclCommand`` flags (``--allow-principal``,
``--deny-principal``, ``--operation``, ``--topic``/``--group``/``--cluster``/``--transactional-id``,
``--resource-pattern-type``, the ``--producer``/``--consumer``/``--idempotent`` conveniences) and
its output (``Adding ACLs for resource `ResourcePattern(...)`:`` / ``Current ACLs for resource``),
on confluent-kafka's AdminClient. Failures: ``Error while executing ACL command: ...``, exit 1."""
from __future__ import annotations

import sys
from typing import Any

from .common import error_message, ToolError, admin_client, client_config, require_bootstrap, run, tool_parser

RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
# Kafka's AclEntry.supportedOperations per resource type (ALL is always accepted)
SUPPORTED_OPS = {
    "TOPIC": ["READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"],
    "GROUP": ["READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"],
    "CLUSTER": ["CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE"],
    "TRANSACTIONAL_ID": ["DESCRIBE", "WRITE"],
}


def pascal(name: str) -> str:
    return "".join(w.capitalize() for w in name.split("_"))


def build_parser() -> Any:
    p = tool_parser("kafka-acls", "This tool helps to manage acls on kafka.")
    for flag, text in (("add", "Indicates you are trying to add ACLs."), ("remove", "Indicates you are trying to remove ACLs."),
                       ("list", "List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster."),
                       ("cluster", "Add/Remove cluster ACLs."), ("producer", "Convenience option to add/remove ACLs for producer role."),
                       ("consumer", "Convenience option to add/remove ACLs for consumer role."),
                       ("idempotent", "Enable idempotence for the producer."), ("force", "Assume Yes to all queries and do not prompt.")):
        p.add_argument(f"--{flag}", action="store_true", help=text)
    p.add_argument("--topic", action="append", default=[], help="topic to which ACLs should be added or removed.")
    p.add_argument("--group", action="append", default=[], help="Consumer Group to which the ACLs should be added or removed.")
    p.add_argument("--transactional-id", action="append", default=[], help="The transactionalId to which ACLs should be added or removed.")
    p.add_argument("--resource-pattern-type", default="LITERAL", help="ANY, MATCH, LITERAL (default) or PREFIXED.")
    p.add_argument("--operation", action="append", default=[], help="Operation that is being allowed or denied (Read, Write, ...; default All).")
    p.add_argument("--allow-principal", action="append", default=[], help="principal in PrincipalType:name format, e.g. User:alice.")
    p.add_argument("--deny-principal", action="append", default=[], help="principal in PrincipalType:name format.")
    p.add_argument("--allow-host", action="append", default=[], help="Host from which principals will have access (default *).")
    p.add_argument("--deny-host", action="append", default=[], help="Host from which principals will be denied access (default *).")
    p.add_argument("--principal", action="append", default=[], help="List ACLs for the specified principal.")
    return p


def pattern_text(rtype: str, name: str, ptype: str) -> str:
    return f"ResourcePattern(resourceType={rtype}, name={name}, patternType={ptype})"


def entry_text(principal: str, host: str, op: str, perm: str) -> str:
    return f"(principal={principal}, host={host}, operation={op}, permissionType={perm})"


def block(title: str, entries: list[str]) -> str:
    """Kafka's ``s"$title: $Newline ${acls.map("\\t" + _).mkString(Newline)} $Newline"``."""
    return f"{title}: \n " + "\n".join("\t" + e for e in entries) + " \n"


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.bootstrap_server and not args.version:
        parser.usage_and_exit("One of --bootstrap-server or --bootstrap-controller must be specified")
    bootstrap = require_bootstrap(parser, args)
    if sum((args.add, args.remove, args.list)) != 1:
        parser.usage_and_exit("Command must include exactly one action: --list, --add, --remove. ")
    ptype = args.resource_pattern_type.upper()
    if ptype not in ("ANY", "MATCH", "LITERAL", "PREFIXED"):
        parser.usage_and_exit(f"Unknown resource-pattern-type: {args.resource_pattern_type}")
    if args.add and ptype not in ("LITERAL", "PREFIXED"):
        parser.usage_and_exit(f"A '--resource-pattern-type' value of '{ptype}' is not valid when adding acls.")

    resources: list[tuple[str, str]] = [("TOPIC", t.strip()) for t in args.topic]
    if ptype == "LITERAL" and (args.cluster or args.idempotent):
        resources.append(("CLUSTER", "kafka-cluster"))
    resources += [("GROUP", g.strip()) for g in args.group] + [("TRANSACTIONAL_ID", t) for t in args.transactional_id]
    if not resources and not args.list:
        parser.usage_and_exit("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
                              "--delegation-token <Delegation Token ID>")

    def acl_entries(ops: list[str]) -> list[tuple[str, str, str, str]]:
        out = []
        for principals, hosts, perm in ((args.allow_principal, args.allow_host, "ALLOW"),
                                        (args.deny_principal, args.deny_host, "DENY")):
            hs = [h.strip() for h in hosts] or (["*"] if principals else [])
            for principal in principals:
                if ":" not in principal:
                    raise ToolError(f"Error while executing ACL command: expected a string in format principalType:principalName "
                                    f"but got {principal}")
                for op in ops:
                    for host in hs:
                        out.append((principal.strip(), host, op, perm))
        return out

    plan: dict[tuple[str, str], list[tuple[str, str, str, str]]] = {}
    if not args.producer and not args.consumer:
        ops = [o.strip().upper().replace("-", "_") for o in args.operation] or ["ALL"]
        for o in ops:
            if o not in SUPPORTED_OPS["TOPIC"] + SUPPORTED_OPS["CLUSTER"] + ["ALL"]:
                parser.usage_and_exit(f"Unknown operation: {o}")
        for r in resources:
            plan[r] = acl_entries(ops)
    if args.producer:
        for r in resources:
            if r[0] == "TOPIC":
                plan[r] = acl_entries(["WRITE", "DESCRIBE", "CREATE"])
            elif r[0] == "TRANSACTIONAL_ID":
                plan[r] = acl_entries(["WRITE", "DESCRIBE"])
        if args.idempotent:
            plan[("CLUSTER", "kafka-cluster")] = acl_entries(["IDEMPOTENT_WRITE"])
    if args.consumer:
        for r in resources:
            if r[0] == "TOPIC":
                plan[r] = plan.get(r, []) + acl_entries(["READ", "DESCRIBE"])
            elif r[0] == "GROUP":
                plan[r] = acl_entries(["READ"])
    for (rtype, _), entries in plan.items():
        valid = SUPPORTED_OPS[rtype] + ["ALL"]
        if any(e[2] not in valid for e in entries):
            parser.usage_and_exit(f"ResourceType {rtype} only supports operations {', '.join(pascal(o) for o in valid)}")

    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    ANY: Any = None  # AclBindingFilter's "any" for names, principals and hosts (typed str in its stubs)

    def rt(kind: str) -> Any:
        return ResourceType.BROKER if kind == "CLUSTER" else getattr(ResourceType, kind)

    admin = admin_client(client_config(args, bootstrap))
    try:
        if args.add:
            for (rtype, name), entries in plan.items():
                if not entries:
                    parser.usage_and_exit("You must specify one of: --allow-principal, --deny-principal when trying to add ACLs.")
                sys.stdout.write(block(f"Adding ACLs for resource `{pattern_text(rtype, name, ptype)}`",
                                       [entry_text(*e) for e in entries]) + "\n")
                bindings = [AclBinding(rt(rtype), name, getattr(ResourcePatternType, ptype), p, h,
                                       getattr(AclOperation, o), getattr(AclPermissionType, perm))
                            for p, h, o, perm in entries]
                for fut in admin.create_acls(bindings).values():
                    fut.result(timeout=60)
        elif args.remove:
            for (rtype, name), entries in plan.items():
                if not args.force:
                    what = (f"Are you sure you want to delete all ACLs for resource filter `ResourcePatternFilter("
                            f"resourceType={rtype}, name={name}, patternType={ptype})`? (y/n)") if not entries else \
                        block("Are you sure you want to remove ACLs", [entry_text(*e) for e in entries]).rstrip("\n") + \
                        f" from resource filter `ResourcePatternFilter(resourceType={rtype}, name={name}, patternType={ptype})`? (y/n)"
                    print(what)
                    if sys.stdin.readline().strip().lower() != "y":
                        continue
                if entries:
                    filters = [AclBindingFilter(rt(rtype), name, getattr(ResourcePatternType, ptype), p, h,
                                                getattr(AclOperation, o), getattr(AclPermissionType, perm))
                               for p, h, o, perm in entries]
                else:
                    filters = [AclBindingFilter(rt(rtype), name, getattr(ResourcePatternType, ptype), ANY, ANY,
                                                AclOperation.ANY, AclPermissionType.ANY)]
                for fut in admin.delete_acls(filters).values():
                    fut.result(timeout=60)
        else:
            if resources:
                filters = [AclBindingFilter(rt(k), n, getattr(ResourcePatternType, ptype), ANY, ANY,
                                            AclOperation.ANY, AclPermissionType.ANY) for k, n in resources]
            else:
                filters = [AclBindingFilter(ResourceType.ANY, ANY, ResourcePatternType.ANY, ANY, ANY,
                                            AclOperation.ANY, AclPermissionType.ANY)]
            grouped: dict[str, list[tuple[str, str]]] = {}
            for f in filters:
                for b in admin.describe_acls(f).result(timeout=60):
                    kind = "CLUSTER" if b.restype.name == "BROKER" else b.restype.name
                    key = pattern_text(kind, b.name, b.resource_pattern_type.name)
                    entry = entry_text(b.principal, b.host, b.operation.name, b.permission_type.name)
                    if (entry, b.principal) not in grouped.setdefault(key, []):
                        grouped[key].append((entry, b.principal))
            principals = [p.strip() for p in args.principal]
            if not principals:
                for key, listed in grouped.items():
                    sys.stdout.write(block(f"Current ACLs for resource `{key}`", [e for e, _ in listed]) + "\n")
            for principal in principals:
                print(f"ACLs for principal `{principal}`")
                for key, listed in grouped.items():
                    mine = [e for e, p in listed if p == principal]
                    if mine:
                        sys.stdout.write(block(f"Current ACLs for resource `{key}`", mine) + "\n")
    except ToolError:
        raise
    except Exception as e:
        err = e.args[0] if e.args else None
        text = err.str() if err is not None and hasattr(err, "str") else str(e)
        raise ToolError(f"Error while executing ACL command: {text}") from e
    return 0


def entry() -> None:
    run(main, failure=lambda e: ToolError("Error while executing ACL command: " + error_message(e)))


if __name__ == "__main__":
    entry()
