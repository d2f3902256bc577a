"""``kafka-configs``: describe and alter the configs of topics, brokers (one broker or the
cluster-wide default), groups, and users' SCRAM credentials, as Kafka's ``ConfigCommand`` prints
them, on confluent-kafka's AdminClient (incremental alters: IncrementalAlterConfigs).

Not here: client and IP quotas (confluent-kafka has no client-quota API), broker-loggers and
client-metrics resources.
"""
from __future__ import annotations

import re
import sys
from typing import Any

from .common import (
    error_message,
    ToolError,
    admin_client,
    client_config,
    load_properties,
    require_bootstrap,
    run,
    tool_parser,
)

ENTITY_TYPES = ("topics", "clients", "users", "brokers", "broker-loggers", "ips", "client-metrics", "groups")
SUPPORTED = ("topics", "brokers", "groups", "users")
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# ConfigEntry.ConfigSource values as librdkafka numbers them, with Kafka's names
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
                4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}
DYNAMIC_SOURCE = {"topics": 1, "brokers": 2, "groups": 8}


def build_parser() -> Any:
    p = tool_parser("kafka-configs", "This tool helps to manipulate and describe entity config for a topic, client, user, "
                                     "broker, ip, client-metrics or group")
    p.add_argument("--describe", action="store_true", help="List configs for the given entity.")
    p.add_argument("--alter", action="store_true", help="Alter the configuration for the entity.")
    p.add_argument("--entity-type", action="append", default=[], help="Type of entity (topics/clients/users/brokers/broker-loggers/ips/client-metrics/groups)")
    p.add_argument("--entity-name", action="append", default=[], help="Name of entity (topic name/client id/user principal name/broker id/ip/client metrics/group id)")
    p.add_argument("--entity-default", action="store_true", help="Default entity name for clients/users/brokers/ips (applies to corresponding entity type)")
    p.add_argument("--add-config", help="Key Value pairs of configs to add. Square brackets can be used to group values which contain commas: 'k1=v1,k2=[v1,v2,v2],k3=v3'.")
    p.add_argument("--add-config-file", help="Path to a properties file with configs to add.")
    p.add_argument("--delete-config", action="append", default=[], help="config keys to remove 'k1,k2'")
    p.add_argument("--all", action="store_true", help="List all configs for the given entity, including static configs if available.")
    p.add_argument("--force", action="store_true", help="Suppress console prompts")
    p.add_argument("--topic", help="The topic's name.")
    p.add_argument("--group", help="The group's ID.")
    p.add_argument("--user", help="The user's principal name.")
    p.add_argument("--broker", help="The broker's ID.")
    p.add_argument("--broker-defaults", action="store_true", help="The config defaults for all brokers.")
    return p


def parse_add_config(text: str | None, file: str | None) -> dict[str, str]:
    """Kafka's parsing: commas outside square brackets separate pairs; brackets are removed."""
    props: dict[str, str] = load_properties(file) if file else {}
    if text:
        look = r"(?=[^\]]*(?:\[|$))"
        pairs = [re.split(r"\s*=\s*" + look, item) for item in re.split("," + look, text)]
        if not all(len(p) == 2 for p in pairs):
            raise ToolError('requirement failed: Invalid entity config: all configs to be added must be in the format "key=val".',
                            stream="stderr")
        for k, v in pairs:
            props[k.strip()] = re.sub(r"\[?\]?", "", v).strip()
    for key in props:
        if any(c in key for c in " \t\r\n="):
            raise ToolError(f"Invalid character found for config key: {key}", stream="stderr")
    return props


def java_exception_name(err: Any) -> str:
    name = err.name() if hasattr(err, "name") else "UNKNOWN"
    special = {"INVALID_CONFIG": "InvalidConfigurationException", "UNKNOWN_TOPIC_OR_PART": "UnknownTopicOrPartitionException",
               "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
               "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException"}
    if name in special:
        return special[name]
    return "".join(w.capitalize() for w in name.strip("_").split("_")) + "Exception"


class DefaultEntry:
    """A config entry of the cluster-wide broker default, shaped like confluent-kafka's."""

    def __init__(self, name: str, data: dict[str, Any]) -> None:
        self.name = name
        self.value = data.get("value")
        self.is_sensitive = bool(data.get("is_sensitive"))
        self.source = {v: k for k, v in SOURCE_NAMES.items()}.get(data.get("config_source", ""), 0)
        self.synonyms = [DefaultEntry(s["name"], {"value": s.get("value"), "config_source": s.get("source")})
                         for s in data.get("synonyms", [])]


