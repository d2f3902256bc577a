"""KIP-848 consumer groups on the wire (raw ConsumerGroupHeartbeat/ConsumerGroupDescribe requests
against a real broker process): epochs, assignments, errors as Kafka gives them, restart."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from broker.testing import SamsaBroker, running_broker
from protocol.messages import REQUESTS
from tests.support.rawclient import RawClient

HB, DESCRIBE, METADATA, API_VERSIONS, LIST_GROUPS, DESCRIBE_GROUPS = 68, 69, 3, 18, 16, 15
OFFSET_COMMIT, OFFSET_FETCH = 8, 9
NONE, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, INVALID_REQUEST = 0, 22, 25, 42
GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED = 69, 81
FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, STALE_MEMBER_EPOCH = 110, 111, 112, 113
INVALID_REGULAR_EXPRESSION = 128
PARTITIONS = 6


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def cbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("cg-wire") / "data", overrides={
        "num.partitions": str(PARTITIONS), "group.consumer.max.size": "3"}) as broker:
        yield broker


@pytest.fixture
def client(cbroker: SamsaBroker) -> Iterator[RawClient]:
    with RawClient(cbroker.bootstrap_servers) as c:
        yield c


def create_topic(client: RawClient, topic: str) -> uuid.UUID:
    md = client.request(METADATA, 12, topics=[REQUESTS[METADATA].MetadataRequestTopic(name=topic, topic_id=None)],
                        allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    assert md.topics[0].error_code == NONE
    return md.topics[0].topic_id


def hb(client: RawClient, group: str, member_id: str, epoch: int, owned: Any = None, version: int = 1,
       **kw: Any) -> Any:
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", 30000)
        owned = [] if owned is None else owned
    return client.request(HB, version, group_id=group, member_id=member_id, member_epoch=epoch,
                          topic_partitions=owned, **kw)


def parts(resp: Any) -> dict[uuid.UUID, list[int]]:
    return {tp.topic_id: sorted(tp.partitions) for tp in resp.assignment.topic_partitions}


def owned(assignment: dict[uuid.UUID, list[int]]) -> list[Any]:
    TP = REQUESTS[HB].TopicPartitions
    return [TP(topic_id=t, partitions=ps) for t, ps in assignment.items()]


def test_api_versions_advertises_consumer_group_apis_and_features(client: RawClient) -> None:
    r = client.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert keys[HB] == (0, 1) and keys[DESCRIBE] == (0, 1)
    assert {f.name: (f.min_version, f.max_version) for f in r.supported_features}["group.version"] == (0, 1)
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    assert finalized["group.version"] == 1 and finalized["metadata.version"] == 25
    assert r.finalized_features_epoch >= 0


def test_two_members_reconcile_revocation_before_assignment(client: RawClient) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(client, topic)
    a = hb(client, group, "member-a", 0, subscribed_topic_names=[topic])
    assert (a.error_code, a.member_id, a.member_epoch) == (NONE, "member-a", 1)
    assert parts(a) == {tid: list(range(PARTITIONS))}
    b = hb(client, group, "member-b", 0, subscribed_topic_names=[topic])
    assert (b.error_code, b.member_epoch) == (NONE, 2)
    assert parts(b) == {}                 # a still owns everything: b waits (UNRELEASED_PARTITIONS)
    a2 = hb(client, group, "member-a", 1, owned=owned({tid: list(range(PARTITIONS))}))
    assert a2.member_epoch == 1           # revoking first, epoch unchanged
    kept = parts(a2)[tid]
    assert len(kept) == 3
    b2 = hb(client, group, "member-b", 2, owned=[])
    assert b2.assignment is None          # nothing released yet
    a3 = hb(client, group, "member-a", 1, owned=owned({tid: kept}))
    assert a3.member_epoch == 2
    b3 = hb(client, group, "member-b", 2, owned=[])
    assert parts(b3) == {tid: sorted(set(range(PARTITIONS)) - set(kept))}
    d = client.request(DESCRIBE, 0, group_ids=[group], include_authorized_operations=False).groups[0]
    assert (d.error_code, d.group_state, d.group_epoch, d.assignment_epoch, d.assignor_name) == \
        (NONE, "Stable", 2, 2, "uniform")
    got = {m.member_id: sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions) for m in d.members}
    assert got == {"member-a": kept, "member-b": sorted(set(range(PARTITIONS)) - set(kept))}
    assert {tp.topic_name for m in d.members for tp in m.assignment.topic_partitions} == {topic}
    d1 = client.request(DESCRIBE, 1, group_ids=[group], include_authorized_operations=False).groups[0]
    assert [m.member_type for m in d1.members] == [1, 1]
    listed = client.request(LIST_GROUPS, 5, states_filter=[], types_filter=["consumer"])
    assert [(x.group_type, x.group_state, x.protocol_type) for x in listed.groups if x.group_id == group] == \
        [("consumer", "Stable", "consumer")]
    classic_only = client.request(LIST_GROUPS, 5, states_filter=[], types_filter=["classic"])
    assert group not in {x.group_id for x in classic_only.groups}
    dg = client.request(DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=False).groups[0]
    assert (dg.error_code, dg.protocol_type, dg.group_state, len(dg.members)) == (NONE, "consumer", "Stable", 2)
    # leave: the other member gets everything on its next heartbeats
    leave = hb(client, group, "member-a", -1)
    assert (leave.error_code, leave.member_epoch) == (NONE, -1)
    b4 = hb(client, group, "member-b", 2, owned=owned(parts(b3)))
    assert b4.member_epoch == 3 and parts(b4) == {tid: list(range(PARTITIONS))}


@pytest.mark.parametrize("case", ["greater", "smaller", "unknown", "empty-group", "bad-epoch", "no-rebalance-timeout",
                                  "bad-assignor", "bad-regex", "max-size", "no-subscription"])
def test_bad_heartbeats_get_kafkas_error_codes(client: RawClient, case: str) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(client, topic)
    first = hb(client, group, "m1", 0, subscribed_topic_names=[topic])
    assert first.error_code == NONE
    expected = {"greater": FENCED_MEMBER_EPOCH, "smaller": FENCED_MEMBER_EPOCH, "unknown": UNKNOWN_MEMBER_ID,
                "empty-group": INVALID_REQUEST, "bad-epoch": INVALID_REQUEST, "no-rebalance-timeout": INVALID_REQUEST,
                "bad-assignor": UNSUPPORTED_ASSIGNOR, "bad-regex": INVALID_REGULAR_EXPRESSION,
                "max-size": GROUP_MAX_SIZE_REACHED, "no-subscription": INVALID_REQUEST}[case]
    if case == "greater":
        r = hb(client, group, "m1", 5, owned=[])
    elif case == "smaller":
        hb(client, group, "m2", 0, subscribed_topic_names=[topic])     # epoch 2 for m2; m1 still at 1
        hb(client, group, "m1", 1, owned=[])                           # m1 moves to 2 (it owns nothing yet)
        r = hb(client, group, "m1", 1, owned=owned({uuid.uuid4(): [0]}))
    elif case == "unknown":
        r = hb(client, group, "nobody", 1, owned=[])
    elif case == "empty-group":
        r = hb(client, "", "m9", 0, subscribed_topic_names=[topic])
    elif case == "bad-epoch":
        r = hb(client, group, "m1", -3, owned=[])
    elif case == "no-rebalance-timeout":
        r = hb(client, group, "m9", 0, subscribed_topic_names=[topic], rebalance_timeout_ms=-1)
    elif case == "bad-assignor":
        r = hb(client, group, "m9", 0, subscribed_topic_names=[topic], server_assignor="sticky")
    elif case == "bad-regex":
        r = hb(client, group, "m9", 0, subscribed_topic_regex="t-(")
    elif case == "max-size":
        for m in ("m2", "m3"):
            assert hb(client, group, m, 0, subscribed_topic_names=[topic]).error_code == NONE
        r = hb(client, group, "m4", 0, subscribed_topic_names=[topic])
    else:
        r = hb(client, group, "m9", 0)
    assert r.error_code == expected, r
    # the group is intact: m1 still heartbeats
    d = client.request(DESCRIBE, 0, group_ids=[group], include_authorized_operations=False).groups[0]
    assert "m1" in {m.member_id for m in d.members}


def test_static_member_leaves_with_minus_two_and_rejoins_with_its_partitions(client: RawClient) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(client, topic)
    a = hb(client, group, "a1", 0, subscribed_topic_names=[topic], instance_id="inst-a")
    assert parts(a) == {tid: list(range(PARTITIONS))}
    left = hb(client, group, "a1", -2, instance_id="inst-a")
    assert (left.error_code, left.member_epoch) == (NONE, -2)
    clash = hb(client, group, "x1", 0, subscribed_topic_names=[topic], instance_id="inst-b")
    assert clash.error_code == NONE and parts(clash) == {}        # inst-a's partitions stay reserved
    back = hb(client, group, "a2", 0, subscribed_topic_names=[topic], instance_id="inst-a")
    assert back.error_code == NONE and back.member_id == "a2"
    assert set(parts(back)[tid]) <= set(range(PARTITIONS)) and len(parts(back)[tid]) >= 3
    again = hb(client, group, "a3", 0, subscribed_topic_names=[topic], instance_id="inst-a")
    assert again.error_code == UNRELEASED_INSTANCE_ID


def test_regex_resolution_is_kafkas_literal_topic_first_new_topics_after_ten_seconds(
        cbroker: SamsaBroker, client: RawClient) -> None:
    """Kafka 4.0 resolves a regex after the heartbeat that brought it (its own step, which the
    next heartbeat finds done): first the literal topic, then the matched ones; a topic created
    later is matched by a refresh no sooner than 10 s after the last one."""
    group, prefix, literal = unique("g"), unique("rx"), unique("lit")
    t1 = create_topic(client, f"{prefix}-one")
    lit = create_topic(client, literal)
    a = hb(client, group, "m", 0, subscribed_topic_names=[literal], subscribed_topic_regex=f"{prefix}-.*")
    assert (a.error_code, a.member_epoch, parts(a)) == (NONE, 1, {lit: list(range(PARTITIONS))})
    a = hb(client, group, "m", 1, owned=owned(parts(a)))
    assert (a.member_epoch, parts(a)) == (2, {lit: list(range(PARTITIONS)), t1: list(range(PARTITIONS))})
    mine = owned(parts(a))
    t2 = create_topic(client, f"{prefix}-two")
    create_topic(client, f"other-{prefix}")
    a = hb(client, group, "m", 2, owned=mine)
    assert (a.member_epoch, a.assignment) == (2, None)            # within 10 s of the resolution
    cbroker.clock.advance(10_001)
    assert hb(client, group, "m", 2, owned=mine).member_epoch == 2   # schedules the refresh
    a = hb(client, group, "m", 2, owned=mine)
    assert (a.member_epoch, parts(a)) == (3, {lit: list(range(PARTITIONS)), t1: list(range(PARTITIONS)),
                                              t2: list(range(PARTITIONS))})


def test_offset_commit_and_fetch_validate_member_epoch(client: RawClient) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(client, topic)
    a = hb(client, group, "m", 0, subscribed_topic_names=[topic])
    Req = REQUESTS[OFFSET_COMMIT]

    def commit(member: str, epoch: int) -> int:
        r = client.request(OFFSET_COMMIT, 9, group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
                           group_instance_id=None, topics=[Req.OffsetCommitRequestTopic(name=topic, partitions=[
                               Req.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                                   partition_index=0, committed_offset=7, committed_leader_epoch=-1,
                                   committed_metadata="")])])
        return r.topics[0].partitions[0].error_code

    assert commit("m", a.member_epoch + 1) == STALE_MEMBER_EPOCH
    assert commit("x", a.member_epoch) == UNKNOWN_MEMBER_ID
    assert commit("m", a.member_epoch) == NONE
    F = REQUESTS[OFFSET_FETCH]

    def fetch(member: str | None, epoch: int) -> Any:
        r = client.request(OFFSET_FETCH, 9, groups=[F.OffsetFetchRequestGroup(
            group_id=group, member_id=member, member_epoch=epoch,
            topics=[F.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])],
            require_stable=False)
        return r.groups[0]

    assert fetch("m", 99).error_code == STALE_MEMBER_EPOCH
    ok = fetch("m", a.member_epoch)
    assert ok.error_code == NONE and ok.topics[0].partitions[0].committed_offset == 7
    assert fetch(None, -1).topics[0].partitions[0].committed_offset == 7    # admin-style fetch


def test_consumer_group_describe_of_a_classic_group_is_group_id_not_found(client: RawClient) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(client, topic)
    Req = REQUESTS[OFFSET_COMMIT]
    client.request(OFFSET_COMMIT, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                   group_instance_id=None, topics=[Req.OffsetCommitRequestTopic(name=topic, partitions=[
                       Req.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                           partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                           committed_metadata="")])])
    d = client.request(DESCRIBE, 0, group_ids=[group, unique("none")], include_authorized_operations=False)
    assert [g.error_code for g in d.groups] == [GROUP_ID_NOT_FOUND, GROUP_ID_NOT_FOUND]
    # an empty classic ("simple") group converts when a consumer-protocol member joins; offsets stay
    a = hb(client, group, "m", 0, subscribed_topic_names=[topic])
    assert a.error_code == NONE
    F = REQUESTS[OFFSET_FETCH]
    r = client.request(OFFSET_FETCH, 9, groups=[F.OffsetFetchRequestGroup(
        group_id=group, member_id=None, member_epoch=-1,
        topics=[F.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])],
        require_stable=False)
    assert r.groups[0].topics[0].partitions[0].committed_offset == 1


def test_state_survives_a_restart(tmp_path: Any) -> None:
    broker = SamsaBroker(tmp_path / "data", overrides={"num.partitions": "4"}).start()
    try:
        group, topic = unique("g"), unique("t")
        with RawClient(broker.bootstrap_servers) as c:
            tid = create_topic(c, topic)
            a = hb(c, group, "a", 0, subscribed_topic_names=[topic])
            b = hb(c, group, "b", 0, subscribed_topic_names=[topic])
            a = hb(c, group, "a", 1, owned=owned(parts(a)))
            a = hb(c, group, "a", a.member_epoch, owned=owned(parts(a)))
            b = hb(c, group, "b", 2, owned=[])
            before = c.request(DESCRIBE, 0, group_ids=[group], include_authorized_operations=False).groups[0]
        broker.stop()
        broker.start()
        with RawClient(broker.bootstrap_servers) as c:
            after = c.request(DESCRIBE, 0, group_ids=[group], include_authorized_operations=False).groups[0]
            assert (after.group_state, after.group_epoch, after.assignment_epoch) == \
                (before.group_state, before.group_epoch, before.assignment_epoch) == ("Stable", 2, 2)
            assert sorted((m.member_id, m.member_epoch, str(m.assignment), str(m.target_assignment))
                          for m in after.members) == \
                sorted((m.member_id, m.member_epoch, str(m.assignment), str(m.target_assignment)) for m in before.members)
            again = hb(c, group, "b", 2, owned=owned(parts(b)))
            assert again.error_code == NONE and again.member_epoch == 2
            assert tid in parts(b)
    finally:
        broker.stop()


JOIN, SYNC, HEARTBEAT, LEAVE = 11, 14, 12, 13


def classic_join(client: RawClient, group: str, topic: str, member_id: str) -> Any:
    """A JoinGroup v9 as a Java classic consumer sends it (range, roundrobin; subscription v1)."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
    sub = bytes(ConsumerProtocolSubscription(version=1, topics=[topic], user_data=None, owned_partitions=[])
                .encode(version=1))
    Proto = REQUESTS[JOIN].JoinGroupRequestProtocol
    return client.request(JOIN, 9, group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=20000,
                          member_id=member_id, group_instance_id=None, protocol_type="consumer",
                          protocols=[Proto(name="range", metadata=sub), Proto(name="roundrobin", metadata=sub)],
                          reason=None)


