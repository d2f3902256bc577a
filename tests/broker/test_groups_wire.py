"""Consumer-group APIs with hand-built requests (tests/support/rawclient.py): Kafka's exact error codes.

FindCoordinator v0-v6 (batched keys from v4), MEMBER_ID_REQUIRED on a first v4+ join and
generations from 1, the default 3 s initial rebalance delay and its extension, and bad input
-- an empty group id, a 1 MB member metadata blob, SyncGroup from a non-member, a heartbeat for
an unknown group, OffsetCommit for an unknown topic -- each answered with Kafka's code while a
live group and its committed offsets stay exactly as they were.

Expected codes follow Kafka's own group coordinator (GroupCoordinatorService and
GroupMetadataManager in Kafka 4): e.g. a heartbeat or SyncGroup for a group that does not exist
is UNKNOWN_MEMBER_ID (the GroupIdNotFoundException is rethrown as UnknownMemberIdException).
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kafka.errors as Errors
import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from broker.testing import SamsaBroker, running_broker
from protocol.messages import REQUESTS
from tests.support.groups_support import committed, describe, produce, unique
from tests.support.rawclient import RawClient

OFFSET_COMMIT, OFFSET_FETCH, METADATA, FIND_COORDINATOR = 8, 9, 3, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, LIST_GROUPS, DESCRIBE_GROUPS = 11, 12, 13, 14, 16, 15
JoinReq, SyncReq, CommitReq = REQUESTS[JOIN_GROUP], REQUESTS[SYNC_GROUP], REQUESTS[OFFSET_COMMIT]

NONE = 0
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = Errors.UnknownTopicOrPartitionError.errno   # 3
ILLEGAL_GENERATION = Errors.IllegalGenerationError.errno                 # 22
INVALID_GROUP_ID = Errors.InvalidGroupIdError.errno                      # 24
UNKNOWN_MEMBER_ID = Errors.UnknownMemberIdError.errno                    # 25
REBALANCE_IN_PROGRESS = Errors.RebalanceInProgressError.errno            # 27
MEMBER_ID_REQUIRED = Errors.MemberIdRequiredError.errno                  # 79
UNKNOWN_TOPIC_ID = Errors.UnknownTopicIdError.errno                      # 100

PARTITIONS = 6
SESSION_MS = 30000  # the raw members never heartbeat unless a test says so
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions default


@pytest.fixture(scope="module")
def wbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path_factory.mktemp("groups-wire") / "data", overrides={
        "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
        "num.partitions": str(PARTITIONS)}) as broker:
        yield broker


@pytest.fixture
def client(wbroker: SamsaBroker) -> Iterator[RawClient]:
    with RawClient(wbroker.bootstrap_servers) as c:
        yield c


def subscription(topic: str) -> bytes:
    return ConsumerProtocolSubscription(version=0, topics=[topic], user_data=None).encode()


def assignment(topic: str, parts: list[int]) -> bytes:
    return ConsumerProtocolAssignment(version=0, assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=parts)], user_data=None).encode()


def join_fields(group: str | None, member_id: str = "", metadata: bytes = b"", *, session_ms: int = SESSION_MS,
                protocol: str = "range", instance_id: str | None = None) -> dict[str, Any]:
    return dict(group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=30000, member_id=member_id,
                group_instance_id=instance_id, protocol_type="consumer", reason=None,
                protocols=[JoinReq.JoinGroupRequestProtocol(name=protocol, metadata=metadata)])


def sync_fields(group: str | None, generation: int, member_id: str,
                assignments: dict[str, bytes] | None = None) -> dict[str, Any]:
    return dict(group_id=group, generation_id=generation, member_id=member_id, group_instance_id=None,
                protocol_type="consumer", protocol_name="range",
                assignments=[SyncReq.SyncGroupRequestAssignment(member_id=m, assignment=a)
                             for m, a in (assignments or {}).items()])


def commit_fields(group: str, generation: int, member_id: str, offsets: dict[tuple[str, int], int]) -> dict[str, Any]:
    T = CommitReq.OffsetCommitRequestTopic
    topics: dict[str, list[Any]] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(T.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata=f"m{o}"))
    return dict(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                group_instance_id=None, retention_time_ms=-1,
                topics=[T(name=t, topic_id=None, partitions=ps) for t, ps in topics.items()])


class LiveGroup:
    """A Stable one-member group built with raw requests, with committed offsets."""

    def __init__(self, client: RawClient, bootstrap: str) -> None:
        self.client, self.bs = client, bootstrap
        self.topic, self.group = unique("t"), unique("g")
        produce(bootstrap, self.topic, PARTITIONS, 3)
        first = client.request(JOIN_GROUP, 9, **join_fields(self.group, "", subscription(self.topic)))
        assert first.error_code == MEMBER_ID_REQUIRED
        self.member_id = first.member_id
        joined = client.request(JOIN_GROUP, 9, **join_fields(self.group, self.member_id, subscription(self.topic)))
        assert (joined.error_code, joined.generation_id, joined.leader) == (NONE, 1, self.member_id)
        self.generation = joined.generation_id
        synced = client.request(SYNC_GROUP, 5, **sync_fields(self.group, 1, self.member_id, {
            self.member_id: assignment(self.topic, list(range(PARTITIONS)))}))
        assert synced.error_code == NONE
        self.offsets = {(self.topic, p): p + 1 for p in range(PARTITIONS)}
        resp = client.request(OFFSET_COMMIT, 9, **commit_fields(self.group, 1, self.member_id, self.offsets))
        assert [p.error_code for t in resp.topics for p in t.partitions] == [NONE] * PARTITIONS
        self.snapshot = self.state()
        assert self.snapshot[0].state == "Stable"

    def state(self) -> tuple[Any, Any]:
        return describe(self.client, self.group), committed(self.client, self.group)

    def assert_unaffected(self) -> None:
        assert self.state() == self.snapshot
        hb = self.client.request(HEARTBEAT, 4, group_id=self.group, generation_id=self.generation,
                                 member_id=self.member_id, group_instance_id=None)
        assert hb.error_code == NONE  # still a member of the same generation


@pytest.fixture
def live(wbroker: SamsaBroker, client: RawClient) -> LiveGroup:
    return LiveGroup(client, wbroker.bootstrap_servers)


# --------------------------------------------------------------------------- FindCoordinator
@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator_every_version(wbroker: SamsaBroker, client: RawClient, version: int) -> None:
    host, port = "127.0.0.1", wbroker.port
    if version >= 4:  # batched keys, answered one by one in order
        keys = [unique("g"), unique("g"), "x" * 200]
        r = client.request(FIND_COORDINATOR, version, key_type=0, coordinator_keys=keys)
        assert [(c.key, c.node_id, c.host, c.port, c.error_code, c.error_message) for c in r.coordinators] == [
            (k, 1, host, port, NONE, "NONE") for k in keys]  # Kafka sends Errors.NONE.message() = "NONE"
        return
    fields: dict[str, Any] = {"key": unique("g")}
    if version >= 1:
        fields["key_type"] = 0
    r = client.request(FIND_COORDINATOR, version, **fields)
    assert (r.error_code, r.node_id, r.host, r.port) == (NONE, 1, host, port)
    if version >= 1:
        assert r.error_message == "NONE"


def test_offsets_topic_is_internal_compacted_with_fifty_partitions(wbroker: SamsaBroker, client: RawClient) -> None:
    client.request(FIND_COORDINATOR, 0, key=unique("g"))  # created on first use at the latest
    md = client.request(METADATA, 12, topics=None, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
    (t,) = [t for t in md.topics if t.name == "__consumer_offsets"]
    assert (t.error_code, t.is_internal, len(t.partitions)) == (NONE, True, OFFSETS_PARTITIONS)
    R = REQUESTS[32].DescribeConfigsResource  # DescribeConfigs
    cfg = client.request(32, 4, resources=[R(resource_type=2, resource_name="__consumer_offsets",
                                             configuration_keys=["cleanup.policy"])],
                         include_synonyms=False, include_documentation=False)
    (res,) = cfg.results
    assert (res.error_code, [(c.name, c.value) for c in res.configs]) == (NONE, [("cleanup.policy", "compact")])


# --------------------------------------------------------------------------- JoinGroup basics
@pytest.mark.parametrize("version", range(0, 10))
def test_first_join_member_id_required_from_v4_and_generation_starts_at_one(client: RawClient, version: int) -> None:
    group, topic = unique("g"), unique("t")
    meta = subscription(topic)
    fields = join_fields(group, "", meta)
    r = client.request(JOIN_GROUP, version, **fields)
    if version >= 4:
        assert (r.error_code, r.generation_id, r.leader, list(r.members)) == (MEMBER_ID_REQUIRED, -1, "", [])
        assert r.member_id.startswith("samsa-tests-")  # Kafka: client id + "-" + a UUID
        member_id = r.member_id
        r = client.request(JOIN_GROUP, version, **join_fields(group, member_id, meta))
        assert r.member_id == member_id
    assert (r.error_code, r.generation_id, r.leader) == (NONE, 1, r.member_id)
    assert [(m.member_id, bytes(m.metadata)) for m in r.members] == [(r.member_id, meta)]
    assert r.protocol_name == "range"
    if version >= 7:
        assert r.protocol_type == "consumer"


def create_topic(client: RawClient, topic: str) -> None:
    """Auto-create ``topic`` (num.partitions) with a Metadata request."""
    md = client.request(METADATA, 12, topics=[REQUESTS[METADATA].MetadataRequestTopic(name=topic, topic_id=None)],
                        allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    assert [t.name for t in md.topics] == [topic]


def test_generation_increments_on_every_completed_join(client: RawClient, wbroker: SamsaBroker) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(client, topic)
    meta = subscription(topic)
    a = client.request(JOIN_GROUP, 9, **join_fields(group, "", meta)).member_id
    r = client.request(JOIN_GROUP, 9, **join_fields(group, a, meta))
    assert (r.error_code, r.generation_id) == (NONE, 1)
    assert client.request(SYNC_GROUP, 5, **sync_fields(group, 1, a, {a: b""})).error_code == NONE
    with RawClient(wbroker.bootstrap_servers) as other:
        b = other.request(JOIN_GROUP, 9, **join_fields(group, "", meta)).member_id
        other.send(JOIN_GROUP, 9, **join_fields(group, b, meta))          # parked until a rejoins
        # (another connection: wait until the broker has taken it, or the heartbeat may overtake it)
        deadline = time.monotonic() + 10
        while describe(client, group).state != "PreparingRebalance":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        hb = client.request(HEARTBEAT, 4, group_id=group, generation_id=1, member_id=a, group_instance_id=None)
        assert hb.error_code == REBALANCE_IN_PROGRESS
        ra = client.request(JOIN_GROUP, 9, **join_fields(group, a, meta))
        rb = other.receive(JOIN_GROUP, 9)
    assert (ra.error_code, ra.generation_id, ra.leader, rb.generation_id, rb.leader) == (NONE, 2, a, 2, a)
    assert sorted(m.member_id for m in ra.members) == sorted([a, b]) and list(rb.members) == []
    # a commit with the old generation is refused
    resp = client.request(OFFSET_COMMIT, 9, **commit_fields(group, 1, a, {(topic, 0): 1}))
    assert resp.topics[0].partitions[0].error_code == ILLEGAL_GENERATION


def test_default_initial_rebalance_delay_is_three_seconds_and_extends_for_new_members(tmp_path: Path) -> None:
    """Kafka's InitialDelayedJoin: a new group waits group.initial.rebalance.delay.ms (3 s by
    default); a member added during the wait extends it by another delay (bounded by the
    rebalance timeout). Here: join at t=0 and t=1 s, both answered together at t=6 s, generation 1."""
    broker = SamsaBroker(tmp_path / "data", overrides={"num.partitions": str(PARTITIONS)}).start()
    try:
        group, topic = unique("g"), unique("t")
        meta = subscription(topic)
        with RawClient(broker.bootstrap_servers, timeout=20) as a, RawClient(broker.bootstrap_servers, timeout=20) as b:
            ida = a.request(JOIN_GROUP, 9, **join_fields(group, "", meta)).member_id  # MEMBER_ID_REQUIRED: at once
            idb = b.request(JOIN_GROUP, 9, **join_fields(group, "", meta)).member_id
            answered: dict[str, float] = {}

            def wait(c: RawClient, name: str) -> None:
                r = c.receive(JOIN_GROUP, 9)
                answered[name] = time.monotonic()
                assert (r.error_code, r.generation_id) == (NONE, 1)

            t0 = time.monotonic()
            a.send(JOIN_GROUP, 9, **join_fields(group, ida, meta))
            ta = threading.Thread(target=wait, args=(a, "a"))
            ta.start()
            time.sleep(1.0)
            b.send(JOIN_GROUP, 9, **join_fields(group, idb, meta))
            wait(b, "b")
            ta.join(10)
        assert set(answered) == {"a", "b"}
        for name, at in answered.items():
            assert 5.9 <= at - t0 <= 7.0, (name, at - t0)
    finally:
        broker.stop()


# --------------------------------------------------------------------------- bad input, group unaffected
@pytest.mark.parametrize("version", [0, 3, 5, 9])
def test_join_with_empty_group_id_is_invalid_group_id(live: LiveGroup, version: int) -> None:
    c = live.client
    r = c.request(JOIN_GROUP, version, **join_fields("", "", subscription(live.topic)))
    assert (r.error_code, r.member_id, r.generation_id, r.leader, list(r.members)) == (
        INVALID_GROUP_ID, "", -1, "", [])  # Kafka echoes the request's member id
    r = c.request(JOIN_GROUP, version, **join_fields("", "some-member", subscription(live.topic)))
    assert (r.error_code, r.member_id) == (INVALID_GROUP_ID, "some-member")
    listed = c.request(LIST_GROUPS, 4, states_filter=[])
    assert "" not in [g.group_id for g in listed.groups]
    live.assert_unaffected()


def test_heartbeat_and_sync_with_empty_group_id_are_invalid_group_id(live: LiveGroup) -> None:
    c = live.client
    hb = c.request(HEARTBEAT, 4, group_id="", generation_id=1, member_id=live.member_id, group_instance_id=None)
    assert hb.error_code == INVALID_GROUP_ID
    sy = c.request(SYNC_GROUP, 5, **sync_fields("", 1, live.member_id))
    assert sy.error_code == INVALID_GROUP_ID
    live.assert_unaffected()


def test_one_megabyte_member_metadata_is_answered(live: LiveGroup) -> None:
    """A 1 MiB subscription blob (in another group) is accepted and echoed to the leader; its
    SyncGroup must store a group record over the offsets topic's 1048588-byte limit, which Kafka
    answers with UNKNOWN_SERVER_ERROR (RecordTooLargeException mapped by the coordinator).
    Nothing leaks into the live group, and the broker keeps serving."""
    c = live.client
    blob = bytes(range(256)) * 4096
    assert len(blob) == 1 << 20
    big = unique("big")
    r = c.request(JOIN_GROUP, 9, **join_fields(big, "", blob))
    assert r.error_code == MEMBER_ID_REQUIRED
    member = r.member_id
    r = c.request(JOIN_GROUP, 9, **join_fields(big, member, blob))
    assert (r.error_code, r.generation_id, r.leader) == (NONE, 1, member)
    assert [(m.member_id, bytes(m.metadata)) for m in r.members] == [(member, blob)]
    s = c.request(SYNC_GROUP, 5, **sync_fields(big, 1, member, {member: assignment(live.topic, [0])}))
    assert s.error_code == UNKNOWN_SERVER_ERROR
    assert describe(c, big).state == "PreparingRebalance"  # Kafka rebalances after a failed store
    live.assert_unaffected()


@pytest.mark.parametrize("version", [0, 3, 5])
def test_sync_group_from_a_non_member_is_unknown_member_id(live: LiveGroup, version: int) -> None:
    c = live.client
    fields = sync_fields(live.group, live.generation, "not-a-member")
    r = c.request(SYNC_GROUP, version, **fields)
    assert r.error_code == UNKNOWN_MEMBER_ID
    # also when it claims to be the leader and hands out assignments
    fields = sync_fields(live.group, live.generation, "not-a-member", {"not-a-member": assignment(live.topic, [0])})
    assert c.request(SYNC_GROUP, version, **fields).error_code == UNKNOWN_MEMBER_ID
    # and for a group that does not exist
    assert c.request(SYNC_GROUP, version, **sync_fields(unique("nogroup"), 1, "m")).error_code == UNKNOWN_MEMBER_ID
    live.assert_unaffected()


@pytest.mark.parametrize("version", range(0, 5))
def test_heartbeat_for_an_unknown_group_is_unknown_member_id(live: LiveGroup, version: int) -> None:
    c = live.client
    r = c.request(HEARTBEAT, version, group_id=unique("nogroup"), generation_id=1, member_id=live.member_id,
                  group_instance_id=None)
    assert r.error_code == UNKNOWN_MEMBER_ID
    r = c.request(HEARTBEAT, version, group_id=live.group, generation_id=live.generation, member_id="not-a-member",
                  group_instance_id=None)
    assert r.error_code == UNKNOWN_MEMBER_ID
    live.assert_unaffected()


@pytest.mark.parametrize("version", [2, 5, 8, 9])
def test_offset_commit_for_an_unknown_topic_is_unknown_topic_or_partition(live: LiveGroup, version: int) -> None:
    c = live.client
    bad = {(unique("nosuchtopic"), 0): 5, (live.topic, PARTITIONS): 5, (live.topic, 99): 5}
    fields = commit_fields(live.group, live.generation, live.member_id, bad)
    r = c.request(OFFSET_COMMIT, version, **fields)
    got = {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}
    assert got == {k: UNKNOWN_TOPIC_OR_PARTITION for k in bad}
    live.assert_unaffected()


def test_offset_commit_v10_for_an_unknown_topic_id_is_unknown_topic_id(live: LiveGroup) -> None:
    import uuid
    c = live.client
    T = CommitReq.OffsetCommitRequestTopic
    r = c.request(OFFSET_COMMIT, 10, group_id=live.group, generation_id_or_member_epoch=live.generation,
                  member_id=live.member_id, group_instance_id=None, retention_time_ms=-1, topics=[
                      T(name="", topic_id=uuid.uuid4(), partitions=[T.OffsetCommitRequestPartition(
                          partition_index=0, committed_offset=5, committed_leader_epoch=-1, committed_metadata="")])])
    assert [p.error_code for t in r.topics for p in t.partitions] == [UNKNOWN_TOPIC_ID]
    live.assert_unaffected()


def test_garbage_after_bad_requests_broker_still_serves(wbroker: SamsaBroker, live: LiveGroup) -> None:
    """An undecodable JoinGroup closes that connection (as Kafka does) and nothing else."""
    with socket.create_connection(("127.0.0.1", wbroker.port), timeout=5) as s:
        body = b"\x00\x0b\x00\x09\x00\x00\x00\x01\x00\x04abcd" + b"\xff" * 11
        s.sendall(len(body).to_bytes(4, "big") + body)
        s.settimeout(5)
        assert s.recv(1) == b""
    live.assert_unaffected()


@pytest.mark.parametrize("case", ["protocol-type", "protocol-name", "session-too-short", "session-too-long"])
def test_join_that_cannot_fit_the_group_is_refused(live: LiveGroup, case: str) -> None:
    """INCONSISTENT_GROUP_PROTOCOL (checked before MEMBER_ID_REQUIRED) and INVALID_SESSION_TIMEOUT
    (group.min/max.session.timeout.ms: 1000 here / 1800000), answered at once, nobody added."""
    c = live.client
    fields = join_fields(live.group, "", subscription(live.topic))
    expected = Errors.InconsistentGroupProtocolError.errno
    if case == "protocol-type":
        fields["protocol_type"] = "connect"
    elif case == "protocol-name":
        fields["protocols"] = [JoinReq.JoinGroupRequestProtocol(name="roundrobin", metadata=b"")]
    else:
        fields["session_timeout_ms"] = 999 if case == "session-too-short" else 1800001
        expected = Errors.InvalidSessionTimeoutError.errno
    r = c.request(JOIN_GROUP, 9, **fields)
    assert (r.error_code, r.member_id, r.generation_id) == (expected, "", -1)
    live.assert_unaffected()


def test_leave_while_join_is_pending_does_not_wedge_the_group(wbroker: SamsaBroker, client: RawClient) -> None:
    """A new member leaves while its JoinGroup is parked: Kafka answers that JoinGroup with
    UNKNOWN_MEMBER_ID and the rebalance completes with those who stay."""
    group, topic = unique("g"), unique("t")
    create_topic(client, topic)
    meta = subscription(topic)
    a = client.request(JOIN_GROUP, 9, **join_fields(group, "", meta)).member_id
    assert client.request(JOIN_GROUP, 9, **join_fields(group, a, meta)).generation_id == 1
    assert client.request(SYNC_GROUP, 5, **sync_fields(group, 1, a, {a: b""})).error_code == NONE
    with RawClient(wbroker.bootstrap_servers) as joiner, RawClient(wbroker.bootstrap_servers) as leaver:
        b = joiner.request(JOIN_GROUP, 9, **join_fields(group, "", meta)).member_id
        joiner.send(JOIN_GROUP, 9, **join_fields(group, b, meta))  # parked: a has not rejoined
        time.sleep(0.2)
        assert describe(client, group).state == "PreparingRebalance"
        left = leaver.request(LEAVE_GROUP, 5, group_id=group, members=[
            REQUESTS[LEAVE_GROUP].MemberIdentity(member_id=b, group_instance_id=None, reason="bye")])
        assert (left.error_code, [(m.member_id, m.error_code) for m in left.members]) == (NONE, [(b, NONE)])
        parked = joiner.receive(JOIN_GROUP, 9)
        assert (parked.error_code, parked.member_id) == (UNKNOWN_MEMBER_ID, "")
    r = client.request(JOIN_GROUP, 9, **join_fields(group, a, meta))
    assert (r.error_code, r.generation_id, [m.member_id for m in r.members]) == (NONE, 2, [a])
    assert client.request(SYNC_GROUP, 5, **sync_fields(group, 2, a, {a: assignment(topic, [0])})).error_code == NONE
    view = describe(client, group)
    assert (view.state, list(view.members)) == ("Stable", [a])


def test_member_that_misses_the_rebalance_timeout_is_removed(wbroker: SamsaBroker, client: RawClient) -> None:
    """Members that do not rejoin within the rebalance timeout are dropped and the join completes
    with the others (Kafka's DelayedJoin expiry)."""
    group, topic = unique("g"), unique("t")
    create_topic(client, topic)
    meta = subscription(topic)
    fields = lambda mid: {**join_fields(group, mid, meta), "rebalance_timeout_ms": 1500}  # noqa: E731
    a = client.request(JOIN_GROUP, 9, **fields("")).member_id
    assert client.request(JOIN_GROUP, 9, **fields(a)).generation_id == 1
    assert client.request(SYNC_GROUP, 5, **sync_fields(group, 1, a, {a: b""})).error_code == NONE
    with RawClient(wbroker.bootstrap_servers, timeout=10) as other:
        b = other.request(JOIN_GROUP, 9, **fields("")).member_id
        t0 = time.monotonic()
        r = other.request(JOIN_GROUP, 9, **fields(b))  # a never rejoins
        waited = time.monotonic() - t0
    assert 1.4 <= waited <= 3.0, waited
    assert (r.error_code, r.generation_id, r.leader, [m.member_id for m in r.members]) == (NONE, 2, b, [b])
    hb = client.request(HEARTBEAT, 4, group_id=group, generation_id=1, member_id=a, group_instance_id=None)
    assert hb.error_code == UNKNOWN_MEMBER_ID


def test_committed_offset_metadata_and_leader_epoch_survive_restart(tmp_path: Path) -> None:
    broker = SamsaBroker(tmp_path / "data", overrides={"group.initial.rebalance.delay.ms": "0",
                                                     "num.partitions": "2"}).start()
    try:
        group, topic = unique("g"), unique("t")
        T = CommitReq.OffsetCommitRequestTopic
        with RawClient(broker.bootstrap_servers) as c:
            create_topic(c, topic)
            # a commit from a group with no members (what assign()-only clients send)
            r = c.request(OFFSET_COMMIT, 9, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                          group_instance_id=None, retention_time_ms=-1, topics=[T(name=topic, topic_id=None, partitions=[
                              T.OffsetCommitRequestPartition(partition_index=0, committed_offset=42,
                                                             committed_leader_epoch=0, committed_metadata="spark-batch-7"),
                              T.OffsetCommitRequestPartition(partition_index=1, committed_offset=7,
                                                             committed_leader_epoch=-1, committed_metadata="")])])
            assert [p.error_code for t in r.topics for p in t.partitions] == [NONE, NONE]
            before = fetch_all(c, group)
        broker.restart()
        with RawClient(broker.bootstrap_servers) as c:
            after = fetch_all(c, group)
            view = describe(c, group)
    finally:
        broker.stop()
    assert before == after == {(topic, 0): (42, 0, "spark-batch-7", NONE), (topic, 1): (7, -1, "", NONE)}
    assert (view.state, view.protocol_type, view.members) == ("Empty", "", {})


def fetch_all(c: RawClient, group: str) -> dict[tuple[str, int], tuple[int, int, str | None, int]]:
    """OffsetFetch v9 with a null topic list: (offset, leader epoch, metadata, error) per partition."""
    G = REQUESTS[OFFSET_FETCH].OffsetFetchRequestGroup
    r = c.request(OFFSET_FETCH, 9, groups=[G(group_id=group, member_id=None, member_epoch=-1, topics=None)],
                  require_stable=True)
    (g,) = r.groups
    assert (g.group_id, g.error_code) == (group, NONE)
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
            for t in g.topics for p in t.partitions}


