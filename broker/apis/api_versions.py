"""ApiVersions v0-v4.

Quirks: the response header is never flexible (kafka-python handles this); a request
newer than advertised (v4, or less when ``samsa.emulate.kafka.version`` emulates an older
Kafka) is answered in v0 with UNSUPPORTED_VERSION and the full table (KIP-511), so
clients can downgrade; tagged fields (features) are written only when non-default.
v3+ carry the supported and finalized features of protocol/features.py (transaction.version
finalized at ``samsa.transaction.version``), except when emulating an older Kafka.
The answer is encoded once per (request version, the broker's table, ``samsa.transaction.version``)
and sent with the request's correlation id written in (protocol/api_versions_response.py): every
client connection opens with ApiVersions, and encoding the whole table each time was the most
costly small request. Nothing else feeds it: the client software name and version (v3+) are not
checked, the table is fixed when the broker starts, and a changed ``samsa.transaction.version`` is
another key.
Authorization: none (any connection may ask, before authentication too).
"""
from __future__ import annotations

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from protocol import features
from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED, SUPPORTED_WITH_SHARE_GROUPS
from protocol.answer_cache import AnswerCache
from protocol.api_versions_response import CACHE_LIMIT, Table, api_keys as _keys
from protocol.errors import ErrorCode
from protocol.messages import encode_response

from broker.network.dispatch import RequestContext, handles
from broker.security.authz import authorizes, unchecked

ANSWERS: AnswerCache[bytes] = AnswerCache(CACHE_LIMIT)


@handles(ApiKey.API_VERSIONS)
async def api_versions(ctx: RequestContext, req: ApiVersionsRequest) -> bytes:
    """The framed answer (dispatch sends bytes as they are), from the cache when it has the key."""
    table = ctx.broker.api_versions
    tv = ctx.broker.config.get("samsa.transaction.version")
    key = (ctx.api_version, id(table), tv)
    return ANSWERS.answer(key, ctx.correlation_id, lambda: bytes(encode_response(answer(ctx, table, tv), 0)),
                          owner=table)


def answer(ctx: RequestContext, table: Table, tv: int | str | None) -> ApiVersionsResponse:
    """The answer as a message, for ``table`` and the finalized transaction.version ``tv``
    (None: the highest implemented)."""
    resp = ctx.response(error_code=ErrorCode.NONE, api_keys=_keys(table), throttle_time_ms=0)
    if ctx.api_version >= 3 and (table is SUPPORTED or table is SUPPORTED_WITH_SHARE_GROUPS):  # emulated: none
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
