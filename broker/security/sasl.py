"""SASL mechanisms on the server side: PLAIN (users from Kafka's JAAS syntax), SCRAM-SHA-256/512
(RFC 5802/7677 through the ``scramp`` library, credentials from the metadata image's
UserScramCredentialRecords) and
OAUTHBEARER (Kafka's unsecured JWT validation, RFC 7628 framing).

Each exchange is an object fed one client token at a time; it answers the server's token, or
raises ``AuthenticationFailed`` with Kafka's message. Secrets never reach a log line or an
exception message.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Mapping

if TYPE_CHECKING:   # imported where a credential is made: start-up needs only the mechanism names
    from coordinator.metadata.records import UserScramCredentialRecord

ScramCredentials = Mapping[tuple[str, int], "UserScramCredentialRecord"]   # (user, mechanism id) -> credential

SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
SCRAM_HASHES = {1: hashlib.sha256, 2: hashlib.sha512}
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384
SUPPORTED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")



class AuthenticationFailed(Exception):
    """SASL_AUTHENTICATION_FAILED with this message."""


@dataclass(frozen=True, slots=True)
class JaasConfig:
    login_module: str
    options: Mapping[str, str]


_JAAS_RE = re.compile(r'\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;\s*$', re.S)
_OPTION_RE = re.compile(r'\s*([\w.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)')


def parse_jaas(text: str) -> JaasConfig:
    """``<LoginModule> required key="value" ...;`` as in ``sasl.jaas.config``."""
    m = _JAAS_RE.match(text or "")
    if not m:
        raise ValueError("sasl.jaas.config must read '<LoginModule> required key=\"value\" ...;'")
    options: dict[str, str] = {}
    for om in _OPTION_RE.finditer(m.group(3)):
        value = om.group(2)
        if value.startswith('"'):
            value = re.sub(r'\\(.)', r'\1', value[1:-1])
        options[om.group(1)] = value
    return JaasConfig(m.group(1), options)


# -- PLAIN ---------------------------------------------------------------------------------
class PlainExchange:
    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users
        self.principal: str | None = None
        self.lifetime_ms: int | None = None

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user or not password:
            raise AuthenticationFailed("Authentication failed: username or password not specified")
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id "
                                       "that is different from username")
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.principal = user
        return b""

    @property
    def complete(self) -> bool:
        return self.principal is not None


# -- SCRAM ---------------------------------------------------------------------------------
def scram_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """(stored key, server key) from a salted password (RFC 5802)."""
    h = SCRAM_HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", h).digest()
    return h(client_key).digest(), hmac.new(salted_password, b"Server Key", h).digest()


def scram_credential(mechanism: int, password: str, salt: bytes, iterations: int,
                     name: str = "") -> UserScramCredentialRecord:
    """The record that stores ``name``'s credential (never the password)."""
    h = SCRAM_HASHES[mechanism]
    salted = hashlib.pbkdf2_hmac(h().name, password.encode(), salt, iterations)
    stored, server = scram_keys(mechanism, salted)
    from coordinator.metadata.records import UserScramCredentialRecord
    return UserScramCredentialRecord(name, mechanism, salt, stored, server, iterations)


class ScramExchange:
    def __init__(self, mechanism: str, credentials: Callable[[], ScramCredentials]) -> None:
        import scramp
        self.mechanism = mechanism
        self._id = SCRAM_MECHANISMS[mechanism]
        self._credentials = credentials
        self._user: str | None = None
        self._server = scramp.ScramMechanism(mechanism).make_server(self._auth_info)
        self._stage = 0
        self.principal: str | None = None
        self.lifetime_ms: int | None = None

    def _auth_info(self, username: str) -> tuple[bytes, bytes, bytes, int]:
        cred = self._credentials().get((username, self._id))
        if cred is None:
            raise KeyError("unknown user")
        self._user = username
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def _failed(self) -> AuthenticationFailed:
        return AuthenticationFailed("Authentication failed during authentication due to invalid credentials "
                                    f"with SASL mechanism {self.mechanism}")

    def step(self, token: bytes) -> bytes:
        import scramp
        try:
            text = token.decode("utf-8")
            if self._stage == 0:
                self._stage = 1
                self._server.set_client_first(text)
                return self._server.get_server_first().encode()
            if self._stage == 1:
                self._stage = 2
                self._server.set_client_final(text)
                final = self._server.get_server_final().encode()
                self.principal = self._user
                return final
        except (scramp.ScramException, KeyError, UnicodeDecodeError, ValueError):
            raise self._failed() from None
        raise AuthenticationFailed("Unexpected SASL/SCRAM message after authentication")

    @property
    def complete(self) -> bool:
        return self.principal is not None