def test_list_groups_state_filter_and_describe_of_unknown_group(live: LiveGroup) -> None:
    c = live.client
    stable = c.request(LIST_GROUPS, 4, states_filter=["Stable"])
    empty = c.request(LIST_GROUPS, 4, states_filter=["Empty"])
    assert [(g.group_id, g.protocol_type, g.group_state) for g in stable.groups if g.group_id == live.group] == [
        (live.group, "consumer", "Stable")]
    assert live.group not in [g.group_id for g in empty.groups]
    typed = c.request(LIST_GROUPS, 5, states_filter=[], types_filter=["classic"])
    assert [(g.group_id, g.group_type) for g in typed.groups if g.group_id == live.group] == [(live.group, "classic")]
    nobody = unique("nogroup")
    v5 = c.request(DESCRIBE_GROUPS, 5, groups=[nobody], include_authorized_operations=False).groups[0]
    assert (v5.error_code, v5.group_state, v5.protocol_type, list(v5.members)) == (NONE, "Dead", "", [])
    v6 = c.request(DESCRIBE_GROUPS, 6, groups=[nobody], include_authorized_operations=False).groups[0]
    assert (v6.error_code, v6.error_message) == (Errors.GroupIdNotFoundError.errno, f"Group {nobody} not found.")
    gone = c.request(42, 2, groups_names=[nobody]).results
    assert [(x.group_id, x.error_code) for x in gone] == [(nobody, Errors.GroupIdNotFoundError.errno)]
    busy = c.request(42, 2, groups_names=[live.group]).results
    assert [(x.group_id, x.error_code) for x in busy] == [(live.group, Errors.NonEmptyGroupError.errno)]
    live.assert_unaffected()


