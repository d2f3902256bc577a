"""The ApiVersions answer to a request newer than advertised (KIP-511): v0, UNSUPPORTED_VERSION and
the full table, so clients can downgrade. Sans-IO; used by dispatch (before any handler runs) and by
broker/apis/api_versions.py, which registers into dispatch and so cannot be imported by it.

Every client connection opens with ApiVersions, and its answer depends on nothing in the request
but the version (and on the broker's table and features, fixed while it runs): it is encoded once
per such key and then only its correlation id is written into a copy (``with_correlation_id``).
Encoding the ~80 ApiVersion entries with kafka-python's classes cost ~500 µs per request."""
from __future__ import annotations

import struct
from typing import Any

from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED
from protocol.errors import ErrorCode
from protocol.kafka_import import import_submodule_alone

# not the whole metadata family (Metadata, FindCoordinator) at start-up: the lobby's module alone
ApiVersionsResponse: Any = import_submodule_alone("kafka.protocol.metadata.api_versions").ApiVersionsResponse

Table = dict[ApiKey, tuple[int, int]]

_CORRELATION_ID = struct.Struct(">i")
# the frame's size (4 bytes), then the response header: ApiVersions' header is v0 in every version
# (never flexible, so clients can read it before they know the broker's versions), the correlation id alone
_CORRELATION_ID_AT = 4
# answers kept per key; the keys are a few (version, table, features) combinations, but tests start many
# brokers, each emulating Kafka with its own table: past this many the cache starts afresh
CACHE_LIMIT = 64


def api_keys(table: Table = SUPPORTED) -> list[Any]:
    """The table as ApiVersionsResponse.ApiVersion items (kafka-python data classes), by API key."""
    return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(table.items())]


def with_correlation_id(frame: bytes, correlation_id: int) -> bytes:
    """A copy of an encoded ApiVersions response ``frame`` (framed, any correlation id) answering
    ``correlation_id``."""
    at = _CORRELATION_ID_AT
    return frame[:at] + _CORRELATION_ID.pack(correlation_id) + frame[at + 4:]


class AnswerCache:
    """Encoded answers by key, each kept with the table it was made from: keys name the table by
    ``id()`` (a dict is not hashable), and the identity check makes a new table that happens to
    reuse a dropped one's id miss rather than get the old answer. Tables are never changed in
    place (protocol/api_versions.py's constants, protocol/emulation.py's per-broker copy)."""

    __slots__ = ("_answers",)

    def __init__(self) -> None:
        self._answers: dict[tuple[Any, ...], tuple[Table, bytes]] = {}

    def get(self, key: tuple[Any, ...], table: Table) -> bytes | None:
        hit = self._answers.get(key)
        return hit[1] if hit is not None and hit[0] is table else None

    def put(self, key: tuple[Any, ...], table: Table, frame: bytes) -> bytes:
        if len(self._answers) >= CACHE_LIMIT:
            self._answers.clear()
        self._answers[key] = (table, frame)
        return frame

    def clear(self) -> None:
        self._answers.clear()


_UNSUPPORTED = AnswerCache()


def unsupported_version_response(correlation_id: int, table: Table = SUPPORTED) -> bytes:
    """The KIP-511 answer (v0, UNSUPPORTED_VERSION, the whole table), framed, for ``correlation_id``."""
    key = (id(table),)
    frame = _UNSUPPORTED.get(key, table)
    if frame is None:
        resp = ApiVersionsResponse(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_keys(table))
        resp.with_header(correlation_id=0)
        frame = _UNSUPPORTED.put(key, table, bytes(resp.encode(header=True, framed=True)))
    return with_correlation_id(frame, correlation_id)
