"""What every pipeline shares: the schema Spark's Kafka source produces, the event schema, and
finding Spark's Kafka connector (``SAMSA_SPARK_KAFKA_JARS`` or ``spark.jars.packages``).

Finding the connector is done before the JVM starts, so a missing connector ends the job with one
sentence instead of a Java stack trace, and an unreachable package repository is noticed with a
short TCP probe instead of Ivy's long resolution time-outs.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

JARS_ENV = "SAMSA_SPARK_KAFKA_JARS"
# Comma-separated Maven repository URLs for the packages route (passed as spark.jars.repositories,
# which Spark tries before Maven Central); when set, these are the ones checked for reachability.
REPOSITORIES_ENV = "SAMSA_SPARK_REPOSITORIES"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
PROBE_TIMEOUT_S = 3.0

# Exactly the columns, types and nullability of Spark's Kafka source with includeHeaders=true
# (org.apache.spark.sql.kafka010.KafkaRecordToRowConverter).
KAFKA_SOURCE_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
    StructField("headers", ArrayType(StructType([
        StructField("key", StringType()),
        StructField("value", BinaryType()),
    ]))),
])

# The JSON events both pipelines read: {"event_id": "e-1", "user": "u-1", "action": "view",
# "amount_cents": 1299, "event_time": "2024-05-01T12:00:05Z"}. Money is integral cents so sums are exact.
EVENT_SCHEMA = StructType([
    StructField("event_id", StringType()),
    StructField("user", StringType()),
    StructField("action", StringType()),
    StructField("amount_cents", LongType()),
    StructField("event_time", TimestampType()),
])

SOURCE_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
CONNECTOR_CLASSES = {
    SOURCE_PROVIDER: "spark-sql-kafka-0-10",
    "org.apache.kafka.clients.consumer.KafkaConsumer": "kafka-clients",
    "org.apache.commons.pool2.impl.GenericKeyedObjectPool": "commons-pool2",
}


class ConnectorUnavailable(SystemExit):
    """Ends a job with one sentence on stderr and exit code 1 (SystemExit prints its message)."""

    def __init__(self, reason: str) -> None:
        super().__init__(connector_help(reason))


def scala_binary_version(spark_version: str) -> str:
    """Spark 4 is built for Scala 2.13 only; Spark 3's PyPI builds are Scala 2.12."""
    return "2.13" if int(spark_version.split(".")[0]) >= 4 else "2.12"


def connector_coordinates(spark_version: str | None = None) -> str:
    """The spark.jars.packages coordinates matching the installed pyspark."""
    import pyspark

    v = spark_version or pyspark.__version__
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala_binary_version(v)}:{v}"


def connector_help(reason: str) -> str:
    coords = connector_coordinates()
    return (f"Spark's Kafka connector could not be loaded ({reason}): set {JARS_ENV} to comma-separated "
            f"paths of the {coords.split(':')[1]}, spark-token-provider-kafka-0-10, kafka-clients 3.9 and "
            f"commons-pool2 jars, or make {coords} resolvable for spark.jars.packages "
            f"(Maven Central or a mirror named in {REPOSITORIES_ENV}).")


@dataclass
class ConnectorPlan:
    """Spark settings that bring in the connector, and how they were chosen."""

    route: str  # "jars" or "packages"
    conf: dict[str, str] = field(default_factory=dict)


def _expand_jars(value: str) -> list[str]:
    jars: list[str] = []
    for item in (p.strip() for p in value.split(",")):
        if not item:
            continue
        path = Path(item).expanduser()
        if path.is_dir():
            found = sorted(glob.glob(str(path / "*.jar")))
            if not found:
                raise ConnectorUnavailable(f"{JARS_ENV} names the folder {path}, which holds no jar")
            jars.extend(found)
        elif path.is_file():
            jars.append(str(path.resolve()))
        else:
            raise ConnectorUnavailable(f"{JARS_ENV} names {path}, which does not exist")
    if not jars:
        raise ConnectorUnavailable(f"{JARS_ENV} is set but names no jar")
    return jars


def _ivy_cached(coords: str, ivy_dir: str | None = None) -> bool:
    """True when Ivy or the local Maven repository already holds the connector (no network needed)."""
    group, artifact, version = coords.split(":")
    home = Path.home()
    candidates = [home / ".m2" / "repository" / Path(*group.split(".")) / artifact / version /
                  f"{artifact}-{version}.jar"]
    for ivy in ([Path(ivy_dir)] if ivy_dir else [home / ".ivy2.5.2", home / ".ivy2"]):
        candidates.append(ivy / "jars" / f"{group}_{artifact}-{version}.jar")
        candidates.append(ivy / "cache" / group / artifact / "jars" / f"{artifact}-{version}.jar")
    return any(c.is_file() for c in candidates)


