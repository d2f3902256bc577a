"""The broker's security state, built once from its config at start-up: a TLS context per
TLS listener, the SASL mechanisms and PLAIN users per SASL listener, and the authorizer (None
when ``authorizer.class.name`` is unset: no per-request cost). ACLs and SCRAM credentials are
records of the broker's metadata store (broker/metadata/): the authorizer and SCRAM logins read
the store's current image; ``start`` migrates an old ``__security_metadata.jsonl`` and writes
the bootstrap credentials."""
from __future__ import annotations

import os
import re
import ssl
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

import structlog
import trio

from broker.common.config import BrokerConfig, ConfigError, Listener
from .acl import LEGACY_AUTHORIZER, STANDARD_AUTHORIZER, Authorizer, parse_super_users
from . import legacy
from .sasl import (SCRAM_MECHANISMS, SUPPORTED, JwksValidator, OAuthBearerExchange, PlainExchange,
                   ScramExchange, parse_jaas, scram_credential)
from .tls import parse_mapping_rules, server_context

if TYPE_CHECKING:
    from coordinator.metadata.image import MetadataImage

    from ..metadata.store import MetadataStore

log = structlog.get_logger("samsa.security")

_SCRAM_BOOTSTRAP_RE = re.compile(r"\s*(SCRAM-SHA-(?:256|512))\s*=\s*\[(.*)\]\s*$")


