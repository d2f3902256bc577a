"""KIP-932 share groups with the real Java client 4.3 (KafkaShareConsumer, tests/support/java/ShareConsumerClient.java)
against a real broker with share groups enabled, plus the gate: share groups are on by default, as
in a new Kafka 4.2 cluster, and samsa.share.version=0 turns them off."""
from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker
from tests.support.clienthelpers import advertised_apis
from tests.support.groups_support import unique
from tests.support.javaclient import of_type, requires_java, start_java_source
from tests.support.share_clients_support import produce_values, topic_id_of, wait_for_members

SOURCE = Path(__file__).resolve().parents[1] / "support" / "java" / "ShareConsumerClient.java"
LOCK_MS = 3000
SHARE_PROPS = {
    "group.share.enable": "true",
    "samsa.share.auto.offset.reset": "earliest",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.min.record.lock.duration.ms": "1000",     # Kafka's bound (15000) allows no short lock
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "100",
    "num.partitions": "1",
}
SHARE_APIS = {76, 77, 78, 79}


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    broker = SamsaBroker(tmp_path_factory.mktemp("share") / "data", overrides=SHARE_PROPS).start()
    try:
        yield broker
    finally:
        broker.stop()


def produce_one_by_one(bootstrap: str, topic: str, count: int, first: int = 0, per_batch: int = 1) -> list[str]:
    """``count`` records in batches of ``per_batch`` (small, so two consumers can split them),
    values v<first>...."""
    values = [f"v{i}" for i in range(first, first + count)]
    produce_values(bootstrap, topic, values, per_batch)
    return values


def test_default_broker_advertises_the_share_group_apis(samsa_broker):
    """Kafka 4.2 finalizes share.version 1 on a new cluster: share groups need no switch."""
    apis = advertised_apis(samsa_broker.bootstrap_servers)
    assert {k: apis[k] for k in SHARE_APIS} == {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2)}


@pytest.mark.samsa_broker(overrides={"samsa.share.version": "0"})
def test_share_version_0_turns_share_groups_off(samsa_broker):
    apis = advertised_apis(samsa_broker.bootstrap_servers)
    assert not SHARE_APIS & set(apis)


def test_enabled_broker_advertises_share_group_apis(share_broker):
    apis = advertised_apis(share_broker.bootstrap_servers)
    assert {k: apis[k] for k in SHARE_APIS} == {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2)}


@pytest.mark.slow
@requires_java
def test_two_share_consumers_split_a_partition_accept_and_release(share_broker):
    bs = share_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_one_by_one(bs, topic, 1)           # creates the topic; the consumers start before the rest
    common = ["--bootstrap", bs, "--topic", topic, "--group", group, "--release", "v7", "--idle-ms", "6000",
              "--max-ms", "60000", "--sleep-ms", "100", "--max-poll-records", "5"]
    consumers = [start_java_source("4.3.0", SOURCE, *common, "--client-id", f"c{i}") for i in range(2)]
    try:
        wait_for_members(bs, group, 2)      # JVMs start slowly on a loaded machine: both must be in
        # batches of 5: v7 comes back inside its batch, of which only v7 is acquired again
        values = ["v0"] + produce_one_by_one(bs, topic, 59, first=1, per_batch=5)
        described = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--describe", group).result(timeout=60)
        results = [c.result(timeout=90) for c in consumers]
    finally:
        for c in consumers:
            c.kill()
    records = [r for lines in results for r in of_type(lines, "record")]
    accepted = Counter(r["value"] for r in records if r["ack"] == "accept")
    assert set(accepted) == set(values)                      # every record consumed
    assert set(accepted.values()) == {1}                     # accepted ones never came back
    v7 = sorted((r["delivery_count"], r["ack"]) for r in records if r["value"] == "v7")
    assert v7 == [(1, "release"), (2, "accept")]             # the released one came back, delivery count 2
    others = [r["delivery_count"] for r in records if r["value"] != "v7"]
    assert set(others) == {1}, [r for r in records if r["value"] != "v7" and r["delivery_count"] != 1]
    [g] = of_type(described, "group")        # the Java Admin's describeShareGroups, while both run
    assert g["state"] == "Stable" and sorted(m["client_id"] for m in g["members"]) == ["c0", "c1"]
    assert all(m["partitions"] == [f"{topic}-0"] for m in g["members"])   # one partition: shared by both
    per_consumer = [len(of_type(lines, "record")) for lines in results]
    assert all(n > 0 for n in per_consumer), (per_consumer, [[x for x in lines if x["type"] != "record"]
                                                             for lines in results])   # both got records


