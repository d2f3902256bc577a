"""Admin APIs against a real broker process: CreateTopics, DeleteTopics, CreatePartitions,
DeleteRecords, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeCluster.

Driven through kafka-python's KafkaAdminClient and confluent-kafka's AdminClient, plus raw
requests (kafka-python's message classes on a socket) where a client hides what the broker
answered, such as an error inside a DescribeConfigs resource or a specific API version.
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition as CTopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource as CResource,
                                   ConfigSource, NewPartitions, NewTopic as CNewTopic)
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, KafkaAdminClient
from kafka.errors import (InvalidConfigurationError, InvalidPartitionsError, InvalidReplicationFactorError,
                          OffsetOutOfRangeError, TopicAlreadyExistsError, UnknownTopicIdError,
                          UnknownTopicOrPartitionError)
from kafka.protocol.admin import (AlterConfigsRequest, AlterConfigsResponse, CreatePartitionsRequest,
                                  CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
                                  DeleteRecordsRequest, DeleteRecordsResponse, DeleteTopicsRequest,
                                  DeleteTopicsResponse, DescribeClusterRequest, DescribeClusterResponse,
                                  DescribeConfigsRequest, DescribeConfigsResponse, IncrementalAlterConfigsRequest,
                                  IncrementalAlterConfigsResponse)
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

from broker.testing import SamsaBroker
from tests.support.rawclient import RawClient

# Kafka's numbers, spelled out so the tests do not trust the code under test
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC = 0, 1, 3, 17
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT = 36, 37, 38, 39
INVALID_CONFIG, INVALID_REQUEST, POLICY_VIOLATION, TOPIC_DELETION_DISABLED = 40, 42, 44, 73
UNKNOWN_TOPIC_ID, MISMATCHED_ENDPOINT_TYPE = 100, 114
ZERO_UUID = uuid.UUID(int=0)
ADVERTISED = {19: (2, 7), 20: (1, 6), 37: (0, 3), 21: (0, 2), 32: (1, 4), 33: (0, 2), 44: (0, 1), 60: (0, 2)}
EVERY_TOPIC_CONFIG = {
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
    "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
    "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
}


# -- helpers -------------------------------------------------------------------------------
@pytest.fixture
def kadmin(samsa_broker: SamsaBroker) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=samsa_broker.bootstrap_servers, request_timeout_ms=10000)
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def cadmin(samsa_broker: SamsaBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": samsa_broker.bootstrap_servers})


def name(prefix: str = "adm") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def describe_topic_raw(bootstrap: str, topic: str, version: int = 4, keys: list[str] | None = None,
                       synonyms: bool = False, docs: bool = False) -> Any:
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=TOPIC, resource_name=topic, configuration_keys=keys)],
                                 include_synonyms=synonyms, include_documentation=docs)
    with RawClient(bootstrap) as c:
        (res,) = c.call(req, DescribeConfigsResponse, version).results
    return res


def by_name(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


def topic_metadata(bootstrap: str, topic: str) -> Any:
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False)
    with RawClient(bootstrap) as c:
        (t,) = c.call(req, MetadataResponse, 12).topics
    return t


def produce(bootstrap: str, topic: str, partition: int, values: list[bytes], key: bytes | None = None) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    errors: list[Any] = []
    for v in values:
        p.produce(topic, v, key=key, partition=partition, on_delivery=lambda err, msg: errors.append(err) if err else None)
    assert p.flush(15) == 0
    assert errors == []
    del p  # librdkafka closes the client when the object goes


def consume_from_earliest(bootstrap: str, topic: str, partition: int, expected: int) -> list[tuple[int, bytes]]:
    """Offsets and values a kafka-python consumer reads when it starts at 'earliest'."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=10000)
    tp = TopicPartition(topic, partition)
    consumer.assign([tp])
    out = []
    try:
        for msg in consumer:
            out.append((msg.offset, msg.value))
            if len(out) == expected:
                break
    finally:
        consumer.close()
    return out


# -- ApiVersions -------------------------------------------------------------------------
def test_admin_apis_advertised_at_the_newest_versions(samsa_broker: SamsaBroker) -> None:
    with RawClient(samsa_broker.bootstrap_servers) as c:
        resp = c.call(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                      ApiVersionsResponse, 3)
    table = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    for key, rng in ADVERTISED.items():
        assert table[key] == rng


