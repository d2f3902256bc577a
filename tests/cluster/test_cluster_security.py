"""Security on a cluster's one metadata log (etcd): an ACL created through one broker is enforced
by every broker; SCRAM credentials created through one broker log a client in on every other;
the bootstrap admin credential is written once however many brokers start with it."""
from __future__ import annotations

import base64

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient
from confluent_kafka.admin import ResourcePatternType, ResourceType

from broker.testing.local_cluster import find_etcd
from tests.support.groups_support import wait_until
from tests.support.rawclient import RawClient
from tests.support.security_support import scram_login, topic_error_as

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_bob="bob-secret";')
SECURE = {"brokers": 3, "listeners": ["SASL_PLAINTEXT"], "overrides": {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # the brokers' own traffic (replica fetches) runs on the PLAINTEXT listener as ANONYMOUS
    "super.users": "User:admin;User:root;User:ANONYMOUS",
    "inter.broker.listener.name": "PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    "samsa.scram.bootstrap.credentials": "SCRAM-SHA-512=[name=root,password=root-secret]",
}}


def plain(bootstrap: str, user: str) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-secret"}


def etcd_records(cluster) -> list:
    """Every record of the cluster's metadata log in etcd, in order."""
    import httpx

    from broker.metadata.etcd_client import b64, prefix_end
    from coordinator.metadata.records import decode_batch

    key = cluster.prefix + "/log/"
    resp = httpx.post(cluster.etcd.endpoint + "/v3/kv/range",
                      json={"key": b64(key), "range_end": b64(prefix_end(key)), "sort_order": "ASCEND",
                            "sort_target": "MOD"}, timeout=5).json()
    return [r for kv in resp.get("kvs", []) for r in decode_batch(base64.b64decode(kv["value"]))]


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    return wait_until(what, predicate, timeout, interval=0.2)


@pytest.mark.slow
@pytest.mark.parametrize("samsa_cluster", [SECURE], indirect=True)
def test_acls_and_scram_credentials_are_cluster_wide(samsa_cluster) -> None:
    from coordinator.metadata.records import AccessControlEntryRecord, UserScramCredentialRecord

    c = samsa_cluster
    sasl = {i: c.bootstrap("SASL_PLAINTEXT", i) for i in (1, 2, 3)}
    # the bootstrap admin: written once by whichever broker came first, and it logs in everywhere
    roots = [r for r in etcd_records(c) if isinstance(r, UserScramCredentialRecord) and r.name == "root"]
    assert len(roots) == 1
    for i in (1, 2, 3):
        assert scram_login(sasl[i], "root", "root-secret") == 0
        assert scram_login(sasl[i], "root", "wrong") == 58   # SASL_AUTHENTICATION_FAILED

    topic = "guarded"
    admin1 = AdminClient(plain(sasl[1], "admin"))
    from confluent_kafka.admin import NewTopic
    admin1.create_topics([NewTopic(topic, 1, 3)])[topic].result(15)
    for i in (1, 2, 3):   # bob has no ACL: every broker says so
        wait_for(lambda i=i: topic_error_as(sasl[i], "bob", topic) == 29, what=f"denied on broker {i}")

    # an ACL created through broker 1 ...
    acl = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.WRITE,
                     AclPermissionType.ALLOW)
    admin1.create_acls([acl])[acl].result(10)
    # ... is enforced by brokers 2 and 3 (and 1)
    for i in (1, 2, 3):
        wait_for(lambda i=i: topic_error_as(sasl[i], "bob", topic) == 0, what=f"allowed on broker {i}")
    errors: list = []
    p = Producer({**plain(sasl[3], "bob"), "message.timeout.ms": 10000, "acks": "all"})
    p.produce(topic, b"from-bob", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert errors == [None]
    # the same ACL created again through broker 2 and 3: still one
    for i in (2, 3):
        a = AdminClient(plain(sasl[i], "admin"))
        a.create_acls([acl])[acl].result(10)
    flt = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    admin2 = AdminClient(plain(sasl[2], "admin"))
    assert len(admin2.describe_acls(flt).result(10)) == 1
    assert len([r for r in etcd_records(c) if isinstance(r, AccessControlEntryRecord)
                and r.principal == "User:bob"]) == 1

    # SCRAM credentials created through broker 1 log a client in on 2 and 3
    from kafka.admin import KafkaAdminClient
    from kafka.admin._users import ScramMechanism, UserScramCredentialUpsertion
    ka = KafkaAdminClient(bootstrap_servers=sasl[1], security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                          sasl_plain_username="admin", sasl_plain_password="admin-secret")
    ka.alter_user_scram_credentials([UserScramCredentialUpsertion("carol", ScramMechanism.SCRAM_SHA_512,
                                                                  "carol-pw", iterations=8192)])
    ka.close()
    for i in (2, 3, 1):
        wait_for(lambda i=i: scram_login(sasl[i], "carol", "carol-pw") == 0, what=f"carol on broker {i}")
    carol_acl = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:carol", "*",
                           AclOperation.WRITE, AclPermissionType.ALLOW)
    admin1.create_acls([carol_acl])[carol_acl].result(10)
    from kafka import KafkaProducer
    kp = wait_for(lambda: KafkaProducer(bootstrap_servers=sasl[2], security_protocol="SASL_PLAINTEXT",
                                        sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="carol",
                                        sasl_plain_password="carol-pw", acks="all", max_block_ms=10000),
                  what="a kafka-python producer as carol")
    try:
        md = wait_for(lambda: _send(kp, topic), what="carol's produce")
        assert md.topic == topic
    finally:
        kp.close(0)

    # deleting through broker 3 takes bob's WRITE away on broker 1
    admin3 = AdminClient(plain(sasl[3], "admin"))   # kept alive while its futures are pending
    for f in admin3.delete_acls([AclBindingFilter(
            ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", None, AclOperation.ANY,
            AclPermissionType.ANY)]).values():
        assert len(f.result(10)) == 1
    wait_for(lambda: topic_error_as(sasl[1], "bob", topic) == 29, what="bob denied again on broker 1")
    errors.clear()
    p = Producer({**plain(sasl[1], "bob"), "message.timeout.ms": 8000})
    p.produce(topic, b"no", on_delivery=lambda err, msg: errors.append(err))
    p.flush(12)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]


