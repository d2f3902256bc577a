"""ACL tests' helpers: confluent-kafka settings per SASL/PLAIN user, CreateAcls as the super user,
ACL bindings, what a producer is told, and a raw client that builds requests from plain dicts
(exact error codes for every API family)."""
from __future__ import annotations

import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AclBinding, AclPermissionType, AdminClient, ResourcePatternType

from tests.support.rawclient import RawClient

# SASL/PLAIN users of the ACL brokers: admin (their super user), alice and bob; password <user>-secret
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')


def plain_conf(broker, user: str) -> dict:
    """confluent-kafka settings to log in to ``broker``'s SASL_PLAINTEXT listener as ``user``
    (SASL/PLAIN, password ``<user>-secret``)."""
    return {"bootstrap.servers": broker.bootstrap("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"}


_ADMINS: dict = {}


def admin(broker) -> AdminClient:
    """One admin client per broker address (a client whose futures are pending must stay alive)."""
    key = (broker.bootstrap("SASL_PLAINTEXT"), broker.proc.pid if broker.proc else None)
    if key not in _ADMINS:
        _ADMINS[key] = AdminClient(plain_conf(broker, "admin"))
    return _ADMINS[key]


def create_acls(broker, *bindings: AclBinding) -> None:
    """CreateAcls as the super user ``admin``; waits for every binding's result."""
    for f in admin(broker).create_acls(list(bindings)).values():
        f.result(10)


def allow(rtype, name, op, principal="User:alice", pattern=ResourcePatternType.LITERAL,
          perm=AclPermissionType.ALLOW) -> AclBinding:
    """A binding (ALLOW by default) for ``principal`` from any host."""
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


def produce_errors(c: dict, topic: str, n: int = 3) -> list:
    """The delivery error (None when delivered) of each of ``n`` records produced with ``c``."""
    errors: list = []
    p = Producer({**c, "message.timeout.ms": 8000})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    return errors


def unique_name(prefix: str) -> str:
    """``prefix`` and 8 random hex digits (no separator: the prefix carries its own)."""
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def build_message(cls, data: dict):
    """A kafka-python message (or nested struct) from plain dicts and lists."""
    kwargs = {}
    for key, value in data.items():
        struct = cls.fields[key]._type_str.removeprefix("[]")
        nested = getattr(cls, struct, None)
        if nested is not None and isinstance(value, list):
            value = [build_message(nested, v) if isinstance(v, dict) else v for v in value]
        elif nested is not None and isinstance(value, dict):
            value = build_message(nested, value)
        kwargs[key] = value
    return cls(**kwargs)


class DictClient(RawClient):
    """A RawClient whose ``request`` takes nested plain dicts and lists for the request's structs."""

    def request(self, api_key: int, version: int, **fields):
        from protocol.messages import REQUESTS, RESPONSES
        return self.call(build_message(REQUESTS[api_key], fields), RESPONSES[api_key], version)