@requires_java
def test_records_of_a_dead_consumer_are_redelivered_after_the_lock(share_broker):
    """The survivor uses the client's default, implicit acknowledgement."""
    bs = share_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    values = produce_one_by_one(bs, topic, 12)
    dying = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                              "--die-after", "1", "--max-poll-records", "4")
    died = dying.result(timeout=60)
    held = [r["value"] for r in of_type(died, "record")]
    assert of_type(died, "died") and held
    survivor = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                                 "--expect", str(len(values)), "--max-ms", "40000", "--implicit", "true")
    lines = survivor.result(timeout=60)
    records = of_type(lines, "record")
    assert sorted({r["value"] for r in records}) == sorted(values)
    redelivered = {r["value"]: r["delivery_count"] for r in records if r["value"] in held}
    assert redelivered == {v: 2 for v in held}                # after the dead member's lock expired
    assert all(r["delivery_count"] == 1 for r in records if r["value"] not in held)


# -- on the wire (RawClient): sessions, acknowledgements, describe ----------------------------------------
def share_fetch(c, group: str, member: str, epoch: int, tid, acks=(), max_wait_ms: int = 0, fetch: bool = True):
    from protocol.schema_messages import ShareFetchRequest as Q

    AB = Q.FetchTopic.FetchPartition.AcknowledgementBatch
    parts = [Q.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=[
        AB(first_offset=f, last_offset=l, acknowledge_types=list(t)) for f, l, t in acks])]
    return c.request(78, 1, group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms,
                     min_bytes=1, max_bytes=1 << 20, max_records=100, batch_size=100,
                     topics=[Q.FetchTopic(topic_id=tid, partitions=parts)] if (fetch or acks) else [],
                     forgotten_topics_data=[])


def share_ack(c, group: str, member: str, epoch: int, tid, acks):
    from protocol.schema_messages import ShareAcknowledgeRequest as Q

    P = Q.AcknowledgeTopic.AcknowledgePartition
    return c.request(79, 1, group_id=group, member_id=member, share_session_epoch=epoch, topics=[
        Q.AcknowledgeTopic(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
            P.AcknowledgementBatch(first_offset=f, last_offset=l, acknowledge_types=list(t)) for f, l, t in acks])])])


