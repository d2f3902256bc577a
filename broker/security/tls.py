"""TLS for SSL and SASL_SSL listeners: an ``ssl.SSLContext`` built from Kafka's ``ssl.*``
properties (each overridable per listener as ``listener.name.<listener>.ssl.*``), and the
principal Kafka derives from a client certificate (``ssl.principal.mapping.rules``).

Key stores: PEM (``ssl.keystore.certificate.chain`` + ``ssl.keystore.key`` inline, or
``ssl.keystore.location`` to a PEM file holding key and chain) and PKCS12 (read with the
``cryptography`` package). JKS is Java-only and refused with a clear error.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any

from broker.common.config import BrokerConfig, ConfigError

_PROTOCOLS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
              "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def _openssl_cipher(name: str) -> str:
    """Kafka lists cipher suites by their IANA/Java names; OpenSSL wants its own.
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 -> ECDHE-RSA-AES128-GCM-SHA256."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kx, _, rest = name[4:].partition("_WITH_")
    rest = re.sub(r"^AES_(\d+)_", r"AES\1_", rest)
    rest = rest.replace("CHACHA20_POLY1305_SHA256", "CHACHA20_POLY1305")
    kx = {"RSA": ""}.get(kx, kx)
    parts = [p for p in (kx.replace("_", "-"), rest.replace("_", "-")) if p]
    return "-".join(parts)


def _pem_from_pkcs12(path: str, password: str | None) -> tuple[bytes, bytes, list[bytes]]:
    from cryptography.hazmat.primitives.serialization import (Encoding, NoEncryption, PrivateFormat,
                                                              pkcs12)
    with open(path, "rb") as f:
        key, cert, extra = pkcs12.load_key_and_certificates(f.read(), password.encode() if password else None)
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()) if key else b""
    cert_pem = cert.public_bytes(Encoding.PEM) if cert else b""
    return key_pem, cert_pem, [c.public_bytes(Encoding.PEM) for c in extra or []]