def classic_sync(client: RawClient, group: str, joined: Any) -> tuple[Any, list[tuple[str, list[int]]]]:
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment
    s = client.request(SYNC, 5, group_id=group, generation_id=joined.generation_id, member_id=joined.member_id,
                       group_instance_id=None, protocol_type="consumer", protocol_name="range", assignments=[])
    got = ConsumerProtocolAssignment.decode(bytes(s.assignment)) if s.error_code == NONE else None
    return s, [] if got is None else [(t.topic, sorted(t.partitions)) for t in got.assigned_partitions]


def test_classic_join_sync_heartbeat_leave_inside_a_consumer_group_on_the_wire(client: RawClient) -> None:
    """JoinGroup v9 / SyncGroup v5 / Heartbeat v4 / LeaveGroup v5 of a classic member of a
    consumer group: Kafka's fields (no leader, the member epoch as generation, its first protocol),
    its server-side share in the ConsumerProtocol encoding, REBALANCE_IN_PROGRESS to rejoin."""
    topic, group = unique("t"), unique("g")
    tid = create_topic(client, topic)
    a = hb(client, group, "", 0, subscribed_topic_names=[topic])

    def join(member_id: str) -> Any:
        return classic_join(client, group, topic, member_id)
    first = join("")
    assert first.error_code == 79 and first.member_id                  # MEMBER_ID_REQUIRED
    j = join(first.member_id)
    assert (j.error_code, j.leader, j.protocol_type, j.protocol_name, j.skip_assignment, list(j.members)) == \
        (NONE, "", "consumer", "range", False, [])
    assert j.generation_id == 2                                        # the member epoch
    # a revokes half; the classic member is told to rejoin and then gets its share
    a = hb(client, group, a.member_id, a.member_epoch, owned({tid: list(range(PARTITIONS))}))
    a = hb(client, group, a.member_id, a.member_epoch, owned(parts(a)))
    beat = client.request(HEARTBEAT, 4, group_id=group, generation_id=j.generation_id, member_id=j.member_id,
                          group_instance_id=None)
    assert beat.error_code == 27                                          # REBALANCE_IN_PROGRESS
    j = join(j.member_id)
    s, got = classic_sync(client, group, j)
    assert s.error_code == NONE and (s.protocol_type, s.protocol_name) == ("consumer", "range")
    assert got == [(topic, [3, 4, 5])]
    assert client.request(HEARTBEAT, 4, group_id=group, generation_id=j.generation_id, member_id=j.member_id,
                          group_instance_id=None).error_code == NONE
    d = client.request(DESCRIBE, 1, group_ids=[group], include_authorized_operations=False).groups[0]
    assert sorted(m.member_type for m in d.members) == [0, 1]
    MI = REQUESTS[LEAVE].MemberIdentity
    left = client.request(LEAVE, 5, group_id=group, members=[MI(member_id=j.member_id, group_instance_id=None,
                                                                reason="bye")])
    assert left.error_code == NONE and [m.error_code for m in left.members] == [NONE]
    d = client.request(DESCRIBE, 1, group_ids=[group], include_authorized_operations=False).groups[0]
    assert [m.member_id for m in d.members] == [a.member_id]


