"""The ApiVersions answer to a request newer than advertised (KIP-511): v0, UNSUPPORTED_VERSION and
the full table, so clients can downgrade. Sans-IO; used by dispatch (before any handler runs) and by
broker/apis/api_versions.py, which registers into dispatch and so cannot be imported by it.

Every client connection opens with ApiVersions, and its answer depends on nothing in the request
but the version (and on the broker's table and features, fixed while it runs): it is encoded once
per such key and then only its correlation id is written into a copy (protocol/answer_cache.py).
Encoding the ~80 ApiVersion entries with kafka-python's classes cost ~500 µs per request."""
from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.answer_cache import AnswerCache
from protocol.api_versions import SUPPORTED
from protocol.errors import ErrorCode
from protocol.kafka_import import import_submodule_alone

# not the whole metadata family (Metadata, FindCoordinator) at start-up: the lobby's module alone
ApiVersionsResponse: Any = import_submodule_alone("kafka.protocol.metadata.api_versions").ApiVersionsResponse

Table = dict[ApiKey, tuple[int, int]]

# answers kept per key; the keys are a few (version, table, features) combinations, but tests start many
# brokers, each emulating Kafka with its own table: past this many the cache starts afresh
CACHE_LIMIT = 64


def api_keys(table: Table = SUPPORTED) -> list[Any]:
    """The table as ApiVersionsResponse.ApiVersion items (kafka-python data classes), by API key."""
    return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(table.items())]


_UNSUPPORTED: AnswerCache[bytes] = AnswerCache(CACHE_LIMIT)


def unsupported_version_response(correlation_id: int, table: Table = SUPPORTED) -> bytes:
    """The KIP-511 answer (v0, UNSUPPORTED_VERSION, the whole table), framed, for ``correlation_id``."""
    key = (id(table),)
    def encode() -> bytes:
        resp = ApiVersionsResponse(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_keys(table))
        resp.with_header(correlation_id=0)
        return bytes(resp.encode(header=True, framed=True))
    return _UNSUPPORTED.answer(key, correlation_id, encode, owner=table)