def _jaas(config: BrokerConfig, listener: str, mechanism: str) -> dict[str, str]:
    """JAAS options for a listener and mechanism: ``listener.name.<l>.<mech>.sasl.jaas.config``
    as Kafka requires for brokers, then ``sasl.jaas.config``."""
    raw = config.get(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config") or \
        config.get("sasl.jaas.config")
    if not raw:
        return {}
    try:
        return dict(parse_jaas(str(raw)).options)
    except ValueError as exc:
        raise ConfigError(f"listener {listener}: {exc}") from None


def _jwks_validator(config: BrokerConfig, listener: str) -> JwksValidator | None:
    """JWKS validation when ``sasl.oauthbearer.jwks.endpoint.url`` is set (with Kafka's
    OAuthBearerValidatorCallbackHandler as the server callback handler); otherwise Kafka's
    default, the unsecured validator."""
    def get(name: str, default: Any = None) -> Any:
        for key in (f"listener.name.{listener.lower()}.oauthbearer.{name}", name):
            if config.get(key) is not None:
                return config.get(key)
        return default
    url = get("sasl.oauthbearer.jwks.endpoint.url")
    if not url:
        return None
    audience = [a.strip() for a in str(get("sasl.oauthbearer.expected.audience", "")).split(",") if a.strip()]
    try:
        return JwksValidator(str(url), audience, get("sasl.oauthbearer.expected.issuer"),
                             str(get("sasl.oauthbearer.sub.claim.name", "sub")),
                             int(get("sasl.oauthbearer.clock.skew.seconds", 30)))
    except Exception as exc:  # unreadable URL or key set: refuse to start, as Kafka does
        raise ConfigError(f"sasl.oauthbearer.jwks.endpoint.url of listener {listener}: {exc}") from None


class ListenerSecurity:
    def __init__(self, config: BrokerConfig, listener: Listener) -> None:
        self.listener = listener
        self.ssl_context: ssl.SSLContext | None = server_context(config, listener.name, listener.sasl) \
            if listener.tls else None
        self.mapping_rules = parse_mapping_rules(config.for_listener(listener.name, "ssl.principal.mapping.rules"))
        raw = config.for_listener(listener.name, "sasl.enabled.mechanisms", "GSSAPI")
        mechs = raw if isinstance(raw, list) else [m.strip() for m in str(raw).split(",") if m.strip()]
        self.mechanisms = [m.upper() for m in mechs]
        self.plain_users: dict[str, str] = {}
        self.oauth_options: dict[str, str] = {}
        self.jwks: JwksValidator | None = None
        if listener.sasl:
            unsupported = [m for m in self.mechanisms if m not in SUPPORTED]
            if unsupported:
                log.warning("SASL mechanisms not supported by Samsa are not offered", listener=listener.name,
                            mechanisms=unsupported)
            self.mechanisms = [m for m in self.mechanisms if m in SUPPORTED]
            if not self.mechanisms:
                raise ConfigError(f"SASL listener {listener.name} enables no supported mechanism "
                                  f"(sasl.enabled.mechanisms: one of {', '.join(SUPPORTED)})")
            if "PLAIN" in self.mechanisms:
                options = _jaas(config, listener.name, "PLAIN")
                self.plain_users = {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}
            if "OAUTHBEARER" in self.mechanisms:
                self.oauth_options = _jaas(config, listener.name, "OAUTHBEARER")
                self.jwks = _jwks_validator(config, listener.name)


def _no_metadata() -> MetadataStore:
    raise RuntimeError("this Security has no metadata store (ACLs and SCRAM credentials live there)")


class Security:
    def __init__(self, config: BrokerConfig, log_dir: str, clock: Callable[[], int],
                 metadata: Callable[[], MetadataStore] | None = None) -> None:
        self.config = config
        self.clock = clock
        self.log_dir = log_dir
        # the broker's MetadataStore (local log, or etcd in a cluster), opened on first use
        self.metadata: Callable[[], MetadataStore] = metadata or _no_metadata
        self.listeners = {lst.name: ListenerSecurity(config, lst) for lst in config.listeners}
        inter = config.get("inter.broker.listener.name")
        if inter and inter.upper() not in self.listeners:
            raise ConfigError(f"inter.broker.listener.name {inter} must be one of the listeners "
                              f"({', '.join(self.listeners)})")
        self.reauth_ms = int(config["connections.max.reauth.ms"] or 0)
        self.max_receive = int(config["sasl.server.max.receive.size"])
        self.failed_auth_delay_s = int(config["connection.failed.authentication.delay.ms"]) / 1000
        self.handshake_timeout_s = int(config["samsa.ssl.handshake.timeout.ms"]) / 1000
        name = (config.get("authorizer.class.name") or "").strip()
        self.authorizer: Authorizer | None = None
        if name:
            if name not in (STANDARD_AUTHORIZER, LEGACY_AUTHORIZER):
                raise ConfigError(f"authorizer.class.name {name} is not supported (use {STANDARD_AUTHORIZER})")
            self.authorizer = Authorizer(lambda: self.metadata().image.acls,
                                         parse_super_users(config.get("super.users")),
                                         bool(config["allow.everyone.if.no.acl.found"]))
        self.bootstrap = self._parse_bootstrap(config.get("samsa.scram.bootstrap.credentials"))

    @property
    def uses_metadata(self) -> bool:
        """Whether anything reads ACLs or credentials (else a single node opens no metadata log)."""
        return (self.authorizer is not None or bool(self.bootstrap)
                or any(m in SCRAM_MECHANISMS for ls in self.listeners.values() for m in ls.mechanisms
                       if ls.listener.sasl)
                or os.path.exists(os.path.join(self.log_dir, legacy.FILE_NAME)))

    def scram_credentials(self) -> Any:
        return self.metadata().image.scram_credentials

    async def start(self) -> None:
        """After the metadata store is loaded, before any connection: migrate the old security
        file, then create the bootstrap credentials (once in a cluster: a credential present in
        the image, or written meanwhile by another broker, is left alone)."""
        if not self.uses_metadata:
            return
        from .writes import write_decided   # the metadata records: only a broker with ACLs or credentials

        store = self.metadata()
        path = os.path.join(self.log_dir, legacy.FILE_NAME)
        old = legacy.read_legacy(path)
        if old is not None:
            await write_decided(store, lambda image: (legacy.missing_records(old, image), None), 60000)
            os.replace(path, path + legacy.MIGRATED_SUFFIX)
            log.info("security metadata migrated into the metadata log", acls=len(old.acls),
                     scram_credentials=len(old.scram_credentials), kept_as=path + legacy.MIGRATED_SUFFIX)
        if self.bootstrap:
            await write_decided(store, self._bootstrap_records, 60000)

    def _bootstrap_records(self, image: MetadataImage) -> tuple[list, None]:
        records = []
        for name, mech, password, salt, iterations in self.bootstrap:
            if (name, mech) in image.scram_credentials:
                continue
            records.append(scram_credential(mech, password, salt if salt is not None else os.urandom(32),
                                            iterations, name=name))
        return records, None

    @staticmethod
    def _parse_bootstrap(value: Any) -> list[tuple[str, int, str, bytes | None, int]]:
        """``SCRAM-SHA-512=[name=admin,password=admin-secret];...`` as ``kafka-storage format
        --add-scram`` takes it; a credential already stored is left alone."""
        out = []
        for entry in (e for e in str(value or "").split(";") if e.strip()):
            m = _SCRAM_BOOTSTRAP_RE.match(entry)
            if not m:
                raise ConfigError("samsa.scram.bootstrap.credentials: expected "
                                  "'SCRAM-SHA-512=[name=<user>,password=<password>]'")
            fields = {}
            for kv in m.group(2).split(","):
                k, _, v = kv.partition("=")
                fields[k.strip()] = v.strip().strip('"')
            if "name" not in fields or "password" not in fields:
                raise ConfigError("samsa.scram.bootstrap.credentials: each entry needs name and password")
            mech = SCRAM_MECHANISMS[m.group(1)]
            iterations = int(fields.get("iterations", 4096))
            salt = bytes.fromhex(fields["salt"]) if "salt" in fields else None
            out.append((fields["name"], mech, fields["password"], salt, iterations))
        return out

    async def refresh_jwks(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        """Re-read JWKS key sets every ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (the
        fetch runs in a worker thread; a failed refresh keeps the previous keys)."""
        validators = [ls.jwks for ls in self.listeners.values() if ls.jwks is not None]
        task_status.started()
        if not validators:
            return
        period = int(self.config.get("sasl.oauthbearer.jwks.endpoint.refresh.ms") or 3600000) / 1000
        while True:
            await trio.sleep(period)
            for v in validators:
                try:
                    v.refresh(await trio.to_thread.run_sync(v.fetch))
                except Exception as exc:
                    log.warning("JWKS refresh failed; keeping the previous keys", url=v.url, error=str(exc)[:200])

    def exchange(self, listener: str, mechanism: str) -> Any:
        ls = self.listeners[listener]
        if mechanism == "PLAIN":
            return PlainExchange(ls.plain_users)
        if mechanism in SCRAM_MECHANISMS:
            return ScramExchange(mechanism, self.scram_credentials)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerExchange(ls.oauth_options, self.clock, ls.jwks)
        raise ValueError(mechanism)