def _load_chain(ctx: ssl.SSLContext, chain_pem: bytes, key_pem: bytes, password: str | None) -> None:
    """ssl can only load a key and chain from files: write them to a private temporary file
    that is removed as soon as they are loaded."""
    fd, path = tempfile.mkstemp(prefix="samsa-key-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem.strip() + b"\n" + chain_pem.strip() + b"\n")
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


def load_keystore(ctx: ssl.SSLContext, config: BrokerConfig, listener: str) -> None:
    """The listener's key store (``ssl.keystore.*``) into ``ctx``: the broker's certificate for
    its server context, and for ``samsa healthcheck``'s client context on an mTLS listener."""
    def get(name: str) -> Any:
        return config.for_listener(listener, name)

    ks_type = str(get("ssl.keystore.type") or "JKS").upper()
    key_password = get("ssl.key.password")
    if get("ssl.keystore.certificate.chain") and get("ssl.keystore.key"):
        _load_chain(ctx, str(get("ssl.keystore.certificate.chain")).encode(),
                    str(get("ssl.keystore.key")).encode(), key_password)
    elif get("ssl.keystore.location"):
        location = str(get("ssl.keystore.location"))
        if ks_type == "PEM":
            ctx.load_cert_chain(location, password=key_password or get("ssl.keystore.password"))
        elif ks_type == "PKCS12":
            key_pem, cert_pem, extra = _pem_from_pkcs12(location, get("ssl.keystore.password"))
            _load_chain(ctx, cert_pem + b"".join(extra), key_pem, None)
        else:
            raise ConfigError(f"ssl.keystore.type {ks_type} is not supported (use PEM or PKCS12)")
    else:
        raise ConfigError(f"listener {listener} uses TLS but has no ssl.keystore.location "
                          "or ssl.keystore.certificate.chain/ssl.keystore.key")


def server_context(config: BrokerConfig, listener: str, sasl: bool = False) -> ssl.SSLContext:
    """The server-side context of one TLS listener; raises ConfigError when the properties
    cannot make one (the broker then refuses to start, as Kafka does). On SASL_SSL listeners
    only a listener-prefixed ``ssl.client.auth`` counts (KIP-684): SASL authenticates them."""
    def get(name: str) -> Any:
        return config.for_listener(listener, name)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [p for p in _list(get("ssl.enabled.protocols")) if p in _PROTOCOLS]
    if not protocols:
        raise ConfigError(f"ssl.enabled.protocols of listener {listener} names no supported TLS version")
    ctx.minimum_version = min((_PROTOCOLS[p] for p in protocols), key=lambda v: v.value)
    ctx.maximum_version = max((_PROTOCOLS[p] for p in protocols), key=lambda v: v.value)
    ciphers = _list(get("ssl.cipher.suites"))
    if ciphers:
        tls12 = [_openssl_cipher(c) for c in ciphers if not c.startswith("TLS_AES") and not c.startswith("TLS_CHACHA")]
        if tls12:
            try:
                ctx.set_ciphers(":".join(tls12))
            except ssl.SSLError as exc:
                raise ConfigError(f"ssl.cipher.suites of listener {listener}: {exc}") from None
    try:
        load_keystore(ctx, config, listener)
        # trust store (client certificates)
        ts_type = str(get("ssl.truststore.type") or "JKS").upper()
        if get("ssl.truststore.certificates"):
            ctx.load_verify_locations(cadata=str(get("ssl.truststore.certificates")))
        elif get("ssl.truststore.location"):
            location = str(get("ssl.truststore.location"))
            if ts_type == "PEM":
                ctx.load_verify_locations(cafile=location)
            elif ts_type == "PKCS12":
                from cryptography.hazmat.primitives.serialization import Encoding, pkcs12
                with open(location, "rb") as f:
                    password = get("ssl.truststore.password")
                    store = pkcs12.load_pkcs12(f.read(), password.encode() if password else None)
                certs = [c.certificate for c in store.additional_certs]
                if store.cert is not None:
                    certs.append(store.cert.certificate)
                ctx.load_verify_locations(cadata="".join(c.public_bytes(Encoding.PEM).decode() for c in certs))
            else:
                raise ConfigError(f"ssl.truststore.type {ts_type} is not supported (use PEM or PKCS12)")
    except (OSError, ssl.SSLError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"cannot load the TLS key or trust store of listener {listener}: {exc}") from None
    if sasl:
        client_auth = str(config.get(f"listener.name.{listener.lower()}.ssl.client.auth") or "none").lower()
    else:
        client_auth = str(get("ssl.client.auth") or "none").lower()
    if client_auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth must be none, requested or required, not {client_auth!r}")
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    return ctx


# -- the principal of a client certificate --------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None   # None: DEFAULT
    replacement: str = ""
    case: str = ""


_RULE_RE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\.|[^\\/])+)/((?:\\.|[^\\/])*)/([LU])?)\s*(?:,|$)")


def parse_mapping_rules(value: str | None) -> list[_Rule]:
    """Kafka's ``ssl.principal.mapping.rules``: ``RULE:pattern/replacement/[LU]`` and DEFAULT,
    comma separated (a rule's pattern may itself contain commas)."""
    rules: list[_Rule] = []
    text = (value or "DEFAULT").strip()
    pos = 0
    while pos < len(text):
        m = _RULE_RE.match(text, pos)
        if not m or m.end() == pos:
            raise ConfigError(f"invalid ssl.principal.mapping.rules at {text[pos:]!r}")
        if m.group(1):
            rules.append(_Rule(None))
        else:
            rules.append(_Rule(re.compile(m.group(2)), m.group(3), m.group(4) or ""))
        pos = m.end()
    return rules or [_Rule(None)]


def _java_replacement(replacement: str) -> str:
    return re.sub(r"\$(\d+)", r"\\g<\1>", replacement)


def map_principal(dn: str, rules: list[_Rule]) -> str:
    """The user name for a distinguished name, by the first rule that matches (Kafka's
    SslPrincipalMapper); the DN itself when only DEFAULT applies."""
    for rule in rules:
        if rule.pattern is None:
            return dn
        m = rule.pattern.fullmatch(dn)
        if m:
            name = m.expand(_java_replacement(rule.replacement))
            return name.lower() if rule.case == "L" else name.upper() if rule.case == "U" else name
    raise ConfigError(f"no ssl.principal.mapping.rules rule matches {dn!r}")


def peer_dn(ssl_object: Any) -> str | None:
    """The client certificate's subject in RFC 2253 form (Java's X500Principal.getName())."""
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