# -- kafka-python round trip -------------------------------------------------------------
def test_topic_admin_round_trip_kafka_python(samsa_broker: SamsaBroker, kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    topic = name()
    created = kadmin.create_topics({topic: {"num_partitions": 3, "replication_factor": 1,
                                            "configs": {"retention.ms": "3600000", "cleanup.policy": "delete",
                                                        "max.message.bytes": "200000"}}})
    (t,) = created["topics"]
    assert (t["name"], t["error_code"], t["error_message"]) == (topic, 0, None)
    assert (t["num_partitions"], t["replication_factor"]) == (3, 1)
    topic_id = uuid.UUID(str(t["topic_id"]))
    assert topic_id != ZERO_UUID
    assert set(t["configs"]) == EVERY_TOPIC_CONFIG
    assert t["configs"]["retention.ms"]["value"] == "3600000"
    assert t["configs"]["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert t["configs"]["segment.ms"] == {"value": "604800000", "read_only": False,
                                          "config_source": "DEFAULT_CONFIG", "is_sensitive": False}
    meta = topic_metadata(bootstrap, topic)
    assert (meta.error_code, meta.topic_id, len(meta.partitions)) == (0, topic_id, 3)

    # describe: overrides are TOPIC_CONFIG, everything else DEFAULT_CONFIG, every config listed
    desc = kadmin.describe_configs([ConfigResource("TOPIC", topic)], include_synonyms=True,
                                   config_filter="all")["topic"][topic]
    assert set(desc) == EVERY_TOPIC_CONFIG
    assert desc["retention.ms"] == {"value": "3600000", "read_only": False, "config_source": "DYNAMIC_TOPIC_CONFIG",
                                    "is_sensitive": False, "config_type": "LONG", "documentation": None,
                                    "synonyms": [{"name": "retention.ms", "value": "3600000",
                                                  "source": "DYNAMIC_TOPIC_CONFIG"}]}
    assert desc["cleanup.policy"]["synonyms"] == [
        {"name": "cleanup.policy", "value": "delete", "source": "DYNAMIC_TOPIC_CONFIG"},
        {"name": "log.cleanup.policy", "value": "delete", "source": "DEFAULT_CONFIG"}]
    assert desc["compression.type"] == {"value": "producer", "read_only": False, "config_source": "DEFAULT_CONFIG",
                                        "is_sensitive": False, "config_type": "STRING", "documentation": None,
                                        "synonyms": [{"name": "compression.type", "value": "producer",
                                                      "source": "DEFAULT_CONFIG"}]}
    assert desc["min.cleanable.dirty.ratio"]["value"] == "0.5"
    assert desc["min.cleanable.dirty.ratio"]["config_type"] == "DOUBLE"
    assert desc["unclean.leader.election.enable"]["value"] == "false"
    assert desc["unclean.leader.election.enable"]["config_type"] == "BOOLEAN"
    assert desc["max.message.bytes"]["config_type"] == "INT"
    assert desc["cleanup.policy"]["config_type"] == "LIST"
    modified = kadmin.describe_configs([ConfigResource("TOPIC", topic)])["topic"][topic]
    assert {k: v["value"] for k, v in modified.items()} == {"retention.ms": "3600000", "cleanup.policy": "delete",
                                                            "max.message.bytes": "200000"}

    # AlterConfigs replaces every override
    R = AlterConfigsRequest.AlterConfigsResource
    req = AlterConfigsRequest(resources=[R(resource_type=TOPIC, resource_name=topic, configs=[
        R.AlterableConfig(name="segment.ms", value="100000"),
        R.AlterableConfig(name="retention.ms", value="7200000")])], validate_only=False)
    with RawClient(bootstrap) as c:
        (r,) = c.call(req, AlterConfigsResponse, 2).responses
    assert (r.error_code, r.error_message, r.resource_type, r.resource_name) == (0, None, TOPIC, topic)
    modified = kadmin.describe_configs([ConfigResource("TOPIC", topic)])["topic"][topic]
    assert {k: v["value"] for k, v in modified.items()} == {"segment.ms": "100000", "retention.ms": "7200000"}

    # IncrementalAlterConfigs: SET, DELETE, APPEND on a list config
    assert kadmin.alter_configs([ConfigResource("TOPIC", topic, {
        "retention.ms": (AlterConfigOp.DELETE, None),
        "cleanup.policy": (AlterConfigOp.APPEND, "compact"),
        "max.message.bytes": (AlterConfigOp.SET, "300000")})]) == {"topic": {topic: "OK"}}
    modified = kadmin.describe_configs([ConfigResource("TOPIC", topic)])["topic"][topic]
    assert {k: v["value"] for k, v in modified.items()} == {"segment.ms": "100000", "cleanup.policy": "delete,compact",
                                                            "max.message.bytes": "300000"}
    assert kadmin.alter_configs([ConfigResource("TOPIC", topic, {
        "cleanup.policy": (AlterConfigOp.SUBTRACT, "compact")})]) == {"topic": {topic: "OK"}}
    desc = kadmin.describe_configs([ConfigResource("TOPIC", topic)], config_filter="all")["topic"][topic]
    assert (desc["cleanup.policy"]["value"], desc["cleanup.policy"]["config_source"]) == \
        ("delete", "DYNAMIC_TOPIC_CONFIG")
    assert (desc["retention.ms"]["value"], desc["retention.ms"]["config_source"]) == ("604800000", "DEFAULT_CONFIG")

    # CreatePartitions
    resp = kadmin.create_partitions({topic: 5})
    assert [(r.name, r.error_code, r.error_message) for r in resp.results] == [(topic, 0, None)]
    assert len(topic_metadata(bootstrap, topic).partitions) == 5

    # DeleteRecords, then a consumer starting at earliest begins at the new start offset
    produce(bootstrap, topic, 1, [b"v%d" % i for i in range(10)])
    result = kadmin.delete_records({TopicPartition(topic, 1): 4})
    assert result[TopicPartition(topic, 1)]["low_watermark"] == 4
    assert result[TopicPartition(topic, 1)]["error_code"] == 0
    assert consume_from_earliest(bootstrap, topic, 1, 6) == [(i, b"v%d" % i) for i in range(4, 10)]
    result = kadmin.delete_records({TopicPartition(topic, 1): -1})  # -1 = the high watermark
    assert result[TopicPartition(topic, 1)]["low_watermark"] == 10
    produce(bootstrap, topic, 1, [b"after"])  # the log carries on at the high watermark
    assert consume_from_earliest(bootstrap, topic, 1, 1) == [(10, b"after")]

    # delete by id, then by name
    other = name()
    other_id = uuid.UUID(str(kadmin.create_topics({other: {"num_partitions": 1}})["topics"][0]["topic_id"]))
    deleted = kadmin.delete_topics([other_id])
    assert [(d["name"], uuid.UUID(str(d["topic_id"])), d["error_code"]) for d in deleted["topics"]] == \
        [(other, other_id, 0)]
    deleted = kadmin.delete_topics([topic])
    assert [(d["name"], d["error_code"], d["error_message"]) for d in deleted["topics"]] == [(topic, 0, None)]
    assert topic_metadata(bootstrap, topic).error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert topic_metadata(bootstrap, other).error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert topic not in kadmin.list_topics() and other not in kadmin.list_topics()


def test_error_codes_kafka_python(samsa_broker: SamsaBroker, kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    topic = name()
    kadmin.create_topics({topic: {"num_partitions": 2}})
    with pytest.raises(TopicAlreadyExistsError):
        kadmin.create_topics({topic: {"num_partitions": 2}})
    res = kadmin.create_topics({topic: {}}, raise_errors=False)["topics"][0]
    assert (res["error_code"], res["error_message"]) == (TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.")
    with pytest.raises(InvalidReplicationFactorError):
        kadmin.create_topics({name(): {"num_partitions": 1, "replication_factor": 3}})
    res = kadmin.create_topics({name(): {"replication_factor": 3}}, raise_errors=False)["topics"][0]
    assert (res["error_code"], res["error_message"]) == (
        INVALID_REPLICATION_FACTOR, "Unable to replicate the partition 3 time(s): The target replication factor "
                                    "of 3 cannot be reached because only 1 broker(s) are registered.")
    with pytest.raises(InvalidConfigurationError):
        kadmin.create_topics({name(): {"configs": {"retention.ms": "soon"}}})
    bad = kadmin.create_topics({name(): {"configs": {"no.such.config": "1"}},
                                name("b"): {"configs": {"cleanup.policy": "shred"}},
                                name("c"): {"configs": {"retention.ms": "-5"}}}, raise_errors=False)["topics"]
    assert [(b["error_code"], b["error_message"]) for b in bad] == [
        (INVALID_CONFIG, "Unknown topic config name: no.such.config"),
        (INVALID_CONFIG, "Invalid value shred for configuration cleanup.policy: String must be one of: "
                         "compact, delete"),
        (INVALID_CONFIG, "Invalid value -5 for configuration retention.ms: Value must be at least -1")]
    with pytest.raises(InvalidPartitionsError):
        kadmin.create_partitions({topic: 2})
    res = kadmin.create_partitions({topic: 1}, raise_errors=False).results[0]
    assert (res.error_code, res.error_message) == (
        INVALID_PARTITIONS, f"The topic {topic} currently has 2 partition(s); 1 would not be an increase.")
    with pytest.raises(UnknownTopicOrPartitionError):
        kadmin.create_partitions({name(): 4})
    with pytest.raises(UnknownTopicOrPartitionError):
        kadmin.delete_topics([name()])
    with pytest.raises(UnknownTopicIdError):
        kadmin.delete_topics([uuid.uuid4()])
    with pytest.raises(OffsetOutOfRangeError):  # above the high watermark (0)
        kadmin.delete_records({TopicPartition(topic, 0): 5})
    # the topic is still intact after all of that
    assert len(topic_metadata(bootstrap, topic).partitions) == 2


def test_create_topics_protocol_details(samsa_broker: SamsaBroker) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    T = CreateTopicsRequest.CreatableTopic
    A = T.CreatableReplicaAssignment
    C = T.CreatableTopicConfig
    a, b, dup, manual = name("a"), name("b"), name("dup"), name("manual")
    req = CreateTopicsRequest(topics=[
        T(name=a, num_partitions=-1, replication_factor=-1, assignments=[], configs=[]),
        T(name="bad name!", num_partitions=1, replication_factor=1, assignments=[], configs=[]),
        T(name=dup, num_partitions=1, replication_factor=1, assignments=[], configs=[]),
        T(name=dup, num_partitions=1, replication_factor=1, assignments=[], configs=[]),
        T(name=b, num_partitions=0, replication_factor=1, assignments=[], configs=[]),
        T(name=name(), num_partitions=1, replication_factor=0, assignments=[], configs=[]),
        T(name=name(), num_partitions=1, replication_factor=1, assignments=[],
          configs=[C(name="retention.ms", value=None)]),
        T(name=manual, num_partitions=-1, replication_factor=-1,
          assignments=[A(partition_index=0, broker_ids=[1]), A(partition_index=1, broker_ids=[1])], configs=[]),
        T(name=name(), num_partitions=-1, replication_factor=-1,
          assignments=[A(partition_index=0, broker_ids=[2])], configs=[]),
        T(name=name(), num_partitions=-1, replication_factor=-1,
          assignments=[A(partition_index=1, broker_ids=[1])], configs=[]),
        T(name="__consumer_offsets", num_partitions=1, replication_factor=1, assignments=[], configs=[]),
    ], timeout_ms=10000, validate_only=False)
    with RawClient(bootstrap) as c:
        resp = c.call(req, CreateTopicsResponse, 7)
    got = [(t.name, t.error_code, t.error_message) for t in resp.topics]
    assert got[0] == (a, 0, None)
    assert got[1] == ("bad name!", INVALID_TOPIC, "Topic name \"bad name!\" is illegal, it contains a character "
                                                  "other than ASCII alphanumerics, '.', '_' and '-'")
    assert got[2] == (b, INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    assert got[3][1:] == (INVALID_REPLICATION_FACTOR,
                          "Replication factor must be larger than 0, or -1 to use the default value.")
    assert got[4][1:] == (INVALID_CONFIG, "Null value not supported for topic configs: retention.ms")
    assert got[5] == (manual, 0, None)
    assert got[6][1:] == (INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker 2, but no "
                                                      "such broker is registered.")
    assert got[7][1:] == (INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence")
    assert got[8][:2] == ("__consumer_offsets", INVALID_REQUEST)
    assert got[9] == (dup, INVALID_REQUEST, "Duplicate topic name.")
    assert len(got) == 10
    assert (resp.topics[0].num_partitions, resp.topics[0].replication_factor) == (1, 1)  # num.partitions default
    assert (resp.topics[1].topic_id or ZERO_UUID) == ZERO_UUID  # kafka-python decodes the zero id as None
    assert resp.topics[1].num_partitions == -1
    assert len(topic_metadata(bootstrap, manual).partitions) == 2
    assert topic_metadata(bootstrap, dup).error_code == UNKNOWN_TOPIC_OR_PARTITION

    # validate_only checks everything and creates nothing; v2 answers without configs
    vo = name("vo")
    req = CreateTopicsRequest(topics=[T(name=vo, num_partitions=4, replication_factor=1, assignments=[],
                                        configs=[C(name="segment.bytes", value="1048576")]),
                                      T(name=a, num_partitions=4, replication_factor=1, assignments=[], configs=[])],
                              timeout_ms=10000, validate_only=True)
    with RawClient(bootstrap) as c:
        r5 = c.call(req, CreateTopicsResponse, 5)
        r2 = c.call(req, CreateTopicsResponse, 2)
    assert [(t.name, t.error_code) for t in r5.topics] == [(vo, 0), (a, TOPIC_ALREADY_EXISTS)]
    assert (r5.topics[0].num_partitions, r5.topics[0].replication_factor) == (4, 1)
    cfg = {c.name: (c.value, c.config_source) for c in r5.topics[0].configs}
    assert cfg["segment.bytes"] == ("1048576", TOPIC_CONFIG)
    assert cfg["cleanup.policy"] == ("delete", DEFAULT_CONFIG)
    assert [(t.name, t.error_code) for t in r2.topics] == [(vo, 0), (a, TOPIC_ALREADY_EXISTS)]
    assert topic_metadata(bootstrap, vo).error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_delete_topics_protocol_details(samsa_broker: SamsaBroker, kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    a, b = name("a"), name("b")
    kadmin.create_topics({a: {"num_partitions": 1}, b: {"num_partitions": 1}})
    a_id = topic_metadata(bootstrap, a).topic_id
    S = DeleteTopicsRequest.DeleteTopicState
    missing_id = uuid.uuid4()
    req = DeleteTopicsRequest(topics=[S(name=None, topic_id=a_id), S(name=None, topic_id=missing_id),
                                      S(name="gone", topic_id=ZERO_UUID), S(name=b, topic_id=a_id)], timeout_ms=5000)
    with RawClient(bootstrap) as c:
        resp = c.call(req, DeleteTopicsResponse, 6)
    got = sorted(((r.name or "", r.topic_id or ZERO_UUID, r.error_code, r.error_message) for r in resp.responses),
                 key=str)
    assert got == sorted([
        (a, a_id, 0, None),
        ("", missing_id, UNKNOWN_TOPIC_ID, "This server does not host this topic ID."),
        ("gone", ZERO_UUID, UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."),
        (b, a_id, INVALID_REQUEST, "You may not specify both topic name and topic id."),
    ], key=str)
    # v1 names topics in topic_names
    with RawClient(bootstrap) as c:
        resp = c.call(DeleteTopicsRequest(topic_names=[b, "gone"], timeout_ms=5000), DeleteTopicsResponse, 1)
    assert [(r.name, r.error_code) for r in resp.responses] == [(b, 0), ("gone", UNKNOWN_TOPIC_OR_PARTITION)]
    assert topic_metadata(bootstrap, a).error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert topic_metadata(bootstrap, b).error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions_and_delete_records_protocol_details(samsa_broker: SamsaBroker,
                                                               kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    topic, compacted = name(), name("compact")
    kadmin.create_topics({topic: {"num_partitions": 1}, compacted: {"configs": {"cleanup.policy": "compact"}}})
    P = CreatePartitionsRequest.CreatePartitionsTopic
    req = CreatePartitionsRequest(topics=[P(name=topic, count=1, assignments=None),
                                          P(name=topic + "x", count=3, assignments=None)],
                                  timeout_ms=5000, validate_only=False)
    req_vo = CreatePartitionsRequest(topics=[P(name=topic, count=3, assignments=None)],
                                     timeout_ms=5000, validate_only=True)
    req_assign = CreatePartitionsRequest(topics=[P(name=topic, count=3, assignments=[
        P.CreatePartitionsAssignment(broker_ids=[1])])], timeout_ms=5000, validate_only=False)
    with RawClient(bootstrap) as c:
        r = c.call(req, CreatePartitionsResponse, 0)
        assert [(x.name, x.error_code, x.error_message) for x in r.results] == [
            (topic, INVALID_PARTITIONS, "Topic already has 1 partition(s)."),
            (topic + "x", UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")]
        r = c.call(req_vo, CreatePartitionsResponse, 3)
        assert [(x.name, x.error_code) for x in r.results] == [(topic, 0)]
        assert len(topic_metadata(bootstrap, topic).partitions) == 1  # validate_only changed nothing
        r = c.call(req_assign, CreatePartitionsResponse, 2)
        assert [(x.name, x.error_code, x.error_message) for x in r.results] == [
            (topic, INVALID_REPLICA_ASSIGNMENT, "Attempted to add 2 additional partition(s), but only 1 "
                                                "assignment(s) were specified.")]
    produce(bootstrap, topic, 0, [b"a", b"b", b"c"])
    produce(bootstrap, compacted, 0, [b"x"], key=b"k")  # compacted topics reject keyless records, as Kafka's do
    D = DeleteRecordsRequest.DeleteRecordsTopic
    DP = D.DeleteRecordsPartition
    req = DeleteRecordsRequest(topics=[
        D(name=topic, partitions=[DP(partition_index=0, offset=2), DP(partition_index=7, offset=0)]),
        D(name=compacted, partitions=[DP(partition_index=0, offset=1)]),
        D(name="nope", partitions=[DP(partition_index=0, offset=1)])], timeout_ms=5000)
    for version in (0, 1, 2):
        with RawClient(bootstrap) as c:
            r = c.call(req, DeleteRecordsResponse, version)
        got = [(t.name, p.partition_index, p.low_watermark, p.error_code) for t in r.topics for p in t.partitions]
        assert got == [(topic, 0, 2, 0), (topic, 7, -1, UNKNOWN_TOPIC_OR_PARTITION),
                       (compacted, 0, -1, POLICY_VIOLATION), ("nope", 0, -1, UNKNOWN_TOPIC_OR_PARTITION)]
    req = DeleteRecordsRequest(topics=[D(name=topic, partitions=[DP(partition_index=0, offset=4)])], timeout_ms=5000)
    with RawClient(bootstrap) as c:
        r = c.call(req, DeleteRecordsResponse, 2)  # above the high watermark: answered, not dropped
        assert [(p.low_watermark, p.error_code) for p in r.topics[0].partitions] == [(-1, OFFSET_OUT_OF_RANGE)]
        r = c.call(DeleteRecordsRequest(topics=[D(name=topic, partitions=[DP(partition_index=0, offset=1)])],
                                        timeout_ms=5000), DeleteRecordsResponse, 2)
        # below the current start: nothing changes, the start offset is answered
        assert [(p.low_watermark, p.error_code) for p in r.topics[0].partitions] == [(2, 0)]
    assert consume_from_earliest(bootstrap, topic, 0, 1) == [(2, b"c")]


# -- DescribeConfigs in detail ------------------------------------------------------------
def test_describe_configs_every_version(samsa_broker: SamsaBroker, kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    topic = name()
    kadmin.create_topics({topic: {"configs": {"segment.bytes": "1048576"}}})
    for version in (1, 2, 3, 4):
        res = describe_topic_raw(bootstrap, topic, version, synonyms=True, docs=True)
        assert (res.error_code, res.resource_type, res.resource_name) == (0, TOPIC, topic)
        cfg = by_name(res)
        assert set(cfg) == EVERY_TOPIC_CONFIG
        seg = cfg["segment.bytes"]
        assert (seg.value, seg.config_source, seg.read_only, seg.is_sensitive) == \
            ("1048576", TOPIC_CONFIG, False, False)
        assert [(s.name, s.value, s.source) for s in seg.synonyms] == [
            ("segment.bytes", "1048576", TOPIC_CONFIG), ("log.segment.bytes", "1073741824", DEFAULT_CONFIG)]
        ret = cfg["retention.ms"]
        # Kafka's quirk: log.retention.ms is unset, so the hours default is not a synonym
        assert (ret.value, ret.config_source, list(ret.synonyms)) == ("604800000", DEFAULT_CONFIG, [])
        if version >= 3:
            assert (seg.config_type, cfg["cleanup.policy"].config_type) == (INT, LIST)
            assert (cfg["preallocate"].config_type, cfg["message.timestamp.type"].config_type) == (BOOLEAN, STRING)
            assert cfg["min.cleanable.dirty.ratio"].config_type == DOUBLE
            assert all(c.documentation for c in res.configs)
    # configuration_keys filters; null and empty mean all; unknown keys are skipped
    res = describe_topic_raw(bootstrap, topic, 4, keys=["cleanup.policy", "retention.bytes", "nope"])
    assert [(c.name, c.value, c.config_source, list(c.synonyms), c.documentation) for c in res.configs] == [
        ("cleanup.policy", "delete", DEFAULT_CONFIG, [], None), ("retention.bytes", "-1", DEFAULT_CONFIG, [], None)]
    assert set(by_name(describe_topic_raw(bootstrap, topic, 4, keys=[]))) == EVERY_TOPIC_CONFIG
    # an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION in its own resource
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[R(resource_type=TOPIC, resource_name="missing", configuration_keys=None),
                                            R(resource_type=TOPIC, resource_name=topic, configuration_keys=None),
                                            R(resource_type=TOPIC, resource_name="bad/name", configuration_keys=None)],
                                 include_synonyms=False, include_documentation=False)
    for version in (1, 4):
        with RawClient(bootstrap) as c:
            r = c.call(req, DescribeConfigsResponse, version)
        assert [(x.resource_name, x.error_code, len(x.configs)) for x in r.results] == [
            ("missing", UNKNOWN_TOPIC_OR_PARTITION, 0), (topic, 0, len(EVERY_TOPIC_CONFIG)),
            ("bad/name", INVALID_TOPIC, 0)]


def test_describe_broker_configs(samsa_broker: SamsaBroker) -> None:
    R = DescribeConfigsRequest.DescribeConfigsResource
    req = DescribeConfigsRequest(resources=[
        R(resource_type=BROKER, resource_name="1", configuration_keys=None),
        R(resource_type=BROKER, resource_name="", configuration_keys=None),
        R(resource_type=BROKER, resource_name="7", configuration_keys=None),
        R(resource_type=BROKER_LOGGER, resource_name="1", configuration_keys=None)],
        include_synonyms=True, include_documentation=True)
    with RawClient(samsa_broker.bootstrap_servers) as c:
        broker, defaults, other, logger = c.call(req, DescribeConfigsResponse, 4).results
    assert (broker.error_code, broker.resource_type, broker.resource_name) == (0, BROKER, "1")
    cfg = by_name(broker)
    listeners = cfg["listeners"]
    expected = f"PLAINTEXT://{samsa_broker.bootstrap_servers}"
    # Kafka can change listeners dynamically (DynamicListenerConfig), so they are not read-only
    assert (listeners.value, listeners.config_source, listeners.config_type, listeners.read_only) == \
        (expected, STATIC_BROKER_CONFIG, LIST, False)
    assert (cfg["num.partitions"].read_only, cfg["log.retention.ms"].read_only) == (True, False)
    assert [(s.name, s.value, s.source) for s in listeners.synonyms] == [
        ("listeners", expected, STATIC_BROKER_CONFIG), ("listeners", "PLAINTEXT://:9092", DEFAULT_CONFIG)]
    num = cfg["num.partitions"]
    assert (num.value, num.config_source, num.config_type) == ("1", DEFAULT_CONFIG, INT)
    assert [(s.name, s.value, s.source) for s in num.synonyms] == [("num.partitions", "1", DEFAULT_CONFIG)]
    hours = cfg["log.retention.hours"]
    assert (hours.value, hours.config_source) == ("168", DEFAULT_CONFIG)
    ms = cfg["log.retention.ms"]
    assert (ms.value, ms.config_source, list(ms.synonyms), ms.config_type) == (None, DEFAULT_CONFIG, [], LONG)
    assert cfg["log.cleanup.policy"].value == "delete"
    # the cleaner's and Samsa's own properties are described too, with their defaults
    assert {n: (cfg[n].value, cfg[n].config_source, cfg[n].config_type) for n in (
        "log.cleaner.enable", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
        "transaction.state.log.segment.bytes", "samsa.fsync.on.acks.all")} == {
        "log.cleaner.enable": ("true", DEFAULT_CONFIG, BOOLEAN),
        "log.cleaner.backoff.ms": ("15000", DEFAULT_CONFIG, LONG),
        "log.cleaner.dedupe.buffer.size": ("134217728", DEFAULT_CONFIG, LONG),
        "transaction.state.log.segment.bytes": ("104857600", DEFAULT_CONFIG, INT),
        "samsa.fsync.on.acks.all": ("false", DEFAULT_CONFIG, BOOLEAN)}
    throttle = cfg["log.cleaner.io.max.bytes.per.second"]
    assert (throttle.value, throttle.config_type) == ("1.7976931348623157E308", DOUBLE)
    assert all(cfg[n].documentation for n in ("log.cleaner.enable", "samsa.log.max.open.segment.files"))
    # password-typed properties (ssl.keystore.password, ...) are sensitive and never shown, as in Kafka
    assert all(not c.is_sensitive for c in broker.configs if c.config_type != 9)
    assert all(c.value is None for c in broker.configs if c.config_type == 9)
    assert (defaults.error_code, list(defaults.configs)) == (0, [])
    assert (other.error_code, other.error_message) == (
        INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 7")
    assert logger.error_code == 0
    assert [(c.name, c.value) for c in logger.configs] == [("root", "INFO")]


def test_broker_properties_supply_topic_defaults(tmp_path: Path) -> None:
    """Broker properties set in the environment are STATIC_BROKER_CONFIG; topics inherit
    them; num.partitions and delete.topic.enable are honoured."""
    broker = SamsaBroker(tmp_path / "data", overrides={"log.retention.ms": "3600000", "num.partitions": "3",
                                                       "compression.type": "zstd", "delete.topic.enable": "false"})
    broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            topic = name()
            (t,) = admin.create_topics({topic: {}})["topics"]
            assert (t["error_code"], t["num_partitions"]) == (0, 3)
            assert t["configs"]["retention.ms"]["config_source"] == "STATIC_BROKER_CONFIG"
            assert t["configs"]["retention.ms"]["value"] == "3600000"
            cfg = by_name(describe_topic_raw(bootstrap, topic, 4, synonyms=True))
            ret = cfg["retention.ms"]
            assert (ret.value, ret.config_source) == ("3600000", STATIC_BROKER_CONFIG)
            assert [(s.name, s.value, s.source) for s in ret.synonyms] == [
                ("log.retention.ms", "3600000", STATIC_BROKER_CONFIG),
                ("log.retention.hours", "168", DEFAULT_CONFIG)]
            comp = cfg["compression.type"]
            assert (comp.value, comp.config_source) == ("zstd", STATIC_BROKER_CONFIG)
            with RawClient(bootstrap) as c:
                r = c.call(DeleteTopicsRequest(topics=[DeleteTopicsRequest.DeleteTopicState(name=topic)],
                                               timeout_ms=5000), DeleteTopicsResponse, 6)
                assert [(x.name, x.error_code) for x in r.responses] == [(topic, TOPIC_DELETION_DISABLED)]
                r = c.call(DeleteTopicsRequest(topic_names=[topic], timeout_ms=5000), DeleteTopicsResponse, 2)
                assert [(x.name, x.error_code) for x in r.responses] == [(topic, INVALID_REQUEST)]
            assert topic_metadata(bootstrap, topic).error_code == 0
        finally:
            admin.close()
    finally:
        broker.stop()


# -- altering configs ---------------------------------------------------------------------
def test_alter_configs_rules(samsa_broker: SamsaBroker, kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    topic = name()
    kadmin.create_topics({topic: {"configs": {"retention.ms": "1000"}}})
    I = IncrementalAlterConfigsRequest.AlterConfigsResource
    IC = I.AlterableConfig

    def incremental(rtype: int, rname: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False,
                    version: int = 1) -> tuple[int, str | None]:
        req = IncrementalAlterConfigsRequest(resources=[I(resource_type=rtype, resource_name=rname, configs=[
            IC(name=n, config_operation=op, value=v) for n, op, v in ops])], validate_only=validate_only)
        with RawClient(bootstrap) as c:
            (r,) = c.call(req, IncrementalAlterConfigsResponse, version).responses
        assert (r.resource_type, r.resource_name) == (rtype, rname)
        return r.error_code, r.error_message

    assert incremental(TOPIC, topic, [("segment.ms", 0, "60000")], validate_only=True) == (0, None)
    assert incremental(TOPIC, topic, [("retention.ms", 2, "5")]) == (
        INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.")
    assert incremental(TOPIC, topic, [("segment.ms", 0, "0")]) == (
        INVALID_CONFIG, "Invalid value 0 for configuration segment.ms: Value must be at least 1")
    assert incremental(TOPIC, topic, [("min.compaction.lag.ms", 0, "10"), ("max.compaction.lag.ms", 0, "5")]) == (
        INVALID_CONFIG, "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")
    assert incremental(TOPIC, topic, [("segment.ms", 0, None)]) == (
        INVALID_REQUEST, "Null value not supported for : segment.ms")
    assert incremental(TOPIC, "missing", [("segment.ms", 0, "1000")], version=0) == (
        UNKNOWN_TOPIC_OR_PARTITION, "The topic 'missing' does not exist.")
    # dynamic broker configs (tests/broker/test_dynamic_broker_configs.py): validate_only changes nothing
    assert incremental(BROKER, "1", [("log.retention.ms", 0, "1000")], validate_only=True) == (0, None)
    assert incremental(BROKER, "1", [("num.partitions", 0, "2")]) == (
        INVALID_REQUEST, "Cannot update these configs dynamically: Set(num.partitions)")
    # APPEND and SUBTRACT start from the default; a policy may not end up empty
    assert incremental(TOPIC, topic, [("cleanup.policy", 3, "delete")]) == (
        INVALID_CONFIG, "Invalid value  for configuration cleanup.policy: String must be one of: compact, delete")
    assert incremental(TOPIC, topic, [("cleanup.policy", 2, "compact,delete")]) == (0, None)
    cfg = by_name(describe_topic_raw(bootstrap, topic, 4, keys=["cleanup.policy", "retention.ms", "segment.ms"]))
    assert {n: (c.value, c.config_source) for n, c in cfg.items()} == {
        "cleanup.policy": ("delete,compact", TOPIC_CONFIG), "retention.ms": ("1000", TOPIC_CONFIG),
        "segment.ms": ("604800000", DEFAULT_CONFIG)}
    # legacy AlterConfigs: validate_only, invalid values, unknown topic, broker resources
    R = AlterConfigsRequest.AlterConfigsResource
    req = AlterConfigsRequest(resources=[
        R(resource_type=TOPIC, resource_name=topic, configs=[R.AlterableConfig(name="retention.ms", value="2000")]),
        R(resource_type=TOPIC, resource_name="missing", configs=[]),
        R(resource_type=BROKER, resource_name="1", configs=[R.AlterableConfig(name="num.partitions", value="2")])],
        validate_only=True)
    with RawClient(bootstrap) as c:
        r = c.call(req, AlterConfigsResponse, 0)
    assert [(x.resource_name, x.error_code) for x in r.responses] == [
        (topic, 0), ("missing", UNKNOWN_TOPIC_OR_PARTITION), ("1", INVALID_REQUEST)]
    assert by_name(describe_topic_raw(bootstrap, topic, 4, keys=["retention.ms"]))["retention.ms"].value == "1000"
    req = AlterConfigsRequest(resources=[R(resource_type=TOPIC, resource_name=topic, configs=[
        R.AlterableConfig(name="message.timestamp.type", value="WallClock")])], validate_only=False)
    with RawClient(bootstrap) as c:
        (x,) = c.call(req, AlterConfigsResponse, 1).responses
    assert (x.error_code, x.error_message) == (
        INVALID_CONFIG, "Invalid value WallClock for configuration message.timestamp.type: String must be one of: "
                        "CreateTime, LogAppendTime")


def test_config_changes_take_effect_on_live_partitions(samsa_broker: SamsaBroker, kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    topic = name()
    kadmin.create_topics({topic: {"num_partitions": 1}})
    produce(bootstrap, topic, 0, [b"x" * 5000])
    # a smaller max.message.bytes rejects the same record at once
    assert kadmin.alter_configs([ConfigResource("TOPIC", topic, {"max.message.bytes": "1000"})]) == \
        {"topic": {topic: "OK"}}
    p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 100000, "retries": 0})
    errors: list[Any] = []
    p.produce(topic, b"x" * 5000, partition=0, on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(15) == 0
    del p
    assert [e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]
    # LogAppendTime stamps what consumers read with the broker's clock
    assert kadmin.alter_configs([ConfigResource("TOPIC", topic, {
        "max.message.bytes": (AlterConfigOp.DELETE, None),
        "message.timestamp.type": "LogAppendTime"})]) == {"topic": {topic: "OK"}}
    before = int(time.time() * 1000)
    p2 = Producer({"bootstrap.servers": bootstrap})
    p2.produce(topic, b"late", partition=0, timestamp=1_000_000_000_000)
    assert p2.flush(15) == 0
    del p2
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10000)
    consumer.assign([TopicPartition(topic, 0)])
    msgs = []
    try:
        for m in consumer:
            msgs.append(m)
            if len(msgs) == 2:
                break
    finally:
        consumer.close()
    assert [m.value for m in msgs] == [b"x" * 5000, b"late"]
    assert msgs[1].timestamp_type == 1 and msgs[1].timestamp >= before - 1000


def test_configs_and_topic_ids_survive_restart(samsa_broker: SamsaBroker) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    topic = name()
    try:
        (t,) = admin.create_topics({topic: {"num_partitions": 2, "configs": {"retention.ms": "5000"}}})["topics"]
        topic_id = uuid.UUID(str(t["topic_id"]))
        admin.alter_configs([ConfigResource("TOPIC", topic, {"cleanup.policy": (AlterConfigOp.APPEND, "compact"),
                                                             "retention.ms": (AlterConfigOp.DELETE, None),
                                                             "segment.bytes": "2000000"})])
        admin.create_partitions({topic: 4})
    finally:
        admin.close()
    samsa_broker.restart()
    meta = topic_metadata(bootstrap, topic)
    assert (meta.error_code, meta.topic_id, len(meta.partitions)) == (0, topic_id, 4)
    cfg = by_name(describe_topic_raw(bootstrap, topic, 4))
    overrides = {n: c.value for n, c in cfg.items() if c.config_source == TOPIC_CONFIG}
    assert overrides == {"cleanup.policy": "delete,compact", "segment.bytes": "2000000"}
    samsa_broker.kill()
    samsa_broker.start()
    assert topic_metadata(bootstrap, topic).topic_id == topic_id
    cfg = by_name(describe_topic_raw(bootstrap, topic, 4))
    assert {n: c.value for n, c in cfg.items() if c.config_source == TOPIC_CONFIG} == overrides


# -- DescribeCluster ----------------------------------------------------------------------
def test_describe_cluster(samsa_broker: SamsaBroker, kadmin: KafkaAdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    host, _, port = bootstrap.rpartition(":")
    info = kadmin.describe_cluster()
    assert info["controller_id"] == 1
    assert info["brokers"] == [{"broker_id": 1, "host": host, "port": int(port), "rack": None, "is_fenced": False}]
    cluster_id = info["cluster_id"]
    assert len(cluster_id) == 22
    with RawClient(bootstrap) as c:
        for version in (0, 1, 2):
            r = c.call(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                              include_fenced_brokers=False), DescribeClusterResponse, version)
            assert (r.error_code, r.error_message, r.cluster_id, r.controller_id) == (0, None, cluster_id, 1)
            assert [(b.broker_id, b.host, b.port) for b in r.brokers] == [(1, host, int(port))]
            assert r.authorized_operations is None  # -2147483648 on the wire
        r = c.call(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=2,
                                          include_fenced_brokers=False), DescribeClusterResponse, 1)
        assert (r.error_code, r.brokers) == (MISMATCHED_ENDPOINT_TYPE, [])


# -- confluent-kafka (librdkafka) ----------------------------------------------------------
def _result(futures: dict, key: Any, timeout: float = 15) -> Any:
    return futures[key].result(timeout)


def _error_code(futures: dict, key: Any) -> int:
    with pytest.raises(KafkaException) as exc:
        _result(futures, key)
    return exc.value.args[0].code()


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_topic_admin_round_trip_confluent(samsa_broker: SamsaBroker, cadmin: AdminClient) -> None:
    bootstrap = samsa_broker.bootstrap_servers
    topic = name("c")
    futures = cadmin.create_topics([CNewTopic(topic, num_partitions=2, replication_factor=1,
                                              config={"retention.ms": "86400000", "cleanup.policy": "delete"})])
    assert _result(futures, topic) is None
    res = CResource(CResource.Type.TOPIC, topic)
    configs = _result(cadmin.describe_configs([res]), res)
    assert set(configs) == EVERY_TOPIC_CONFIG
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == \
        ("86400000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == \
        ("delete", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert (configs["segment.bytes"].value, configs["segment.bytes"].source) == \
        ("1073741824", ConfigSource.DEFAULT_CONFIG.value)
    assert configs["segment.bytes"].is_default and not configs["retention.ms"].is_default

    # incremental alter
    alter = CResource(CResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("segment.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    assert _result(cadmin.incremental_alter_configs([alter]), alter) is None
    configs = _result(cadmin.describe_configs([res]), res)
    assert {n: c.value for n, c in configs.items() if c.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value} == \
        {"cleanup.policy": "delete,compact", "segment.ms": "3600000"}
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == \
        ("604800000", ConfigSource.DEFAULT_CONFIG.value)

    # legacy alter replaces every override
    legacy = CResource(CResource.Type.TOPIC, topic, set_config={"retention.bytes": "1000000"})
    assert _result(cadmin.alter_configs([legacy]), legacy) is None
    configs = _result(cadmin.describe_configs([res]), res)
    assert {n: c.value for n, c in configs.items() if c.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value} == \
        {"retention.bytes": "1000000"}

    # partitions
    assert _result(cadmin.create_partitions([NewPartitions(topic, 4)]), topic) is None
    assert len(cadmin.list_topics(topic, timeout=10).topics[topic].partitions) == 4

    # delete records, then a consumer at earliest starts at the new low watermark
    produce(bootstrap, topic, 3, [b"r%d" % i for i in range(6)])
    tp = CTopicPartition(topic, 3, 2)
    deleted = _result(cadmin.delete_records([tp]), tp)
    assert deleted.low_watermark == 2
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": name("g"), "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.assign([CTopicPartition(topic, 3)])
        got = []
        deadline = time.monotonic() + 15
        while len(got) < 4 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append((m.offset(), m.value()))
        assert got == [(i, b"r%d" % i) for i in range(2, 6)]
    finally:
        consumer.close()

    # cluster
    cluster = cadmin.describe_cluster().result(15)
    host, _, port = bootstrap.rpartition(":")
    assert cluster.controller.id == 1
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(1, host, int(port))]

    # delete
    assert _result(cadmin.delete_topics([topic]), topic) is None
    assert topic_metadata(bootstrap, topic).error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_error_codes_confluent(samsa_broker: SamsaBroker, cadmin: AdminClient) -> None:
    topic = name("c")
    assert _result(cadmin.create_topics([CNewTopic(topic, num_partitions=2)]), topic) is None
    assert _error_code(cadmin.create_topics([CNewTopic(topic, num_partitions=2)]), topic) == \
        KafkaError.TOPIC_ALREADY_EXISTS
    other = name("c")
    assert _error_code(cadmin.create_topics([CNewTopic(other, 1, replication_factor=2)]), other) == \
        KafkaError.INVALID_REPLICATION_FACTOR
    assert _error_code(cadmin.create_topics([CNewTopic(other, 1, config={"retention.ms": "x"})]), other) == \
        KafkaError.INVALID_CONFIG
    assert _error_code(cadmin.create_topics([CNewTopic(other, 1, config={"bogus": "1"})]), other) == \
        KafkaError.INVALID_CONFIG
    assert _error_code(cadmin.create_partitions([NewPartitions(topic, 2)]), topic) == KafkaError.INVALID_PARTITIONS
    assert _error_code(cadmin.create_partitions([NewPartitions(topic, 1)]), topic) == KafkaError.INVALID_PARTITIONS
    missing = CResource(CResource.Type.TOPIC, "missing-topic")
    assert _error_code(cadmin.describe_configs([missing]), missing) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert _error_code(cadmin.delete_topics([other]), other) == KafkaError.UNKNOWN_TOPIC_OR_PART
    bad = CResource(CResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "-7", incremental_operation=AlterConfigOpType.SET)])
    assert _error_code(cadmin.incremental_alter_configs([bad]), bad) == KafkaError.INVALID_CONFIG
    # validate_only creates nothing
    vo = name("c")
    assert _result(cadmin.create_topics([CNewTopic(vo, 3)], validate_only=True), vo) is None
    assert vo not in cadmin.list_topics(timeout=10).topics


def test_internal_topics_are_protected(tmp_path: Path) -> None:
    """The broker lays out __consumer_offsets itself: clients may not create, delete, grow
    or truncate it; its fixed settings show as topic overrides, as in Kafka."""
    broker = SamsaBroker(tmp_path / "data", overrides={"offsets.topic.num.partitions": "2"})
    broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        offsets = "__consumer_offsets"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            (r,) = admin.create_topics({offsets: {"num_partitions": 1}}, raise_errors=False)["topics"]
            assert r["error_code"] == INVALID_REQUEST
            admin.describe_groups(["some-group"])  # finding a coordinator creates the topic
            meta = topic_metadata(bootstrap, offsets)
            assert (meta.error_code, meta.is_internal, len(meta.partitions)) == (0, True, 2)
            (r,) = admin.create_topics({offsets: {"num_partitions": 1}}, raise_errors=False)["topics"]
            assert r["error_code"] == TOPIC_ALREADY_EXISTS
            cfg = by_name(describe_topic_raw(bootstrap, offsets, 4, keys=["cleanup.policy", "segment.bytes"]))
            assert {n: (c.value, c.config_source) for n, c in cfg.items()} == {
                "cleanup.policy": ("compact", TOPIC_CONFIG), "segment.bytes": ("104857600", TOPIC_CONFIG)}
            deleted = admin.delete_topics([offsets], raise_errors=False)["topics"]
            assert [(d["name"], d["error_code"]) for d in deleted] == [(offsets, INVALID_TOPIC)]
            resp = admin.create_partitions({offsets: 4}, raise_errors=False)
            assert [(x.name, x.error_code) for x in resp.results] == [(offsets, INVALID_REQUEST)]
            D = DeleteRecordsRequest.DeleteRecordsTopic
            req = DeleteRecordsRequest(topics=[D(name=offsets, partitions=[
                D.DeleteRecordsPartition(partition_index=0, offset=-1)])], timeout_ms=5000)
            with RawClient(bootstrap) as c:
                r2 = c.call(req, DeleteRecordsResponse, 2)
            assert [(p.low_watermark, p.error_code) for p in r2.topics[0].partitions] == [(-1, INVALID_TOPIC)]
            assert len(topic_metadata(bootstrap, offsets).partitions) == 2
        finally:
            admin.close()
    finally:
        broker.stop()
