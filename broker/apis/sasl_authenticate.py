"""SaslAuthenticate v0-v2 (the connection's state machine is in broker/security/session.py).

Quirks: a failed authentication answers SASL_AUTHENTICATION_FAILED and closes; one on a non-SASL
or already authenticated connection answers ILLEGAL_SASL_STATE; v1+ answers carry the session
lifetime (KIP-368, ``connections.max.reauth.ms`` or an OAUTHBEARER token's expiry).
Authorization: none (it is how a connection authenticates).
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.sasl import SaslAuthenticateRequest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.network.dispatch import RequestContext, handles
from broker.security.authz import authorizes, unchecked
from broker.security.sasl import AuthenticationFailed


@handles(ApiKey.SASL_AUTHENTICATE)
async def sasl_authenticate(ctx: RequestContext, req: SaslAuthenticateRequest) -> Any:
    session = ctx.session
    if session is None or not session.listener.listener.sasl or session.exchange is None:
        # KafkaApis' answer on a non-SASL or already authenticated connection (which stays open;
        # before authentication the session's gate has already closed such a connection)
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE,
                            error_message="SaslAuthenticate request received after successful authentication",
                            auth_bytes=b"", session_lifetime_ms=0)
    try:
        answer, lifetime = session.step(bytes(req.auth_bytes or b""))
    except AuthenticationFailed as exc:
        return ctx.response(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED, error_message=str(exc),
                            auth_bytes=b"", session_lifetime_ms=0)
    return ctx.response(error_code=0, error_message=None, auth_bytes=answer, session_lifetime_ms=lifetime)


# -- authorization ----------------------------------------------------------------------------
# Kafka authorizes the SASL exchange for nobody: it is how a connection authenticates
authorizes(ApiKey.SASL_AUTHENTICATE)(unchecked)
