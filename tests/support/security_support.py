"""Security helpers for the tests: the throwaway PKI and the broker with secure listeners come
from bench/tls.py (the TLS benchmark uses them too); here, what only the tests need: a
confluent-kafka consumer that records authorization errors, a Metadata check as a SASL user, a
SCRAM login."""
from __future__ import annotations

import time

from bench.tls import Pki, SecureBroker, make_pki, tls_overrides

__all__ = ["Pki", "SecureBroker", "make_pki", "tls_overrides", "PLAIN_JAAS", "SASL_OVERRIDES", "consume_records",
           "topic_error_as", "scram_login"]

# Every SASL mechanism on, for the SASL tests (python clients and Java): PLAIN users admin and alice,
# SCRAM credentials for alice, password <user>-secret
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SASL_OVERRIDES = {
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
    "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "samsa.scram.bootstrap.credentials": "SCRAM-SHA-512=[name=alice,password=alice-secret];"
                                         "SCRAM-SHA-256=[name=alice,password=alice-secret]",
    "sasl.server.max.receive.size": "65536",
    "connection.failed.authentication.delay.ms": "0",   # test_failed_login_close_is_delayed sets it
}


def consume_records(conf: dict, topic: str, group: str, n: int, timeout: float = 30) -> tuple[list, list]:
    """(offset, key, value) of the first n records a confluent-kafka consumer in ``group`` reads
    with ``conf``, and the error codes it polled; an authorization error ends the read."""
    from confluent_kafka import Consumer, KafkaError

    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest"})
    got: list = []
    errors: list = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                errors.append(m.error().code())
                if m.error().code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED):
                    break
            else:
                got.append((m.offset(), m.key(), m.value()))
    finally:
        c.close()
    return got, errors


def topic_error_as(bootstrap: str, user: str, topic: str) -> int:
    """The Metadata error ``bootstrap`` answers ``user`` (SASL/PLAIN, password ``<user>-secret``)
    for ``topic``: its own authorizer decides."""
    from kafka.protocol.metadata import MetadataRequest

    from tests.support.rawclient import RawClient

    with RawClient(bootstrap) as c:
        c.request(17, 1, mechanism="PLAIN")
        assert c.request(36, 2, auth_bytes=f"\0{user}\0{user}-secret".encode()).error_code == 0
        T = MetadataRequest[12].MetadataRequestTopic
        r = c.request(3, 12, topics=[T(topic_id=None, name=topic)], allow_auto_topic_creation=False,
                      include_topic_authorized_operations=False)
        return r.topics[0].error_code


def scram_login(bootstrap: str, user: str, password: str) -> int:
    """A SCRAM-SHA-512 exchange (scramp's client) on one broker: 0, or the error code."""
    import scramp

    from tests.support.rawclient import RawClient

    client = scramp.ScramClient(["SCRAM-SHA-512"], user, password)
    with RawClient(bootstrap) as c:
        assert c.request(17, 1, mechanism="SCRAM-SHA-512").error_code == 0
        first = c.request(36, 2, auth_bytes=client.get_client_first().encode())
        if first.error_code:
            return first.error_code
        client.set_server_first(first.auth_bytes.decode())
        final = c.request(36, 2, auth_bytes=client.get_client_final().encode())
        if final.error_code == 0:
            client.set_server_final(final.auth_bytes.decode())   # the server proved it knows the key
        return final.error_code
