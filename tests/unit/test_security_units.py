"""Pure-function pieces of issue 13's security: the authorizer's rules (Kafka's
StandardAuthorizerData), ACL/SCRAM records in the metadata log (replay, guards, migration of the
old security file), principal mapping rules, JAAS parsing, SCRAM
credential derivation and the unsecured OAUTHBEARER validator."""
from __future__ import annotations

import base64
import hashlib
import json
import time

import pytest

from broker.common.config import ConfigError
from broker.security.acl import Authorizer, Operation as Op, PatternType as PT, Permission as Perm, ResourceType as RT
from broker.security.acl import AclBinding
from coordinator.metadata.records import RemoveAccessControlEntryRecord, UserScramCredentialRecord
from broker.security.sasl import AuthenticationFailed, OAuthBearerExchange, PlainExchange, parse_jaas, scram_credential
from broker.security.tls import _openssl_cipher, map_principal, parse_mapping_rules


def authorizer(*acls: AclBinding, supers=(), allow_if_none=False) -> Authorizer:
    from coordinator.metadata.image import MetadataImage, replay_all
    from dataclasses import replace
    image, _ = replay_all(MetadataImage(), [replace(a, id=str(i)) for i, a in enumerate(acls)])
    return Authorizer(lambda: image.acls, supers, allow_if_none)


def acl(rt=RT.TOPIC, name="orders", pt=PT.LITERAL, principal="User:alice", host="*", op=Op.READ,
        perm=Perm.ALLOW, id="") -> AclBinding:
    return AclBinding(id, rt, name, pt, principal, host, op, perm)


def test_literal_prefixed_and_wildcard_matching() -> None:
    a = authorizer(acl(name="orders"), acl(name="pay-", pt=PT.PREFIXED, op=Op.WRITE), acl(name="*", op=Op.DESCRIBE))
    assert a.authorize("User:alice", "h", Op.READ, RT.TOPIC, "orders")
    assert not a.authorize("User:alice", "h", Op.READ, RT.TOPIC, "orders2")
    assert a.authorize("User:alice", "h", Op.WRITE, RT.TOPIC, "pay-eu")
    assert not a.authorize("User:alice", "h", Op.WRITE, RT.TOPIC, "pa")
    assert a.authorize("User:alice", "h", Op.DESCRIBE, RT.TOPIC, "anything")
    assert not a.authorize("User:bob", "h", Op.READ, RT.TOPIC, "orders")
    assert not a.authorize("User:alice", "h", Op.READ, RT.GROUP, "orders")


def test_implied_describe_only_for_allow() -> None:
    a = authorizer(acl(op=Op.WRITE), acl(name="cfg", op=Op.ALTER_CONFIGS))
    assert a.authorize("User:alice", "h", Op.DESCRIBE, RT.TOPIC, "orders")
    assert a.authorize("User:alice", "h", Op.DESCRIBE_CONFIGS, RT.TOPIC, "cfg")
    assert not a.authorize("User:alice", "h", Op.READ, RT.TOPIC, "orders")
    # a DENY READ does not deny DESCRIBE
    b = authorizer(acl(op=Op.ALL), acl(op=Op.READ, perm=Perm.DENY))
    assert not b.authorize("User:alice", "h", Op.READ, RT.TOPIC, "orders")
    assert b.authorize("User:alice", "h", Op.DESCRIBE, RT.TOPIC, "orders")


def test_deny_wins_and_wildcard_principal_and_host() -> None:
    a = authorizer(acl(principal="User:*", op=Op.ALL), acl(host="10.0.0.9", op=Op.ALL, perm=Perm.DENY),
                   acl(name="o", pt=PT.PREFIXED, principal="User:bob", op=Op.ALL, perm=Perm.DENY))
    assert a.authorize("User:alice", "10.0.0.1", Op.READ, RT.TOPIC, "orders")
    assert not a.authorize("User:alice", "10.0.0.9", Op.READ, RT.TOPIC, "orders")
    assert not a.authorize("User:bob", "10.0.0.1", Op.WRITE, RT.TOPIC, "orders")


def test_super_users_and_no_acl_found() -> None:
    a = authorizer(acl(name="guarded"), supers=["User:admin"], allow_if_none=True)
    assert a.authorize("User:admin", "h", Op.ALTER, RT.CLUSTER, "kafka-cluster")
    assert a.authorize("User:bob", "h", Op.READ, RT.TOPIC, "free")          # no ACL on it
    assert not a.authorize("User:bob", "h", Op.READ, RT.TOPIC, "guarded")   # an ACL exists, not for bob
    assert not authorizer().authorize("User:bob", "h", Op.READ, RT.TOPIC, "free")