# -- OAUTHBEARER (unsecured JWS, Kafka's OAuthBearerUnsecuredValidatorCallbackHandler) -------
def _b64url(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


class OAuthBearerExchange:
    mechanism = "OAUTHBEARER"

    def __init__(self, options: Mapping[str, str], now_ms: Callable[[], int] | None = None,
                 validator: JwksValidator | None = None) -> None:
        self.principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "sub")
        self.scope_claim = options.get("unsecuredValidatorScopeClaimName", "scope")
        self.required_scope = [s for s in options.get("unsecuredValidatorRequiredScope", "").split(",") if s]
        self.skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0") or 0)
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.validator = validator
        self.principal: str | None = None
        self.lifetime_ms: int | None = None
        self._failed = False

    def step(self, token: bytes) -> bytes:
        if self._failed:   # the client's %x01 after our error challenge (RFC 7628 3.2.3)
            raise AuthenticationFailed("Authentication failed: invalid OAUTHBEARER token")
        try:
            text = token.decode("utf-8")
            gs2, _, rest = text.partition("\x01")
            if not gs2.startswith(("n,", "y,")):
                raise ValueError("bad GS2 header")
            fields = dict(kv.split("=", 1) for kv in rest.split("\x01") if "=" in kv)
            auth = fields.get("auth", "")
            if not auth.startswith("Bearer "):
                raise ValueError("no bearer token")
            jwt = auth[len("Bearer "):].strip()
            if self.validator is not None:
                self.principal, exp_ms = self.validator.validate(jwt, self.now_ms())
                self.lifetime_ms = max(0, exp_ms - self.now_ms())
            else:
                self._validate(jwt)
            return b""
        except (ValueError, UnicodeDecodeError, json.JSONDecodeError):
            self._failed = True
            return json.dumps({"status": "invalid_token"}).encode()

    def _validate(self, jwt: str) -> None:
        parts = jwt.split(".")
        if len(parts) != 3:
            raise ValueError("not a JWS compact serialization")
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
        if header.get("alg") != "none" or parts[2]:
            raise ValueError("only unsecured JWS (alg none) is accepted by the unsecured validator")
        now = self.now_ms()
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or exp * 1000 + self.skew_ms <= now:
            raise ValueError("expired or no exp claim")
        iat = claims.get("iat")
        if isinstance(iat, (int, float)) and int(iat * 1000) - self.skew_ms > now:
            raise ValueError("issued in the future")
        sub = claims.get(self.principal_claim)
        if not isinstance(sub, str) or not sub.strip():
            raise ValueError("no principal claim")
        if self.required_scope:
            scope = claims.get(self.scope_claim)
            have = set(scope.split() if isinstance(scope, str) else scope or [])
            if not set(self.required_scope) <= have:
                raise ValueError("insufficient scope")
        self.principal = sub
        self.lifetime_ms = max(0, int(exp * 1000) - now)

    @property
    def complete(self) -> bool:
        return self.principal is not None


class JwksValidator:
    """Kafka's OAuthBearerValidatorCallbackHandler: a signed JWT checked against a JWKS
    (``sasl.oauthbearer.jwks.endpoint.url``, a file: or http(s): URL read at start-up and every
    ``sasl.oauthbearer.jwks.endpoint.refresh.ms``), expected audience/issuer, ``exp`` with
    ``sasl.oauthbearer.clock.skew.seconds``; the principal is ``sasl.oauthbearer.sub.claim.name``."""

    def __init__(self, url: str, audience: list[str], issuer: str | None, sub_claim: str = "sub",
                 skew_s: int = 30) -> None:
        self.url = url
        self.audience = audience
        self.issuer = issuer
        self.sub_claim = sub_claim
        self.skew_s = skew_s
        self.keys: dict[str | None, Any] = {}
        self.refresh()

    def fetch(self) -> dict:
        import urllib.request
        with urllib.request.urlopen(self.url, timeout=10) as r:   # file: URLs too
            return json.loads(r.read())

    def refresh(self, jwks: dict | None = None) -> None:
        import jwt
        keyset = jwt.PyJWKSet.from_dict(jwks if jwks is not None else self.fetch())
        self.keys = {k.key_id: k for k in keyset.keys}

    def validate(self, token: str, now_ms: int) -> tuple[str, int]:
        import jwt
        try:
            header = jwt.get_unverified_header(token)
            key = self.keys.get(header.get("kid")) or (next(iter(self.keys.values())) if len(self.keys) == 1
                                                        and header.get("kid") is None else None)
            if key is None:
                raise ValueError("no JWKS key for the token's kid")
            claims = jwt.decode(token, key=key.key, algorithms=[header.get("alg", "RS256")],
                                audience=self.audience or None, issuer=self.issuer,
                                leeway=self.skew_s, options={"require": ["exp"],
                                                             "verify_aud": bool(self.audience)})
        except jwt.PyJWTError as exc:
            raise ValueError(f"invalid token: {type(exc).__name__}") from None
        sub = claims.get(self.sub_claim)
        if not isinstance(sub, str) or not sub:
            raise ValueError("no principal claim")
        return sub, int(claims["exp"] * 1000)
