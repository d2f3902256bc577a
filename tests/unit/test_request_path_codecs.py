"""decode_request/encode_response decide their path once per (class, version) and write a response
header's bytes themselves (protocol/messages.py): the frames and objects must stay kafka-python's."""
from __future__ import annotations

from typing import Any

import pytest

from protocol.messages import INDEX, REQUESTS, RESPONSES, _codecs, decode_request, encode_response
from tests.support.wire import kafka_python_frame as _kafka_python


@pytest.mark.parametrize("key", sorted(INDEX))
def test_response_headers_are_written_as_kafka_python_encodes_them(key: int) -> None:
    cls = RESPONSES[key]
    for version in range(cls.min_version, cls.max_version + 1):
        assert _codecs(cls, version).header_bytes, (cls.__name__, version)   # the shortcut is taken
        for correlation_id in (0, 1, -1, 2**31 - 1, -2**31, 0x7F00FF01):
            expected = _kafka_python(cls(version=version), correlation_id)
            assert bytes(encode_response(cls(version=version), correlation_id)) == expected, \
                (cls.__name__, version, correlation_id)


def test_a_version_pinned_or_out_of_range_message_takes_kafka_pythons_path() -> None:
    cls = RESPONSES[8]
    pinned = cls[9](throttle_time_ms=1, topics=[])
    assert bytes(encode_response(pinned, 7)) == _kafka_python(cls[9](throttle_time_ms=1, topics=[]), 7)


def test_requests_decode_as_kafka_python_decodes_them_at_every_version() -> None:
    for key in sorted(INDEX):
        cls = REQUESTS[key]
        for version in range(cls.min_version, cls.max_version + 1):
            request = cls(version=version)
            request.with_header(correlation_id=3, client_id="c")
            try:
                frame = bytes(request.encode(header=True, framed=False))
                expected = cls.decode(frame, version=version, header=True)
            except Exception:   # a default object that is no valid request at this version
                continue
            try:
                got = decode_request(cls, frame, version)
            except ValueError:   # refused by the null checks (protocol/decode_checks.py)
                continue
            assert got == expected and got.header == expected.header, (cls.__name__, version)
            assert decode_request(cls, frame, version) == expected   # the cached decision again