def test_a_classic_member_of_a_consumer_group_survives_a_restart(tmp_path: Any) -> None:
    broker = SamsaBroker(tmp_path / "data", overrides={"num.partitions": "4"}).start()
    try:
        group, topic = unique("g"), unique("t")
        with RawClient(broker.bootstrap_servers) as c:
            create_topic(c, topic)
            a = hb(c, group, "", 0, subscribed_topic_names=[topic])
            j = classic_join(c, group, topic, classic_join(c, group, topic, "").member_id)
            a = hb(c, group, a.member_id, a.member_epoch, owned(parts(a)))
            a = hb(c, group, a.member_id, a.member_epoch, owned(parts(a)))
            j = classic_join(c, group, topic, j.member_id)
            _, share = classic_sync(c, group, j)
            assert share == [(topic, [2, 3])]
        broker.stop()
        broker.start()
        with RawClient(broker.bootstrap_servers) as c:
            assert c.request(HEARTBEAT, 4, group_id=group, generation_id=j.generation_id, member_id=j.member_id,
                             group_instance_id=None).error_code == NONE
            s, again = classic_sync(c, group, j)
            assert s.error_code == NONE and again == share
            d = c.request(DESCRIBE, 1, group_ids=[group], include_authorized_operations=False).groups[0]
            assert d.group_state == "Stable" and sorted(m.member_type for m in d.members) == [0, 1]
    finally:
        broker.stop()