def test_authorize_any_topic_write_for_idempotence() -> None:
    assert authorizer(acl(name="x-", pt=PT.PREFIXED, op=Op.WRITE)).authorize_any("User:alice", "h", Op.WRITE, RT.TOPIC)
    assert not authorizer(acl(op=Op.READ)).authorize_any("User:alice", "h", Op.WRITE, RT.TOPIC)
    assert not authorizer(acl(op=Op.WRITE), acl(name="*", op=Op.WRITE, perm=Perm.DENY)).authorize_any(
        "User:alice", "h", Op.WRITE, RT.TOPIC)


def test_store_replays_records_and_drops_a_torn_tail(tmp_path) -> None:
    """ACLs and credentials are records of the single node's metadata log."""
    import trio
    from broker.metadata.local import LocalMetadataStore

    async def write(store, records) -> bool:
        return await store.append(records, base=store.image)

    store = LocalMetadataStore(str(tmp_path), 1)
    store.load()
    assert trio.run(write, store, [acl(id="a"), acl(name="x", id="b")])
    assert trio.run(write, store, [RemoveAccessControlEntryRecord("a")])
    assert trio.run(write, store, [UserScramCredentialRecord("u", 2, b"salt", b"\0", b"\1", 4096)])
    # the guards: an identical binding, or removing a missing ACL, is refused (decided again by the caller)
    assert not trio.run(write, store, [acl(name="x", id="other")])
    assert not trio.run(write, store, [RemoveAccessControlEntryRecord("a")])
    with open(store.path, "ab") as f:
        f.write(b'[{"type":"AccessControlEntryRecord","id":"c"')   # crash mid-write
    again = LocalMetadataStore(str(tmp_path), 1)
    again.load()
    assert list(again.image.acls) == ["b"] and again.image.acls["b"].resource_name == "x"
    assert again.image.scram_credentials[("u", 2)].iterations == 4096
    assert trio.run(write, again, [acl(name="d", id="d")])
    third = LocalMetadataStore(str(tmp_path), 1)
    third.load()
    assert sorted(third.image.acls) == ["b", "d"]


