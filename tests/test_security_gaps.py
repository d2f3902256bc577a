"""Where Samsa's security and connection handling must behave exactly as a Kafka broker's:
an acks=0 Produce that is denied closes the connection (KafkaApis.handleProduceRequest),
OffsetFetch answers denied topics per partition (KafkaApis.handleOffsetFetchRequest)."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import AclOperation, ResourceType
from kafka.protocol.producer import ProduceRequest

from tests.security_support import SecureBroker
from tests.test_security_acl import JAAS, _DictClient, allow, conf, create_acls, produce_errors, _name
from tests.test_wire_protocol import batch, list_offset

OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "auto.create.topics.enable": "true",
}


@pytest.fixture(scope="module")
def gap_broker(tmp_path_factory):
    b = SecureBroker(tmp_path_factory.mktemp("gaps") / "data", ["SASL_PLAINTEXT"], OVERRIDES).start()
    try:
        yield b
    finally:
        b.stop()


def _login(broker, user: str) -> _DictClient:
    """A raw connection authenticated as ``user`` (PLAIN) whose requests are built from dicts."""
    c = _DictClient(broker.bootstrap("SASL_PLAINTEXT"))
    c.request(17, 1, mechanism="PLAIN")
    assert c.request(36, 2, auth_bytes=f"\0{user}\0{user}-secret".encode()).error_code == 0
    return c


def _partition_data(topic: str, n: int) -> ProduceRequest.TopicProduceData:
    return ProduceRequest.TopicProduceData(name=topic, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(batch(n)))])


def test_denied_acks_zero_produce_closes_after_writing_the_allowed(gap_broker) -> None:
    """acks=0 naming a writable and an unwritable topic: the writable one is appended, then the
    connection closes with nothing sent (acks=1 answers TOPIC_AUTHORIZATION_FAILED instead)."""
    ok, denied = _name("a0-ok-"), _name("a0-no-")
    for t in (ok, denied):
        assert produce_errors(conf(gap_broker, "admin"), t, 1) == [None]
    create_acls(gap_broker, allow(ResourceType.TOPIC, ok, AclOperation.WRITE, principal="User:bob"))
    with _login(gap_broker, "bob") as c:
        r = c.request(0, 9, transactional_id=None, acks=1, timeout_ms=5000,
                      topic_data=[dict(name=denied, partition_data=[dict(index=0, records=bytes(batch(1)))])])
        assert r.responses[0].partition_responses[0].error_code == 29   # the connection stays
        c.send(0, 9, transactional_id=None, acks=0, timeout_ms=5000,
               topic_data=[_partition_data(ok, 2), _partition_data(denied, 3)])
        assert c.is_closed()
    with _login(gap_broker, "bob") as c:    # allowed topics alone: no answer, and the connection stays open
        c.send(0, 9, transactional_id=None, acks=0, timeout_ms=5000, topic_data=[_partition_data(ok, 4)])
        assert not c.is_closed(0.3)
    with _login(gap_broker, "admin") as c:
        assert list_offset(c, ok, -1).offset == 1 + 2 + 4
        assert list_offset(c, denied, -1).offset == 1
