"""The transport side of a connection's security: the TLS handshake (bounded by
``samsa.ssl.handshake.timeout.ms``) and the principal a client certificate maps to."""
from __future__ import annotations

import ssl

import structlog
import trio

from broker.common.config import ConfigError
from .session import ANONYMOUS, Session
from .setup import ListenerSecurity, Security
from .tls import map_principal, peer_dn

log = structlog.get_logger("samsa.security")


async def secure(security: Security, listener: ListenerSecurity, stream: trio.SocketStream,
                 host: str, peer: str) -> tuple[trio.abc.Stream, Session] | None:
    """The stream to speak Kafka over and the connection's session, or None when the TLS
    handshake failed or timed out (the caller closes the socket)."""
    if listener.ssl_context is None:
        return stream, Session(security, listener, host)
    tls = trio.SSLStream(stream, listener.ssl_context, server_side=True)
    with trio.move_on_after(security.handshake_timeout_s) as timeout:
        try:
            await tls.do_handshake()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError, OSError) as exc:
            log.info("TLS handshake failed", peer=peer, listener=listener.listener.name,
                     reason=str(exc.__cause__ or exc)[:200])
            return None
    if timeout.cancelled_caught:
        log.info("TLS handshake timed out", peer=peer, listener=listener.listener.name)
        return None
    principal = ANONYMOUS
    if not listener.listener.sasl:
        try:
            dn = peer_dn(tls)
            if dn is not None:
                principal = "User:" + map_principal(dn, listener.mapping_rules)
        except ConfigError:
            log.info("no ssl.principal.mapping.rules rule matches the client certificate", peer=peer)
            return None
        except Exception as exc:   # a certificate `cryptography` cannot read: this connection only
            log.info("unreadable client certificate", peer=peer, error=str(exc)[:200])
            return None
    return tls, Session(security, listener, host, principal)
