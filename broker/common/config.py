"""Broker configuration: Kafka's property names and defaults, a properties file, and
``KAFKA_*`` environment overrides in the official image's style; and the topic config schema
(TOPIC_CONFIG_DEFS), which DescribeConfigs and the partition logs both read."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Mapping

# name -> (type, default). Types follow Kafka's ConfigDef types used by DescribeConfigs.
BROKER_DEFAULTS: dict[str, tuple[str, Any]] = {
    "node.id": ("int", 1),
    "process.roles": ("list", "broker,controller"),
    "listeners": ("list", "PLAINTEXT://:9092"),
    "advertised.listeners": ("list", None),
    "log.dirs": ("list", "./data"),
    "num.partitions": ("int", 1),
    "default.replication.factor": ("int", 1),
    "auto.create.topics.enable": ("boolean", True),
    "delete.topic.enable": ("boolean", True),
    "message.max.bytes": ("int", 1048588),
    "socket.request.max.bytes": ("int", 104857600),
    # Kafka's default is 102400; a large send buffer lets sendfile() hand a whole fetch answer
    # to the kernel at once, worth 15-25 % of single-partition consume throughput here (README).
    "socket.send.buffer.bytes": ("int", 4194304),
    "socket.receive.buffer.bytes": ("int", -1),
    "log.segment.bytes": ("int", 1073741824),
    "log.roll.ms": ("long", None),
    "log.roll.hours": ("int", 168),
    "log.retention.ms": ("long", None),
    "log.retention.minutes": ("int", None),
    "log.retention.hours": ("int", 168),
    "log.retention.bytes": ("long", -1),
    "log.retention.check.interval.ms": ("long", 300000),
    "log.index.interval.bytes": ("int", 4096),
    "log.segment.delete.delay.ms": ("long", 60000),
    "log.flush.interval.messages": ("long", 9223372036854775807),
    "log.flush.interval.ms": ("long", None),
    "log.cleanup.policy": ("list", "delete"),
    "log.cleaner.delete.retention.ms": ("long", 86400000),
    "log.cleaner.min.compaction.lag.ms": ("long", 0),
    "log.cleaner.max.compaction.lag.ms": ("long", 9223372036854775807),
    "log.cleaner.min.cleanable.ratio": ("double", 0.5),
    "log.cleaner.enable": ("boolean", True),
    "log.cleaner.backoff.ms": ("long", 15000),
    "log.cleaner.dedupe.buffer.size": ("long", 134217728),
    "log.cleaner.io.max.bytes.per.second": ("double", 1.7976931348623157e308),
    "log.message.timestamp.type": ("string", "CreateTime"),
    "log.message.timestamp.before.max.ms": ("long", 9223372036854775807),
    "log.message.timestamp.after.max.ms": ("long", 3600000),
    "min.insync.replicas": ("int", 1),
    "compression.type": ("string", "producer"),
    "unclean.leader.election.enable": ("boolean", False),
    "offsets.topic.num.partitions": ("int", 50),
    "offsets.topic.replication.factor": ("short", 1),
    "offsets.topic.segment.bytes": ("int", 104857600),
    "offsets.retention.minutes": ("int", 10080),
    "offsets.retention.check.interval.ms": ("long", 600000),
    "offsets.commit.timeout.ms": ("int", 5000),
    "offset.metadata.max.bytes": ("int", 4096),
    "transaction.state.log.num.partitions": ("int", 50),
    "transaction.state.log.replication.factor": ("short", 1),
    "transaction.state.log.segment.bytes": ("int", 104857600),
    "transaction.max.timeout.ms": ("int", 900000),
    "transactional.id.expiration.ms": ("int", 604800000),
    "group.initial.rebalance.delay.ms": ("int", 3000),
    "group.min.session.timeout.ms": ("int", 6000),
    "group.max.session.timeout.ms": ("int", 1800000),
    "group.max.size": ("int", 2147483647),
    "max.request.partition.size.limit": ("int", 2000),      # DescribeTopicPartitions page size cap
    "group.consumer.session.timeout.ms": ("int", 45000),
    "group.consumer.min.session.timeout.ms": ("int", 45000),
    "group.consumer.max.session.timeout.ms": ("int", 60000),
    "group.consumer.heartbeat.interval.ms": ("int", 5000),
    "group.consumer.min.heartbeat.interval.ms": ("int", 5000),
    "group.consumer.max.heartbeat.interval.ms": ("int", 15000),
    "group.consumer.max.size": ("int", 2147483647),
    "group.consumer.assignors": ("list", "uniform,range"),
    "group.consumer.migration.policy": ("string", "bidirectional"),
    "samsa.group.consumer.rack.aware.assignment": ("boolean", False),   # Kafka 4.x assigns rack-blind
    "fetch.max.bytes": ("int", 57671680),
    "replica.fetch.max.bytes": ("int", 1048576),
    # replication between brokers (broker/replica/)
    "replica.lag.time.max.ms": ("long", 30000),
    "replica.fetch.wait.max.ms": ("int", 500),
    "replica.fetch.min.bytes": ("int", 1),
    "replica.fetch.response.max.bytes": ("int", 10485760),
    "replica.fetch.backoff.ms": ("int", 1000),
    "replica.socket.timeout.ms": ("int", 30000),
    "replica.high.watermark.checkpoint.interval.ms": ("long", 5000),
    "max.incremental.fetch.session.cache.slots": ("int", 1000),     # followers' fetch sessions (KIP-227)
    "min.incremental.fetch.session.eviction.ms": ("int", 120000),
    "broker.rack": ("string", None),
    "cluster.id": ("string", None),
    # security (issue 13): listeners' protocols, TLS, SASL, the authorizer
    "listener.security.protocol.map": ("list", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
    "inter.broker.listener.name": ("string", None),
    "ssl.keystore.type": ("string", "JKS"),
    "ssl.keystore.location": ("string", None),
    "ssl.keystore.password": ("password", None),
    "ssl.keystore.certificate.chain": ("password", None),
    "ssl.keystore.key": ("password", None),
    "ssl.key.password": ("password", None),
    "ssl.truststore.type": ("string", "JKS"),
    "ssl.truststore.location": ("string", None),
    "ssl.truststore.password": ("password", None),
    "ssl.truststore.certificates": ("password", None),
    "ssl.client.auth": ("string", "none"),
    "ssl.enabled.protocols": ("list", "TLSv1.2,TLSv1.3"),
    "ssl.cipher.suites": ("list", ""),
    "ssl.principal.mapping.rules": ("string", "DEFAULT"),
    "sasl.enabled.mechanisms": ("list", "GSSAPI"),
    "connections.max.reauth.ms": ("long", 0),
    "connections.max.idle.ms": ("long", 600000),   # broker/network/idle_expiry.py; -1 never
    "sasl.server.max.receive.size": ("int", 524288),
    "connection.failed.authentication.delay.ms": ("int", 100),
    "authorizer.class.name": ("string", ""),
    "super.users": ("string", None),
    "allow.everyone.if.no.acl.found": ("boolean", False),
    # how long a TLS handshake may take before the connection is closed
    "samsa.ssl.handshake.timeout.ms": ("long", 10000),
    # SCRAM credentials created at start-up when absent, as `kafka-storage format --add-scram`:
    # 'SCRAM-SHA-512=[name=admin,password=admin-secret]' entries separated by ';'
    "samsa.scram.bootstrap.credentials": ("password", None),
    # Samsa's own (no Kafka equivalent; see the README's configuration section)
    "samsa.fsync.on.acks.all": ("boolean", False),
    # after answering a plain-TCP client whose last request came within this many microseconds of
    # its answer, the loop polls that long before sleeping (broker/network/busy_poll.py); 0 = never
    "samsa.socket.busy.poll.us": ("int", 200),
    "samsa.http.listener": ("string", None),  # /metrics and the web console, e.g. http://127.0.0.1:8090
    # the console may produce records and create, delete and configure topics (it has no authentication)
    "samsa.http.console.write.enable": ("boolean", False),
    "samsa.http.console.sample.interval.ms": ("long", 5000),   # the console's charts: one sample per interval
    "samsa.emulate.kafka.version": ("string", None),   # e.g. 2.8: advertise that release's API versions
    "samsa.control.listener": ("string", None),        # http://127.0.0.1:PORT: faults and clock (broker/control/endpoint.py)
    "samsa.control.listener.allow.remote": ("boolean", False),
    # cluster mode (broker/metadata/): etcd v3 endpoints (comma-separated URLs); unset = a single node
    "samsa.metadata.etcd.endpoints": ("list", None),
    "samsa.metadata.etcd.prefix": ("string", "/samsa"),
    "broker.session.timeout.ms": ("int", 9000),
    "controlled.shutdown.enable": ("boolean", True),
    "transaction.state.log.min.isr": ("int", 2),
    "samsa.log.max.open.segment.files": ("int", None),
    "samsa.transaction.version": ("int", None),     # finalized transaction.version (protocol/features.py)
    # KIP-932 share groups (coordinator/share/group.py, share_partition.py): on unless disabled, as a new
    # Kafka 4.2 cluster (share.version finalized at 1); see broker/server/api_table.py share_groups_enabled
    "group.share.enable": ("boolean", None),       # Kafka 4.0/4.1's switch (unset: share.version decides)
    "samsa.share.version": ("int", None),          # finalized share.version (Kafka sets it with kafka-features.sh; unset: 1)
    "group.share.session.timeout.ms": ("int", 45000),
    "group.share.min.session.timeout.ms": ("int", 45000),
    "group.share.max.session.timeout.ms": ("int", 60000),
    "group.share.heartbeat.interval.ms": ("int", 5000),
    "group.share.min.heartbeat.interval.ms": ("int", 5000),
    "group.share.max.heartbeat.interval.ms": ("int", 15000),
    "group.share.max.size": ("int", 200),
    "group.share.record.lock.duration.ms": ("int", 30000),
    "group.share.min.record.lock.duration.ms": ("int", 15000),
    "group.share.max.record.lock.duration.ms": ("int", 60000),
    "group.share.delivery.count.limit": ("int", 5),
    "group.share.partition.max.record.locks": ("int", 2000),
    "samsa.share.auto.offset.reset": ("string", "latest"),   # the default of the share.auto.offset.reset group config
    # KIP-932's share coordinator on __share_group_state (broker/coordinator_runtime/share_state_runtime.py)
    "share.coordinator.state.topic.num.partitions": ("int", 50),
    "share.coordinator.state.topic.replication.factor": ("short", 3),
    "share.coordinator.state.topic.min.isr": ("short", 2),
    "share.coordinator.state.topic.segment.bytes": ("int", 104857600),
    "share.coordinator.snapshot.update.records.per.snapshot": ("int", 500),
}

LONG_MAX = 9223372036854775807

# What Kafka's shipped config/server.properties (and so its docker image) sets "for a better
# out-of-the-box experience for development and testing": `samsa serve` without a properties file
# (./scripts/serve.sh, the image) starts with these; a properties file starts from Kafka's code
# defaults (BROKER_DEFAULTS), as Kafka's does. KAFKA_* variables and --override still win.
QUICK_START_PROPERTIES: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
}


# -- the topic config schema ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One Kafka topic config: type, LogConfig default, validator bounds, broker synonyms
    (highest priority first) and a one-line description for include_documentation."""
    kind: str
    default: Any
    synonyms: tuple[str, ...]
    doc: str
    at_least: float | None = None
    at_most: float | None = None
    valid: tuple[str, ...] | None = None


