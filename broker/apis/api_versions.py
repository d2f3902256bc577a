"""ApiVersions v0-v4.

Quirks: the response header is never flexible (kafka-python handles this); a request
newer than advertised (v4, or less when ``samsa.emulate.kafka.version`` emulates an older
Kafka) is answered in v0 with UNSUPPORTED_VERSION and the full table (KIP-511), so
clients can downgrade; tagged fields (features) are written only when non-default.
"""
from __future__ import annotations

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from protocol.api_versions import SUPPORTED
from protocol.errors import ErrorCode

from ..dispatch import RequestContext, handles


def _keys(table: dict[int, tuple[int, int]] = SUPPORTED) -> list:
    return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(table.items())]


def unsupported_version_response(correlation_id: int, table: dict[int, tuple[int, int]] = SUPPORTED) -> bytes:
    resp = ApiVersionsResponse(version=0, error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_keys(table))
    resp.with_header(correlation_id=correlation_id)
    return bytes(resp.encode(header=True, framed=True))


@handles(18)
async def api_versions(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    return ctx.response(error_code=ErrorCode.NONE, api_keys=_keys(ctx.broker.api_versions), throttle_time_ms=0)
