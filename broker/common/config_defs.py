"""Kafka's ConfigDef for topic and broker configs: parsing and rendering values as Kafka does
(``parse_config``, ``render_config``, Java's Double.toString), validating topic configs with
Kafka's types, ranges and messages (``validate_topic_configs``), broker defaults and synonyms
(Kafka's DynamicBrokerConfig.brokerConfigSynonyms), effective values and their sources
(``effective_value``, ``topic_config_entries``, ``creation_config_entries``), and the documentation
of broker properties.

Used by DescribeConfigs, AlterConfigs, IncrementalAlterConfigs and CreateTopics
(broker/apis/); the topic config table itself (TopicConfigDef, TOPIC_CONFIG_DEFS) is
broker/common/config.py's. Imports nothing above broker/common.
"""
from __future__ import annotations

import re
from typing import Any
from collections.abc import Callable, Iterable, Mapping

from broker.common.config import BROKER_DEFAULTS, LONG_MAX, TOPIC_CONFIG_DEFS, BrokerConfig, ConfigError, TopicConfigDef

# ConfigResource.Type ids
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
RESOURCE_NAMES = {0: "UNKNOWN", TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER",
                   CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}

# DescribeConfigsResponse.ConfigSource ids
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_BROKER_LOGGER_CONFIG = 4, 5, 6

# DescribeConfigsResponse.ConfigType ids
CONFIG_TYPE_IDS = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6,
                   "list": 7, "class": 8, "password": 9}


TIERED_STORAGE_DISABLED = ("Tiered Storage functionality is disabled in the broker. "
                           "Topic cannot be configured with remote log storage.")


# Broker properties that supply topic defaults but that broker/common/config.py does not list.
EXTRA_BROKER_DEFAULTS: dict[str, tuple[str, Any]] = {
    "compression.gzip.level": ("int", -1),
    "compression.lz4.level": ("int", 9),
    "compression.zstd.level": ("int", 3),
    "log.flush.scheduler.interval.ms": ("long", LONG_MAX),
    "log.index.size.max.bytes": ("int", 10485760),
    "log.local.retention.bytes": ("long", -2),
    "log.local.retention.ms": ("long", -2),
    "log.preallocate": ("boolean", False),
    "log.roll.jitter.hours": ("int", 0),
    "log.roll.jitter.ms": ("long", None),
    # read by consoles (kafbat UI) to tell the broker's version; Kafka 3.9's default (the
    # latest production MetadataVersion), read-only: there are no inter-broker links to version
    "inter.broker.protocol.version": ("string", "3.9-IV0"),
    # KIP-890: leaders verify a transaction's first batch on a partition with its coordinator
    "transaction.partition.verification.enable": ("boolean", True),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": ("int", 10000),
}

# Kafka's dynamic broker configs (broker/common/dynamic_config_defs.py) that have no use in Samsa
# and so no place above: their types (to validate values as Kafka's ConfigDef does) and defaults
# (for DescribeConfigs' DEFAULT_CONFIG synonym once one is set). Not listed unless set.
DYNAMIC_ONLY_DEFAULTS: dict[str, tuple[str, Any]] = {
    "num.io.threads": ("int", 8), "num.network.threads": ("int", 3), "num.replica.fetchers": ("int", 1),
    "num.recovery.threads.per.data.dir": ("int", 2), "background.threads": ("int", 10),
    "log.cleaner.threads": ("int", 1), "log.cleaner.io.buffer.load.factor": ("double", 0.9),
    "log.cleaner.io.buffer.size": ("int", 524288), "metric.reporters": ("list", ""),
    "max.connections.per.ip": ("int", 2147483647), "max.connections.per.ip.overrides": ("string", ""),
    "max.connections": ("int", 2147483647), "max.connection.creation.rate": ("int", 2147483647),
    "producer.id.expiration.ms": ("int", 86400000), "transaction.partition.verification.enable": ("boolean", True),
    "remote.log.index.file.cache.total.size.bytes": ("long", 1073741824),
    "remote.fetch.max.wait.ms": ("int", 500), "remote.log.manager.copy.max.bytes.per.second": ("long", 9223372036854775807),
    "remote.log.manager.fetch.max.bytes.per.second": ("long", 9223372036854775807),
    "remote.list.offsets.request.timeout.ms": ("long", 30000),
}

# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: properties that stand for one another.
_BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_UNIT_MS = {"log.roll.hours": 3600000, "log.roll.jitter.hours": 3600000,
            "log.retention.minutes": 60000, "log.retention.hours": 3600000}

BROKER_DOCS: dict[str, str] = {
    "node.id": "Id of this broker.",
    "process.roles": "Roles this node plays (Samsa is always a combined broker and controller).",
    "listeners": "Addresses the broker listens on.",
    "advertised.listeners": "Addresses clients are told to connect to; defaults to listeners.",
    "log.dirs": "Directory holding the log data (Samsa uses the first entry).",
    "num.partitions": "Partition count of topics created without one.",
    "default.replication.factor": "Replication factor of topics created without one.",
    "auto.create.topics.enable": "Whether Metadata requests for unknown topics create them.",
    "delete.topic.enable": "Whether DeleteTopics is allowed.",
    "message.max.bytes": "Largest record batch accepted, unless a topic sets max.message.bytes.",
    "socket.request.max.bytes": "Largest request frame accepted on a connection.",
    "log.segment.bytes": "Default segment.bytes of topics.",
    "log.roll.ms": "Default segment.ms of topics; log.roll.hours applies when unset.",
    "log.roll.hours": "Default segment time of topics in hours.",
    "log.retention.ms": "Default retention.ms of topics; minutes and hours apply when unset.",
    "log.retention.minutes": "Default retention of topics in minutes.",
    "log.retention.hours": "Default retention of topics in hours.",
    "log.retention.bytes": "Default retention.bytes of topics.",
    "log.retention.check.interval.ms": "How often segments are checked for deletion.",
    "log.index.interval.bytes": "Default index.interval.bytes of topics.",
    "log.segment.delete.delay.ms": "Default file.delete.delay.ms of topics.",
    "log.flush.interval.messages": "Default flush.messages of topics.",
    "log.flush.interval.ms": "Default flush.ms of topics.",
    "log.cleanup.policy": "Default cleanup.policy of topics.",
    "log.cleaner.delete.retention.ms": "Default delete.retention.ms of topics.",
    "log.cleaner.min.compaction.lag.ms": "Default min.compaction.lag.ms of topics.",
    "log.cleaner.max.compaction.lag.ms": "Default max.compaction.lag.ms of topics.",
    "log.cleaner.min.cleanable.ratio": "Default min.cleanable.dirty.ratio of topics.",
    "log.cleaner.enable": "Whether the log cleaner compacts topics with cleanup.policy=compact.",
    "log.cleaner.backoff.ms": "How long the cleaner sleeps when no log needs cleaning.",
    "log.cleaner.dedupe.buffer.size": "Memory for the cleaner's key-to-offset map (bounds one pass).",
    "log.cleaner.io.max.bytes.per.second": "Most bytes per second the cleaner reads and writes (default: no limit).",
    "log.message.timestamp.type": "Default message.timestamp.type of topics.",
    "log.message.timestamp.before.max.ms": "Default message.timestamp.before.max.ms of topics.",
    "log.message.timestamp.after.max.ms": "Default message.timestamp.after.max.ms of topics.",
    "min.insync.replicas": "Default min.insync.replicas of topics.",
    "compression.type": "Default compression.type of topics.",
    "unclean.leader.election.enable": "Default unclean.leader.election.enable of topics.",
    "offsets.topic.num.partitions": "Partition count of __consumer_offsets.",
    "offsets.topic.replication.factor": "Replication factor of __consumer_offsets.",
    "offsets.topic.segment.bytes": "segment.bytes of __consumer_offsets.",
    "offsets.retention.minutes": "How long committed offsets of empty groups are kept.",
    "offsets.retention.check.interval.ms": "How often expired offsets are removed.",
    "offsets.commit.timeout.ms": "How long an offset commit may wait to be written.",
    "offset.metadata.max.bytes": "Largest metadata string of a committed offset.",
    "transaction.state.log.num.partitions": "Partition count of __transaction_state.",
    "transaction.state.log.replication.factor": "Replication factor of __transaction_state.",
    "transaction.state.log.segment.bytes": "segment.bytes of __transaction_state.",
    "share.coordinator.state.topic.num.partitions": "Partition count of __share_group_state.",
    "share.coordinator.state.topic.replication.factor": "Replication factor of __share_group_state.",
    "share.coordinator.state.topic.min.isr": "min.insync.replicas of __share_group_state.",
    "share.coordinator.state.topic.segment.bytes": "segment.bytes of __share_group_state.",
    "share.coordinator.snapshot.update.records.per.snapshot":
        "ShareUpdate records per share partition between two ShareSnapshot records.",
    "transaction.max.timeout.ms": "Largest transaction timeout a producer may ask for.",
    "transactional.id.expiration.ms": "How long an idle transactional id is remembered.",
    "transaction.partition.verification.enable": ("Verify with the transaction coordinator that a partition "
                                                  "is in the transaction before appending its first "
                                                  "transactional batch (KIP-890)."),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "How often timed-out transactions are aborted.",
    "group.initial.rebalance.delay.ms": "Wait for more members before the first rebalance of a group.",
    "group.min.session.timeout.ms": "Smallest session timeout a member may ask for.",
    "group.max.session.timeout.ms": "Largest session timeout a member may ask for.",
    "group.max.size": "Largest number of members in a group.",
    "fetch.max.bytes": "Largest response a fetch may get.",
    "replica.fetch.max.bytes": "Bytes per partition a follower fetches (unused on one node).",
    "broker.rack": "Rack of this broker.",
    "cluster.id": "Cluster id to use when formatting a new log directory.",
    "samsa.fsync.on.acks.all": "Samsa: fsync the written partitions before answering an acks=all produce.",
    "samsa.socket.busy.poll.us": ("Samsa: after answering a plain-TCP client whose last request came within this "
                                  "many microseconds of its answer, the broker polls this long for the next "
                                  "request before sleeping (0: never)."),
    "samsa.group.consumer.rack.aware.assignment": ("Samsa: consumer groups' server-side assignors prefer "
                                                   "partitions with a replica on the member's rack."),
    "samsa.log.max.open.segment.files": ("Samsa: most segment files kept open at once (default: a quarter "
                                         "of the open-file soft limit, at most 8192)."),
    "compression.gzip.level": "Default compression.gzip.level of topics.",
    "compression.lz4.level": "Default compression.lz4.level of topics.",
    "compression.zstd.level": "Default compression.zstd.level of topics.",
    "log.flush.scheduler.interval.ms": "How often logs are checked for a due flush.",
    "log.index.size.max.bytes": "Default segment.index.bytes of topics.",
    "log.local.retention.bytes": "Default local.retention.bytes of topics.",
    "log.local.retention.ms": "Default local.retention.ms of topics.",
    "log.preallocate": "Default preallocate of topics.",
    "log.roll.jitter.hours": "Default segment jitter of topics in hours.",
    "log.roll.jitter.ms": "Default segment.jitter.ms of topics.",
}


