"""The Java client 4.3 over SASL_SSL (PLAIN, SCRAM-SHA-512, OAUTHBEARER with Kafka's unsecured
login): transactional produce and a consumer group; and the authorization error a principal
without ACLs gets (issue 13)."""
from __future__ import annotations

import uuid

import pytest

from tests.support.javaclient import compile, last, requires_java, run_java
from tests.support.security_support import SASL_OVERRIDES, SecureBroker, make_pki, tls_overrides

pytestmark = [pytest.mark.java, requires_java]
JV = "4.3.0"

LOGIN = {
    "PLAIN": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="{u}" password="{u}-secret";',
    "SCRAM-SHA-512": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{u}" '
                     'password="{u}-secret";',
    "OAUTHBEARER": 'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                   'unsecuredLoginStringClaim_sub="{u}";',
}


@pytest.fixture(scope="module")
def java_broker(tmp_path_factory):
    compile(JV)
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
            'user_bob="bob-secret";')
    b = SecureBroker(tmp_path_factory.mktemp("java") / "data", ["SASL_SSL"], {
        **tls_overrides(pki), **SASL_OVERRIDES, "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:alice"}).start()
    try:
        yield b, pki
    finally:
        b.stop()


def props(pki, mechanism: str, user: str = "alice") -> list[str]:
    out = []
    for k, v in {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
                 "sasl.jaas.config": LOGIN[mechanism].format(u=user), "ssl.truststore.type": "PEM",
                 "ssl.truststore.location": str(pki.ca)}.items():
        out += ["--prop", f"{k}={v}"]
    return out


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_java_transactions_and_group_over_sasl_ssl(java_broker, mechanism) -> None:
    b, pki = java_broker
    topic = f"java-{uuid.uuid4().hex[:8]}"
    p = props(pki, mechanism)
    produced = last(run_java(JV, b.bootstrap("SASL_SSL"), "produce", "--topic", topic, "--count", 25,
                             "--transactional-id", "tx-" + topic, *p), "produce")
    assert (produced["acked"], produced["errors"]) == (25, 0)
    consumed = last(run_java(JV, b.bootstrap("SASL_SSL"), "consume-group", "--topic", topic, "--group", "g-" + topic,
                             "--max", 25, "--commit", "--prop", "isolation.level=read_committed", *p), "summary")
    assert consumed["count"] == 25


def test_java_principal_without_acls(java_broker) -> None:
    b, pki = java_broker
    topic = f"java-denied-{uuid.uuid4().hex[:8]}"
    lines = run_java(JV, b.bootstrap("SASL_SSL"), "produce", "--topic", topic, "--count", 1,
                     "--prop", "max.block.ms=8000", *props(pki, "PLAIN", "bob"), allow_errors=True)
    errors = [line for line in lines if line["type"] == "error"]
    assert errors and errors[0]["error"] == "TopicAuthorizationException", lines
