"""The ACL authorizer (issue 13): Kafka's StandardAuthorizer configured by its class name,
super users, exact authorization errors for a principal without ACLs, prefixed and deny ACLs,
mTLS principals, and ACLs and SCRAM credentials that survive a restart."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from tests.rawclient import RawClient
from tests.security_support import SecureBroker, make_pki, tls_overrides

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";')
OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=eng.*$/$1/L,DEFAULT",
    "auto.create.topics.enable": "true",
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def acl_broker(pki, tmp_path_factory):
    b = SecureBroker(tmp_path_factory.mktemp("acl") / "data", ["SASL_PLAINTEXT", "SSL"],
                     {**tls_overrides(pki, client_auth="required"), **OVERRIDES}).start()
    try:
        yield b
    finally:
        b.stop()


def conf(broker, user: str) -> dict:
    return {"bootstrap.servers": broker.bootstrap("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"}


_ADMINS: dict = {}


def admin(broker) -> AdminClient:
    """One admin client per broker address (a client whose futures are pending must stay alive)."""
    key = (broker.bootstrap("SASL_PLAINTEXT"), broker.proc.pid if broker.proc else None)
    if key not in _ADMINS:
        _ADMINS[key] = AdminClient(conf(broker, "admin"))
    return _ADMINS[key]


def create_acls(broker, *bindings: AclBinding) -> None:
    for f in admin(broker).create_acls(list(bindings)).values():
        f.result(10)


def allow(rtype, name, op, principal="User:alice", pattern=ResourcePatternType.LITERAL,
          perm=AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


def produce_errors(c: dict, topic: str, n: int = 3) -> list:
    errors: list = []
    p = Producer({**c, "message.timeout.ms": 8000})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    return errors


def consume(c: dict, topic: str, group: str, n: int, timeout: float = 20) -> tuple[list[bytes], list]:
    cons = Consumer({**c, "group.id": group, "auto.offset.reset": "earliest"})
    cons.subscribe([topic])
    got, errors = [], []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        m = cons.poll(0.5)
        if m is None:
            continue
        if m.error():
            errors.append(m.error().code())
            if m.error().code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED):
                break
        else:
            got.append(m.value())
    cons.close()
    return got, errors


def _name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def test_super_user_does_everything(acl_broker) -> None:
    topic = _name("su-")
    assert produce_errors(conf(acl_broker, "admin"), topic) == [None] * 3
    got, _ = consume(conf(acl_broker, "admin"), topic, "g-" + topic, 3)
    assert got == [b"v0", b"v1", b"v2"]


def test_principal_without_acls_gets_exact_errors(acl_broker) -> None:
    topic = _name("noacl-")
    assert produce_errors(conf(acl_broker, "admin"), topic, 1) == [None]
    bob = conf(acl_broker, "bob")
    errs = produce_errors(bob, topic, 1)
    assert [e.code() for e in errs] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # Metadata hides the topic from bob; asking for it by name is TOPIC_AUTHORIZATION_FAILED
    md = Producer(bob).list_topics(timeout=10)
    assert topic not in md.topics
    md = Producer(bob).list_topics(topic, timeout=10)
    assert md.topics[topic].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    _, errors = consume(bob, topic, "g-bob", 1, timeout=10)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors
    tp = Producer({**bob, "transactional.id": "tx-bob"})
    with pytest.raises(KafkaException) as exc:
        tp.init_transactions(10)
    assert exc.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    bob_admin = AdminClient(bob)
    fs = bob_admin.create_topics([NewTopic(_name("bob-"), 1, 1)])
    with pytest.raises(KafkaException) as exc:
        next(iter(fs.values())).result(10)
    assert exc.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # (librdkafka's describe_acls drops a top-level error code, so this one is checked raw)
    with RawClient(acl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        c.request(17, 1, mechanism="PLAIN")
        assert c.request(36, 2, auth_bytes=b"\0bob\0bob-secret").error_code == 0
        r = c.request(29, 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                      principal_filter=None, host_filter=None, operation=1, permission_type=1)
        assert (r.error_code, r.resources) == (31, [])   # CLUSTER_AUTHORIZATION_FAILED
    # kafka-python sees the same codes
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError
    kp = KafkaProducer(bootstrap_servers=acl_broker.bootstrap("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                       sasl_mechanism="PLAIN", sasl_plain_username="bob", sasl_plain_password="bob-secret",
                       max_block_ms=5000)
    with pytest.raises(TopicAuthorizationFailedError):
        kp.send(topic, b"x").get(10)
    kp.close(0)


def test_prefixed_and_deny_acls_and_transactions(acl_broker) -> None:
    prefix = _name("app") + "-"
    topic, secret, group = prefix + "orders", prefix + "secret", prefix + "group"
    for t in (topic, secret):
        assert produce_errors(conf(acl_broker, "admin"), t, 2) == [None, None]
    P = ResourcePatternType.PREFIXED
    create_acls(acl_broker,
                allow(ResourceType.TOPIC, prefix, AclOperation.WRITE, pattern=P),
                allow(ResourceType.TOPIC, prefix, AclOperation.READ, pattern=P),
                allow(ResourceType.GROUP, prefix, AclOperation.READ, pattern=P),
                allow(ResourceType.TRANSACTIONAL_ID, prefix, AclOperation.WRITE, pattern=P),
                allow(ResourceType.TOPIC, secret, AclOperation.READ, perm=AclPermissionType.DENY))
    alice = conf(acl_broker, "alice")
    assert produce_errors(alice, topic, 3) == [None] * 3
    tp = Producer({**alice, "transactional.id": prefix + "tx"})
    tp.init_transactions(10)
    tp.begin_transaction()
    tp.produce(topic, b"in-txn")
    tp.commit_transaction(10)
    got, errors = consume(alice, topic, group, 6)
    assert got == [b"v0", b"v1", b"v0", b"v1", b"v2", b"in-txn"], errors
    # the deny wins over the prefixed allow; WRITE is still allowed on the denied topic
    _, errors = consume(alice, secret, group + "-2", 1, timeout=10)
    assert KafkaError.TOPIC_AUTHORIZATION_FAILED in errors
    assert produce_errors(alice, secret, 1) == [None]
    # alice's topic listing: only what she may describe
    listed = set(Producer(alice).list_topics(timeout=10).topics)
    assert {topic, secret} <= listed and all(t.startswith(prefix) for t in listed)
    # a group outside the prefix is refused
    _, errors = consume(alice, topic, "other-group", 1, timeout=10)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors


def test_mtls_principal_is_mapped_and_authorized(acl_broker, pki) -> None:
    topic = _name("mtls-")
    ssl_conf = {"bootstrap.servers": acl_broker.bootstrap("SSL"), "security.protocol": "SSL",
                "ssl.ca.location": str(pki.ca), "ssl.certificate.location": str(pki.client_cert),
                "ssl.key.location": str(pki.client_key)}
    errs = produce_errors(ssl_conf, topic, 1)
    assert [e.code() for e in errs] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # CN=alice,OU=eng,... maps to User:alice through the RULE
    create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.ALL))
    assert produce_errors(ssl_conf, topic, 2) == [None, None]
    # a certificate from an unknown CA, or none, cannot connect (ssl.client.auth=required)
    for extra in ({"ssl.certificate.location": str(pki.rogue_cert), "ssl.key.location": str(pki.rogue_key)},
                  {"ssl.certificate.location": None}):
        c = {**ssl_conf, **extra}
        c = {k: v for k, v in c.items() if v is not None}
        if "ssl.certificate.location" not in c:
            c.pop("ssl.key.location")
        with pytest.raises(KafkaException):
            Producer(c).list_topics(timeout=3)


def test_acl_admin_api_and_restart(acl_broker) -> None:
    prefix = _name("rs") + "-"
    topic = prefix + "t"
    assert produce_errors(conf(acl_broker, "admin"), topic, 1) == [None]
    for _ in range(2):   # creating an existing ACL again keeps one
        create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.WRITE, principal="User:bob"))
    flt = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    (found,) = admin(acl_broker).describe_acls(flt).result(10)
    assert (found.principal, found.operation, found.permission_type) == \
        ("User:bob", AclOperation.WRITE, AclPermissionType.ALLOW)
    # SCRAM credentials created by the admin API, used, and kept across a restart
    from kafka.admin import KafkaAdminClient
    from kafka.admin._users import ScramMechanism, UserScramCredentialUpsertion
    ka = KafkaAdminClient(bootstrap_servers=acl_broker.bootstrap("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="PLAIN", sasl_plain_username="admin", sasl_plain_password="admin-secret")
    ka.alter_user_scram_credentials([UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_512,
                                                                  "carol-pw", iterations=8192)])
    described = ka.describe_user_scram_credentials(["carol", "nobody"])
    ka.close()
    assert described["carol"] == {"error": None, "credential_infos": [
        {"mechanism": ScramMechanism.SCRAM_SHA_512, "iterations": 8192}]}
    assert described["nobody"]["error"] == "Attempt to describe a user credential that does not exist: nobody"
    carol = {**conf(acl_broker, "x"), "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "carol",
             "sasl.password": "carol-pw"}
    create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.WRITE, principal="User:carol"))
    assert produce_errors(carol, topic, 1) == [None]
    acl_broker.restart()
    assert {(b.principal, b.operation) for b in admin(acl_broker).describe_acls(flt).result(10)} == \
        {("User:bob", AclOperation.WRITE), ("User:carol", AclOperation.WRITE)}
    assert produce_errors(carol, topic, 1) == [None]
    assert produce_errors(conf(acl_broker, "bob"), topic, 1) == [None]
    # delete: bob loses WRITE again
    for f in admin(acl_broker).delete_acls([AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", None, AclOperation.ANY,
            AclPermissionType.ANY)]).values():
        assert len(f.result(10)) == 1
    assert [e.code() for e in produce_errors(conf(acl_broker, "bob"), topic, 1)] == \
        [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_describe_acls_without_authorizer_is_security_disabled(samsa_broker) -> None:
    with RawClient(samsa_broker.bootstrap_servers) as c:
        r = c.request(29, 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                      principal_filter=None, host_filter=None, operation=1, permission_type=1)
        assert r.error_code == 54   # SECURITY_DISABLED


def test_authorized_operations(acl_broker) -> None:
    """KIP-430: Metadata/DescribeCluster/DescribeGroups report what the principal may do."""
    from confluent_kafka import TopicCollection
    topic = _name("ops-")
    assert produce_errors(conf(acl_broker, "admin"), topic, 1) == [None]
    create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.READ, principal="User:bob"),
                allow(ResourceType.TOPIC, topic, AclOperation.ALTER_CONFIGS, principal="User:bob"))
    bob_admin = AdminClient(conf(acl_broker, "bob"))
    described = bob_admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(10)
    assert set(described.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE,
                                                    AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS}
    with RawClient(acl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        c.request(17, 1, mechanism="PLAIN")
        c.request(36, 2, auth_bytes=b"\0admin\0admin-secret")
        r = c.request(60, 1, include_cluster_authorized_operations=True, endpoint_type=1)
        assert r.authorized_operations == {5, 7, 8, 9, 10, 11, 12}   # a super user: every cluster operation