class BrokerDefaults:
    """The cluster-wide broker default (a BROKER resource named ""), which librdkafka and
    kafka-python's public admin API both refuse to name: kafka-python's own request builders and
    connection manager carry the DescribeConfigs / IncrementalAlterConfigs requests."""

    def __init__(self, props: dict[str, str], bootstrap: str) -> None:
        from kafka.admin import KafkaAdminClient

        from .common import kafka_python_config

        self.admin = KafkaAdminClient(**kafka_python_config(props, bootstrap))

    def describe(self) -> list[DefaultEntry]:
        from kafka.admin import ConfigResource as KpResource
        from kafka.admin import ConfigResourceType

        admin = self.admin
        request = admin._describe_configs_request([KpResource(ConfigResourceType.BROKER, "")], include_synonyms=True)
        response = admin._manager.run(admin._manager.send, request)
        for result in response.results:
            if result.error_code:
                import kafka.errors as Errors

                raise ToolError(str(Errors.for_code(result.error_code)(result.error_message)), stream="stderr")
        processed = admin._describe_configs_process_responses([response], "all")
        return [DefaultEntry(k, v) for k, v in processed.get("broker", {}).get("", {}).items()]

    def alter(self, add: dict[str, str], delete: list[str]) -> str | None:
        from kafka.admin import AlterConfigOp
        from kafka.admin import ConfigResource as KpResource
        from kafka.admin import ConfigResourceType

        admin = self.admin
        configs: dict[str, Any] = {k: (AlterConfigOp.SET, v) for k, v in add.items()}
        configs.update({k: (AlterConfigOp.DELETE, None) for k in delete})
        request = admin._alter_configs_request([KpResource(ConfigResourceType.BROKER, "", configs=configs)],
                                               incremental=True)
        response = admin._manager.run(admin._manager.send, request)
        for r in response.responses:
            if r.error_code:
                import kafka.errors as Errors

                err = Errors.for_code(r.error_code)
                return f"{err.__name__}|{r.error_message or err.description}"
        return None