def _reachable(url: str, timeout: float) -> bool:
    """A TCP connect to the repository's host, bounded in time (name resolution included)."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return Path(parsed.path).is_dir()
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return False
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    result: list[bool] = []

    def connect() -> None:
        try:
            with socket.create_connection((parsed.hostname, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=connect, daemon=True)
    worker.start()
    worker.join(timeout + 0.5)
    return bool(result and result[0])


def plan_connector(environ: dict[str, str] | None = None, probe_timeout: float = PROBE_TIMEOUT_S,
                   spark_conf: dict[str, str] | None = None) -> ConnectorPlan:
    """Choose how Spark gets the connector, failing fast with one sentence when it cannot
    (``spark_conf``: the job's ``--conf`` settings, for ``spark.jars.ivy``)."""
    env = os.environ if environ is None else environ
    jars = env.get(JARS_ENV, "").strip()
    if jars:
        return ConnectorPlan("jars", {"spark.jars": ",".join(_expand_jars(jars))})
    coords = connector_coordinates()
    repos = [r.strip() for r in env.get(REPOSITORIES_ENV, "").split(",") if r.strip()]
    conf = {"spark.jars.packages": coords}
    if repos:
        conf["spark.jars.repositories"] = ",".join(repos)
    if not _ivy_cached(coords, (spark_conf or {}).get("spark.jars.ivy")):
        probe = repos or [MAVEN_CENTRAL]
        if not any(_reachable(u, probe_timeout) for u in probe):
            shown = ", ".join(probe)
            raise ConnectorUnavailable(f"{JARS_ENV} is not set and no package repository answers: {shown}")
    return ConnectorPlan("packages", conf)


def _load_class(spark: SparkSession, name: str):  # -> py4j JavaObject (java.lang.Class) or None
    """The class as Spark loads user classes (spark.jars included), or None when it is missing."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    try:
        return jvm.org.apache.spark.util.Utils.classForName(name, True, False)
    except Exception:  # py4j wraps the ClassNotFoundException / NoClassDefFoundError
        return None


def _kafka_clients_version(spark: SparkSession) -> str | None:
    cls = _load_class(spark, "org.apache.kafka.common.utils.AppInfoParser")
    if cls is None:
        return None
    gateway = spark.sparkContext._gateway
    jvm = spark.sparkContext._jvm
    method = cls.getMethod("getVersion", gateway.new_array(jvm.java.lang.Class, 0))
    return str(method.invoke(None, gateway.new_array(jvm.java.lang.Object, 0)))


def check_connector(spark: SparkSession) -> None:
    """Fail with one sentence unless the connector and its dependencies load in the driver."""
    missing = [jar for cls, jar in CONNECTOR_CLASSES.items() if _load_class(spark, cls) is None]
    if missing:
        raise ConnectorUnavailable(f"classes from {', '.join(missing)} are missing from the classpath")
    version = _kafka_clients_version(spark)
    if version is not None and not version.startswith("3."):
        raise ConnectorUnavailable(f"kafka-clients {version} is on the classpath, but Spark "
                                   f"{spark.version}'s connector needs kafka-clients 3.x")


def add_spark_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers, HOST:PORT[,HOST:PORT]")
    parser.add_argument("--master", default="local[*]", help="Spark master: local[*] (default) or spark://HOST:7077")
    parser.add_argument("--shuffle-partitions", type=int, default=4,
                        help="spark.sql.shuffle.partitions (small: the aggregates are small)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting, repeatable")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="extra format(\"kafka\") option, repeatable (client settings take the kafka. prefix)")


def spark_session(app_name: str, args: argparse.Namespace) -> SparkSession:
    """A SparkSession with the connector on its classpath, or exit with one sentence."""
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise SystemExit("Spark needs Java 17 or newer: install a JDK or JRE and put java on PATH (or set JAVA_HOME).")
    extra = parse_pairs(args.conf, "--conf")
    plan = plan_connector(spark_conf=extra)
    builder = (SparkSession.builder.appName(app_name).master(args.master)
               .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in plan.conf.items():
        builder = builder.config(key, value)
    for key, value in extra.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # the JVM could not start: usually Ivy failed to resolve the packages
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConnectorUnavailable(f"Spark did not start with the {plan.route} route: {first}") from None
    spark.sparkContext.setLogLevel(os.environ.get("SAMSA_SPARK_LOG_LEVEL", "WARN"))
    try:
        check_connector(spark)
    except ConnectorUnavailable:
        spark.stop()
        raise
    return spark


def parse_pairs(items: list[str] | None, what: str) -> dict[str, str]:
    """``["k=v", ...]`` -> dict; a bad item ends the job with a usage message."""
    out: dict[str, str] = {}
    for kv in items or []:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise SystemExit(f"{what} wants KEY=VALUE, got {kv!r}")
        out[key] = value
    return out


def kafka_options(bootstrap: str, extra: list[str] | None = None) -> dict[str, str]:
    """Options for ``format("kafka")``: the bootstrap servers plus ``--option KEY=VALUE`` items
    (Kafka client settings take the ``kafka.`` prefix, as Spark requires)."""
    return {"kafka.bootstrap.servers": bootstrap, **parse_pairs(extra, "--option")}


def with_event_columns(kafka_df: DataFrame) -> DataFrame:
    """Adds the parsed JSON event's fields (null where the value is not a valid event) next to the
    Kafka columns; ``valid`` says whether the record parsed with an event time and an action."""
    parsed = F.from_json(F.col("value").cast("string"), EVENT_SCHEMA, {"timeZone": "UTC"})
    df = kafka_df.withColumn("_event", parsed)
    df = df.select("*", *[F.col("_event")[f.name].alias(f.name) for f in EVENT_SCHEMA.fields]).drop("_event")
    return df.withColumn("valid", F.col("event_time").isNotNull() & F.col("action").isNotNull())
