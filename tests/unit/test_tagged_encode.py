"""encode_response skips kafka-python's generic tagged-fields step for structs without tagged
fields (protocol/tagged_encode.py): the frames must be byte for byte kafka-python's own."""
from __future__ import annotations

from typing import Any

import pytest

from protocol.messages import INDEX, RESPONSES, encode_response
from protocol.tagged_encode import NO_TAGGED_FIELDS, without_empty_tagged_fields
from tests.support.wire import kafka_python_frame as _kafka_python


# every response class and version with default fields: tests/unit/test_request_path_codecs.py


def _offset_commit(version: int) -> Any:
    R = RESPONSES[8]
    T = R.OffsetCommitResponseTopic
    return R(version=version, throttle_time_ms=3, topics=[
        T(name="t", partitions=[T.OffsetCommitResponsePartition(partition_index=i, error_code=i % 2)
                                for i in range(3)]),
        T(name="u", partitions=[])])


def _produce(version: int) -> Any:
    R = RESPONSES[0]
    T = R.TopicProduceResponse
    P = T.PartitionProduceResponse
    parts = [P(index=0, error_code=0, base_offset=41, log_append_time_ms=-1, log_start_offset=0),
             P(index=1, error_code=6, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
               current_leader=P.LeaderIdAndEpoch(leader_id=2, leader_epoch=7))]
    return R(version=version, responses=[T(name="t", partition_responses=parts)], throttle_time_ms=0)


def _fetch(version: int) -> Any:
    R = RESPONSES[1]
    T = R.FetchableTopicResponse
    P = T.PartitionData
    parts = [P(partition_index=0, error_code=0, high_watermark=5, last_stable_offset=5, log_start_offset=0,
               aborted_transactions=[], preferred_read_replica=-1, records=b"x" * 10),
             P(partition_index=1, error_code=0, high_watermark=5, last_stable_offset=5, log_start_offset=0,
               diverging_epoch=P.EpochEndOffset(epoch=3, end_offset=4), aborted_transactions=None,
               preferred_read_replica=-1, records=None)]
    return R(version=version, throttle_time_ms=0, error_code=0, session_id=9, responses=[
        T(topic="t", partitions=parts)])


@pytest.mark.parametrize("build,versions", [(_offset_commit, range(2, 10)), (_produce, range(3, 12)),
                                            (_fetch, range(12, 17))])
def test_nested_responses_with_and_without_tags(build: Any, versions: range) -> None:
    for version in versions:
        cls = type(build(version))
        if version > cls.max_version:
            continue
        assert bytes(encode_response(build(version), 5)) == _kafka_python(build(version), 5), version


def test_only_field_less_tagged_fields_are_replaced() -> None:
    cls = RESPONSES[0]
    encode = cls._struct.compiled_encode_into(10, compact=True, tagged=True)
    fast = without_empty_tagged_fields(encode)
    assert fast is not encode and fast.__code__ is encode.__code__
    kept = {k: v for k, v in fast.__globals__.items() if k.startswith("_tf")}
    assert NO_TAGGED_FIELDS in kept.values()
    assert any(v is not NO_TAGGED_FIELDS and v._names for v in kept.values())   # current_leader, node_endpoints
    assert NO_TAGGED_FIELDS not in encode.__globals__.values()                # kafka-python's own left alone
