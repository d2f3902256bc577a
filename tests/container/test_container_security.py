"""Issue 13 in the image: TLS, SASL (PLAIN, SCRAM-SHA-512), mTLS principals and ACLs configured
only through ``KAFKA_*`` variables and certificates mounted read-only, as the manual's
"TLS, SASL and ACLs in the container" shows them.

One container runs the manual's env file (docs/containers.md) and ``docker run`` command (fresh name, host ports and
volume; certificates made at test time, PEM and a PKCS12 key store) for the whole module; real
clients on the host (confluent-kafka, kafka-python) talk to the published ports. The last tests
restart it on the same volume and read its logs. Skipped with the reason when no Docker daemon answers.
"""
from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)
from cryptography import x509
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, load_pem_private_key, pkcs12

from broker.testing import free_port
from tests.support.dockerhelpers import (Resources, build_once, docker, health, inspect, logs, report, requires_docker, sh, wait_for)
from tests.support.doc_pages import page
from tests.support.security_support import Pki, consume_records as consume, make_pki
from tests.support.container_support import BUILD

pytestmark = [pytest.mark.container, requires_docker]

DOCS_PAGE = "containers.md"   # the page whose env file and command this module runs
# The page's command; the test substitutes the name, ports, secrets folder and volume.
RUN = ('docker run -d --name samsa-secure -p 19093:9093 -p 19094:9094 --env-file samsa-secure.env '
       '-v "$PWD/secrets:/etc/kafka/secrets:ro" -v samsa-secure-data:/var/lib/samsa/data samsa')
# What the page's env file says (a test below checks the file still says it).
SECRETS = {"admin-secret", "bob-secret", "admin-scram-secret", "keystore-secret"}
HEALTHY_WITHIN_S = 40


def docs_env() -> list[tuple[str, str]]:
    """The page's ```env block: (name, value) pairs, exactly as `docker run --env-file` reads them."""
    block = re.search(r"```env\n(.*?)```", page(DOCS_PAGE), re.S)
    assert block, f"docs/{DOCS_PAGE} has no ```env block (the secure container's env file)"
    return [tuple(line.split("=", 1)) for line in block.group(1).splitlines() if line.strip()]  # type: ignore[misc]


@dataclass
class SecureContainer:
    name: str
    sasl_port: int
    mtls_port: int
    pki: Pki

    def sasl(self, user: str, password: str, mechanism: str = "PLAIN", **extra: object) -> dict:
        return {"bootstrap.servers": f"localhost:{self.sasl_port}", "security.protocol": "SASL_SSL",
                "ssl.ca.location": str(self.pki.ca), "sasl.mechanisms": mechanism, "sasl.username": user,
                "sasl.password": password, **extra}

    def mtls(self) -> dict:
        return {"bootstrap.servers": f"localhost:{self.mtls_port}", "security.protocol": "SSL",
                "ssl.ca.location": str(self.pki.ca), "ssl.certificate.location": str(self.pki.client_cert),
                "ssl.key.location": str(self.pki.client_key)}

    @cached_property
    def admin(self) -> AdminClient:
        """The SCRAM super user's admin client, kept (a client whose futures are pending must stay alive)."""
        return AdminClient(self.sasl("admin", "admin-scram-secret", "SCRAM-SHA-512"))