# -- value parsing and rendering (Kafka's ConfigDef) --------------------------------------
INTEGER_PATTERN = re.compile(r"^[+-]?\d+$")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_THROTTLED = re.compile(r"^\d+:\d+$")
_BOUNDS = {"short": (-(1 << 15), (1 << 15) - 1), "int": (-(1 << 31), (1 << 31) - 1),
           "long": (-(1 << 63), (1 << 63) - 1)}


def _invalid(name: str, raw: Any, why: str | None = None) -> ConfigError:
    return ConfigError(f"Invalid value {raw} for configuration {name}" + (f": {why}" if why else ""))


def parse_config(name: str, kind: str, raw: Any) -> Any:
    """Parse a config string as Kafka's ConfigDef.parseType does (trimmed; lists split on commas)."""
    if raw is None or not isinstance(raw, str):
        return raw
    s = raw.strip()
    if kind in _BOUNDS:
        lo, hi = _BOUNDS[kind]
        if not INTEGER_PATTERN.match(s) or not lo <= int(s) <= hi:
            raise _invalid(name, raw, f"Not a number of type {kind.upper()}")
        return int(s)
    if kind == "double":
        try:
            return float(s)
        except ValueError:
            raise _invalid(name, raw, "Not a number of type DOUBLE") from None
    if kind == "boolean":
        if s.lower() not in ("true", "false"):
            raise _invalid(name, raw, "Expected value to be either true or false")
        return s.lower() == "true"
    if kind == "list":
        return [] if not s else _LIST_SPLIT.split(s)
    return s


