"""decode_request refuses a request with a null where its version's schema allows none (Kafka's
"non-nullable field X was serialized as null"), naming the field, and still takes every null the
schema does allow. The requests are real encodings by kafka-python's classes, which write None
as the wire's null (-1, or 0 in compact form)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.schemas.fields.struct import StructField

from protocol.decode_checks import MalformedRequest, compile_null_check
from protocol.messages import REQUESTS, decode_request

PRODUCE, FETCH, METADATA, OFFSET_COMMIT, JOIN_GROUP, DESCRIBE_GROUPS, DESCRIBE_TOPIC_PARTITIONS = 0, 1, 3, 8, 11, 15, 75

Produce, Fetch, Metadata = REQUESTS[PRODUCE], REQUESTS[FETCH], REQUESTS[METADATA]
OffsetCommit, JoinGroup = REQUESTS[OFFSET_COMMIT], REQUESTS[JOIN_GROUP]


def encoded(key: int, version: int, **fields: Any) -> bytes:
    request = REQUESTS[key](**fields)
    request.with_header(correlation_id=7, client_id="tests")
    return bytes(request.encode(version=version, header=True))


def decode(key: int, version: int, **fields: Any) -> Any:
    return decode_request(REQUESTS[key], encoded(key, version, **fields), version)


def refused(key: int, version: int, **fields: Any) -> str:
    with pytest.raises(MalformedRequest) as info:
        decode(key, version, **fields)
    return str(info.value)


# --- OffsetCommit: compact (v8+) and not (v2-v7) -------------------------------------------------

def offset_commit(version: int, topics: Any) -> dict[str, Any]:
    return dict(group_id="g", generation_id_or_member_epoch=1, member_id="m", group_instance_id=None,
                retention_time_ms=-1, topics=topics)


def commit_topic(partitions: Any) -> Any:
    T = OffsetCommit.OffsetCommitRequestTopic
    return T(name="t", partitions=partitions)


def commit_partition() -> Any:
    P = OffsetCommit.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    return P(partition_index=0, committed_offset=5, committed_leader_epoch=-1, committed_metadata=None)


@pytest.mark.parametrize("version", [2, 7, 8, 9])
def test_offset_commit_null_topics_or_partitions_is_refused(version: int) -> None:
    msg = refused(OFFSET_COMMIT, version, **offset_commit(version, None))
    assert msg == f"OffsetCommitRequest v{version}: non-nullable field Topics is null"
    msg = refused(OFFSET_COMMIT, version, **offset_commit(version, [commit_topic(None)]))
    assert msg == f"OffsetCommitRequest v{version}: non-nullable field Topics[].Partitions is null"


@pytest.mark.parametrize("version", [2, 8])
def test_offset_commit_with_its_nullable_fields_null_decodes(version: int) -> None:
    """committed_metadata and group_instance_id (v7+) are nullable: those nulls are the client's right."""
    req = decode(OFFSET_COMMIT, version, **offset_commit(version, [commit_topic([commit_partition()])]))
    assert req.topics[0].partitions[0].committed_offset == 5
    assert req.topics[0].partitions[0].committed_metadata is None


@pytest.mark.parametrize("version", [7, 8])
def test_offset_commit_null_group_id_is_refused(version: int) -> None:
    fields = offset_commit(version, [])
    fields["group_id"] = None
    assert refused(OFFSET_COMMIT, version, **fields).endswith("non-nullable field GroupId is null")


# --- Fetch --------------------------------------------------------------------------------------

def fetch(version: int, topics: Any = (), forgotten: Any = (), rack_id: Any = "") -> dict[str, Any]:
    return dict(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
                session_epoch=-1, topics=None if topics is None else list(topics),
                forgotten_topics_data=None if forgotten is None else list(forgotten), rack_id=rack_id)


def fetch_topic(partitions: Any) -> Any:
    return Fetch.FetchTopic(topic="t", partitions=partitions)


