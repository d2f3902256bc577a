"""The pure pieces of Kafka's command-line tools (broker/tools/): Java's HashMap iteration order
(which orders several of Kafka's outputs; the expected orders were printed by OpenJDK 17), the
Kafka-properties -> librdkafka mapping of ``--command-config``, Kafka's date and duration parsing,
and the console tools' line reader and formatter."""
from __future__ import annotations

import pytest

from broker.tools.common import (
    ToolError,
    java_hashmap_order,
    java_string_hash,
    kafka_python_config,
    librdkafka_config,
    parse_properties,
    topic_partition_hash,
)
from broker.tools.kafka_configs import parse_add_config
from broker.tools.kafka_console_producer import LineReader
from broker.tools.kafka_consumer_groups import iso_duration_ms, kafka_datetime

# a topic's config names in the order Samsa's DescribeConfigs sends them, and the order in which a
# java.util.HashMap filled in that order iterates them (java 17: new HashMap<>(); put(...) each)
TOPIC_CONFIGS = ("cleanup.policy compression.gzip.level compression.lz4.level compression.type compression.zstd.level "
                 "delete.retention.ms file.delete.delay.ms flush.messages flush.ms follower.replication.throttled.replicas "
                 "index.interval.bytes leader.replication.throttled.replicas local.retention.bytes local.retention.ms "
                 "max.compaction.lag.ms max.message.bytes message.timestamp.after.max.ms message.timestamp.before.max.ms "
                 "message.timestamp.type min.cleanable.dirty.ratio min.compaction.lag.ms min.insync.replicas preallocate "
                 "remote.log.copy.disable remote.log.delete.on.disable remote.storage.enable retention.bytes retention.ms "
                 "segment.bytes segment.index.bytes segment.jitter.ms segment.ms unclean.leader.election.enable").split()
JAVA_ORDER = ("compression.type,remote.log.delete.on.disable,leader.replication.throttled.replicas,remote.storage.enable,"
              "min.insync.replicas,segment.jitter.ms,remote.log.copy.disable,local.retention.ms,cleanup.policy,flush.ms,"
              "follower.replication.throttled.replicas,compression.lz4.level,compression.gzip.level,retention.ms,"
              "segment.bytes,compression.zstd.level,flush.messages,file.delete.delay.ms,max.compaction.lag.ms,"
              "max.message.bytes,min.compaction.lag.ms,message.timestamp.type,local.retention.bytes,preallocate,"
              "index.interval.bytes,min.cleanable.dirty.ratio,unclean.leader.election.enable,delete.retention.ms,"
              "retention.bytes,message.timestamp.after.max.ms,message.timestamp.before.max.ms,segment.ms,"
              "segment.index.bytes").split(",")


def test_java_string_hash_matches_javas() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("orders") == -1008770331
    assert java_string_hash("retention.ms") == -1339220362   # overflows 32 bits on the way (both from java 17)


def test_java_hashmap_order_matches_a_jvm() -> None:
    assert java_hashmap_order(TOPIC_CONFIGS, java_string_hash) == JAVA_ORDER
    # HashMap<TopicPartition, ...> of orders-0..11 (java 17)
    tps = [("orders", p) for p in range(12)]
    assert [p for _, p in java_hashmap_order(tps, lambda tp: topic_partition_hash(*tp))] == [7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6]


def test_command_config_maps_to_librdkafka() -> None:
    props = parse_properties(
        "# client.properties\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        "    username=\"alice\" password=\"s3cret\";\n"
        "ssl.endpoint.identification.algorithm=\n"
        "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n")
    conf = librdkafka_config(props, "h:9093")
    assert conf["sasl.username"] == "alice" and conf["sasl.password"] == "s3cret"
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.mechanism"] == "SCRAM-SHA-512"
    assert conf["ssl.endpoint.identification.algorithm"] == "none"
    assert "sasl.jaas.config" not in conf and "key.serializer" not in conf
    assert conf["bootstrap.servers"] == "h:9093"
    kp = kafka_python_config(props, "h:9093")
    assert (kp["sasl_plain_username"], kp["sasl_plain_password"], kp["ssl_check_hostname"]) == ("alice", "s3cret", False)


def test_truststores(tmp_path) -> None:
    pem = tmp_path / "ca.pem"
    pem.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    assert librdkafka_config({"ssl.truststore.location": str(pem), "ssl.truststore.type": "PEM"}, None)["ssl.ca.location"] == str(pem)
    jks = tmp_path / "trust.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 16)
    with pytest.raises(ToolError, match="JKS trust stores are not supported"):
        librdkafka_config({"ssl.truststore.location": str(jks)}, None)


def test_kafka_datetime_and_duration() -> None:
    assert kafka_datetime("2024-01-02T03:04:05.678") == 1704164645678
    assert kafka_datetime("2024-01-02T03:04:05.678Z") == 1704164645678
    assert kafka_datetime("2024-01-02T05:04:05.678+02:00") == 1704164645678
    with pytest.raises(ToolError):
        kafka_datetime("2024-01-02")
    assert iso_duration_ms("PT1H30M") == 5_400_000 and iso_duration_ms("P1DT0.5S") == 86_400_500


def test_add_config_brackets_and_line_reader() -> None:
    assert parse_add_config("a=1,b=[x,y],c=", None) == {"a": "1", "b": "x,y", "c": ""}
    reader = LineReader({"parse.key": "true", "parse.headers": "true", "null.marker": "NULL"})
    assert reader.parse("h1:v1,h2:NULL\tk\tvalue", 1) == (b"k", b"value", [("h1", b"v1"), ("h2", None)])
    assert reader.parse("NULL\tNULL\tNULL", 2) == (None, None, [])
    with pytest.raises(ToolError, match="No key separator found on line number 3: 'h:v\\tx'"):
        reader.parse("h:v\tx", 3)
