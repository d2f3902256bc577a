"""The ACL authorizer (issue 13): Kafka's StandardAuthorizer configured by its class name,
super users, exact authorization errors for a principal without ACLs, prefixed and deny ACLs,
mTLS principals, and ACLs and SCRAM credentials that survive a restart."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from tests.support.acl_support import JAAS, DictClient, admin, allow, create_acls, plain_conf, produce_errors, unique_name
from tests.support.rawclient import RawClient
from tests.support.security_support import SecureBroker, consume_records, tls_overrides

OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=eng.*$/$1/L,DEFAULT",
    "auto.create.topics.enable": "true",
}


@pytest.fixture(scope="module")
def acl_broker(pki, tmp_path_factory):
    b = SecureBroker(tmp_path_factory.mktemp("acl") / "data", ["SASL_PLAINTEXT", "SSL", "REQ"],
                     {**tls_overrides(pki, client_auth="required"), **OVERRIDES,
                      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,REQ:SSL",
                      "listener.name.req.ssl.client.auth": "requested"}).start()
    try:
        yield b
    finally:
        b.stop()


def consume(c: dict, topic: str, group: str, n: int, timeout: float = 20) -> tuple[list[bytes], list]:
    got, errors = consume_records(c, topic, group, n, timeout)
    return [value for _, _, value in got], errors


def test_super_user_does_everything(acl_broker) -> None:
    topic = unique_name("su-")
    assert produce_errors(plain_conf(acl_broker, "admin"), topic) == [None] * 3
    got, _ = consume(plain_conf(acl_broker, "admin"), topic, "g-" + topic, 3)
    assert got == [b"v0", b"v1", b"v2"]


def test_principal_without_acls_gets_exact_errors(acl_broker) -> None:
    topic = unique_name("noacl-")
    assert produce_errors(plain_conf(acl_broker, "admin"), topic, 1) == [None]
    bob = plain_conf(acl_broker, "bob")
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
    fs = bob_admin.create_topics([NewTopic(unique_name("bob-"), 1, 1)])
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
    prefix = unique_name("app") + "-"
    topic, secret, group = prefix + "orders", prefix + "secret", prefix + "group"
    for t in (topic, secret):
        assert produce_errors(plain_conf(acl_broker, "admin"), t, 2) == [None, None]
    P = ResourcePatternType.PREFIXED
    create_acls(acl_broker,
                allow(ResourceType.TOPIC, prefix, AclOperation.WRITE, pattern=P),
                allow(ResourceType.TOPIC, prefix, AclOperation.READ, pattern=P),
                allow(ResourceType.GROUP, prefix, AclOperation.READ, pattern=P),
                allow(ResourceType.TRANSACTIONAL_ID, prefix, AclOperation.WRITE, pattern=P),
                allow(ResourceType.TOPIC, secret, AclOperation.READ, perm=AclPermissionType.DENY))
    alice = plain_conf(acl_broker, "alice")
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
    topic = unique_name("mtls-")
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
    prefix = unique_name("rs") + "-"
    topic = prefix + "t"
    assert produce_errors(plain_conf(acl_broker, "admin"), topic, 1) == [None]
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
    carol = {**plain_conf(acl_broker, "x"), "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "carol",
             "sasl.password": "carol-pw"}
    create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.WRITE, principal="User:carol"))
    assert produce_errors(carol, topic, 1) == [None]
    acl_broker.restart()
    assert {(b.principal, b.operation) for b in admin(acl_broker).describe_acls(flt).result(10)} == \
        {("User:bob", AclOperation.WRITE), ("User:carol", AclOperation.WRITE)}
    assert produce_errors(carol, topic, 1) == [None]
    assert produce_errors(plain_conf(acl_broker, "bob"), topic, 1) == [None]
    # delete: bob loses WRITE again
    for f in admin(acl_broker).delete_acls([AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", None, AclOperation.ANY,
            AclPermissionType.ANY)]).values():
        assert len(f.result(10)) == 1
    assert [e.code() for e in produce_errors(plain_conf(acl_broker, "bob"), topic, 1)] == \
        [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # a SCRAM credential deleted through the admin API is gone (a second deletion: RESOURCE_NOT_FOUND)
    from kafka.admin._users import UserScramCredentialDeletion
    ka = KafkaAdminClient(bootstrap_servers=acl_broker.bootstrap("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="PLAIN", sasl_plain_username="admin", sasl_plain_password="admin-secret")
    try:
        deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)
        assert ka.alter_user_scram_credentials([deletion]) == {"carol": None}
        assert ka.describe_user_scram_credentials(["carol"])["carol"]["error"] == \
            "Attempt to describe a user credential that does not exist: carol"
        assert ka.alter_user_scram_credentials([deletion]) == \
            {"carol": "Attempt to delete a user credential that does not exist"}
    finally:
        ka.close()


def test_describe_acls_without_authorizer_is_security_disabled(samsa_broker) -> None:
    with DictClient(samsa_broker.bootstrap_servers) as c:
        r = c.request(29, 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                      principal_filter=None, host_filter=None, operation=1, permission_type=1)
        assert r.error_code == 54   # SECURITY_DISABLED
        r = c.request(30, 3, creations=[dict(resource_type=2, resource_name="x", resource_pattern_type=3,
                                             principal="User:bob", host="*", operation=2, permission_type=3)])
        assert r.results[0].error_code == 54
        assert c.request(17, 1, mechanism="PLAIN").error_code == 34   # ILLEGAL_SASL_STATE on PLAINTEXT


def test_authorized_operations(acl_broker) -> None:
    """KIP-430: Metadata/DescribeCluster/DescribeGroups report what the principal may do."""
    from confluent_kafka import TopicCollection
    topic = unique_name("ops-")
    assert produce_errors(plain_conf(acl_broker, "admin"), topic, 1) == [None]
    create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.READ, principal="User:bob"),
                allow(ResourceType.TOPIC, topic, AclOperation.ALTER_CONFIGS, principal="User:bob"))
    bob_admin = AdminClient(plain_conf(acl_broker, "bob"))
    described = bob_admin.describe_topics(TopicCollection([topic]), include_authorized_operations=True)[topic].result(10)
    assert set(described.authorized_operations) == {AclOperation.READ, AclOperation.DESCRIBE,
                                                    AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS}
    with RawClient(acl_broker.bootstrap("SASL_PLAINTEXT")) as c:
        c.request(17, 1, mechanism="PLAIN")
        c.request(36, 2, auth_bytes=b"\0admin\0admin-secret")
        r = c.request(60, 1, include_cluster_authorized_operations=True, endpoint_type=1)
        assert r.authorized_operations == {5, 7, 8, 9, 10, 11, 12}   # a super user: every cluster operation


# -- every API family's denial, raw (exact codes, and the connection stays usable) -----------
def _bob(acl_broker) -> RawClient:
    c = DictClient(acl_broker.bootstrap("SASL_PLAINTEXT"))
    c.request(17, 1, mechanism="PLAIN")
    assert c.request(36, 2, auth_bytes=b"\0bob\0bob-secret").error_code == 0
    return c


def test_every_api_family_denies_with_kafkas_codes(acl_broker) -> None:
    topic = unique_name("deny-")
    assert produce_errors(plain_conf(acl_broker, "admin"), topic, 2) == [None, None]
    T, G, C, X = 29, 30, 31, 53
    with _bob(acl_broker) as c:
        r = c.request(2, 7, replica_id=-1, isolation_level=0, topics=[
            dict(name=topic, partitions=[dict(partition_index=0, current_leader_epoch=-1, timestamp=-1)])])
        assert r.topics[0].partitions[0].error_code == T                                   # ListOffsets
        r = c.request(1, 12, replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                      session_id=0, session_epoch=-1, topics=[dict(topic=topic, partitions=[dict(
                          partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                          log_start_offset=-1, partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id="")
        assert [(t.topic, t.partitions[0].error_code) for t in r.responses] == [(topic, T)]  # Fetch
        r = c.request(1, 12, replica_id=0, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                      session_id=0, session_epoch=-1, topics=[], forgotten_topics_data=[], rack_id="")
        assert r.error_code == C                                                           # follower Fetch v12
        r = c.request(1, 15, replica_state=dict(replica_id=0, replica_epoch=0), max_wait_ms=100, min_bytes=1,
                      max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1, topics=[],
                      forgotten_topics_data=[], rack_id="")
        assert r.error_code == C                                                           # follower Fetch v15
        r = c.request(23, 4, replica_id=-1, topics=[dict(topic=topic, partitions=[
            dict(partition=0, current_leader_epoch=-1, leader_epoch=0)])])
        assert r.topics[0].partitions[0].error_code == T                                   # OffsetForLeaderEpoch
        r = c.request(10, 3, key="g1", key_type=0)
        assert r.error_code == G                                                           # FindCoordinator v3
        r = c.request(10, 4, key_type=1, coordinator_keys=["tx1"])
        assert r.coordinators[0].error_code == X                                           # FindCoordinator v4
        r = c.request(11, 7, group_id="g1", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                      group_instance_id=None, protocol_type="consumer", protocols=[dict(name="range", metadata=b"")])
        assert r.error_code == G                                                           # JoinGroup
        assert c.request(12, 4, group_id="g1", generation_id=1, member_id="m", group_instance_id=None
                         ).error_code == G                                                 # Heartbeat
        r = c.request(8, 8, group_id="g1", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                      topics=[dict(name=topic, partitions=[dict(partition_index=0, committed_offset=1,
                                                                committed_leader_epoch=-1, committed_metadata="")])])
        assert r.topics[0].partitions[0].error_code == G                                   # OffsetCommit
        r = c.request(9, 7, group_id="g1", topics=None, require_stable=False)
        assert r.error_code == G                                                           # OffsetFetch v7
        r = c.request(9, 8, groups=[dict(group_id="g1", topics=None)], require_stable=False)
        assert r.groups[0].error_code == G                                                 # OffsetFetch v8
        r = c.request(15, 5, groups=["g1"], include_authorized_operations=False)
        assert r.groups[0].error_code == G                                                 # DescribeGroups
        assert c.request(16, 4, states_filter=[]).groups == []                             # ListGroups (filtered)
        r = c.request(42, 2, groups_names=["g1"])
        assert r.results[0].error_code == G                                                # DeleteGroups
        r = c.request(47, 0, group_id="g1", topics=[dict(name=topic, partitions=[dict(partition_index=0)])])
        assert r.error_code == G                                                           # OffsetDelete
        r = c.request(22, 4, transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        assert r.error_code == C                                                           # InitProducerId idempotent
        r = c.request(22, 4, transactional_id="tx1", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        assert r.error_code == X                                                           # InitProducerId txn
        r = c.request(24, 3, v3_and_below_transactional_id="tx1", v3_and_below_producer_id=1,
                      v3_and_below_producer_epoch=0, v3_and_below_topics=[dict(name=topic, partitions=[0])])
        assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == X  # AddPartitionsToTxn
        assert c.request(25, 3, transactional_id="tx1", producer_id=1, producer_epoch=0, group_id="g1"
                         ).error_code == X                                                 # AddOffsetsToTxn
        assert c.request(26, 3, transactional_id="tx1", producer_id=1, producer_epoch=0, committed=True
                         ).error_code == X                                                 # EndTxn
        r = c.request(28, 3, transactional_id="tx1", group_id="g1", producer_id=1, producer_epoch=0, generation_id=-1,
                      member_id="", group_instance_id=None, topics=[dict(name=topic, partitions=[dict(
                          partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata="")])])
        assert r.topics[0].partitions[0].error_code == X                                   # TxnOffsetCommit
        r = c.request(65, 0, transactional_ids=["tx1"])
        assert r.transaction_states[0].error_code == X                                     # DescribeTransactions
        assert c.request(66, 1, state_filters=[], producer_id_filters=[]).transaction_states == []  # ListTransactions
        r = c.request(61, 0, topics=[dict(name=topic, partition_indexes=[0])])
        assert r.topics[0].partitions[0].error_code == T                                   # DescribeProducers
        r = c.request(19, 7, topics=[dict(name=unique_name("bob-"), num_partitions=1, replication_factor=1, assignments=[],
                                          configs=[])], timeout_ms=5000, validate_only=False)
        assert r.topics[0].error_code == T                                                 # CreateTopics
        r = c.request(20, 6, topics=[dict(name=topic, topic_id=None)], timeout_ms=5000)
        assert r.responses[0].error_code == T                                              # DeleteTopics v6
        r = c.request(20, 5, topic_names=[topic], timeout_ms=5000)
        assert r.responses[0].error_code == T                                              # DeleteTopics v5
        r = c.request(37, 3, topics=[dict(name=topic, count=3, assignments=None)], timeout_ms=5000, validate_only=False)
        assert r.results[0].error_code == T                                                # CreatePartitions
        r = c.request(21, 2, topics=[dict(name=topic, partitions=[dict(partition_index=0, offset=1)])], timeout_ms=5000)
        assert r.topics[0].partitions[0].error_code == T                                   # DeleteRecords
        r = c.request(32, 4, resources=[dict(resource_type=2, resource_name=topic, configuration_keys=None),
                                        dict(resource_type=4, resource_name="1", configuration_keys=None)],
                      include_synonyms=False, include_documentation=False)
        assert sorted(x.error_code for x in r.results) == [T, C]                           # DescribeConfigs
        r = c.request(44, 1, resources=[dict(resource_type=2, resource_name=topic, configs=[
            dict(name="retention.ms", config_operation=0, value="1000")])], validate_only=False)
        assert r.responses[0].error_code == T                                              # IncrementalAlterConfigs
        r = c.request(33, 2, resources=[dict(resource_type=2, resource_name=topic, configs=[
            dict(name="retention.ms", value="1000")])], validate_only=False)
        assert r.responses[0].error_code == T                                              # AlterConfigs
        r = c.request(44, 1, resources=[dict(resource_type=4, resource_name="", configs=[
            dict(name="log.retention.ms", config_operation=0, value="1000")])], validate_only=False)
        assert r.responses[0].error_code == C                       # dynamic broker configs: ALTER_CONFIGS on CLUSTER
        r = c.request(33, 2, resources=[dict(resource_type=4, resource_name="1", configs=[
            dict(name="log.retention.ms", value="1000")])], validate_only=False)
        assert r.responses[0].error_code == C
        r = c.request(30, 3, creations=[dict(resource_type=2, resource_name="x", resource_pattern_type=3,
                                             principal="User:bob", host="*", operation=2, permission_type=3)])
        assert r.results[0].error_code == C                                                # CreateAcls
        r = c.request(31, 3, filters=[dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                           principal_filter=None, host_filter=None, operation=1, permission_type=1)])
        assert r.filter_results[0].error_code == C                                         # DeleteAcls
        assert c.request(50, 0, users=None).error_code == C                               # DescribeUserScram
        r = c.request(51, 0, deletions=[], upsertions=[dict(name="bob", mechanism=2, iterations=4096, salt=b"s",
                                                             salted_password=b"p")])
        assert r.results[0].error_code == C                                                # AlterUserScram
        # the connection survived every denial
        listed = c.request(3, 12, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False).topics
        assert topic not in {t.name for t in listed}
    assert produce_errors(plain_conf(acl_broker, "admin"), topic, 1) == [None]   # nothing was deleted or altered


def test_mixed_requests_answer_allowed_and_denied_topics(acl_broker) -> None:
    """One request naming a readable and an unreadable topic: the handler answers the first
    (records spliced from the files), the check adds the second with TOPIC_AUTHORIZATION_FAILED."""
    ok, denied = unique_name("mix-ok-"), unique_name("mix-no-")
    for t in (ok, denied):
        assert produce_errors(plain_conf(acl_broker, "admin"), t, 3) == [None] * 3
    create_acls(acl_broker, allow(ResourceType.TOPIC, ok, AclOperation.READ, principal="User:bob"))
    with _bob(acl_broker) as c:
        part = dict(partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                    partition_max_bytes=1 << 20)
        r = c.request(1, 12, replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                      session_id=0, session_epoch=-1, topics=[dict(topic=ok, partitions=[part]),
                                                             dict(topic=denied, partitions=[part])],
                      forgotten_topics_data=[], rack_id="")
        by_topic = {t.topic: t.partitions[0] for t in r.responses}
        assert by_topic[denied].error_code == 29 and by_topic[ok].error_code == 0
        from kafka.record import MemoryRecords
        batch = MemoryRecords(bytes(by_topic[ok].records))
        values = []
        while batch.has_next():
            values += [rec.value for rec in batch.next_batch()]
        assert values == [b"v0", b"v1", b"v2"]
        r = c.request(3, 12, topics=[dict(name=ok, topic_id=None), dict(name=denied, topic_id=None)],
                      allow_auto_topic_creation=False, include_topic_authorized_operations=False)
        assert {t.name: t.error_code for t in r.topics} == {ok: 0, denied: 29}


def test_client_auth_requested_listener(acl_broker, pki) -> None:
    """listener.name.req.ssl.client.auth=requested: a certificate maps to its principal, no
    certificate is User:ANONYMOUS."""
    topic = unique_name("req-")
    create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.ALL),
                allow(ResourceType.TOPIC, topic, AclOperation.DESCRIBE, principal="User:ANONYMOUS"))
    base = {"bootstrap.servers": acl_broker.bootstrap("REQ"), "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca)}
    with_cert = {**base, "ssl.certificate.location": str(pki.client_cert), "ssl.key.location": str(pki.client_key)}
    assert produce_errors(with_cert, topic, 1) == [None]
    assert [e.code() for e in produce_errors(base, topic, 1)] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def test_aiokafka_gets_the_authorization_errors(acl_broker) -> None:
    import asyncio
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
    topic = unique_name("aio-")
    assert produce_errors(plain_conf(acl_broker, "admin"), topic, 1) == [None]
    common = dict(bootstrap_servers=acl_broker.bootstrap("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism="PLAIN", sasl_plain_username="bob", sasl_plain_password="bob-secret")

    async def run() -> None:
        p = AIOKafkaProducer(**common)
        await p.start()
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                await p.send_and_wait(topic, b"x")
        finally:
            await p.stop()
        create_acls(acl_broker, allow(ResourceType.TOPIC, topic, AclOperation.READ, principal="User:bob"))
        c = AIOKafkaConsumer(topic, group_id="aio-denied", **common)
        try:
            with pytest.raises(GroupAuthorizationFailedError):   # from start(): the group join
                async with asyncio.timeout(20):
                    await c.start()
                    await c.getone()
        finally:
            await c.stop()
    asyncio.run(run())