def test_share_sessions_acknowledgements_and_describe_on_the_wire(share_broker):
    from protocol import records as rb
    from tests.support.rawclient import RawClient

    bs = share_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_one_by_one(bs, topic, 3)
    tid = topic_id_of(bs, topic)
    with RawClient(bs) as c:
        hb = c.request(76, 1, group_id=group, member_id="m1", member_epoch=0, rack_id=None,
                       subscribed_topic_names=[topic])
        assert (hb.error_code, hb.member_epoch) == (0, 2)
        assert [(t.topic_id, t.partitions) for t in hb.assignment.topic_partitions] == [(tid, [0])]
        [g] = c.request(77, 1, group_ids=[group], include_authorized_operations=False).groups
        assert (g.group_state, g.assignor_name, [m.member_id for m in g.members]) == ("Stable", "simple", ["m1"])
        assert g.members[0].assignment.topic_partitions[0].topic_name == topic
        listed = c.request(16, 5, states_filter=[], types_filter=["share"]).groups
        assert [(x.group_id, x.protocol_type, x.group_state, x.group_type) for x in listed if x.group_id == group] \
            == [(group, "share", "Stable", "share")]
        assert all(x.group_id != group for x in c.request(16, 5, states_filter=[], types_filter=["consumer"]).groups)
        assert all(x.group_id != group for x in c.request(16, 5, states_filter=["Empty"], types_filter=[]).groups)

        # one namespace of group ids with consumer groups, as Kafka
        cg = c.request(68, 0, group_id=group, member_id="", member_epoch=0, instance_id=None, rack_id=None,
                       rebalance_timeout_ms=30000, subscribed_topic_names=[topic], server_assignor=None,
                       topic_partitions=[])
        assert (cg.error_code, cg.error_message) == (69, f"Group {group} is not a consumer group.")
        consumer_group = unique("cg")
        assert c.request(68, 0, group_id=consumer_group, member_id="", member_epoch=0, instance_id=None,
                         rack_id=None, rebalance_timeout_ms=30000, subscribed_topic_names=[topic],
                         server_assignor=None, topic_partitions=[]).error_code == 0
        sh = c.request(76, 1, group_id=consumer_group, member_id="m9", member_epoch=0, rack_id=None,
                       subscribed_topic_names=[topic])
        assert (sh.error_code, sh.error_message) == (69, f"Group {consumer_group} is not a share group.")
        unknown = share_fetch(c, group, "mx", 0, uuid.uuid4())
        assert [p.error_code for p in unknown.responses[0].partitions] == [100]   # UNKNOWN_TOPIC_ID
        assert share_fetch(c, "", "m1", 0, tid).error_code == 42               # INVALID_REQUEST: no group
        assert share_fetch(c, group, "m1", 1, tid).error_code == 122          # SHARE_SESSION_NOT_FOUND
        r = share_fetch(c, group, "m1", 0, tid)
        [p] = r.responses[0].partitions
        assert (r.error_code, r.acquisition_lock_timeout_ms, p.error_code) == (0, LOCK_MS, 0)
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(0, 2, 1)]
        assert [h.base_offset for h in rb.iter_batches(p.records, validate=False)] == [0, 1, 2]   # stored batches
        assert share_fetch(c, group, "m1", 5, tid).error_code == 123          # INVALID_SHARE_SESSION_EPOCH
        # piggy-backed: accept 0, release 1 (comes back with delivery count 2); 2 stays acquired
        r = share_fetch(c, group, "m1", 1, tid, acks=[(0, 1, (1, 2))])
        [p] = r.responses[0].partitions
        assert p.acknowledge_error_code == 0
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(1, 1, 2)]
        assert share_ack(c, group, "m1", 2, tid, [(0, 0, (1,))]).responses[0].partitions[0].error_code == 121
        ok = share_ack(c, group, "m1", 3, tid, [(1, 2, (1,))])
        assert (ok.error_code, ok.responses[0].partitions[0].error_code) == (0, 0)
        assert share_ack(c, group, "m1", 0, tid, [(1, 1, (1,))]).error_code == 123   # cannot open a session
        produce_one_by_one(bs, topic, 1, first=3)
        r = share_fetch(c, group, "m1", 4, tid, fetch=False, max_wait_ms=2000)
        [p] = r.responses[0].partitions
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(3, 3, 1)]
        closed = share_fetch(c, group, "m1", -1, tid, fetch=False)       # closes; offset 3 is released
        assert closed.error_code == 0 and closed.responses == []
        c.request(76, 1, group_id=group, member_id="m1", member_epoch=-1, rack_id=None, subscribed_topic_names=None)
        [g] = c.request(77, 1, group_ids=[group], include_authorized_operations=False).groups
        assert (g.group_state, g.members) == ("Empty", [])
        hb = c.request(76, 1, group_id=group, member_id="m2", member_epoch=0, rack_id=None,
                       subscribed_topic_names=[topic])
        r = share_fetch(c, group, "m2", 0, tid)
        [p] = r.responses[0].partitions
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(3, 3, 2)]
        # DeleteGroups: not while it has a member; then the group and its share-partition state go
        assert [x.error_code for x in c.request(42, 2, groups_names=[group]).results] == [68]   # NON_EMPTY_GROUP
        c.request(76, 1, group_id=group, member_id="m2", member_epoch=-1, rack_id=None, subscribed_topic_names=None)
        assert [x.error_code for x in c.request(42, 2, groups_names=[group]).results] == [0]
        [g] = c.request(77, 1, group_ids=[group], include_authorized_operations=False).groups
        assert g.error_code == 69                                   # GROUP_ID_NOT_FOUND
        c.request(76, 1, group_id=group, member_id="m3", member_epoch=0, rack_id=None, subscribed_topic_names=[topic])
        r = share_fetch(c, group, "m3", 0, tid)                      # a new group: the share partition starts over
        [p] = r.responses[0].partitions
        assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [(0, 3, 1)]