@pytest.mark.parametrize("version", [4, 11, 12, 13])
def test_fetch_nulls_are_refused_naming_the_field(version: int) -> None:
    assert refused(FETCH, version, **fetch(version, topics=None)).endswith("non-nullable field Topics is null")
    assert refused(FETCH, version, **fetch(version, topics=[fetch_topic(None)])).endswith(
        "non-nullable field Topics[].Partitions is null")
    if version >= 7:
        assert refused(FETCH, version, **fetch(version, forgotten=None)).endswith(
            "non-nullable field ForgottenTopicsData is null")
    if version >= 11:
        assert refused(FETCH, version, **fetch(version, rack_id=None)).endswith("non-nullable field RackId is null")


def test_fetch_well_formed_decodes() -> None:
    FP = Fetch.FetchTopic.FetchPartition
    part = FP(partition=3, current_leader_epoch=-1, fetch_offset=10, log_start_offset=-1, partition_max_bytes=100)
    req = decode(FETCH, 12, **fetch(12, topics=[fetch_topic([part])]))
    assert (req.topics[0].topic, req.topics[0].partitions[0].fetch_offset) == ("t", 10)


# --- Produce: records are nullable, the arrays and names are not -------------------------------

def produce_topic(name: Any = "t", partitions: Any = None, records: Any = b"") -> Any:
    TD = Produce.TopicProduceData
    if partitions is None:
        partitions = [TD.PartitionProduceData(index=0, records=records)]
    return TD(name=name, partition_data=partitions)


@pytest.mark.parametrize("version", [3, 8, 9, 12])
def test_produce_nulls(version: int) -> None:
    def produce(topic_data: Any) -> dict[str, Any]:
        return dict(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=topic_data)

    assert refused(PRODUCE, version, **produce(None)).endswith("non-nullable field TopicData is null")
    assert refused(PRODUCE, version, **produce([produce_topic(name=None)])).endswith(
        "non-nullable field TopicData[].Name is null")
    # Null records are Kafka's to judge (a per-partition error), not a malformed request.
    req = decode(PRODUCE, version, **produce([produce_topic(records=None)]))
    assert req.topic_data[0].partition_data[0].records is None


# --- JoinGroup: strings, bytes, and an array of structs ------------------------------------------

def join_group(**over: Any) -> dict[str, Any]:
    P = JoinGroup.JoinGroupRequestProtocol
    fields: dict[str, Any] = dict(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                                  group_instance_id=None, protocol_type="consumer",
                                  protocols=[P(name="range", metadata=b"\x00\x01")], reason=None)
    fields.update(over)
    return fields


@pytest.mark.parametrize("version", [0, 5, 6, 9])
def test_join_group_nulls(version: int) -> None:
    P = JoinGroup.JoinGroupRequestProtocol
    assert refused(JOIN_GROUP, version, **join_group(protocols=None)).endswith("non-nullable field Protocols is null")
    assert refused(JOIN_GROUP, version, **join_group(protocol_type=None)).endswith(
        "non-nullable field ProtocolType is null")
    assert refused(JOIN_GROUP, version, **join_group(protocols=[P(name="range", metadata=None)])).endswith(
        "non-nullable field Protocols[].Metadata is null")
    req = decode(JOIN_GROUP, version, **join_group())
    assert [p.name for p in req.protocols] == ["range"]


# --- Metadata: topics IS nullable from v1 ("all topics"), never in v0 ---------------------------

@pytest.mark.parametrize("version", [1, 4, 9, 12])
def test_metadata_null_topics_means_all_topics_and_decodes(version: int) -> None:
    req = decode(METADATA, version, topics=None, allow_auto_topic_creation=False)
    assert req.topics is None


