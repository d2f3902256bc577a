"""TLS listeners (issue 13): SSL beside PLAINTEXT, PEM and PKCS12 key stores, clients that do
or do not trust the broker, and bad input on a TLS port that must not hurt anyone else."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

from broker.cli import healthcheck
from tests.support.security_support import SecureBroker, tls_overrides

KCAT = shutil.which("kcat")


@pytest.fixture(scope="module")
def ssl_broker(pki, tmp_path_factory):
    b = SecureBroker(tmp_path_factory.mktemp("tls") / "data", ["SSL"],
                     {**tls_overrides(pki), "samsa.ssl.handshake.timeout.ms": "1500"}).start()
    try:
        yield b
    finally:
        b.stop()


def _topic() -> str:
    return f"tls-{uuid.uuid4().hex[:8]}"


def test_kafka_python_over_ssl(ssl_broker, pki) -> None:
    topic = _topic()
    p = KafkaProducer(bootstrap_servers=ssl_broker.bootstrap("SSL"), security_protocol="SSL",
                      ssl_cafile=str(pki.ca))
    for i in range(50):
        p.send(topic, f"v{i}".encode())
    p.flush()
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=ssl_broker.bootstrap("SSL"), security_protocol="SSL",
                      ssl_cafile=str(pki.ca), auto_offset_reset="earliest", consumer_timeout_ms=8000,
                      group_id="g-" + topic)
    got = [m.value for m in c]
    c.close()
    assert got == [f"v{i}".encode() for i in range(50)]


def test_confluent_over_ssl_fetches_large_batches(ssl_broker, pki) -> None:
    """librdkafka over TLS; the fetch answers come from segment files, which TLS cannot sendfile."""
    topic = _topic()
    conf = {"bootstrap.servers": ssl_broker.bootstrap("SSL"), "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca)}
    p = Producer(conf)
    payload = b"x" * 10000
    for i in range(300):
        p.produce(topic, payload + str(i).encode())
    assert p.flush(15) == 0
    c = Consumer({**conf, "group.id": "g-" + topic, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 300 and time.monotonic() < deadline:
        m = c.poll(1)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == [payload + str(i).encode() for i in range(300)]


def test_client_that_does_not_trust_the_broker_fails(ssl_broker, pki) -> None:
    with pytest.raises(KafkaError):
        p = KafkaProducer(bootstrap_servers=ssl_broker.bootstrap("SSL"), security_protocol="SSL",
                          ssl_cafile=str(pki.other_ca), max_block_ms=3000,
                          bootstrap_timeout_ms=3000)   # kafka-python 3 waits 30 s for a first bootstrap by default
        try:
            p.send("untrusted", b"x").get(5)
        finally:
            p.close(0)
    p = Producer({"bootstrap.servers": ssl_broker.bootstrap("SSL"), "security.protocol": "SSL",
                  "ssl.ca.location": str(pki.other_ca)})
    with pytest.raises(KafkaException):
        p.list_topics(timeout=3)
    del p
    assert healthcheck(ssl_broker.bootstrap_servers)


def test_plaintext_bytes_on_tls_port_close_without_harm(ssl_broker, pki) -> None:
    import struct
    with socket.create_connection(("127.0.0.1", ssl_broker.ports["SSL"]), timeout=5) as s:
        body = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
        s.sendall(struct.pack(">i", len(body)) + body)
        received = b""
        while chunk := s.recv(100):      # a TLS alert at most, then EOF (a timeout fails the test)
            received += chunk
        assert len(received) < 100 and b"test" not in received
    test_kafka_python_over_ssl(ssl_broker, pki)


def test_stalled_tls_handshake_is_closed_and_others_proceed(ssl_broker, pki) -> None:
    stalled = [socket.create_connection(("127.0.0.1", ssl_broker.ports["SSL"]), timeout=10) for _ in range(5)]
    try:
        test_kafka_python_over_ssl(ssl_broker, pki)   # served while the others hang
        for s in stalled:
            s.settimeout(5)
            assert s.recv(10) == b""                   # the broker closed it (timeout 1.5 s)
    finally:
        for s in stalled:
            s.close()


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")
def test_kcat_over_ssl(ssl_broker, pki) -> None:
    topic = _topic()
    args = ["-b", ssl_broker.bootstrap("SSL"), "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki.ca}"]
    subprocess.run([KCAT, *args, "-P", "-t", topic], input=b"a\nb\nc\n", check=True, timeout=30)
    out = subprocess.run([KCAT, *args, "-C", "-t", topic, "-o", "beginning", "-e", "-q"], capture_output=True,
                         check=True, timeout=30).stdout
    assert out.split() == [b"a", b"b", b"c"]


def test_pkcs12_keystore_and_inline_pem(pki, tmp_path) -> None:
    """ssl.keystore.type=PKCS12 read with `cryptography`; a second listener's key store given
    inline (ssl.keystore.certificate.chain / ssl.keystore.key) through a listener prefix."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), None)
    cert = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
    p12 = tmp_path / "server.p12"
    p12.write_bytes(pkcs12.serialize_key_and_certificates(
        b"server", key, cert, None, serialization.BestAvailableEncryption(b"store-secret")))
    b = SecureBroker(tmp_path / "data", ["SSL", "INTERNAL"], {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL",
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(p12), "ssl.keystore.password": "store-secret",
        "listener.name.internal.ssl.keystore.type": "PEM",
        "listener.name.internal.ssl.keystore.certificate.chain": pki.server_cert.read_text(),
        "listener.name.internal.ssl.keystore.key": pki.server_key.read_text(),
    })
    b.start()
    try:
        for name in ("SSL", "INTERNAL"):
            p = Producer({"bootstrap.servers": b.bootstrap(name), "security.protocol": "SSL",
                          "ssl.ca.location": str(pki.ca)})
            md = p.list_topics(timeout=10)
            assert [(x.host, x.port) for x in md.brokers.values()] == [("127.0.0.1", b.ports[name])]
        assert "store-secret" not in b.read_log()
    finally:
        b.stop()


def test_enabled_protocols_and_cipher_suites(pki, tmp_path) -> None:
    """ssl.enabled.protocols bounds the TLS versions; ssl.cipher.suites (Kafka's IANA names)
    picks the TLS 1.2 suites."""
    import ssl
    b = SecureBroker(tmp_path / "data", ["SSL", "MODERN"], {
        **tls_overrides(pki),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MODERN:SSL",
        "ssl.enabled.protocols": "TLSv1.2",
        "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "listener.name.modern.ssl.enabled.protocols": "TLSv1.3"})
    b.start()

    def handshake(port: int, version: ssl.TLSVersion) -> tuple[str, str]:
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        ctx.minimum_version = ctx.maximum_version = version
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                return s.version(), s.cipher()[0]
    try:
        assert handshake(b.ports["SSL"], ssl.TLSVersion.TLSv1_2) == ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384")
        with pytest.raises((ssl.SSLError, ConnectionError)):
            handshake(b.ports["SSL"], ssl.TLSVersion.TLSv1_3)
        assert handshake(b.ports["MODERN"], ssl.TLSVersion.TLSv1_3)[0] == "TLSv1.3"
        with pytest.raises((ssl.SSLError, ConnectionError)):
            handshake(b.ports["MODERN"], ssl.TLSVersion.TLSv1_2)
    finally:
        b.stop()