def _send(kp, topic):
    try:
        return kp.send(topic, b"from-carol").get(10)
    except Exception:   # the ACL may not have reached the leader yet
        return None


def test_racing_security_writes_make_one_record(tmp_path) -> None:
    """Two brokers' stores decide the bootstrap credential and the same ACL on the same (empty)
    image at once: etcd's guards let one write win; the other decides again and writes nothing."""
    import trio

    from broker.testing.local_cluster import EtcdProcess
    from broker.metadata.etcd import EtcdMetadataStore
    from broker.security.sasl import scram_credential
    from broker.security.writes import write_decided
    from coordinator.metadata.records import AccessControlEntryRecord, UserScramCredentialRecord, decode_batch

    etcd = EtcdProcess(tmp_path / "etcd").start()

    def bootstrap(image):
        if ("root", 2) in image.scram_credentials:
            return [], "present"
        return [scram_credential(2, "root-secret", b"salt", 4096, name="root")], "written"

    def acl(node):
        def decide(image):
            binding = (2, "t", 3, "User:bob", "*", 4, 3)
            if any(a.binding() == binding for a in image.acls.values()):
                return [], "present"
            return [AccessControlEntryRecord(f"id-{node}", *binding)], "written"
        return decide

    async def main() -> tuple[list, list]:
        stores = [EtcdMetadataStore([etcd.endpoint], node, prefix="/race", session_timeout_ms=3000)
                  for node in (1, 2)]
        outcomes: list = []
        async with trio.open_nursery() as n:
            for s in stores:
                await s.start()
                await n.start(s.run)
            for decide in (bootstrap, None):
                async with trio.open_nursery() as race:
                    for node, s in zip((1, 2), stores):
                        async def one(s=s, d=decide or acl(node)):
                            outcomes.append(await write_decided(s, d, 10000))
                        race.start_soon(one)
            with trio.fail_after(10):   # both images end up with the one credential and the one ACL
                while not all(("root", 2) in s.image.scram_credentials and len(s.image.acls) == 1 for s in stores):
                    await trio.sleep(0.05)
            n.cancel_scope.cancel()
        for s in stores:
            await s.close()
        return outcomes, [dict(s.image.acls) for s in stores]

    import httpx

    from broker.metadata.etcd_client import b64, prefix_end
    try:
        outcomes, acls = trio.run(main)
        key = "/race/log/"
        kvs = httpx.post(etcd.endpoint + "/v3/kv/range", json={"key": b64(key), "range_end": b64(prefix_end(key))},
                         timeout=5).json().get("kvs", [])
    finally:
        etcd.stop()
    records = [r for kv in kvs for r in decode_batch(base64.b64decode(kv["value"]))]
    assert sorted(outcomes) == ["present", "present", "written", "written"]
    assert acls[0] == acls[1] and len(acls[0]) == 1
    assert len([r for r in records if isinstance(r, UserScramCredentialRecord)]) == 1
    assert len([r for r in records if isinstance(r, AccessControlEntryRecord)]) == 1


