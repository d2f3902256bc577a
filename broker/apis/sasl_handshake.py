"""SaslHandshake v0-v1 (the connection's state machine is in broker/security/session.py).

Quirks: a handshake on a non-SASL listener answers ILLEGAL_SASL_STATE, as KafkaApis does, and
so does one on an authenticated connection without a session lifetime or within a second of the
last re-authentication (KafkaChannel.maybeBeginServerReauthentication); an unknown mechanism
answers UNSUPPORTED_SASL_MECHANISM with the enabled list and closes.
Authorization: none (it is how a connection authenticates).
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.sasl import SaslHandshakeRequest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.frame import FrameError

from broker.network.dispatch import RequestContext, handles
from broker.security.authz import authorizes, unchecked
from broker.security.sasl import AuthenticationFailed


@handles(ApiKey.SASL_HANDSHAKE)
async def sasl_handshake(ctx: RequestContext, req: SaslHandshakeRequest) -> Any:
    session = ctx.session
    if session is None or not session.listener.listener.sasl:
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    if session.authenticated and not session.reauthenticating and not session.may_reauthenticate():
        if session.expired():   # SocketServer closes an expired session on any other request
            raise FrameError("SASL session expired; re-authentication refused")
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])   # KafkaApis' answer
    mechanisms = session.listener.mechanisms
    mechanism = (req.mechanism or "").upper()
    if mechanism not in mechanisms:
        session.close_after = True
        return ctx.response(error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms=mechanisms)
    try:
        session.begin(mechanism, ctx.api_version)
    except AuthenticationFailed:
        return ctx.response(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=mechanisms)
    return ctx.response(error_code=0, mechanisms=mechanisms)


# -- authorization ----------------------------------------------------------------------------
# Kafka authorizes the SASL exchange for nobody: it is how a connection authenticates
authorizes(ApiKey.SASL_HANDSHAKE)(unchecked)