# -- authorization: READ on the group and on each topic, as Kafka ------------------------------------------
AUTHZ = {**SHARE_PROPS, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "allow.everyone.if.no.acl.found": "true"}
TOPIC_DENIED, GROUP_DENIED = 29, 30
READ, DENY, TOPIC, GROUP, LITERAL = 3, 2, 2, 3, 3


@pytest.mark.samsa_broker(overrides=AUTHZ)
def test_share_apis_need_read_on_group_and_topic(samsa_broker):
    from protocol.messages import REQUESTS
    from tests.support.rawclient import RawClient

    Creation = REQUESTS[30].AclCreation
    bs = samsa_broker.bootstrap_servers
    produce_one_by_one(bs, "open", 1)
    produce_one_by_one(bs, "secret", 1)
    open_id, secret_id = topic_id_of(bs, "open"), topic_id_of(bs, "secret")
    with RawClient(bs) as c:
        created = c.request(30, 3, creations=[
            Creation(resource_type=TOPIC, resource_name="secret", resource_pattern_type=LITERAL,
                 principal="User:ANONYMOUS", host="*", operation=READ, permission_type=DENY),
            Creation(resource_type=GROUP, resource_name="locked", resource_pattern_type=LITERAL,
                 principal="User:ANONYMOUS", host="*", operation=READ, permission_type=DENY)])
        assert [r.error_code for r in created.results] == [0, 0]
        hb = c.request(76, 1, group_id="locked", member_id="m", member_epoch=0, rack_id=None,
                       subscribed_topic_names=["open"])
        assert (hb.error_code, hb.assignment) == (GROUP_DENIED, None)
        hb = c.request(76, 1, group_id="g", member_id="m", member_epoch=0, rack_id=None,
                       subscribed_topic_names=["open", "secret"])      # DESCRIBE on "secret" is gone with READ
        assert (hb.error_code, hb.assignment) == (TOPIC_DENIED, None)
        assert share_fetch(c, "locked", "m", 0, open_id).error_code == GROUP_DENIED
        assert share_ack(c, "locked", "m", 1, open_id, [(0, 0, (1,))]).error_code == GROUP_DENIED
        [g] = c.request(77, 1, group_ids=["locked"], include_authorized_operations=False).groups
        assert g.error_code == GROUP_DENIED
        denied = share_fetch(c, "g", "m", 0, secret_id)
        assert [(t.topic_id, [(p.error_code, p.acquired_records) for p in t.partitions]) for t in denied.responses] \
            == [(secret_id, [(TOPIC_DENIED, [])])]
        allowed = share_fetch(c, "g", "m", 0, open_id)
        [p] = allowed.responses[0].partitions
        assert (p.error_code, [(a.first_offset, a.last_offset) for a in p.acquired_records]) == (0, [(0, 0)])
        acked = share_ack(c, "g", "m", 1, secret_id, [(0, 0, (1,))])
        assert acked.responses[0].partitions[0].error_code == TOPIC_DENIED
        # a READ denied after the partition joined the share session: no more records from it
        c.request(30, 3, creations=[Creation(resource_type=TOPIC, resource_name="open", resource_pattern_type=LITERAL,
                                             principal="User:ANONYMOUS", host="*", operation=READ,
                                             permission_type=DENY)])
        later = share_fetch(c, "g", "m", 2, open_id, fetch=False)
        assert [(p.error_code, p.acquired_records) for p in later.responses[0].partitions] == [(TOPIC_DENIED, [])]