@pytest.mark.parametrize("case", ["old-generation", "unknown-member", "outsider"])
def test_offset_commit_that_does_not_belong_to_the_generation_is_refused(live: LiveGroup, case: str) -> None:
    """Kafka's ClassicGroup.validateOffsetCommit: the member is checked first (UNKNOWN_MEMBER_ID),
    then the generation (ILLEGAL_GENERATION); a commit with generation -1 and no member id is
    only accepted while the group is Empty (otherwise UNKNOWN_MEMBER_ID)."""
    generation, member, expected = {
        "old-generation": (live.generation + 1, live.member_id, ILLEGAL_GENERATION),
        "unknown-member": (live.generation, "not-a-member", UNKNOWN_MEMBER_ID),
        "outsider": (-1, "", UNKNOWN_MEMBER_ID),
    }[case]
    r = live.client.request(OFFSET_COMMIT, 9, **commit_fields(live.group, generation, member,
                                                             {(live.topic, p): 100 for p in range(PARTITIONS)}))
    assert [p.error_code for t in r.topics for p in t.partitions] == [expected] * PARTITIONS
    live.assert_unaffected()


def test_heartbeat_with_wrong_generation_and_leave_of_a_non_member(live: LiveGroup) -> None:
    c = live.client
    hb = c.request(HEARTBEAT, 4, group_id=live.group, generation_id=live.generation + 1,
                   member_id=live.member_id, group_instance_id=None)
    assert hb.error_code == ILLEGAL_GENERATION
    Identity = REQUESTS[LEAVE_GROUP].MemberIdentity
    r = c.request(LEAVE_GROUP, 5, group_id=live.group, members=[
        Identity(member_id="not-a-member", group_instance_id=None, reason=None)])
    assert (r.error_code, [(m.member_id, m.error_code) for m in r.members]) == (
        NONE, [("not-a-member", UNKNOWN_MEMBER_ID)])
    r = c.request(LEAVE_GROUP, 1, group_id=live.group, member_id="not-a-member")
    assert r.error_code == UNKNOWN_MEMBER_ID
    live.assert_unaffected()


