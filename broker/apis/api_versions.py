"""ApiVersions v0-v4.

Quirks: the response header is never flexible (kafka-python handles this); a request
newer than advertised (v4, or less when ``samsa.emulate.kafka.version`` emulates an older
Kafka) is answered in v0 with UNSUPPORTED_VERSION and the full table (KIP-511), so
clients can downgrade; tagged fields (features) are written only when non-default.
v3+ carry the supported and finalized features of protocol/features.py (transaction.version
finalized at ``samsa.transaction.version``), except when emulating an older Kafka.
Authorization: none (any connection may ask, before authentication too).
"""
from __future__ import annotations

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from protocol import features
from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED, SUPPORTED_WITH_SHARE_GROUPS
from protocol.api_versions_response import api_keys as _keys
from protocol.errors import ErrorCode

from broker.network.dispatch import RequestContext, handles
from broker.security.authz import authorizes, unchecked


@handles(ApiKey.API_VERSIONS)
async def api_versions(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    resp = ctx.response(error_code=ErrorCode.NONE, api_keys=_keys(ctx.broker.api_versions), throttle_time_ms=0)
    table = ctx.broker.api_versions
    if ctx.api_version >= 3 and (table is SUPPORTED or table is SUPPORTED_WITH_SHARE_GROUPS):  # emulated: none
        tv = ctx.broker.config.get("samsa.transaction.version")
        share = table is SUPPORTED_WITH_SHARE_GROUPS
        resp.supported_features = [resp.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                   for n, lo, hi in features.supported_features(share_groups=share)]
        resp.finalized_features_epoch = features.FINALIZED_FEATURES_EPOCH
        resp.finalized_features = [resp.FinalizedFeatureKey(name=n, max_version_level=level, min_version_level=level)
                                   for n, level in features.finalized_features(
                                       features.TRANSACTION_VERSION_MAX if tv is None else int(tv),
                                       share_groups=share)]
    return resp


# -- authorization ----------------------------------------------------------------------------
# Kafka authorizes ApiVersions for nobody: any connection may ask (before authentication too)
authorizes(ApiKey.API_VERSIONS)(unchecked)
