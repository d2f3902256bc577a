"""One connection's security state: its principal and, on SASL listeners, Kafka's
authentication state machine (SaslServerAuthenticator):

- before authentication only ApiVersions, SaslHandshake and then SaslAuthenticate are
  accepted; any other request closes the connection, as does a frame larger than
  ``sasl.server.max.receive.size``;
- a SaslHandshake v0 switches to raw tokens (length-prefixed, no Kafka header);
- with ``connections.max.reauth.ms`` (KIP-368) a session expires: after that only a new
  SaslHandshake (re-authentication, same principal) is accepted, anything else closes.

The server asks ``gated`` (a plain attribute) before each request, so PLAINTEXT and SSL
connections pay one attribute read.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import structlog
import trio

from protocol.frame import FrameError

from .sasl import AuthenticationFailed

if TYPE_CHECKING:
    from protocol.frame import FrameDecoder

    from .setup import ListenerSecurity, Security

log = structlog.get_logger("samsa.security")

ANONYMOUS = "User:ANONYMOUS"
SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18
ILLEGAL_SASL_STATE = 34


class FailedAuthentication(FrameError):
    """The SASL state machine refuses a frame. As in Kafka (SaslServerAuthenticator raising an
    AuthenticationException, KafkaChannel turning it into DelayedResponseAuthenticationException),
    the connection closes only after ``connection.failed.authentication.delay.ms``; a request
    that came during the exchange is first answered with ILLEGAL_SASL_STATE (``answer``)."""

    def __init__(self, reason: str, answer: bool = False) -> None:
        super().__init__(reason)
        self.answer = answer


def illegal_state_answer(frame: bytes) -> bytes | None:
    """Kafka's ``request.getErrorResponse(IllegalSaslStateException)`` for a request during the
    SASL exchange, framed; None when the request cannot be decoded (then only the close)."""
    from protocol.error_response import error_response
    from protocol.frame import peek_header
    from protocol.messages import REQUESTS, RESPONSES, decode_request
    try:
        prefix = peek_header(frame)
        request = decode_request(REQUESTS[prefix.api_key], frame, prefix.api_version)
        response = error_response(RESPONSES[prefix.api_key], request, prefix.api_version, ILLEGAL_SASL_STATE,
                                  f"Unexpected Kafka request of type {prefix.api_key} during SASL authentication.")
        response.with_header(correlation_id=prefix.correlation_id)
        return bytes(response.encode(header=True, framed=True))
    except Exception:   # not a request Samsa can read: Kafka cannot answer it either
        return None


class Session:
    __slots__ = ("security", "listener", "host", "principal", "authenticated", "exchange", "mechanism",
                 "raw_tokens", "expires_at", "reauthenticating", "close_after", "gated", "_decoder", "_max_frame",
                 "reauth_started")

    def __init__(self, security: Security, listener: ListenerSecurity, host: str,
                 principal: str = ANONYMOUS) -> None:
        self.security = security
        self.listener = listener
        self.host = host
        self.principal = principal
        self.authenticated = not listener.listener.sasl
        self.exchange: Any = None
        self.mechanism: str | None = None
        self.raw_tokens = False
        self.expires_at: float | None = None
        self.reauthenticating = False
        self.close_after = False    # a failed authentication: delay, send the current answer, close
        self.gated = not self.authenticated
        self._decoder: FrameDecoder | None = None
        self._max_frame = 0
        self.reauth_started: float | None = None   # when the last re-authentication began

    @property
    def authenticating(self) -> bool:
        """In the SASL exchange (first login or re-authentication): failures here are delayed."""
        return not self.authenticated or self.reauthenticating

    def limit_frames(self, decoder: FrameDecoder) -> None:
        """Until authenticated, frames larger than ``sasl.server.max.receive.size`` are refused
        by the frame decoder itself, before their bytes are buffered (as Kafka's
        InvalidReceiveException); the connection's normal limit returns afterwards."""
        if self._decoder is None:
            self._decoder, self._max_frame = decoder, decoder.max_frame_size
        decoder.max_frame_size = min(self._max_frame, self.security.max_receive)

    def _unlimit_frames(self) -> None:
        if self._decoder is not None:
            self._decoder.max_frame_size = self._max_frame

    def _regate(self) -> None:
        self.gated = not self.authenticated or self.raw_tokens or self.expires_at is not None or \
            self.reauthenticating

    def admit(self, frame: bytes) -> None:
        """Raise FrameError (the connection closes) when this request may not come now."""
        if len(frame) > self.security.max_receive and (not self.authenticated or self.reauthenticating):
            raise FailedAuthentication("SASL frame larger than sasl.server.max.receive.size")
        if self.raw_tokens:
            return
        if len(frame) < 4:
            raise FrameError("truncated request header")
        key = struct.unpack_from(">h", frame, 0)[0]
        if self.authenticated and not self.reauthenticating:
            if self.expires_at is not None and trio.current_time() >= self.expires_at and key != SASL_HANDSHAKE:
                raise FrameError("SASL session expired without re-authentication (connections.max.reauth.ms)")
            return
        if self.reauthenticating:
            if key != SASL_AUTHENTICATE:
                raise FailedAuthentication(f"unexpected request (api key {key}) during SASL re-authentication",
                                           answer=True)
            return
        if self.exchange is None:
            if key not in (API_VERSIONS, SASL_HANDSHAKE):
                raise FailedAuthentication(f"unexpected request (api key {key}) before SASL authentication")
        elif key != SASL_AUTHENTICATE:
            raise FailedAuthentication(f"unexpected request (api key {key}) during SASL authentication", answer=True)

    # -- called by the SaslHandshake / SaslAuthenticate handlers (broker/apis/sasl.py) ------
    def may_reauthenticate(self) -> bool:
        """May a SaslHandshake on this authenticated connection begin a re-authentication?
        Kafka (KafkaChannel.maybeBeginServerReauthentication) only when the session has a
        lifetime, and at most once a second; otherwise KafkaApis answers ILLEGAL_SASL_STATE."""
        now = trio.current_time()
        if self.expires_at is None or (self.reauth_started is not None and now - self.reauth_started < 1.0):
            return False
        self.reauth_started = now
        return True

    def expired(self) -> bool:
        return self.expires_at is not None and trio.current_time() >= self.expires_at

    def begin(self, mechanism: str, version: int) -> None:
        self.exchange = self.security.exchange(self.listener.listener.name, mechanism)
        if self.authenticated:
            if mechanism != self.mechanism:
                self.close_after = True
                raise AuthenticationFailed("SASL mechanism changed during re-authentication")
            self.reauthenticating = True
            if self._decoder is not None:
                self.limit_frames(self._decoder)
        self.mechanism = mechanism
        self.raw_tokens = version == 0
        self._regate()

    def step(self, token: bytes) -> tuple[bytes, int]:
        """Feed one client token: (server token, session lifetime ms). Raises
        AuthenticationFailed; the connection then closes after the answer."""
        if self.exchange is None:
            self.close_after = True
            raise AuthenticationFailed("no SASL handshake")
        try:
            answer = self.exchange.step(token)
        except AuthenticationFailed:
            self.close_after = True
            log.info("SASL authentication failed", host=self.host, mechanism=self.mechanism,
                     listener=self.listener.listener.name)
            raise
        if not self.exchange.complete:
            return answer, 0
        principal = "User:" + self.exchange.principal
        if self.reauthenticating and principal != self.principal:
            self.close_after = True
            raise AuthenticationFailed("Cannot change principals during re-authentication from "
                                       f"{self.principal}: {principal}")
        lifetimes = [ms for ms in (self.security.reauth_ms or None, self.exchange.lifetime_ms) if ms is not None]
        lifetime = min(lifetimes) if lifetimes else 0
        self.expires_at = trio.current_time() + lifetime / 1000 if lifetime else None
        self.principal = principal
        self.authenticated = True
        self.reauthenticating = False
        self.exchange = None
        self.raw_tokens = False
        self._regate()
        self._unlimit_frames()
        return answer, lifetime

    def raw_answer(self, frame: bytes) -> bytes:
        """A SaslHandshake v0 client sends bare tokens; failures close without an answer."""
        try:
            answer, _ = self.step(bytes(frame))
        except AuthenticationFailed as exc:
            raise FailedAuthentication(str(exc)) from None
        return struct.pack(">i", len(answer)) + answer
