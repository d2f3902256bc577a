"""SASL (issue 13): PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER over SASL_SSL and SASL_PLAINTEXT with
librdkafka, kafka-python, aiokafka and the Java client; the authentication state machine
(requests before authentication, wrong passwords, garbage, oversized tokens, re-authentication)."""
from __future__ import annotations

import asyncio
import os
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer

from broker.cli import healthcheck
from tests.support.rawclient import RawClient
from tests.support.security_support import SASL_OVERRIDES, SecureBroker, tls_overrides


@pytest.fixture(scope="module")
def sasl_broker(pki, tmp_path_factory):
    b = SecureBroker(tmp_path_factory.mktemp("sasl") / "data", ["SASL_SSL", "SASL_PLAINTEXT"],
                     {**tls_overrides(pki), **SASL_OVERRIDES}).start()
    try:
        yield b
    finally:
        b.stop()


def _topic() -> str:
    return f"sasl-{uuid.uuid4().hex[:8]}"


def rdkafka_conf(broker, pki, mechanism: str, user: str = "alice", password: str = "alice-secret") -> dict:
    conf = {"bootstrap.servers": broker.bootstrap("SASL_SSL"), "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(pki.ca), "sasl.mechanisms": mechanism}
    if mechanism == "OAUTHBEARER":
        conf.update({"enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": f"principal={user}"})
    else:
        conf.update({"sasl.username": user, "sasl.password": password})
    return conf


def consume(conf: dict, topic: str, n: int, group: str, timeout: float = 30, **extra) -> list[bytes]:
    c = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest", **extra})
    c.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.commit(asynchronous=False)
    c.close()
    return got


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_librdkafka_produce_group_and_transactions(sasl_broker, pki, mechanism) -> None:
    conf = rdkafka_conf(sasl_broker, pki, mechanism)
    topic = _topic()
    p = Producer(conf)
    for i in range(20):
        p.produce(topic, f"m{i}".encode())
    assert p.flush(15) == 0
    tp = Producer({**conf, "transactional.id": "tx-" + topic})
    tp.init_transactions(15)
    tp.begin_transaction()
    tp.produce(topic, b"committed")
    tp.commit_transaction(15)
    tp.begin_transaction()
    tp.produce(topic, b"aborted")
    tp.abort_transaction(15)
    got = consume(conf, topic, 21, "g-" + topic, **{"isolation.level": "read_committed"})
    assert got == [f"m{i}".encode() for i in range(20)] + [b"committed"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256", "OAUTHBEARER"])
def test_kafka_python_sasl_ssl(sasl_broker, pki, mechanism) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Unsecured(AbstractTokenProvider):
        def token(self):
            return unsecured_jwt()
    common = dict(bootstrap_servers=sasl_broker.bootstrap("SASL_SSL"), security_protocol="SASL_SSL",
                  ssl_cafile=str(pki.ca), sasl_mechanism=mechanism)
    if mechanism == "OAUTHBEARER":
        common["sasl_oauth_token_provider"] = Unsecured()
    else:
        common.update(sasl_plain_username="alice", sasl_plain_password="alice-secret")
    topic = _topic()
    p = KafkaProducer(**common)
    for i in range(10):
        p.send(topic, f"k{i}".encode())
    p.flush()
    p.close()
    tp = KafkaProducer(transactional_id="tx-" + topic, **common)
    tp.init_transactions()
    tp.begin_transaction()
    tp.send(topic, b"committed")
    tp.commit_transaction()
    tp.begin_transaction()
    tp.send(topic, b"aborted")
    tp.abort_transaction()
    tp.close()
    c = KafkaConsumer(topic, group_id="g-" + topic, auto_offset_reset="earliest", consumer_timeout_ms=8000,
                      isolation_level="read_committed", **common)
    got = [m.value for m in c]
    c.close()
    assert got == [f"k{i}".encode() for i in range(10)] + [b"committed"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_aiokafka_sasl_ssl(sasl_broker, pki, mechanism) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context
    topic = _topic()

    async def run() -> list[bytes]:
        common = dict(bootstrap_servers=sasl_broker.bootstrap("SASL_SSL"), security_protocol="SASL_SSL",
                      ssl_context=create_ssl_context(cafile=str(pki.ca)), sasl_mechanism=mechanism)
        if mechanism == "OAUTHBEARER":
            common["sasl_oauth_token_provider"] = _AioUnsecuredToken()
        else:
            common.update(sasl_plain_username="alice", sasl_plain_password="alice-secret")
        p = AIOKafkaProducer(**common)
        await p.start()
        try:
            for i in range(4):
                await p.send_and_wait(topic, f"a{i}".encode())
        finally:
            await p.stop()
        tp = AIOKafkaProducer(transactional_id="tx-" + topic, **common)
        await tp.start()
        try:
            async with tp.transaction():
                await tp.send_and_wait(topic, b"a4")
        finally:
            await tp.stop()
        c = AIOKafkaConsumer(topic, group_id="g-" + topic, auto_offset_reset="earliest",
                             isolation_level="read_committed", **common)
        await c.start()
        got = []
        try:
            async with asyncio.timeout(20):
                async for m in c:
                    got.append(m.value)
                    if len(got) == 5:
                        break
        finally:
            await c.stop()
        return got

    assert asyncio.run(run()) == [f"a{i}".encode() for i in range(5)]


def unsecured_jwt(sub: str = "alice", lifetime_s: float = 3600) -> str:
    import base64
    import json
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()  # noqa: E731
    return enc({"alg": "none"}) + "." + enc({"sub": sub, "exp": time.time() + lifetime_s, "iat": time.time()}) + "."


def _AioUnsecuredToken():  # noqa: N802 (a class made on demand: aiokafka is imported lazily)
    from aiokafka.abc import AbstractTokenProvider

    class Token(AbstractTokenProvider):
        async def token(self) -> str:
            return unsecured_jwt()
    return Token()


# -- the state machine, through raw requests -------------------------------------------------
def _handshake(c: RawClient, mechanism: str = "PLAIN", version: int = 1):
    return c.request(17, version, mechanism=mechanism)


def test_wrong_password_fails_and_closes_without_logging_it(sasl_broker) -> None:
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        assert _handshake(c).error_code == 0
        r = c.request(36, 2, auth_bytes=b"\0alice\0wrong-password-xyz")
        assert r.error_code == 58   # SASL_AUTHENTICATION_FAILED
        assert r.error_message == "Authentication failed: Invalid username or password"
        assert c.is_closed()
    assert "wrong-password-xyz" not in sasl_broker.read_log()
    assert "alice-secret" not in sasl_broker.read_log()


def test_failed_login_close_is_delayed(pki, tmp_path) -> None:
    """connection.failed.authentication.delay.ms, as Kafka's Selector delays a failed
    authentication: the failure's answer and the close both come after the delay (brute force
    slows down); other connections are not held up. Every way to fail the exchange is delayed:
    a wrong password, an unsupported mechanism, another request during the exchange (answered
    ILLEGAL_SASL_STATE) or before the handshake (no answer), a bad raw token."""
    delay = 0.6
    b = SecureBroker(tmp_path / "data", ["SASL_PLAINTEXT"],
                     {**SASL_OVERRIDES, "connection.failed.authentication.delay.ms": str(int(delay * 1000))}).start()
    md = dict(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)

    def timed(c: RawClient, send, receive=None):
        """(seconds until the answer, seconds from the answer to the close)."""
        t0 = time.monotonic()
        send(c)
        answer = receive(c) if receive else None
        t1 = time.monotonic()
        closed = c.is_closed()
        return answer, t1 - t0, time.monotonic() - t1 if closed else None
    try:
        with RawClient(b.bootstrap("SASL_PLAINTEXT")) as c:
            _handshake(c)
            t0 = time.monotonic()
            corr = c.send(36, 2, auth_bytes=b"\0alice\0nope")
            with RawClient(b.bootstrap("SASL_PLAINTEXT")) as other:   # not held up meanwhile
                _handshake(other)
                assert other.request(36, 2, auth_bytes=b"\0alice\0alice-secret").error_code == 0
            assert time.monotonic() - t0 < delay
            r = c.receive(36, 2)
            waited = time.monotonic() - t0
            assert (r.header.correlation_id, r.error_code) == (corr, 58)
            assert c.is_closed(1.0)
            assert delay <= waited < delay + 1.5 and time.monotonic() - t0 < delay + 1.5
        cases = {
            "unsupported mechanism": (lambda c: c.send(17, 1, mechanism="GSSAPI"), lambda c: c.receive(17, 1).error_code,
                                      33),
            "request during the exchange": (lambda c: (_handshake(c), c.send(16, 4, states_filter=[])),
                                            lambda c: c.receive(16, 4).error_code, 34),   # ILLEGAL_SASL_STATE
            "request before the handshake": (lambda c: c.send(3, 12, **md), None, None),
            "bad raw token": (lambda c: (_handshake(c, "PLAIN", 0), c.send_raw(struct.pack(">i", 8) + b"\0alice\0x")),
                              None, None),
        }
        for name, (send, receive, expected) in cases.items():
            with RawClient(b.bootstrap("SASL_PLAINTEXT")) as c:
                answer, before, after = timed(c, send, receive)
                assert after is not None, f"{name}: not closed"
                if receive:
                    assert answer == expected, name
                    assert delay <= before < delay + 1.5 and after < 0.5, (name, before, after)
                else:
                    assert before + after >= delay, (name, before, after)
    finally:
        b.stop()


def test_plain_success_with_session_lifetime_zero(sasl_broker) -> None:
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        assert c.request(18, 3, client_software_name="t", client_software_version="1").error_code == 0
        hs = _handshake(c)
        assert hs.error_code == 0 and set(hs.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
        r = c.request(36, 2, auth_bytes=b"\0alice\0alice-secret")
        assert (r.error_code, r.session_lifetime_ms) == (0, 0)
        assert c.request(36, 2, auth_bytes=b"\0alice\0alice-secret").error_code == 34   # ILLEGAL_SASL_STATE
        hs = _handshake(c)   # no session lifetime: no re-authentication (KafkaApis answers, the connection stays)
        assert (hs.error_code, hs.mechanisms) == (34, [])
        assert c.request(3, 12, topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False
                         ).brokers


def test_request_before_authentication_closes(sasl_broker) -> None:
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        c.send(3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        assert c.is_closed()
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:   # between handshake and authenticate
        assert _handshake(c).error_code == 0
        from kafka.protocol.metadata import MetadataRequest
        r = c.request(3, 12, topics=[MetadataRequest.MetadataRequestTopic(name="t1")], allow_auto_topic_creation=False,
                      include_topic_authorized_operations=False)
        assert [(t.name, t.error_code) for t in r.topics] == [("t1", 34)]   # Kafka answers ILLEGAL_SASL_STATE
        assert c.is_closed()


def test_unsupported_mechanism_answers_then_closes(sasl_broker) -> None:
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        r = _handshake(c, "GSSAPI")
        assert r.error_code == 33 and "PLAIN" in r.mechanisms   # UNSUPPORTED_SASL_MECHANISM
        assert c.is_closed()


def test_handshake_v0_raw_tokens(sasl_broker) -> None:
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        assert _handshake(c, "PLAIN", 0).error_code == 0
        token = b"\0alice\0alice-secret"
        c.send_raw(struct.pack(">i", len(token)) + token)
        assert c.recv_frame() == b""       # an empty server token: authenticated
        assert c.request(3, 12, topics=[], allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False).brokers


def test_garbage_and_oversized_tokens_close_only_their_connection(sasl_broker, pki) -> None:
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        c.send_raw(struct.pack(">i", 40) + os.urandom(40))
        assert c.is_closed()
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        assert _handshake(c, "SCRAM-SHA-512").error_code == 0
        r = c.request(36, 2, auth_bytes=os.urandom(300))
        assert r.error_code == 58
        assert c.is_closed()
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        assert _handshake(c).error_code == 0
        c.send(36, 2, auth_bytes=b"\0alice\0" + b"x" * 100_000)   # > sasl.server.max.receive.size
        assert c.is_closed()
    with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:   # announces 50 MB: refused at the prefix
        c.send_raw(struct.pack(">i", 50_000_000) + b"\0" * 1000)
        assert c.is_closed()
    assert healthcheck(sasl_broker.bootstrap_servers)
    test_librdkafka_produce_group_and_transactions(sasl_broker, pki, "PLAIN")
    # once authenticated, the connection's frame limit is socket.request.max.bytes again
    conf = rdkafka_conf(sasl_broker, pki, "SCRAM-SHA-512")
    p = Producer({**conf, "message.max.bytes": 1_000_000})
    big = os.urandom(300_000)
    topic = _topic()
    p.produce(topic, big)
    assert p.flush(15) == 0
    assert consume(conf, topic, 1, "g-" + topic) == [big]


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_a_thousand_failed_logins_leave_memory_flat(sasl_broker) -> None:
    def fail(n: int) -> None:
        for _ in range(n):
            with RawClient(sasl_broker.bootstrap("SASL_PLAINTEXT")) as c:
                _handshake(c, "SCRAM-SHA-512")
                assert c.request(36, 2, auth_bytes=b"n,,n=alice,r=abc").error_code == 0   # server-first
                r = c.request(36, 2, auth_bytes=b"c=biws,r=abcXXXX,p=AAAA")
                assert r.error_code == 58
    fail(200)   # warm-up: allocator pools, logging buffers
    before = _rss_kb(sasl_broker.proc.pid)
    fail(1000)
    after = _rss_kb(sasl_broker.proc.pid)
    print(f"RSS before {before} kB, after 1,000 failed logins {after} kB")
    assert after - before < 4096, (before, after)


def test_failed_logins_with_the_default_delay_leave_memory_flat(tmp_path) -> None:
    """With Kafka's default connection.failed.authentication.delay.ms (100 ms) every failed
    connection is held a while before its answer and close: 1,000 of them, 25 at a time, leave
    the broker's memory flat (nothing kept per delayed connection once closed)."""
    from concurrent.futures import ThreadPoolExecutor
    overrides = {k: v for k, v in SASL_OVERRIDES.items() if k != "connection.failed.authentication.delay.ms"}
    b = SecureBroker(tmp_path / "data", ["SASL_PLAINTEXT"], overrides).start()

    def fail(n: int) -> None:
        for _ in range(n):
            with RawClient(b.bootstrap("SASL_PLAINTEXT")) as c:
                _handshake(c)
                t0 = time.monotonic()
                assert c.request(36, 2, auth_bytes=b"\0alice\0wrong").error_code == 58
                assert time.monotonic() - t0 >= 0.1
    try:
        with ThreadPoolExecutor(25) as pool:
            list(pool.map(fail, [8] * 25))        # warm-up: 200
            before = _rss_kb(b.proc.pid)
            t0 = time.monotonic()
            list(pool.map(fail, [40] * 25))       # 1,000
            elapsed = time.monotonic() - t0
        after = _rss_kb(b.proc.pid)
        print(f"RSS before {before} kB, after 1,000 delayed failed logins {after} kB ({elapsed:.1f} s)")
        assert after - before < 4096, (before, after)
    finally:
        b.stop()


def test_reauthentication(pki, tmp_path) -> None:
    """connections.max.reauth.ms (KIP-368): SaslAuthenticate v1+ tells the lifetime; a request
    after expiry closes the connection; re-authenticating in time keeps it."""
    b = SecureBroker(tmp_path / "data", ["SASL_PLAINTEXT"], {**SASL_OVERRIDES, "connections.max.reauth.ms": "1500"})
    b.start()
    try:
        md = dict(topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        with RawClient(b.bootstrap("SASL_PLAINTEXT")) as c:
            _handshake(c)
            r = c.request(36, 1, auth_bytes=b"\0alice\0alice-secret")
            assert (r.error_code, r.session_lifetime_ms) == (0, 1500)
            time.sleep(1.0)
            _handshake(c)                                     # re-authenticate within the lifetime
            assert c.request(36, 1, auth_bytes=b"\0alice\0alice-secret").error_code == 0
            assert _handshake(c).error_code == 34             # again within a second: refused, stays open
            time.sleep(1.0)                                   # 2 s after the first login: still fine
            assert c.request(3, 12, **md).brokers
            time.sleep(1.7)
            c.send(3, 12, **md)
            assert c.is_closed()
        with RawClient(b.bootstrap("SASL_PLAINTEXT")) as c, RawClient(b.bootstrap("SASL_PLAINTEXT")) as d:
            for x in (c, d):
                _handshake(x)
                assert x.request(36, 1, auth_bytes=b"\0alice\0alice-secret").error_code == 0
            time.sleep(1.6)   # expired: only a SaslHandshake is accepted (SocketServer), not even SaslAuthenticate
            c.send(36, 1, auth_bytes=b"\0alice\0alice-secret")
            assert c.is_closed()
            assert _handshake(d).error_code == 0 and d.request(36, 1, auth_bytes=b"\0alice\0alice-secret").error_code == 0
            assert d.request(3, 12, **md).brokers   # re-authenticated after expiry: a new session
        with RawClient(b.bootstrap("SASL_PLAINTEXT")) as c:   # another principal cannot take over
            _handshake(c)
            c.request(36, 1, auth_bytes=b"\0alice\0alice-secret")
            _handshake(c)
            r = c.request(36, 1, auth_bytes=b"\0admin\0admin-secret")
            assert r.error_code == 58
            assert c.is_closed()
        # librdkafka re-authenticates by itself
        conf = {"bootstrap.servers": b.bootstrap("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "alice-secret"}
        p = Producer(conf)
        topic = _topic()
        for i in range(8):
            p.produce(topic, f"r{i}".encode())
            p.flush(10)
            time.sleep(0.5)
        assert p.flush(10) == 0
        assert consume(conf, topic, 8, "g-" + topic) == [f"r{i}".encode() for i in range(8)]
    finally:
        b.stop()


def test_oauthbearer_with_jwks(pki, tmp_path) -> None:
    """sasl.oauthbearer.jwks.endpoint.url (a file: URL): a signed token from the right key passes,
    an unsecured or wrongly signed one fails."""
    import json
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa
    from kafka import KafkaProducer
    from kafka.net.sasl.oauth import AbstractTokenProvider
    key, other = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": "k1", "alg": "RS256"})
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    b = SecureBroker(tmp_path / "data", ["SASL_SSL"], {
        **tls_overrides(pki), "sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": f"file://{tmp_path / 'jwks.json'}",
        "sasl.oauthbearer.expected.audience": "kafka"})
    b.start()

    class Signed(AbstractTokenProvider):
        def __init__(self, signing_key):
            self.signing_key = signing_key

        def token(self):
            return jwt.encode({"sub": "alice", "aud": "kafka", "exp": time.time() + 600, "iat": time.time()},
                              self.signing_key, algorithm="RS256", headers={"kid": "k1"})
    try:
        common = dict(bootstrap_servers=b.bootstrap("SASL_SSL"), security_protocol="SASL_SSL", ssl_cafile=str(pki.ca),
                      sasl_mechanism="OAUTHBEARER")
        p = KafkaProducer(sasl_oauth_token_provider=Signed(key), **common)
        p.send(_topic(), b"signed").get(10)
        p.close()
        from kafka.errors import KafkaError
        with pytest.raises(KafkaError):
            p = KafkaProducer(sasl_oauth_token_provider=Signed(other), max_block_ms=3000,
                              bootstrap_timeout_ms=3000, **common)   # kafka-python 3's default waits 30 s
            try:
                p.send(_topic(), b"x").get(5)
            finally:
                p.close(0)
    finally:
        b.stop()