class ConfigService:
    def __init__(self, conf: dict[str, Any], argv: list[str], props: dict[str, str], bootstrap: str) -> None:
        self.admin = admin_client(conf)
        self.argv = argv
        self.props, self.bootstrap = props, bootstrap

    def _fail(self, exc: BaseException) -> ToolError:
        err = exc.args[0] if exc.args else None
        if err is not None and hasattr(err, "str"):
            cls = java_exception_name(err)
            if cls == "InvalidConfigurationException":
                return ToolError(err.str(), stream="stderr")
            detail = f"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.{cls}: {err.str()}"
        else:
            detail = str(exc)
        return ToolError(f"Error while executing config command with args '{' '.join(self.argv)}'\n{detail}",
                         stream="stderr")

    def resource(self, entity_type: str, name: str) -> Any:
        from confluent_kafka.admin import ConfigResource, ResourceType

        kind = {"topics": ResourceType.TOPIC, "brokers": ResourceType.BROKER, "groups": ResourceType.GROUP}[entity_type]
        return ConfigResource(kind, name)

    def entries(self, entity_type: str, name: str, describe_all: bool) -> list[Any]:
        if entity_type == "brokers" and name:
            try:
                int(name)
            except ValueError:
                raise ToolError(f"The entity name for {entity_type} must be a valid integer broker id, found: {name}",
                                stream="stderr") from None
        if entity_type == "brokers" and not name:
            entries = BrokerDefaults(self.props, self.bootstrap).describe()
            configs = {e.name: e for e in entries}
        else:
            res = self.resource(entity_type, name)
            try:
                configs = self.admin.describe_configs([res])[res].result(timeout=30)
            except Exception as e:
                raise self._fail(e) from e
        wanted = None if describe_all else (3 if entity_type == "brokers" and not name else DYNAMIC_SOURCE[entity_type])
        out = [e for e in configs.values() if wanted is None or int(e.source) == wanted]
        return sorted(out, key=lambda e: e.name)

    def describe(self, entity_type: str, names: list[str], describe_all: bool) -> None:
        if entity_type == "users":
            return self.describe_users(names)
        if not names:
            if entity_type == "topics":
                names = list(self.admin.list_topics(timeout=30).topics)
            elif entity_type == "brokers":
                cluster = self.admin.describe_cluster().result(timeout=30)
                names = [str(n.id) for n in cluster.nodes] + [""]
            else:
                names = [g.group_id for g in self.admin.list_consumer_groups().result(timeout=30).valid]
        for name in names:
            if entity_type == "brokers" and name == "":
                print(f"Default configs for {entity_type} in the cluster are:")
            else:
                print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:")
            for e in self.entries(entity_type, name, describe_all):
                synonyms = ", ".join(f"{SOURCE_NAMES.get(int(s.source), 'UNKNOWN')}:{s.name}={'null' if s.value is None else s.value}"
                                     for s in (e.synonyms.values() if isinstance(e.synonyms, dict) else e.synonyms))
                value = "null" if e.value is None else e.value
                print(f"  {e.name}={value} sensitive={'true' if e.is_sensitive else 'false'} synonyms={{{synonyms}}}")

    def describe_users(self, names: list[str]) -> None:
        """SCRAM credentials only (Kafka also prints the users' quotas first; not supported here).
        No --entity-name: every user that has credentials, as Kafka's tool lists them."""
        result: dict[str, Any] = {}
        try:
            if not names:
                result = dict(self.admin.describe_user_scram_credentials().result(timeout=30))
                futs: dict[str, Any] = {}
            else:
                futs = self.admin.describe_user_scram_credentials(names)
        except Exception as e:
            raise self._fail(e) from e
        for user, fut in futs.items():
            try:
                result[user] = fut.result(timeout=30)
            except Exception as exc:
                err = exc.args[0] if exc.args else None
                if getattr(err, "name", lambda: "")() == "RESOURCE_NOT_FOUND":
                    continue
                text = err.str() if err is not None and hasattr(err, "str") else str(exc)
                print(f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                      f"{java_exception_name(err)}: {text}")
        for user, desc in result.items():
            infos = ", ".join(f"{i.mechanism.name.replace('_', '-')}=iterations={i.iterations}"
                              for i in desc.scram_credential_infos)
            print(f"SCRAM credential configs for user-principal '{user}' are {infos}")

    def alter(self, entity_type: str, name: str, add: dict[str, str], delete: list[str]) -> None:
        if entity_type == "users":
            return self.alter_user(name, add, delete)
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

        current = {e.name for e in self.entries(entity_type, name, describe_all=False)}
        invalid = [k for k in delete if k not in current]
        if invalid:
            raise ToolError(f"Invalid config(s): {','.join(invalid)}", stream="stderr")
        if entity_type == "brokers" and not name:
            failure = BrokerDefaults(self.props, self.bootstrap).alter(add, delete)
            if failure is not None:
                cls, message = failure.split("|", 1)
                raise ToolError(f"Error while executing config command with args '{' '.join(self.argv)}'\n"
                                f"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                                f"{re.sub(r'Error$', '', cls)}Exception: {message}", stream="stderr")
            return
        res = self.resource(entity_type, name)
        ops = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in add.items()]
        ops += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete]
        for op in ops:
            res.add_incremental_config(op)
        try:
            self.admin.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=60)
        except Exception as e:
            raise self._fail(e) from e

    def alter_user(self, user: str, add: dict[str, str], delete: list[str]) -> None:
        from confluent_kafka.admin import (
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialDeletion,
            UserScramCredentialUpsertion,
        )

        unknown = [k for k in list(add) + delete if k not in SCRAM]
        if unknown:
            verb = "added" if any(k in add for k in unknown) else "deleted"
            raise ToolError(f"Only quota and SCRAM credential configs can be {verb} for 'users' using --bootstrap-server. "
                            f"Unexpected config names: {', '.join(unknown)} (client quotas are not supported by this tool)",
                            stream="stderr")
        if not user:
            raise ToolError("The use of --entity-default or --user-defaults is not allowed with User SCRAM Credentials "
                            "using --bootstrap-server.", stream="stderr")
        alterations: list[Any] = [UserScramCredentialDeletion(user, getattr(ScramMechanism, k.replace("-", "_")))
                                  for k in delete]
        for mech, cred in add.items():
            m = re.fullmatch(r"(?:iterations=(-?[0-9]*),)?password=(.*)", cred)
            if not m:
                raise ToolError(f"Invalid credential property {mech}={cred}", stream="stderr")
            iterations = int(m.group(1)) if m.group(1) and m.group(1) != "-1" else 4096
            if iterations < 4096:
                raise ToolError(f"Iterations {iterations} is less than the minimum 4096 required for {mech}", stream="stderr")
            alterations.append(UserScramCredentialUpsertion(
                user, ScramCredentialInfo(getattr(ScramMechanism, mech.replace("-", "_")), iterations), m.group(2).encode()))
        try:
            for fut in self.admin.alter_user_scram_credentials(alterations).values():
                fut.result(timeout=60)
        except Exception as e:
            raise self._fail(e) from e


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not argv:
        parser.usage_and_exit("This tool helps to manipulate and describe entity config for a topic, client, user, "
                              "broker, ip, client-metrics or group")
    bootstrap = require_bootstrap(parser, args, "One of the required --bootstrap-server, --boostrap-controller, or "
                                                "--zookeeper arguments must be specified")
    if args.describe == args.alter:
        parser.usage_and_exit("Command must include exactly one action: --describe, --alter")
    types, names = list(args.entity_type), list(args.entity_name)
    for flag, kind in (("topic", "topics"), ("group", "groups"), ("user", "users"), ("broker", "brokers")):
        value = getattr(args, flag)
        if value is not None:
            if args.entity_type or args.entity_name:
                raise ToolError("--entity-{type,name,default} should not be used in conjunction with specific entity flags",
                                stream="stderr")
            types.append(kind)
            names.append(value)
    if args.broker_defaults:
        types.append("brokers")
    if not types:
        raise ToolError("At least one entity type must be specified", stream="stderr")
    if len(types) != len(set(types)):
        raise ToolError(f"Duplicate entity type(s) specified: {','.join(sorted({t for t in types if types.count(t) > 1}))}",
                        stream="stderr")
    entity_type = types[0]
    if entity_type not in ENTITY_TYPES:
        raise ToolError(f"Invalid entity type {entity_type}, the entity type must be one of {', '.join(ENTITY_TYPES)} with a "
                        "--bootstrap-server or --bootstrap-controller argument", stream="stderr")
    if entity_type not in SUPPORTED or len(types) > 1:
        raise ToolError(f"Entity type '{entity_type}' is not supported by this kafka-configs "
                        "(supported: topics, brokers, groups, users SCRAM credentials)", stream="stderr")
    if args.entity_default or args.broker_defaults:
        if args.describe and entity_type in ("topics", "groups"):
            raise ToolError(f"--entity-default must not be specified with --describe of {entity_type}", stream="stderr")
        names.append("")
    if entity_type == "brokers" and names and names[0] not in ("",):
        try:
            int(names[0])
        except ValueError:
            raise ToolError(f"The entity name for {entity_type} must be a valid integer broker id, but it is: {names[0]}",
                            stream="stderr") from None
    props = load_properties(args.command_config) if args.command_config else {}
    service = ConfigService(client_config(args, bootstrap), argv, props, bootstrap)
    if args.describe:
        service.describe(entity_type, names, args.all)
        return 0
    if not names:
        if entity_type in ("users", "brokers"):
            raise ToolError("An entity-name or default entity must be specified with --alter of users, clients, brokers or ips",
                            stream="stderr")
        raise ToolError(f"An entity name must be specified with --alter of {entity_type}", stream="stderr")
    if args.add_config and args.add_config_file:
        raise ToolError("Only one of --add-config or --add-config-file must be specified", stream="stderr")
    add = parse_add_config(args.add_config, args.add_config_file)
    delete = [k.strip() for item in args.delete_config for k in item.split(",") if k.strip()]
    if not add and not delete:
        raise ToolError("At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter",
                        stream="stderr")
    service.alter(entity_type, names[0], add, delete)
    if names[0]:
        print(f"Completed updating config for {entity_type[:-1]} {names[0]}.")
    else:
        print(f"Completed updating default config for {entity_type} in the cluster.")
    sys.stdout.flush()
    return 0


def entry() -> None:
    def failure(e: BaseException) -> ToolError:
        return ToolError(f"Error while executing config command with args '{' '.join(sys.argv[1:])}'\n"
                         f"{error_message(e)}", stream="stderr")

    run(main, failure=failure)


if __name__ == "__main__":
    entry()