def test_metadata_v0_null_topics_is_refused() -> None:
    """kafka-python writes v0's None as an empty array (v0 had no "all topics" null), so the null
    (count -1) is written by hand in place of its empty array's count."""
    frame = encoded(METADATA, 0, topics=[])
    assert frame.endswith(b"\x00\x00\x00\x00")
    with pytest.raises(MalformedRequest, match="^MetadataRequest v0: non-nullable field Topics is null$"):
        decode_request(Metadata, frame[:-4] + b"\xff\xff\xff\xff", 0)


def test_metadata_topic_name_nullable_from_v10() -> None:
    T = Metadata.MetadataRequestTopic
    assert refused(METADATA, 9, topics=[T(name=None)], allow_auto_topic_creation=False).endswith(
        "non-nullable field Topics[].Name is null")
    req = decode(METADATA, 12, topics=[T(name=None, topic_id=None)], allow_auto_topic_creation=False)
    assert req.topics[0].name is None


# --- An array of strings: its elements are never nullable ---------------------------------------

@pytest.mark.parametrize("version", [0, 5])
def test_null_element_of_a_string_array_is_refused(version: int) -> None:
    assert refused(DESCRIBE_GROUPS, version, groups=["g", None], include_authorized_operations=False).endswith(
        "non-nullable field Groups[] is null")
    assert decode(DESCRIBE_GROUPS, version, groups=["g"], include_authorized_operations=False).groups == ["g"]


# --- A nullable struct: null itself is fine, a null inside it is not ----------------------------

def test_nullable_struct_is_checked_inside_only_when_present() -> None:
    D = REQUESTS[DESCRIBE_TOPIC_PARTITIONS]
    T = D.TopicRequest
    req = decode(DESCRIBE_TOPIC_PARTITIONS, 0, topics=[T(name="t")], response_partition_limit=10, cursor=None)
    assert req.cursor is None
    cursor = D.Cursor(topic_name=None, partition_index=0)
    assert refused(DESCRIBE_TOPIC_PARTITIONS, 0, topics=[T(name="t")], response_partition_limit=10,
                   cursor=cursor).endswith("non-nullable field Cursor.TopicName is null")


# --- Every API and version: a well-formed request is never refused -------------------------------

def test_every_request_version_with_schema_defaults_decodes() -> None:
    """No false refusals: each request class at each version, filled with its schema's defaults
    (null only where the schema says so), passes."""
    count = 0
    for cls in REQUESTS.values():
        for version in range(cls.max_version + 1):
            request = cls(version=version)
            request.with_header(correlation_id=1, client_id="tests")
            decode_request(cls, bytes(request.encode(version=version, header=True)), version)
            count += 1
    assert count > 200


# --- A tagged field: tested only when its tag was sent -------------------------------------------

def test_tagged_field_is_tested_only_when_its_tag_was_sent() -> None:
    """No request Kafka defines today has a tagged field that is non-nullable and could decode as
    null, so this uses a schema of its own: an absent tag takes its default (here null) and passes."""
    schema = StructField({
        "name": "ProbeRequest", "type": "request", "validVersions": "0", "flexibleVersions": "0+",
        "fields": [{"name": "Names", "type": "[]string", "versions": "0+", "tag": 0, "taggedVersions": "0+",
                    "default": "null"}],
    })
    check = compile_null_check(type("ProbeRequest", (), {"_struct": schema}), 0)
    assert check is not None
    check(SimpleNamespace(names=None, tags=None))  # absent: the default
    check(SimpleNamespace(names=["a"], tags={"names"}))
    with pytest.raises(MalformedRequest, match="non-nullable field Names is null"):
        check(SimpleNamespace(names=None, tags={"names"}))
    with pytest.raises(MalformedRequest, match=r"non-nullable field Names\[\] is null"):
        check(SimpleNamespace(names=[None], tags={"names"}))


def test_refusal_is_a_value_error_like_other_decode_failures() -> None:
    """The network layer turns any decode failure into a closed connection; this is one."""
    assert issubclass(MalformedRequest, ValueError)