def test_old_security_file_is_migrated_once(tmp_path) -> None:
    """An earlier version's __security_metadata.jsonl: its final state goes into the metadata log
    once (what the log already has is not duplicated), then the file is kept as .migrated."""
    import trio
    from broker.common.config import BrokerConfig
    from broker.metadata.local import LocalMetadataStore
    from broker.security.setup import Security

    old = tmp_path / "__security_metadata.jsonl"
    rec = lambda i, name: {"type": "AccessControlEntryRecord", "id": i, "resourceType": 2,  # noqa: E731
                           "resourceName": name, "patternType": 3, "principal": "User:bob", "host": "*",
                           "operation": 4, "permissionType": 3}
    lines = [rec("a", "t1"), rec("b", "t2"), {"type": "RemoveAccessControlEntryRecord", "id": "a"},
             {"type": "UserScramCredentialRecord", "name": "carol", "mechanism": 2, "salt": "c2FsdA==",
              "storedKey": "AA==", "serverKey": "AQ==", "iterations": 8192}]
    old.write_text("".join(json.dumps(l) + "\n" for l in lines) + '{"type":"AccessControlEntryRecord","id":"torn"')
    store = LocalMetadataStore(str(tmp_path), 1)
    store.load()
    config = BrokerConfig({"log.dirs": str(tmp_path), "authorizer.class.name":
                           "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    security = Security(config, str(tmp_path), lambda: 0, lambda: store)
    trio.run(security.start)
    assert not old.exists() and (tmp_path / "__security_metadata.jsonl.migrated").exists()
    assert [(a.id, a.resource_name) for a in store.image.acls.values()] == [("b", "t2")]
    cred = store.image.scram_credentials[("carol", 2)]
    assert (cred.salt, cred.stored_key, cred.server_key, cred.iterations) == (b"salt", b"\0", b"\1", 8192)
    assert security.authorizer.authorize("User:bob", "h", Op.WRITE, RT.TOPIC, "t2")
    assert not security.authorizer.authorize("User:bob", "h", Op.WRITE, RT.TOPIC, "t1")
    # the same file again (a crash before the rename): nothing is written twice
    (tmp_path / "__security_metadata.jsonl.migrated").rename(old)
    offset = store.image.offset
    trio.run(security.start)
    assert store.image.offset == offset and len(store.image.acls) == 1


def test_principal_mapping_rules() -> None:
    rules = parse_mapping_rules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=([^,]*),O=(.*)$/$1@$2/U,DEFAULT")
    assert map_principal("CN=kafka-app,OU=ServiceUsers,O=acme", rules) == "kafka-app"
    assert map_principal("CN=Bob,O=acme", rules) == "BOB@ACME"
    assert map_principal("C=US,CN=x", rules) == "C=US,CN=x"
    with pytest.raises(ConfigError):
        map_principal("CN=x", parse_mapping_rules("RULE:^CN=y$/y/"))
    with pytest.raises(ConfigError):
        parse_mapping_rules("NONSENSE")


def test_jaas_and_plain() -> None:
    cfg = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                     'password="a\\"b" user_alice="alice-secret";')
    assert cfg.login_module.endswith("PlainLoginModule") and cfg.options["password"] == 'a"b'
    ex = PlainExchange({"alice": "alice-secret"})
    with pytest.raises(AuthenticationFailed):
        ex.step(b"\0alice\0nope")
    assert ex.step(b"\0alice\0alice-secret") == b"" and ex.principal == "alice"


@pytest.mark.parametrize("mechanism,mid", [("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)])
def test_scram_exchange_with_stored_credentials(mechanism, mid) -> None:
    """A client (scramp's) proves the password against keys derived by scram_credential."""
    import os
    import scramp
    from broker.security.sasl import ScramExchange
    from types import MappingProxyType
    cred = scram_credential(mid, "pencil", os.urandom(16), 4096, name="user")
    image = MappingProxyType({("user", mid): cred})
    for password, ok in (("pencil", True), ("pencil!", False)):
        client = scramp.ScramClient([mechanism], "user", password)
        server = ScramExchange(mechanism, lambda: image)
        first = server.step(client.get_client_first().encode()).decode()
        client.set_server_first(first)
        if ok:
            client.set_server_final(server.step(client.get_client_final().encode()).decode())
            assert server.principal == "user"
        else:
            with pytest.raises(AuthenticationFailed):
                server.step(client.get_client_final().encode())


def _jwt(claims: dict, alg: str = "none") -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()  # noqa: E731
    return f"{enc({'alg': alg})}.{enc(claims)}."


def test_unsecured_oauthbearer() -> None:
    now = time.time()
    ok = OAuthBearerExchange({}, lambda: int(now * 1000))
    assert ok.step(f"n,,\x01auth=Bearer {_jwt({'sub': 'alice', 'exp': now + 60})}\x01\x01".encode()) == b""
    assert ok.principal == "alice" and 59000 <= ok.lifetime_ms <= 60000
    expired = OAuthBearerExchange({}, lambda: int(now * 1000))
    answer = expired.step(f"n,,\x01auth=Bearer {_jwt({'sub': 'alice', 'exp': now - 1})}\x01\x01".encode())
    assert json.loads(answer)["status"] == "invalid_token" and expired.principal is None
    with pytest.raises(AuthenticationFailed):
        expired.step(b"\x01")
    signed = OAuthBearerExchange({}, lambda: int(now * 1000))
    signed.step(f"n,,\x01auth=Bearer {_jwt({'sub': 'a', 'exp': now + 60}, 'RS256')}\x01\x01".encode())
    assert signed.principal is None
    scoped = OAuthBearerExchange({"unsecuredValidatorRequiredScope": "write"}, lambda: int(now * 1000))
    scoped.step(f"n,,\x01auth=Bearer {_jwt({'sub': 'a', 'exp': now + 60, 'scope': 'read'})}\x01\x01".encode())
    assert scoped.principal is None


def test_cipher_suite_names() -> None:
    assert _openssl_cipher("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256") == "ECDHE-RSA-AES128-GCM-SHA256"
    assert _openssl_cipher("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == "ECDHE-ECDSA-CHACHA20-POLY1305"
    assert _openssl_cipher("ECDHE-RSA-AES256-GCM-SHA384") == "ECDHE-RSA-AES256-GCM-SHA384"


def test_jwks_validator(tmp_path) -> None:
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from broker.security.sasl import JwksValidator
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "k1", "alg": "RS256", "use": "sig"})
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    v = JwksValidator(f"file://{tmp_path / 'jwks.json'}", ["kafka"], "https://issuer", "sub", 30)
    now = time.time()
    good = {"sub": "alice", "aud": "kafka", "iss": "https://issuer", "exp": now + 60, "iat": now}
    sign = lambda claims, k=key: jwt.encode(claims, k, algorithm="RS256", headers={"kid": "k1"})  # noqa: E731
    assert v.validate(sign(good), int(now * 1000)) == ("alice", int((now + 60) * 1000))
    for bad in (sign(good, other), sign({**good, "aud": "other"}), sign({**good, "iss": "x"}),
                sign({**good, "exp": now - 120}), _jwt({"sub": "alice", "exp": now + 60})):
        with pytest.raises(ValueError):
            v.validate(bad, int(now * 1000))
    ex = OAuthBearerExchange({}, lambda: int(now * 1000), v)
    assert ex.step(f"n,,\x01auth=Bearer {sign(good)}\x01\x01".encode()) == b"" and ex.principal == "alice"
    unsecured = OAuthBearerExchange({}, lambda: int(now * 1000), v)
    assert b"invalid_token" in unsecured.step(
        f"n,,\x01auth=Bearer {_jwt({'sub': 'alice', 'exp': now + 60})}\x01\x01".encode())


def test_listener_security_protocol_map() -> None:
    from broker.common.config import BrokerConfig
    from broker.security.setup import Security
    c = BrokerConfig({"listeners": "CLIENT://:9092,MTLS://:9093,PLAINTEXT://:9094",
                      "listener.security.protocol.map": "CLIENT:SASL_SSL,MTLS:SSL,PLAINTEXT:PLAINTEXT",
                      "advertised.listeners": "CLIENT://kafka.example:9092,MTLS://kafka.example:9093,"
                                              "PLAINTEXT://kafka.example:9094"})
    assert [(l.name, l.security_protocol) for l in c.listeners] == [
        ("CLIENT", "SASL_SSL"), ("MTLS", "SSL"), ("PLAINTEXT", "PLAINTEXT")]
    assert [(l.host, l.security_protocol) for l in c.advertised_listeners][0] == ("kafka.example", "SASL_SSL")
    with pytest.raises(ConfigError):   # an explicit map must name every listener, as in Kafka
        BrokerConfig({"listeners": "X://:1", "listener.security.protocol.map": "Y:SSL"}).listeners
    with pytest.raises(ConfigError):
        BrokerConfig({"listener.security.protocol.map": "A:TLS"}).listeners
    # names outside the default map stay PLAINTEXT while the map is left alone (docker-compose.yml)
    assert [l.security_protocol for l in BrokerConfig({"listeners": "INTERNAL://:1"}).listeners] == ["PLAINTEXT"]
    with pytest.raises(ConfigError):
        Security(BrokerConfig({"listeners": "PLAINTEXT://:1", "inter.broker.listener.name": "REPLICATION"}), "/tmp",
                 lambda: 0)
    with pytest.raises(ConfigError):   # a TLS listener without a key store refuses to start
        Security(BrokerConfig({"listeners": "SSL://:1"}), "/tmp", lambda: 0)
    with pytest.raises(ConfigError):   # a SASL listener with only GSSAPI (Kafka's default) offers nothing
        Security(BrokerConfig({"listeners": "SASL_PLAINTEXT://:1"}), "/tmp", lambda: 0)


def test_sasl_ssl_ignores_broker_wide_client_auth(tmp_path) -> None:
    """KIP-684: ssl.client.auth applies to SASL_SSL listeners only with a listener prefix."""
    import ssl
    from broker.common.config import BrokerConfig
    from broker.security.tls import server_context
    from tests.support.security_support import make_pki, tls_overrides
    pki = make_pki(tmp_path)
    props = {"listeners": "SSL://:1,SASL_SSL://:2", **tls_overrides(pki, client_auth="required")}
    assert server_context(BrokerConfig(props), "SSL").verify_mode == ssl.CERT_REQUIRED
    assert server_context(BrokerConfig(props), "SASL_SSL", sasl=True).verify_mode == ssl.CERT_NONE
    props["listener.name.sasl_ssl.ssl.client.auth"] = "requested"
    assert server_context(BrokerConfig(props), "SASL_SSL", sasl=True).verify_mode == ssl.CERT_OPTIONAL