def simple_commit(c: RawClient, group: str, topic: str, offset: int) -> int:
    """OffsetCommit v2 of partition 0 by a client outside the group (generation -1): its error code."""
    P = CommitReq.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    resp = c.request(OFFSET_COMMIT, 2, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                     retention_time_ms=-1, topics=[CommitReq.OffsetCommitRequestTopic(
                         name=topic, partitions=[P(partition_index=0, committed_offset=offset, committed_metadata="")])])
    return resp.topics[0].partitions[0].error_code


def test_metadata_auto_creation_of_the_offsets_topic_creates_it_as_the_coordinator_would(
        tmp_path: Path) -> None:
    """A Metadata request that auto-creates __consumer_offsets before any group used it gets the
    internal topic (offsets.topic.num.partitions partitions, compacted), not a plain topic of
    num.partitions; groups on every partition then work, also after a restart."""
    broker = SamsaBroker(tmp_path / "data", overrides={"offsets.topic.num.partitions": "5",
                                                      "group.initial.rebalance.delay.ms": "0"}).start()
    try:
        with RawClient(broker.bootstrap_servers) as c:
            md = c.request(METADATA, 12, topics=[REQUESTS[METADATA].MetadataRequestTopic(name="__consumer_offsets")],
                           allow_auto_topic_creation=True, include_topic_authorized_operations=False)
            (t,) = md.topics
            assert (t.error_code, t.is_internal, len(t.partitions)) == (0, True, 5)
            topic = unique("t")
            groups = [unique(f"g{i}") for i in range(12)]
            for g in groups:
                resp = c.request(OFFSET_COMMIT, 2, group_id=g, generation_id_or_member_epoch=-1, member_id="",
                                 retention_time_ms=-1, topics=[CommitReq.OffsetCommitRequestTopic(
                                     name=topic, partitions=[])])
                assert resp.topics[0].partitions == []
        produce(broker.bootstrap_servers, topic, 1, 1)
        with RawClient(broker.bootstrap_servers) as c:
            for i, g in enumerate(groups):
                assert simple_commit(c, g, topic, i) == NONE
        broker.restart()
        assert [committed(broker.bootstrap_servers, g) for g in groups] == \
            [{(topic, 0): (i, "", 0)} for i in range(len(groups))]
        cfg = broker.data_dir / "samsa-topics.json"
        assert '"cleanup.policy": "compact"' in cfg.read_text()
    finally:
        broker.stop()


def test_an_existing_offsets_topic_keeps_its_partition_count_when_the_config_changes(tmp_path: Path) -> None:
    """offsets.topic.num.partitions only applies when __consumer_offsets is created: a broker
    restarted with another value keeps placing groups by the topic's real partition count,
    as Kafka does, so every group is still served by its coordinator."""
    data = tmp_path / "data"
    groups = [unique(f"g{i}") for i in range(10)]
    topic = unique("t")
    broker = SamsaBroker(data, overrides={"offsets.topic.num.partitions": "3"}).start()
    try:
        produce(broker.bootstrap_servers, topic, 1, 1)
        with RawClient(broker.bootstrap_servers) as c:
            for i, g in enumerate(groups):
                assert simple_commit(c, g, topic, i) == NONE
    finally:
        broker.stop()
    broker = SamsaBroker(data, port=broker.port, overrides={"offsets.topic.num.partitions": "50"}).start()
    try:
        assert [committed(broker.bootstrap_servers, g) for g in groups] == \
            [{(topic, 0): (i, "", 0)} for i in range(len(groups))]
        with RawClient(broker.bootstrap_servers) as c:
            for g in groups:
                assert simple_commit(c, g, topic, 99) == NONE
    finally:
        broker.stop()
