"""A request with a null where its schema forbids one is refused where it is decoded: the broker
closes that connection as Kafka does (a request it cannot read), logs one warning naming the
field, never an error with a traceback from deep in a handler, and keeps serving."""
from __future__ import annotations

import struct
from typing import Any

import pytest

from broker.testing import SamsaBroker
from protocol.messages import REQUESTS
from tests.support.rawclient import RawClient

FETCH, OFFSET_COMMIT, JOIN_GROUP, METADATA, API_VERSIONS = 1, 8, 11, 3, 18

Fetch = REQUESTS[FETCH]


def frame(key: int, version: int, **fields: Any) -> bytes:
    request = REQUESTS[key](**fields)
    request.with_header(correlation_id=1, client_id="malformed")
    body = bytes(request.encode(version=version, header=True))
    return struct.pack(">i", len(body)) + body


# Nulls the 6,000-request fuzzing run got through to handlers, as real encoded requests.
MALFORMED = {
    "OffsetCommit v8, Topics null": (
        frame(OFFSET_COMMIT, 8, group_id="g", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
              topics=None), "OffsetCommitRequest v8: non-nullable field Topics is null"),
    "Fetch v12, Topics[].Partitions null": (
        frame(FETCH, 12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
              session_id=0, session_epoch=-1, topics=[Fetch.FetchTopic(topic="t", partitions=None)],
              forgotten_topics_data=[], rack_id=""), "FetchRequest v12: non-nullable field Topics[].Partitions is null"),
    "JoinGroup v5, Protocols null": (
        frame(JOIN_GROUP, 5, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
              group_instance_id=None, protocol_type="consumer", protocols=None),
        "JoinGroupRequest v5: non-nullable field Protocols is null"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_null_where_schema_forbids_closes_connection_without_a_traceback(samsa_broker: SamsaBroker, case: str) -> None:
    payload, reason = MALFORMED[case]
    with RawClient(samsa_broker.bootstrap_servers) as bad:
        bad.send_raw(payload)
        assert bad.is_closed()
    with RawClient(samsa_broker.bootstrap_servers) as good:
        assert good.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1").error_code == 0
        # a null the schema allows (Metadata v1+: all topics) is still answered
        assert good.request(METADATA, 9, topics=None, allow_auto_topic_creation=False).brokers
    log = samsa_broker.read_log()
    assert reason in log
    assert "Traceback" not in log
    assert "request failed" not in log
    assert "NoneType" not in log