def write_secrets(folder: Path) -> Pki:
    """CA, broker certificate (SAN localhost/127.0.0.1) and client certificate, as PEM, plus the
    broker's key and certificate as a PKCS12 key store and its password files; readable by the
    image's uid 10001."""
    pki = make_pki(folder)
    (folder / "server.pem").write_bytes(pki.server_pem.read_bytes())
    key = load_pem_private_key(pki.server_key.read_bytes(), None)
    cert = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    (folder / "server.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"samsa", key, cert, [ca], BestAvailableEncryption(b"keystore-secret")))  # type: ignore[arg-type]
    for creds in ("keystore_creds", "key_creds"):   # the official image's password files
        (folder / creds).write_text("keystore-secret\n")
    folder.chmod(0o755)
    for f in folder.iterdir():
        f.chmod(0o644)
    return pki


def wait_healthy(name: str) -> float:
    def healthy() -> bool:
        assert inspect(name, "{{.State.Running}}") == "true", f"{name} exited:\n{logs(name)[-3000:]}"
        return health(name) == "healthy"
    return wait_for(f"{name} healthy", healthy, HEALTHY_WITHIN_S, 0.2)


@pytest.fixture(scope="module")
def secure(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureContainer]:
    build_once(pytestconfig, BUILD, "samsa")
    res = Resources()
    try:
        folder = tmp_path_factory.mktemp("container-secrets")
        pki = write_secrets(folder / "secrets")
        sasl_port, mtls_port = free_port(), free_port()
        env_file = folder / "samsa-secure.env"
        env_file.write_text("".join(f"{k}={v}\n" for k, v in docs_env())
                            .replace("localhost:19093", f"localhost:{sasl_port}")
                            .replace("localhost:19094", f"localhost:{mtls_port}"))
        name, volume = res.container("secure"), res.volume("secure")
        command = (RUN.replace("samsa-secure.env", str(env_file)).replace("--name samsa-secure", f"--name {name}")
                   .replace("19093:9093", f"{sasl_port}:9093").replace("19094:9094", f"{mtls_port}:9094")
                   .replace("samsa-secure-data", volume))
        t0 = time.monotonic()
        sh(command, cwd=folder, timeout=60)
        container = SecureContainer(name, sasl_port, mtls_port, pki)
        wait_healthy(name)
        report(pytestconfig, [f"secure container (SASL_SSL + mTLS, ACLs) healthy {time.monotonic() - t0:.1f} s "
                              "after `docker run -d`"])
        yield container
    finally:
        res.cleanup()


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce(conf: dict, topic: str, values: list[bytes]) -> list:
    """Delivery errors, one per record (None: delivered)."""
    errors: list = []
    p = Producer({**conf, "acks": "all", "message.timeout.ms": 10000})
    for i, v in enumerate(values):
        p.produce(topic, key=f"k{i}".encode(), value=v, on_delivery=lambda err, msg: errors.append(err))
    p.flush(20)
    return errors


def expected(values: list[bytes]) -> list:
    return [(i, f"k{i}".encode(), v) for i, v in enumerate(values)]


def grant(secure: SecureContainer, principal: str, *resources: tuple[ResourceType, str, AclOperation]) -> None:
    bindings = [AclBinding(rtype, name, ResourcePatternType.LITERAL, principal, "*", op, AclPermissionType.ALLOW)
                for rtype, name, op in resources]
    for f in secure.admin.create_acls(bindings).values():
        f.result(15)


def login_errors(conf: dict) -> tuple[set, str]:
    """The codes of the errors librdkafka reports while it fails to fetch metadata with this
    configuration (besides "all brokers down", which follows any of them), and the first message."""
    errors: list = []
    p = Producer({**conf, "error_cb": errors.append})
    with pytest.raises(KafkaException):
        p.list_topics(timeout=3)
    p.poll(0.5)
    return {e.code() for e in errors} - {KafkaError._ALL_BROKERS_DOWN}, errors[0].str() if errors else ""


# ---------------------------------------------------------------- the manual's configuration
def test_docs_show_what_this_runs():
    text = page(DOCS_PAGE)
    assert RUN in text
    env = dict(docs_env())
    assert all(k.startswith("KAFKA_") for k in env)   # only the official image's kind of variable
    assert SECRETS - {"keystore-secret"} <= set(re.findall(r"[\w-]+-secret", " ".join(env.values())))
    assert "keystore-secret" in text


def test_healthcheck_asks_the_mtls_listener(secure: SecureContainer):
    last = inspect(secure.name)["State"]["Health"]["Log"][-1]
    assert (last["ExitCode"], last["Output"].strip()) == (
        0, "samsa healthcheck: 127.0.0.1:9094 (MTLS, SSL) answered ApiVersions and Metadata")


# ---------------------------------------------------------------- SASL_SSL: PLAIN and SCRAM
def test_super_user_over_plain_and_scram_produces_and_consumes_in_a_group(secure: SecureContainer):
    topic = _id("orders")
    values = [f"order-{i}".encode() for i in range(8)]
    assert produce(secure.sasl("admin", "admin-secret", "PLAIN"), topic, values) == [None] * 8
    got, errors = consume(secure.sasl("admin", "admin-scram-secret", "SCRAM-SHA-512"), topic, _id("g-admin"), 8)
    assert (got, errors) == (expected(values), [])


def test_principal_without_acls_is_refused_then_granted(secure: SecureContainer):
    topic, group = _id("payments"), _id("g-bob")
    admin_values = [b"from-admin"]
    assert produce(secure.sasl("admin", "admin-secret"), topic, admin_values) == [None]
    bob = secure.sasl("bob", "bob-secret")
    assert [e.code() for e in produce(bob, topic, [b"x"])] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    _, errors = consume(bob, topic, group, 1, timeout=15)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors
    grant(secure, "User:bob", (ResourceType.TOPIC, topic, AclOperation.WRITE),
          (ResourceType.TOPIC, topic, AclOperation.READ), (ResourceType.GROUP, group, AclOperation.READ))
    assert produce(bob, topic, [b"from-bob-0", b"from-bob-1"]) == [None, None]
    got, errors = consume(bob, topic, group, 3)
    assert (got, errors) == ([(0, b"k0", b"from-admin"), (1, b"k0", b"from-bob-0"), (2, b"k1", b"from-bob-1")], [])


def test_wrong_password_and_an_untrusted_ca_fail(secure: SecureContainer):
    codes, first = login_errors(secure.sasl("bob", "not-bobs-password"))
    assert codes == {KafkaError._AUTHENTICATION}
    assert "SASL authentication error: Authentication failed: Invalid username or password" in first
    codes, first = login_errors(secure.sasl("admin", "wrong", "SCRAM-SHA-512"))
    assert codes == {KafkaError._AUTHENTICATION}
    assert "SASL authentication error: Authentication failed" in first
    for conf in (secure.sasl("admin", "admin-secret", **{"ssl.ca.location": str(secure.pki.other_ca)}),
                 {**secure.mtls(), "ssl.ca.location": str(secure.pki.other_ca)}):
        codes, first = login_errors(conf)
        # The verification failure, then (on retries) its closed connections; never a session.
        assert KafkaError._SSL in codes and codes <= {KafkaError._SSL, KafkaError._TRANSPORT}
        assert "certificate verify failed" in first
    # ssl.client.auth=required on the mTLS listener: no client certificate, no metadata (the
    # broker closes the connection; login_errors asserts list_topics fails).
    bare = {k: v for k, v in secure.mtls().items() if k not in ("ssl.certificate.location", "ssl.key.location")}
    codes, _ = login_errors(bare)
    assert codes <= {KafkaError._SSL, KafkaError._TRANSPORT}


# ---------------------------------------------------------------- mTLS
def test_mtls_principal_is_mapped_and_authorized(secure: SecureContainer):
    topic, group = _id("telemetry"), _id("g-alice")
    assert [e.code() for e in produce(secure.mtls(), topic, [b"x"])] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # CN=alice,OU=eng,O=samsa,C=US is User:alice by KAFKA_SSL_PRINCIPAL_MAPPING_RULES.
    grant(secure, "User:alice", (ResourceType.TOPIC, topic, AclOperation.ALL),
          (ResourceType.GROUP, group, AclOperation.READ))
    values = [f"t-{i}".encode() for i in range(5)]
    assert produce(secure.mtls(), topic, values) == [None] * 5
    got, errors = consume(secure.mtls(), topic, group, 5)
    assert (got, errors) == (expected(values), [])


# ---------------------------------------------------------------- kafka-python, SCRAM user made at run time
def kafka_python_round_trip(port: int, pki: Pki, user: str, password: str, topic: str, group: str,
                            values: list[bytes]) -> list[tuple[int, bytes]]:
    from kafka import KafkaConsumer, KafkaProducer
    common = dict(bootstrap_servers=f"localhost:{port}", security_protocol="SASL_SSL", ssl_cafile=str(pki.ca),
                  sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=user, sasl_plain_password=password)
    if values:
        p = KafkaProducer(acks="all", **common)
        try:
            for v in values:
                p.send(topic, v)
            p.flush(20)
        finally:
            p.close(5)
    c = KafkaConsumer(topic, group_id=group, auto_offset_reset="earliest", consumer_timeout_ms=8000, **common)
    try:
        return [(m.offset, m.value) for m in c]
    finally:
        c.close()


def test_kafka_python_with_a_scram_user_created_through_the_admin_api(secure: SecureContainer):
    topic, group = _id("ledger"), _id("g-carol")
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          b"carol-secret")
    for f in secure.admin.alter_user_scram_credentials([upsert]).values():
        f.result(15)
    grant(secure, "User:carol", (ResourceType.TOPIC, topic, AclOperation.ALL),
          (ResourceType.GROUP, group, AclOperation.READ))
    values = [f"l-{i}".encode() for i in range(6)]
    got = kafka_python_round_trip(secure.sasl_port, secure.pki, "carol", "carol-secret", topic, group, values)
    assert got == list(enumerate(values))


