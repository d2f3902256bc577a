"""The ApiVersions answer to a request newer than advertised (KIP-511): v0, UNSUPPORTED_VERSION and
the full table, so clients can downgrade. Sans-IO; used by dispatch (before any handler runs) and by
broker/apis/api_versions.py, which registers into dispatch and so cannot be imported by it."""
from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED
from protocol.errors import ErrorCode
from protocol.kafka_import import import_submodule_alone

# not the whole metadata family (Metadata, FindCoordinator) at start-up: the lobby's module alone
ApiVersionsResponse: Any = import_submodule_alone("kafka.protocol.metadata.api_versions").ApiVersionsResponse


def api_keys(table: dict[ApiKey, tuple[int, int]] = SUPPORTED) -> list[Any]:
    """The table as ApiVersionsResponse.ApiVersion items (kafka-python data classes), by API key."""
    return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(table.items())]


def unsupported_version_response(correlation_id: int, table: dict[ApiKey, tuple[int, int]] = SUPPORTED) -> bytes:
    resp = ApiVersionsResponse(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_keys(table))
    resp.with_header(correlation_id=correlation_id)
    return bytes(resp.encode(header=True, framed=True))