_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

# Kafka 4's LogConfig, with ServerTopicConfigSynonyms. segment.bytes keeps Kafka 3.9's lower
# bound (14 bytes) rather than 4.0's 1 MiB so tests can roll segments quickly.
TOPIC_CONFIG_DEFS: dict[str, TopicConfigDef] = {
    "cleanup.policy": TopicConfigDef(
        "list", "delete", ("log.cleanup.policy",),
        "How old log segments are retired: 'delete' removes them by time or size, 'compact' keeps "
        "the latest record per key; both may be listed.", valid=("compact", "delete")),
    "compression.gzip.level": TopicConfigDef(
        "int", -1, ("compression.gzip.level",),
        "Compression level used when compression.type is gzip."),
    "compression.lz4.level": TopicConfigDef(
        "int", 9, ("compression.lz4.level",),
        "Compression level used when compression.type is lz4.", at_least=1, at_most=17),
    "compression.type": TopicConfigDef(
        "string", "producer", ("compression.type",),
        "Final compression of the topic's data; 'producer' keeps whatever codec the producer used.",
        valid=_COMPRESSION_TYPES),
    "compression.zstd.level": TopicConfigDef(
        "int", 3, ("compression.zstd.level",),
        "Compression level used when compression.type is zstd.", at_least=-131072, at_most=22),
    "delete.retention.ms": TopicConfigDef(
        "long", 86400000, ("log.cleaner.delete.retention.ms",),
        "How long delete tombstones are kept on compacted topics.", at_least=0),
    "file.delete.delay.ms": TopicConfigDef(
        "long", 60000, ("log.segment.delete.delay.ms",),
        "Delay before a retired segment file is removed from disk.", at_least=0),
    "flush.messages": TopicConfigDef(
        "long", LONG_MAX, ("log.flush.interval.messages",),
        "Number of records appended between forced fsyncs of the log.", at_least=1),
    "flush.ms": TopicConfigDef(
        "long", LONG_MAX, ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
        "Maximum time between forced fsyncs of the log.", at_least=0),
    "follower.replication.throttled.replicas": TopicConfigDef(
        "list", "", (),
        "Replicas whose follower replication is throttled ('*' or partition:broker pairs)."),
    "index.interval.bytes": TopicConfigDef(
        "int", 4096, ("log.index.interval.bytes",),
        "Bytes of log between entries of the sparse offset index.", at_least=0),
    "leader.replication.throttled.replicas": TopicConfigDef(
        "list", "", (),
        "Replicas whose leader-side replication is throttled ('*' or partition:broker pairs)."),
    "local.retention.bytes": TopicConfigDef(
        "long", -2, ("log.local.retention.bytes",),
        "Local size limit when tiered storage is enabled; -2 means retention.bytes.", at_least=-2),
    "local.retention.ms": TopicConfigDef(
        "long", -2, ("log.local.retention.ms",),
        "Local time limit when tiered storage is enabled; -2 means retention.ms.", at_least=-2),
    "max.compaction.lag.ms": TopicConfigDef(
        "long", LONG_MAX, ("log.cleaner.max.compaction.lag.ms",),
        "Longest time a record may stay uncompacted.", at_least=1),
    "max.message.bytes": TopicConfigDef(
        "int", 1048588, ("message.max.bytes",),
        "Largest record batch the topic accepts, in bytes.", at_least=0),
    "message.timestamp.after.max.ms": TopicConfigDef(
        "long", 3600000, ("log.message.timestamp.after.max.ms",),
        "How far in the future a CreateTime timestamp may be.", at_least=0),
    "message.timestamp.before.max.ms": TopicConfigDef(
        "long", LONG_MAX, ("log.message.timestamp.before.max.ms",),
        "How far in the past a CreateTime timestamp may be.", at_least=0),
    "message.timestamp.type": TopicConfigDef(
        "string", "CreateTime", ("log.message.timestamp.type",),
        "Whether record timestamps are the producer's (CreateTime) or the broker's append time "
        "(LogAppendTime).", valid=("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": TopicConfigDef(
        "double", 0.5, ("log.cleaner.min.cleanable.ratio",),
        "Share of uncompacted log that makes a compacted topic eligible for cleaning.",
        at_least=0, at_most=1),
    "min.compaction.lag.ms": TopicConfigDef(
        "long", 0, ("log.cleaner.min.compaction.lag.ms",),
        "Shortest time a record stays uncompacted.", at_least=0),
    "min.insync.replicas": TopicConfigDef(
        "int", 1, ("min.insync.replicas",),
        "Replicas that must acknowledge an acks=all write.", at_least=1),
    "preallocate": TopicConfigDef(
        "boolean", False, ("log.preallocate",),
        "Whether new segment files are preallocated."),
    "remote.log.copy.disable": TopicConfigDef(
        "boolean", False, (), "Whether copying segments to tiered storage is stopped."),
    "remote.log.delete.on.disable": TopicConfigDef(
        "boolean", False, (), "Whether tiered data is deleted when tiered storage is disabled."),
    "remote.storage.enable": TopicConfigDef(
        "boolean", False, (), "Whether the topic uses tiered storage (not available in Samsa)."),
    "retention.bytes": TopicConfigDef(
        "long", -1, ("log.retention.bytes",),
        "Largest size a partition may grow to before old segments are deleted; -1 is unlimited."),
    "retention.ms": TopicConfigDef(
        "long", 604800000, ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
        "How long records are kept before old segments are deleted; -1 is forever.", at_least=-1),
    "segment.bytes": TopicConfigDef(
        "int", 1073741824, ("log.segment.bytes",),
        "Size at which a new log segment is started.", at_least=14),
    "segment.index.bytes": TopicConfigDef(
        "int", 10485760, ("log.index.size.max.bytes",),
        "Largest size of a segment's offset index.", at_least=4),
    "segment.jitter.ms": TopicConfigDef(
        "long", 0, ("log.roll.jitter.ms", "log.roll.jitter.hours"),
        "Random jitter subtracted from segment.ms.", at_least=0),
    "segment.ms": TopicConfigDef(
        "long", 604800000, ("log.roll.ms", "log.roll.hours"),
        "Time after which a new log segment is started even if the current one is not full.",
        at_least=1),
    "unclean.leader.election.enable": TopicConfigDef(
        "boolean", False, ("unclean.leader.election.enable",),
        "Whether an out-of-sync replica may become leader."),
}

# Topic config -> (type, the broker property that supplies its default): what the log reads.
TOPIC_CONFIGS: dict[str, tuple[str, str | None]] = {
    name: (d.kind, d.synonyms[0] if d.synonyms else None) for name, d in TOPIC_CONFIG_DEFS.items()}


class ConfigError(ValueError):
    """An invalid config value (Kafka answers INVALID_CONFIG)."""


def parse_value(kind: str, raw: Any) -> Any:
    if raw is None or not isinstance(raw, str):
        return raw
    s = raw.strip()
    try:
        if kind in ("int", "long", "short"):
            return int(s)
        if kind == "double":
            return float(s)
        if kind == "boolean":
            if s.lower() not in ("true", "false"):
                raise ValueError(s)
            return s.lower() == "true"
    except ValueError:
        raise ConfigError(f"Invalid value {raw!r}: expected {kind}") from None
    return s


# The apache/kafka image's ExcludeServerPropsEnv (kafka.docker.KafkaDockerWrapper), plus KAFKA_HOME.
ENV_NOT_PROPERTIES = frozenset({
    "KAFKA_HOME", "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME"})


def env_to_property(name: str) -> str | None:
    """KAFKA_ADVERTISED_LISTENERS -> advertised.listeners (official image's rule:
    ``___`` -> ``-``, ``__`` -> ``_``, ``_`` -> ``.``; the variables it keeps for the JVM and
    log4j are not properties: ENV_NOT_PROPERTIES)."""
    if not name.startswith("KAFKA_") or name in ENV_NOT_PROPERTIES:
        return None
    body = name[len("KAFKA_"):].lower()
    return body.replace("___", "\0").replace("__", "\1").replace("_", ".").replace("\0", "-").replace("\1", "_")


def read_properties(path: str) -> dict[str, str]:
    props: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            for sep in ("=", ":"):
                if sep in line:
                    k, v = line.split(sep, 1)
                    props[k.strip()] = v.strip()
                    break
    return props


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL`` pairs."""
    out = {}
    for item in (v.strip() for v in (value or "").split(",")):
        if not item:
            continue
        name, _, proto = item.partition(":")
        proto = proto.strip().upper()
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigError(f"listener.security.protocol.map: unknown security protocol {proto!r}")
        out[name.strip().upper()] = proto
    return out


def parse_listeners(value: str) -> list[Listener]:
    out = []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        name, _, rest = item.partition("://")
        host, _, port = rest.rpartition(":")
        out.append(Listener(name.upper(), host.strip("[]"), int(port)))
    return out


class BrokerConfig:
    """Typed access to broker properties, with the source of each value for DescribeConfigs."""

    def __init__(self, overrides: Mapping[str, str] | None = None) -> None:
        self.raw: dict[str, str] = dict(overrides or {})
        self.values: dict[str, Any] = {}
        for name, (kind, default) in BROKER_DEFAULTS.items():
            self.values[name] = parse_value(kind, self.raw[name]) if name in self.raw else default
        for name, raw in self.raw.items():
            if name not in self.values:
                self.values[name] = raw
        # Kafka's dynamic broker configs (broker/metadata/dynamic_broker_configs.py keeps them
        # current from the metadata log's ConfigRecords): this broker's and the cluster-wide
        # default, as the strings stored. ``values`` holds the effective value of each, in
        # Kafka's order: per broker, else cluster default, else static (``raw``), else default.
        self.dynamic_broker: dict[str, str] = {}
        self.dynamic_default: dict[str, str] = {}
        self._shadowed: dict[str, Any] = {}     # name -> its value before a dynamic one covered it

    _ABSENT = object()

    def set_dynamic(self, per_broker: Mapping[str, str], default: Mapping[str, str],
                    applied: Callable[[str], bool], kind_of: Callable[[str], str | None]) -> list[str]:
        """Replace the dynamic layers; ``values`` changes in place (readers hold the dict) for
        the names ``applied`` says take effect in Samsa. A value that does not parse is left
        out, as Kafka's DynamicBrokerConfig ignores invalid stored configs; its names are returned."""
        for name, before in self._shadowed.items():
            if before is self._ABSENT:
                self.values.pop(name, None)
            else:
                self.values[name] = before
        self._shadowed = {}
        self.dynamic_broker, self.dynamic_default = dict(per_broker), dict(default)
        invalid = []
        for name in sorted(set(per_broker) | set(default)):
            if not applied(name):
                continue
            raw = per_broker[name] if name in per_broker else default[name]
            try:
                value = parse_value(kind_of(name) or "string", raw)
            except ConfigError:
                invalid.append(name)
                continue
            self._shadowed[name] = self.values.get(name, self._ABSENT)
            self.values[name] = value
        return invalid

    def configured(self, name: str) -> str | None:
        """The string a property is set to, at the highest level that sets it (dynamic per
        broker, dynamic default, static), or None when only its default applies."""
        for layer in (self.dynamic_broker, self.dynamic_default, self.raw):
            if name in layer:
                return layer[name]
        return None

    @classmethod
    def load(cls, path: str | None = None, environ: Mapping[str, str] | None = None,
             extra: Mapping[str, str] | None = None, quick_start: bool = False) -> BrokerConfig:
        """Properties file, then KAFKA_* variables, then ``extra``; ``quick_start`` (``samsa
        serve`` without a file) lays QUICK_START_PROPERTIES under them all."""
        props: dict[str, str] = dict(QUICK_START_PROPERTIES) if quick_start else {}
        if path:
            props.update(read_properties(path))
        env = os.environ if environ is None else environ
        from .secrets_env import SecretFileError, secret_file_properties
        try:
            props.update(secret_file_properties(env))   # KAFKA_SSL_*_FILENAME/_CREDENTIALS
        except SecretFileError as exc:
            raise ConfigError(str(exc)) from None
        for key, value in env.items():
            prop = env_to_property(key)
            if prop:
                props[prop] = value
        props.update(extra or {})
        return cls(props)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def is_default(self, name: str) -> bool:
        return name not in self.raw

    # Derived values, resolved the way Kafka resolves them.
    @property
    def log_retention_ms(self) -> int:
        if self.values["log.retention.ms"] is not None:
            return int(self.values["log.retention.ms"])
        if self.values["log.retention.minutes"] is not None:
            return int(self.values["log.retention.minutes"]) * 60000
        return int(self.values["log.retention.hours"]) * 3600000

    @property
    def log_roll_ms(self) -> int:
        if self.values["log.roll.ms"] is not None:
            return int(self.values["log.roll.ms"])
        return int(self.values["log.roll.hours"]) * 3600000

    def broker_value_for_topic_default(self, broker_key: str) -> Any:
        if broker_key == "log.retention.ms":
            return self.log_retention_ms
        if broker_key == "log.roll.ms":
            return self.log_roll_ms
        if broker_key == "log.roll.jitter.ms":   # not in BROKER_DEFAULTS: raw values, if set
            ms, hours = self.values.get("log.roll.jitter.ms"), self.values.get("log.roll.jitter.hours")
            return int(ms) if ms is not None else int(hours or 0) * 3600000
        return self.values.get(broker_key)

    def _with_protocols(self, listeners: list[Listener]) -> list[Listener]:
        mapping = parse_protocol_map(self.values["listener.security.protocol.map"])
        out = []
        for lst in listeners:
            proto = mapping.get(lst.name)
            if proto is None:
                if not self.is_default("listener.security.protocol.map"):
                    raise ConfigError(f"listener {lst.name} has no entry in listener.security.protocol.map")
                # Kafka refuses such a name; Samsa took any name as PLAINTEXT before it had
                # security (e.g. INTERNAL/EXTERNAL in docker-compose.yml), and still does while
                # the map is left at its default
                proto = "PLAINTEXT"
            out.append(Listener(lst.name, lst.host, lst.port, proto))
        return out

    @property
    def listeners(self) -> list[Listener]:
        return self._with_protocols(parse_listeners(self.values["listeners"]))

    @property
    def advertised_listeners(self) -> list[Listener]:
        adv = self.values["advertised.listeners"]
        listeners = self._with_protocols(parse_listeners(adv)) if adv else self.listeners
        return [Listener(lst.name, lst.host if lst.host not in ("", "0.0.0.0", "::") else "localhost", lst.port,
                         lst.security_protocol)
                for lst in listeners]

    def for_listener(self, listener: str, name: str, default: Any = None) -> Any:
        """A property as Kafka resolves it for one listener: ``listener.name.<listener>.<name>``
        first, then the broker-wide ``<name>``."""
        prefixed = f"listener.name.{listener.lower()}.{name}"
        if prefixed in self.values:
            return self.values[prefixed]
        value = self.values.get(name)
        return default if value is None else value

    @property
    def log_dir(self) -> str:
        return str(self.values["log.dirs"]).split(",")[0].strip()