# -- a cluster: the group's coordinator on one broker, share partitions on each partition's leader -------
@pytest.mark.slow
@requires_java
@pytest.mark.parametrize("samsa_cluster", [{"overrides": {k: v for k, v in SHARE_PROPS.items()
                                                          if k != "num.partitions"}}], indirect=True)
def test_share_consumer_on_a_cluster(samsa_cluster):
    from tests.support.cluster_support import create_topic_at, metadata, wait_for

    boots = samsa_cluster.bootstrap_servers.split(",")
    topic, group = unique("q"), unique("sg")
    assert create_topic_at(boots[0], topic, partitions=3, rf=1).error_code == 0
    parts = wait_for(lambda: all((m := metadata(b))["topics"].get(topic) for b in boots) and m["topics"][topic],
                     what="topic on every broker")
    assert {leader for leader, *_ in parts.values()} == {1, 2, 3}       # one partition led by each broker
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=samsa_cluster.bootstrap_servers)
    values = [f"v{i}" for i in range(30)]
    for i, v in enumerate(values):
        p.send(topic, value=v.encode(), partition=i % 3)
    p.flush(timeout=30)
    p.close(timeout=5)
    lines = start_java_source("4.3.0", SOURCE, "--bootstrap", samsa_cluster.bootstrap_servers, "--topic", topic,
                              "--group", group, "--expect", "30", "--max-ms", "60000").result(timeout=90)
    records = of_type(lines, "record")
    assert sorted(r["value"] for r in records) == sorted(values)       # each exactly once
    assert {r["partition"] for r in records} == {0, 1, 2}


@pytest.mark.samsa_broker(overrides={"group.share.enable": "true", "num.partitions": "1"})
def test_share_partitions_start_at_latest_by_default(samsa_broker):
    """share.auto.offset.reset is latest unless samsa.share.auto.offset.reset says otherwise, as Kafka."""
    from tests.support.rawclient import RawClient

    bs = samsa_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_one_by_one(bs, topic, 2)
    tid = topic_id_of(bs, topic)
    with RawClient(bs) as c:
        first = share_fetch(c, group, "m", 0, tid)
        assert first.error_code == 0 and first.responses == []          # v0 and v1 came before the group
        produce_one_by_one(bs, topic, 1, first=2)
        [p] = share_fetch(c, group, "m", 1, tid, fetch=False).responses[0].partitions
        assert [(a.first_offset, a.last_offset) for a in p.acquired_records] == [(2, 2)]


@requires_java
def test_a_record_always_released_is_archived_at_the_delivery_count_limit(share_broker):
    bs = share_broker.bootstrap_servers
    topic, group = unique("q"), unique("sg")
    produce_one_by_one(bs, topic, 3)
    lines = start_java_source("4.3.0", SOURCE, "--bootstrap", bs, "--topic", topic, "--group", group,
                              "--release-always", "v1", "--idle-ms", "3000", "--max-ms", "40000").result(timeout=60)
    records = of_type(lines, "record")
    assert [r["delivery_count"] for r in records if r["value"] == "v1"] == [1, 2, 3, 4, 5]   # then archived
    assert sorted(r["value"] for r in records if r["ack"] == "accept") == ["v0", "v2"]
