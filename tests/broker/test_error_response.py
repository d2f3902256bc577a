"""protocol/error_response.py: the error answer built from any request's shape (fault injection's
``fail``) carries the error in every error field, one item per request item with its keys, and
encodes and decodes with kafka-python's classes."""
from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.api_key import ApiKey

from protocol.error_response import error_response, is_error_field
from protocol.messages import REQUESTS, RESPONSES

TOPIC_ID = uuid.uuid4()
CASES: list[tuple[str, int, dict[str, Any], Any]] = [
    ("Produce", 9, dict(transactional_id=None, acks=-1, timeout_ms=100, topic_data=[
        dict(name="t", partition_data=[dict(index=0, records=b""), dict(index=2, records=b"")])]),
     lambda r: [(t.name, [p.index for p in t.partition_responses]) for t in r.responses] == [("t", [0, 2])]),
    ("Fetch", 12, dict(replica_id=-1, max_wait_ms=1, min_bytes=1, max_bytes=1, isolation_level=0, session_id=0,
                       session_epoch=-1, topics=[dict(topic="t", partitions=[dict(partition=3, fetch_offset=0,
                       partition_max_bytes=1)])], forgotten_topics_data=[], rack_id=""),
     lambda r: [(t.topic, [p.partition_index for p in t.partitions]) for t in r.responses] == [("t", [3])]),
    ("Fetch", 15, dict(max_wait_ms=1, min_bytes=1, max_bytes=1, isolation_level=0, session_id=0, session_epoch=-1,
                       topics=[dict(topic_id=TOPIC_ID, partitions=[dict(partition=1, fetch_offset=0,
                       partition_max_bytes=1)])], forgotten_topics_data=[], rack_id=""),
     lambda r: [(t.topic_id, [p.partition_index for p in t.partitions]) for t in r.responses] == [(TOPIC_ID, [1])]),
    ("JoinGroup", 5, dict(group_id="g", session_timeout_ms=1, rebalance_timeout_ms=1, member_id="",
                          group_instance_id=None, protocol_type="consumer", protocols=[dict(name="range", metadata=b"x")]),
     lambda r: r.members == [] and r.generation_id == -1),
    ("FindCoordinator", 4, dict(key_type=0, coordinator_keys=["g1", "g2"]),
     lambda r: [c.key for c in r.coordinators] == ["g1", "g2"]),
    ("FindCoordinator", 2, dict(key="g", key_type=0), lambda r: True),
    ("AddPartitionsToTxn", 3, dict(v3_and_below_transactional_id="x", v3_and_below_producer_id=1,
                                   v3_and_below_producer_epoch=0, v3_and_below_topics=[dict(name="t", partitions=[0, 1])]),
     lambda r: [(t.name, [p.partition_index for p in t.results_by_partition])
                for t in r.results_by_topic_v3_and_below] == [("t", [0, 1])]),
    ("OffsetFetch", 8, dict(groups=[dict(group_id="g", topics=[dict(name="t", partition_indexes=[0, 5])])],
                            require_stable=False),
     lambda r: [(g.group_id, [(t.name, [p.partition_index for p in t.partitions]) for t in g.topics])
                for g in r.groups] == [("g", [("t", [0, 5])])]),
    ("DescribeGroups", 5, dict(groups=["a", "b"], include_authorized_operations=False),
     lambda r: [g.group_id for g in r.groups] == ["a", "b"]),
    ("ListOffsets", 7, dict(replica_id=-1, isolation_level=0, topics=[dict(name="t", partitions=[
        dict(partition_index=4, current_leader_epoch=-1, timestamp=-1)])]),
     lambda r: [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics] == [("t", [4])]),
    ("EndTxn", 3, dict(transactional_id="x", producer_id=1, producer_epoch=0, committed=True), lambda r: True),
]


def build(struct: Any, version: int, values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, val in values.items():
        f = struct.fields[key]
        out[key] = [f.data_class(version=version, **build(f, version, x)) for x in val] if f.is_struct_array() else val
    return out


def error_codes(struct: Any, obj: Any, version: int) -> list[int]:
    codes = []
    for f in struct.fields.values():
        if not f.for_version_q(version) or f.tagged_field_q(version):
            continue
        if is_error_field(f.name):
            codes.append(getattr(obj, f.name))
        elif f.is_struct_array():
            for item in getattr(obj, f.name) or []:
                codes.extend(error_codes(f, item, version))
    return codes


@pytest.mark.parametrize("api, version, fields, keys", CASES, ids=[f"{c[0]}-v{c[1]}" for c in CASES])
def test_error_answer_mirrors_the_request(api: str, version: int, fields: dict, keys: Any) -> None:
    req_cls, resp_cls = REQUESTS[ApiKey[api]], RESPONSES[ApiKey[api]]
    request = req_cls(version=version, **build(req_cls._struct, version, fields))
    request = req_cls.decode(request.encode(version=version), version=version)
    answer = error_response(resp_cls, request, version, 6, "injected")
    decoded = resp_cls.decode(answer.encode(version=version), version=version)
    codes = error_codes(resp_cls._struct, decoded, version)
    assert codes and set(codes) == {6}
    assert keys(decoded)


def _fetch_v16_fields() -> dict[str, Any]:
    cls = REQUESTS[ApiKey.Fetch]
    return build(cls._struct, 16, dict(
        max_wait_ms=0, min_bytes=1, max_bytes=1024, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[dict(topic_id=TOPIC_ID, partitions=[dict(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                         last_fetched_epoch=-1, log_start_offset=-1,
                                                         partition_max_bytes=1024)])],
        forgotten_topics_data=[], rack_id=""))


def test_fetch_error_answers_carry_empty_records_not_null() -> None:
    """Kafka answers a failed partition with empty records; librdkafka cannot parse null ones (v16)."""
    req = REQUESTS[ApiKey.Fetch](version=16, **_fetch_v16_fields())
    resp = error_response(RESPONSES[ApiKey.Fetch], req, 16, 6)
    decoded = RESPONSES[ApiKey.Fetch].decode(bytes(resp.encode(version=16)), version=16)
    assert [(p.error_code, p.records) for t in decoded.responses for p in t.partitions] == [(6, b"")]


def test_fetch_of_an_unknown_topic_id_answers_empty_records(samsa_broker) -> None:
    from tests.support.rawclient import RawClient

    with RawClient(samsa_broker.bootstrap_servers) as c:
        r = c.request(ApiKey.Fetch, 16, **_fetch_v16_fields())
    assert [(p.error_code, p.records) for t in r.responses for p in t.partitions] == [(100, b"")]