def _java_double(v: float) -> str:
    """Java's Double.toString, which Kafka uses to render DOUBLE configs."""
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0 or 1e-3 <= abs(v) < 1e7:
        return repr(v)
    for prec in range(0, 18):  # shortest mantissa that round-trips
        cand = f"{v:.{prec}e}"
        if float(cand) == v:
            break
    mant, exp = cand.split("e")
    return f"{mant if '.' in mant else mant + '.0'}E{int(exp)}"


def render_config(kind: str, value: Any) -> str | None:
    """Kafka's ConfigDef.convertToString."""
    if value is None:
        return None
    if kind == "list":
        if isinstance(value, str):
            value = [] if not value.strip() else _LIST_SPLIT.split(value.strip())
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "double" and isinstance(value, (int, float)):
        return _java_double(float(value))
    if kind == "boolean" and isinstance(value, str):
        return value.strip().lower()
    return str(value).strip() if isinstance(value, str) else str(value)


def _check_value(name: str, d: TopicConfigDef, raw: str) -> Any:
    value = parse_config(name, d.kind, raw)
    if d.valid is not None:
        items = value if d.kind == "list" else [value]
        for item in items:
            if item not in d.valid:
                raise _invalid(name, item, "String must be one of: " + ", ".join(d.valid))
        if d.kind == "list" and not items:
            raise _invalid(name, "", "String must be one of: " + ", ".join(d.valid))
    if d.at_least is not None and value < d.at_least:
        raise _invalid(name, raw.strip(), f"Value must be at least {_num(d.at_least)}")
    if d.at_most is not None and value > d.at_most:
        raise _invalid(name, raw.strip(), f"Value must be no more than {_num(d.at_most)}")
    if name == "compression.gzip.level" and value != -1 and not 1 <= value <= 9:
        raise _invalid(name, raw.strip(), "Value must be between 1 and 9 or equal to -1")
    if name.endswith(".replication.throttled.replicas") and value != ["*"]:
        if any(not _THROTTLED.match(v) for v in value):
            raise _invalid(name, raw.strip(), f"{name} must be the literal '*' or a list of replicas in the "
                                               "following format: [partitionId]:[brokerId],[partitionId]:"
                                               "[brokerId],...")
    if name == "remote.storage.enable" and value:
        raise ConfigError(TIERED_STORAGE_DISABLED)
    return value


_TOPIC_CONFIG_OF_BROKER: dict[str, TopicConfigDef] = {
    d.synonyms[0]: d for d in TOPIC_CONFIG_DEFS.values() if d.synonyms}


def check_topic_default(name: str, raw: str) -> Any:
    """A broker property that supplies a topic config's default (``log.segment.bytes``),
    checked with that topic config's validator, for dynamic broker configs."""
    return _check_value(name, _TOPIC_CONFIG_OF_BROKER[name], raw)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def validate_topic_configs(configs: Mapping[str, str | None], config: BrokerConfig | None = None) -> None:
    """Check a topic's complete set of overrides the way Kafka's controller does (raises
    ConfigError with Kafka's message; the caller answers INVALID_CONFIG)."""
    nulls = [k for k, v in configs.items() if v is None]
    if nulls:
        raise ConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    for name in configs:
        if name not in TOPIC_CONFIG_DEFS:
            raise ConfigError(f"Unknown topic config name: {name}")
    for name, raw in configs.items():
        _check_value(name, TOPIC_CONFIG_DEFS[name], raw)  # type: ignore[arg-type]
    if config is not None:
        lo = effective_value(config, configs, "min.compaction.lag.ms")
        hi = effective_value(config, configs, "max.compaction.lag.ms")
        if lo > hi:
            raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
                              f"max.compaction.lag.ms ({hi})")


# -- effective values and their sources ---------------------------------------------------
def broker_kind(name: str) -> str | None:
    for table in (BROKER_DEFAULTS, EXTRA_BROKER_DEFAULTS, DYNAMIC_ONLY_DEFAULTS):
        if name in table:
            return table[name][0]
    return None


def broker_default(name: str) -> Any:
    for table in (BROKER_DEFAULTS, EXTRA_BROKER_DEFAULTS, DYNAMIC_ONLY_DEFAULTS):
        if name in table:
            return table[name][1]
    return None