def _as(bootstrap: str, user: str) -> RawClient:
    """A raw connection to one broker, logged in as ``user`` with SASL PLAIN."""
    c = RawClient(bootstrap)
    assert c.request(17, 1, mechanism="PLAIN").error_code == 0
    assert c.request(36, 2, auth_bytes=f"\0{user}\0{user}-secret".encode()).error_code == 0
    return c


def _metadata_v12(bootstrap: str, user: str, topic: str, auto_create: bool):
    """Broker ``bootstrap``'s Metadata v12 answer to ``user`` for ``topic`` (the topic entry)."""
    from kafka.protocol.metadata import MetadataRequest

    T = MetadataRequest[12].MetadataRequestTopic
    with _as(bootstrap, user) as c:
        r = c.request(3, 12, topics=[T(topic_id=None, name=topic)], allow_auto_topic_creation=auto_create,
                      include_topic_authorized_operations=False)
    return r.topics[0]


def _commit_by_id(bootstrap: str, user: str, group: str, topic_id) -> dict:
    """A simple (generation -1) OffsetCommit v10 of partition 0 naming the topic by id, as ``user``:
    the answer's {topic_id: [partition error codes]}."""
    from kafka.protocol.consumer.group import OffsetCommitRequest

    T = OffsetCommitRequest[10].OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    with _as(bootstrap, user) as c:
        r = c.request(8, 10, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                      group_instance_id=None, topics=[T(topic_id=topic_id, partitions=[
                          P(partition_index=0, committed_offset=7, committed_leader_epoch=-1,
                            committed_metadata=None)])])
    return {t.topic_id: [p.error_code for p in t.partitions] for t in r.topics}


@pytest.mark.parametrize("samsa_cluster", [SECURE], indirect=True)
def test_authorization_sees_topics_hosted_on_other_brokers(samsa_cluster) -> None:
    """Regression: a broker's authorizer resolves topic ids and topic existence from the cluster's
    catalog, not from the logs it hosts. Asked of a broker with no replica of the topic, an
    OffsetCommit v10 naming it by id is denied (it passed unchecked), and Metadata with
    auto-creation allowed answers the existing topic to a principal without CREATE."""
    from confluent_kafka.admin import NewTopic

    c = samsa_cluster
    sasl = {i: c.bootstrap("SASL_PLAINTEXT", i) for i in (1, 2, 3)}
    group, topic = "bobs-group", "elsewhere"
    # the group's coordinator B, then the topic's only replica on another broker A
    with _as(sasl[1], "admin") as raw:
        fc = raw.request(10, 4, key_type=0, coordinator_keys=[group])
    assert fc.coordinators[0].error_code == 0
    b = fc.coordinators[0].node_id
    a = next(i for i in (1, 2, 3) if i != b)
    admin = AdminClient(plain(sasl[1], "admin"))
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[a]])])[topic].result(15)
    # B knows the topic (from the cluster's metadata) but hosts no replica of it
    md = wait_for(lambda: (t := _metadata_v12(sasl[b], "admin", topic, False)).error_code == 0 and t,
                  what="the topic in broker B's metadata")
    assert [p.replica_nodes for p in md.partitions] == [[a]]
    topic_id = md.topic_id

    # bob may READ the group, and has no ACL on the topic
    acl = AclBinding(ResourceType.GROUP, group, ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ,
                     AclPermissionType.ALLOW)
    admin.create_acls([acl])[acl].result(10)
    result = wait_for(lambda: (r := _commit_by_id(sasl[b], "bob", group, topic_id)) != {topic_id: [30]} and r,
                      what="bob's group READ on broker B")
    assert result == {topic_id: [29]}   # TOPIC_AUTHORIZATION_FAILED, not committed
    from kafka.protocol.consumer.group import OffsetFetchRequest
    G = OffsetFetchRequest[10].OffsetFetchRequestGroup
    with _as(sasl[b], "admin") as raw:   # nothing was committed for the group
        r = raw.request(9, 10, groups=[G(group_id=group, member_id=None, member_epoch=-1, topics=None)],
                        require_stable=False)
    assert [(g.group_id, g.error_code, g.topics) for g in r.groups] == [(group, 0, [])]

    # Metadata with auto-creation allowed, DESCRIBE but no CREATE: the existing topic is answered
    describe = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:bob", "*",
                          AclOperation.DESCRIBE, AclPermissionType.ALLOW)
    admin.create_acls([describe])[describe].result(10)
    wait_for(lambda: _metadata_v12(sasl[b], "bob", topic, False).error_code == 0, what="bob's DESCRIBE on B")
    t = _metadata_v12(sasl[b], "bob", topic, True)
    assert (t.error_code, t.name, t.topic_id) == (0, topic, topic_id)
    assert [(p.partition_index, p.leader_id, p.replica_nodes) for p in t.partitions] == [(0, a, [a])]