# ---------------------------------------------------------------- restart, logs
def test_acls_and_scram_credentials_survive_a_restart(secure: SecureContainer):
    topic, group = _id("audit"), _id("g-dave")
    upsert = UserScramCredentialUpsertion("dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                          b"dave-secret")
    for f in secure.admin.alter_user_scram_credentials([upsert]).values():
        f.result(15)
    grant(secure, "User:dave", (ResourceType.TOPIC, topic, AclOperation.ALL),
          (ResourceType.GROUP, group, AclOperation.READ))
    values = [f"a-{i}".encode() for i in range(4)]
    dave = secure.sasl("dave", "dave-secret", "SCRAM-SHA-512")
    assert produce(dave, topic, values) == [None] * 4
    dave_acls = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:dave", None,
                                 AclOperation.ANY, AclPermissionType.ANY)
    before = sorted(str(b) for b in secure.admin.describe_acls(dave_acls).result(15))
    assert len(before) == 2

    docker("restart", secure.name, timeout=60)
    wait_healthy(secure.name)
    # The same ACLs; dave's SCRAM credential and the bootstrap admin's still log in; bob (PLAIN,
    # from the env) is still refused a topic he has no ACL for.
    assert sorted(str(b) for b in secure.admin.describe_acls(dave_acls).result(15)) == before
    got, errors = consume(dave, topic, group, 4)
    assert (got, errors) == (expected(values), [])
    assert [e.code() for e in produce(secure.sasl("bob", "bob-secret"), topic, [b"x"])] == \
        [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert "clean_shutdown=True" in logs(secure.name)


def test_logs_hold_no_password(secure: SecureContainer):
    text = logs(secure.name)
    for listener, port, protocol in (("SASL_SSL", 9093, "SASL_SSL"), ("MTLS", 9094, "SSL")):
        assert re.search(rf"listening +host=0\.0\.0\.0 listener={listener} port={port} security_protocol={protocol}",
                         text), text[-2000:]
    for secret in SECRETS | {"carol-secret", "dave-secret", "not-bobs-password"}:
        assert secret not in text, f"{secret!r} appears in docker logs"