def broker_value(config: BrokerConfig, name: str) -> Any:
    """A broker property's current value, typed (defaults when not configured): its dynamic
    per-broker value, else the dynamic cluster default, else the static one."""
    kind = broker_kind(name)
    raw = config.configured(name)
    if raw is not None:
        try:
            return parse_config(name, kind or "string", raw)
        except ConfigError:
            return raw
    return broker_default(name)


def broker_synonyms(name: str) -> tuple[str, ...]:
    for group in _BROKER_SYNONYM_GROUPS:
        if name in group:
            return group
    if name == "log.flush.interval.ms":
        return ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    return (name,)


def effective_value(config: BrokerConfig, overrides: Mapping[str, str | None], name: str) -> Any:
    """A topic config's value: its override, else the first broker synonym that has a
    value (configured or default, hours and minutes converted to ms), else LogConfig's default."""
    d = TOPIC_CONFIG_DEFS[name]
    if overrides.get(name) is not None:
        return parse_config(name, d.kind, overrides[name])
    for syn in d.synonyms:
        v = broker_value(config, syn)
        if v is not None:
            if isinstance(v, list) and d.kind != "list":
                v = ",".join(v)
            return v * _UNIT_MS[syn] if syn in _UNIT_MS and isinstance(v, int) else v
    return d.default


def synonym_chain(config: BrokerConfig, name: str) -> list[tuple[str, str | None, int]]:
    """Kafka's ConfigHelper.configSynonyms: the property's synonyms set dynamically for this
    broker, then in the cluster-wide default, then statically, then their defaults, dropping
    everything before ``name`` itself."""
    names = broker_synonyms(name)
    chain: list[tuple[str, str | None, int]] = []
    for layer, source in ((config.dynamic_broker, DYNAMIC_BROKER_CONFIG),
                          (config.dynamic_default, DYNAMIC_DEFAULT_BROKER_CONFIG),
                          (config.raw, STATIC_BROKER_CONFIG)):
        chain += [(s, layer[s], source) for s in names if s in layer]
    chain += [(s, render_config(broker_kind(s) or "string", broker_default(s)), DEFAULT_CONFIG)
              for s in names if broker_default(s) is not None]
    while chain and chain[0][0] != name:
        chain.pop(0)
    return chain


def topic_config_entries(config: BrokerConfig, overrides: Mapping[str, str], names: Iterable[str],
                         live: Callable[[str], Any] | None = None,
                         internal: bool = False) -> list[tuple[str, str | None, int, list, str]]:
    """(name, value, source, synonyms, type) per topic config, as DescribeConfigs shows them.
    ``live`` gives the value the partitions use, when the topic exists."""
    out = []
    for name in names:
        d = TOPIC_CONFIG_DEFS[name]
        value = live(name) if live else None
        if value is None:
            value = effective_value(config, overrides, name)
        text = render_config(d.kind, value)
        overridden = name in overrides
        if not overridden and internal:
            # a setting the broker fixes for its internal topics (Kafka stores these as overrides)
            overridden = text != render_config(d.kind, effective_value(config, {}, name))
        syns: list[tuple[str, str | None, int]] = []
        if overridden:
            syns.append((name, text, TOPIC_CONFIG))
        if d.synonyms:
            syns += synonym_chain(config, d.synonyms[0])
        source = syns[0][2] if syns else DEFAULT_CONFIG
        out.append((name, text, source, syns, d.kind))
    return out


def creation_config_entries(config: BrokerConfig, overrides: Mapping[str, str]) -> list[tuple[str, str | None, int]]:
    """(name, value, source) of every topic config, sorted, as CreateTopics v5+ returns them
    (Kafka resolves sources there without DescribeConfigs' synonym quirk)."""
    out = []
    for name in sorted(TOPIC_CONFIG_DEFS):
        d = TOPIC_CONFIG_DEFS[name]
        value = effective_value(config, overrides, name)
        if name in overrides:
            source = TOPIC_CONFIG
        elif any(s in config.dynamic_broker for s in d.synonyms):
            source = DYNAMIC_BROKER_CONFIG
        elif any(s in config.dynamic_default for s in d.synonyms):
            source = DYNAMIC_DEFAULT_BROKER_CONFIG
        elif any(s in config.raw for s in d.synonyms):
            source = STATIC_BROKER_CONFIG
        else:
            source = DEFAULT_CONFIG
        out.append((name, render_config(d.kind, value), source))
    return out
