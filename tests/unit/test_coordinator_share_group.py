"""KIP-932 share groups, the pure parts: the message definitions (round trips through kafka-python's
JSON-schema machinery), the membership state machine with its simple assignor, the share-partition
record states and the share sessions. Time is injected; no broker."""
from __future__ import annotations

import uuid

import pytest
import trio

from coordinator.share.group import (FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED, INVALID_REQUEST, UNKNOWN_MEMBER_ID, ShareGroupConfig, ShareGroupCoordinator, ShareGroupHeartbeat, simple_assign)
from coordinator.share.partition import (INVALID_RECORD_STATE, INVALID_SHARE_SESSION_EPOCH, NONE, SHARE_SESSION_NOT_FOUND, AcquiredRange, RecordState, SharePartition, ShareSessions)
from protocol.api_versions import SHARE_GROUP_APIS, SUPPORTED
from protocol.schema_messages import (ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
                                      ShareFetchResponse, ShareGroupDescribeRequest, ShareGroupDescribeResponse,
                                      ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse)

T1 = uuid.UUID("11111111-1111-1111-1111-111111111111")
T2 = uuid.UUID("22222222-2222-2222-2222-222222222222")


# -- message definitions --------------------------------------------------------------------------------
def _roundtrip(msg):
    data = msg.encode()
    back = type(msg).decode(data, version=msg.version)
    assert back == msg
    assert back.encode() == data
    return back


def test_share_group_apis_are_separate_from_the_default_table():
    assert set(SHARE_GROUP_APIS) == {76, 77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92}   # 83-87: between brokers
    assert not set(SHARE_GROUP_APIS) & set(SUPPORTED)


def test_share_group_heartbeat_round_trip():
    _roundtrip(ShareGroupHeartbeatRequest(version=1, group_id="g", member_id="m", member_epoch=0, rack_id=None,
                                          subscribed_topic_names=["a", "b"]))
    R = ShareGroupHeartbeatResponse
    back = _roundtrip(R(version=1, throttle_time_ms=0, error_code=0, error_message=None, member_id="m",
                        member_epoch=3, heartbeat_interval_ms=5000,
                        assignment=R.Assignment(topic_partitions=[R.Assignment.TopicPartitions(topic_id=T1,
                                                                                               partitions=[0, 2])])))
    assert back.assignment.topic_partitions[0].partitions == [0, 2]


def test_share_fetch_round_trip_with_records_and_acknowledgements():
    Q = ShareFetchRequest
    _roundtrip(Q(version=1, group_id="g", member_id="m", share_session_epoch=4, max_wait_ms=500, min_bytes=1,
                 max_bytes=1 << 20, max_records=500, batch_size=500,
                 topics=[Q.FetchTopic(topic_id=T1, partitions=[Q.FetchTopic.FetchPartition(
                     partition_index=0, acknowledgement_batches=[
                         Q.FetchTopic.FetchPartition.AcknowledgementBatch(first_offset=3, last_offset=5,
                                                                          acknowledge_types=[1, 2, 3])])])],
                 forgotten_topics_data=[Q.ForgottenTopic(topic_id=T2, partitions=[1])]))
    _roundtrip(Q(version=2, group_id="g", member_id="m", share_session_epoch=0, max_wait_ms=0, min_bytes=1,
                 max_bytes=1, max_records=1, batch_size=1, share_acquire_mode=0, is_renew_ack=False, topics=[],
                 forgotten_topics_data=[]))
    R = ShareFetchResponse
    P = R.ShareFetchableTopicResponse.PartitionData
    back = _roundtrip(R(version=1, throttle_time_ms=0, error_code=0, error_message=None,
                        acquisition_lock_timeout_ms=30000, responses=[R.ShareFetchableTopicResponse(
                            topic_id=T1, partitions=[P(partition_index=0, error_code=0, error_message=None,
                                                       acknowledge_error_code=0, acknowledge_error_message=None,
                                                       current_leader=P.LeaderIdAndEpoch(leader_id=1, leader_epoch=0),
                                                       records=b"\x00" * 70,
                                                       acquired_records=[P.AcquiredRecords(
                                                           first_offset=0, last_offset=9, delivery_count=1)])])],
                        node_endpoints=[]))
    assert back.responses[0].partitions[0].records == b"\x00" * 70


def test_share_acknowledge_and_describe_round_trip():
    Q = ShareAcknowledgeRequest
    _roundtrip(Q(version=1, group_id="g", member_id="m", share_session_epoch=2, topics=[Q.AcknowledgeTopic(
        topic_id=T1, partitions=[Q.AcknowledgeTopic.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
            Q.AcknowledgeTopic.AcknowledgePartition.AcknowledgementBatch(first_offset=0, last_offset=0,
                                                                         acknowledge_types=[1])])])]))
    R = ShareAcknowledgeResponse
    P = R.ShareAcknowledgeTopicResponse.PartitionData
    _roundtrip(R(version=1, throttle_time_ms=0, error_code=0, error_message=None, responses=[
        R.ShareAcknowledgeTopicResponse(topic_id=T1, partitions=[P(
            partition_index=0, error_code=121, error_message="x",
            current_leader=P.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1))])], node_endpoints=[]))
    _roundtrip(ShareGroupDescribeRequest(version=1, group_ids=["g"], include_authorized_operations=False))
    D = ShareGroupDescribeResponse.DescribedGroup
    _roundtrip(ShareGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[D(
        error_code=0, error_message=None, group_id="g", group_state="Stable", group_epoch=2, assignment_epoch=2,
        assignor_name="simple", members=[D.Member(member_id="m", rack_id=None, member_epoch=2, client_id="c",
                                                  client_host="/127.0.0.1", subscribed_topic_names=["t"],
                                                  assignment=D.Member.Assignment(topic_partitions=[]))],
        authorized_operations=-2147483648)]))


# -- membership -----------------------------------------------------------------------------------------------
TOPICS = {"t": (T1, 3), "u": (T2, 1)}


def cfg(**kw) -> ShareGroupConfig:
    """Short timeouts for tests: Kafka's lower bounds lowered, as a test broker would set them."""
    return ShareGroupConfig(**{"min_session_timeout_ms": 1, "min_heartbeat_interval_ms": 1,
                               "heartbeat_interval_ms": 100, **kw})


def hb(member: str, epoch: int, topics=None, view=TOPICS, group: str = "g") -> ShareGroupHeartbeat:
    return ShareGroupHeartbeat(group, member, epoch, None, topics, "client", "/127.0.0.1", view)


def test_simple_assignor_spreads_partitions_and_shares_when_members_outnumber_them():
    a = simple_assign({"m1": ("t",), "m2": ("t",)}, TOPICS)
    assert a == {"m1": {T1: frozenset({0, 2})}, "m2": {T1: frozenset({1})}}
    b = simple_assign({"m1": ("u",), "m2": ("u",), "m3": ("t", "u")}, TOPICS)
    assert b["m1"] == {T2: frozenset({0})} and b["m2"] == {T2: frozenset({0})}
    assert b["m3"] == {T1: frozenset({0, 1, 2}), T2: frozenset({0})}


def test_join_heartbeat_leave_and_epochs():
    c = ShareGroupCoordinator(cfg(session_timeout_ms=1000))
    r1 = c.heartbeat(hb("m1", 0, ["t"]), 0)
    assert (r1.error_code, r1.member_epoch, r1.assignment) == (0, 2, {T1: frozenset({0, 1, 2})})
    r2 = c.heartbeat(hb("m2", 0, ["t"]), 10)
    assert r2.member_epoch == 3 and r2.assignment == {T1: frozenset({1})}
    r1b = c.heartbeat(hb("m1", 2), 20)      # moves straight to the new target: nothing to revoke
    assert r1b.member_epoch == 3 and r1b.assignment == {T1: frozenset({0, 2})}
    assert c.heartbeat(hb("m1", 3), 30).assignment is None     # unchanged: no assignment sent
    assert c.heartbeat(hb("m1", 2), 40).error_code == FENCED_MEMBER_EPOCH
    assert c.heartbeat(hb("zz", 5), 40).error_code == UNKNOWN_MEMBER_ID
    leave = c.heartbeat(hb("m2", -1), 50)
    assert leave.member_epoch == -1 and leave.left == ("m2",)
    assert c.heartbeat(hb("m1", 3), 60).assignment == {T1: frozenset({0, 1, 2})}


def test_invalid_requests_and_max_size():
    c = ShareGroupCoordinator(ShareGroupConfig(max_size=1))
    assert c.heartbeat(hb("", 0, ["t"]), 0).error_code == INVALID_REQUEST
    assert c.heartbeat(hb("m", 0, None), 0).error_code == INVALID_REQUEST
    assert c.heartbeat(hb("m", 0, ["t"]), 0).error_code == 0
    assert c.heartbeat(hb("n", 0, ["t"]), 0).error_code == GROUP_MAX_SIZE_REACHED


def test_session_timeout_removes_a_silent_member_and_reassigns():
    c = ShareGroupCoordinator(cfg(session_timeout_ms=1000))
    c.heartbeat(hb("m1", 0, ["t"]), 0)
    r = c.heartbeat(hb("m2", 0, ["t"]), 500)
    for now in (900, 1300):
        r = c.heartbeat(hb("m2", r.member_epoch), now)
    assert r.left == () or "m1" in r.left
    assert not c.is_member("g", "m1", 1300)
    assert r.assignment == {T1: frozenset({0, 1, 2})}


def test_topic_growth_bumps_the_epoch_and_describe():
    c = ShareGroupCoordinator()
    r = c.heartbeat(hb("m1", 0, ["t"]), 0)
    grown = {"t": (T1, 4)}
    r2 = c.heartbeat(hb("m1", r.member_epoch, view=grown), 10)
    assert r2.member_epoch > r.member_epoch and r2.assignment == {T1: frozenset({0, 1, 2, 3})}
    [d, missing] = c.describe(["g", "nope"], 20)
    assert (d.group_state, d.group_epoch, len(d.members)) == ("Stable", r2.member_epoch, 1)
    assert missing.error_code == GROUP_ID_NOT_FOUND


# -- share-partition records ----------------------------------------------------------------------------------
def batches(*extents):
    return [(b, l, False) for b, l in extents]


def test_acquire_accept_release_reject_and_redelivery():
    sp = SharePartition(0, lock_duration_ms=1000, delivery_count_limit=2)
    got = sp.acquire("a", batches((0, 4), (5, 9)), 10, 100, 0)
    assert got.ranges == (AcquiredRange(0, 9, 1),) and got.batches == (0, 1)
    assert sp.next_fetch_offset(0) == 10
    assert sp.acknowledge("a", [(0, 2, [1]), (3, 4, [2, 3])], 10) == NONE
    assert sp.start_offset == 3 and sp.records[3].state == RecordState.AVAILABLE
    assert sp.records[4].state == RecordState.ARCHIVED
    assert sp.next_fetch_offset(20) == 3
    again = sp.acquire("b", batches((0, 4), (5, 9)), 10, 100, 20)    # 3 is redelivered, 5-9 are still a's
    assert again.ranges == (AcquiredRange(3, 3, 2),) and again.batches == (0,)
    assert sp.acknowledge("a", [(3, 3, [1])], 30) == INVALID_RECORD_STATE      # b holds it
    assert sp.acknowledge("b", [(3, 3, [2])], 30) == NONE
    # released at the delivery limit: archived, so 3 and 4 are delivery-complete and the start moves on
    assert 3 not in sp.records and sp.start_offset == 5 and sp.next_fetch_offset(40) == 10


def test_lock_expiry_releases_records_and_late_acknowledgement_fails():
    sp = SharePartition(0, lock_duration_ms=1000)
    sp.acquire("a", batches((0, 1)), 2, 100, 0)
    assert sp.next_fetch_offset(999) == 2
    assert sp.next_fetch_offset(1000) == 0
    assert sp.acknowledge("a", [(0, 1, [1])], 1000) == INVALID_RECORD_STATE
    got = sp.acquire("b", batches((0, 1)), 2, 100, 1000)
    assert got.ranges == (AcquiredRange(0, 1, 2),)


def test_limits_control_batches_gaps_and_member_release():
    sp = SharePartition(0, max_record_locks=4)
    got = sp.acquire("a", [(0, 1, False), (2, 2, True), (5, 9, False)], 10, 100, 0)
    # 2 is a transaction marker, 3-4 missing from the log, 5 is the only record the lock limit admits
    assert got.ranges == (AcquiredRange(0, 1, 1), AcquiredRange(5, 5, 1))
    assert sp.records[2].state == RecordState.ARCHIVED and 3 not in sp.records
    assert sp.release_member("a") == 3 and sp.next_fetch_offset(0) == 0
    sp2 = SharePartition(0)
    assert sp2.acquire("a", batches((0, 4), (5, 9)), 10, 3, 0).ranges == (AcquiredRange(0, 4, 1),)  # whole batch
    assert sp2.acquire("a", batches((5, 9)), 7, 100, 0).ranges == (AcquiredRange(5, 6, 1),)       # up to the HW
    assert sp2.acknowledge("a", [(0, 1, [1, 2, 9])], 0) != NONE     # bad types: nothing applied
    assert sp2.records[0].state == RecordState.ACQUIRED


def test_share_sessions():
    s = ShareSessions()
    assert s.fetch("g", "m", 1, [], [])[0] == SHARE_SESSION_NOT_FOUND
    code, session = s.fetch("g", "m", 0, [(T1, 0)], [])
    assert code == NONE and session.partitions == {(T1, 0)}
    assert s.fetch("g", "m", 2, [], [])[0] == INVALID_SHARE_SESSION_EPOCH
    code, session = s.fetch("g", "m", 1, [(T1, 1)], [(T1, 0)])
    assert session.partitions == {(T1, 1)} and session.epoch == 2
    assert s.acknowledge("g", "m", 0) == INVALID_SHARE_SESSION_EPOCH
    assert s.acknowledge("g", "m", 2) == NONE
    assert s.fetch("g", "m", -1, [], []) == (NONE, None)
    assert s.acknowledge("g", "m", 4) == SHARE_SESSION_NOT_FOUND


@pytest.mark.parametrize("epoch", [0x7FFFFFFF])
def test_session_epoch_wraps_to_one(epoch):
    s = ShareSessions()
    s.fetch("g", "m", 0, [], [])
    s.sessions[("g", "m")].epoch = epoch
    assert s.fetch("g", "m", epoch, [], [])[1].epoch == 1


# -- the switch -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("props, enabled", [
    ({}, True),                                                 # Kafka 4.2: share.version finalized at 1 by default
    ({"group.share.enable": False, "samsa.share.version": 0}, False), ({"samsa.share.version": 0}, False),
    ({"group.share.enable": False}, False),                      # 4.1's explicit off, share.version unset
    ({"group.share.enable": False, "samsa.share.version": 1}, True),
    ({"group.share.enable": True, "samsa.share.version": 0}, True),
    ({"group.share.enable": True}, True), ({"samsa.share.version": 1}, True)])
def test_share_group_apis_and_feature_only_when_enabled(props, enabled):
    from broker.server.api_table import advertised_table
    from protocol import features

    table = advertised_table(props)
    assert (set(SHARE_GROUP_APIS) <= set(table)) is enabled
    assert {k: v for k, v in table.items() if k not in SHARE_GROUP_APIS} == SUPPORTED
    finalized = dict(features.finalized_features(2, share_groups=enabled))
    assert finalized.get("share.version") == (1 if enabled else None)
    assert "share.version" in {n for n, *_ in features.supported_features(share_groups=enabled)}  # as Kafka 4.2


def test_departed_members_are_reported_once_for_the_shell():
    c = ShareGroupCoordinator(cfg(session_timeout_ms=1000))
    c.heartbeat(hb("m1", 0, ["t"]), 0)
    r = c.heartbeat(hb("m2", 0, ["t"]), 0)
    c.heartbeat(hb("m2", r.member_epoch, None), 900)
    c.describe(["g"], 1000)                         # m1 expires here, outside any heartbeat
    c.heartbeat(hb("m2", -1), 1100)
    assert c.take_departed() == [("g", "m1"), ("g", "m2")]
    assert c.take_departed() == []


def test_shell_releases_records_and_drops_sessions_of_departed_members():
    from types import SimpleNamespace

    from broker.coordinator_runtime.share_runtime import ShareGroups

    shares = ShareGroups(SimpleNamespace(config={"group.share.session.timeout.ms": 1000,
                                                 "group.share.min.session.timeout.ms": 1000,
                                                 "group.share.heartbeat.interval.ms": 100,
                                                 "group.share.min.heartbeat.interval.ms": 100,
                                                 "samsa.share.auto.offset.reset": "earliest"}, now_ms=lambda: 0,
                                         metadata=SimpleNamespace(image=SimpleNamespace(configs={}))))
    log = SimpleNamespace(log_start_offset=0, high_watermark=5, leader_epoch=0)
    shares.coordinator.heartbeat(hb("m1", 0, ["t"]), 0)
    r2 = shares.coordinator.heartbeat(hb("m2", 0, ["t"]), 0)
    shares.settle_departures()
    shares.sessions.fetch("g", "m1", 0, [(T1, 0)], [])
    assert trio.run(shares.load, "g", T1, 0, log) == NONE      # initialized at earliest by the in-memory persister
    sp = shares.partition("g", T1, 0, log)
    assert sp.acquire("m1", batches((0, 4)), 5, 100, 0).ranges == (AcquiredRange(0, 4, 1),)
    r2 = shares.coordinator.heartbeat(hb("m2", r2.member_epoch), 900)
    shares.coordinator.heartbeat(hb("m2", r2.member_epoch), 1500)      # m1 timed out meanwhile
    shares.settle_departures()
    assert ("g", "m1") not in shares.sessions.sessions
    assert sp.next_fetch_offset(1500) == 0 and sp.records[0].state == RecordState.AVAILABLE
    assert shares.listed(None, ["share"]) == [("g", "Stable")] and shares.listed(None, ["consumer"]) == []


@pytest.mark.parametrize("kw, message", [
    ({"record_lock_duration_ms": 3000}, "group.share.record.lock.duration.ms must be greater than or equal to"),
    ({"session_timeout_ms": 90000}, "group.share.session.timeout.ms must be less than or equal to"),
    ({"delivery_count_limit": 1}, "group.share.delivery.count.limit must be greater than or equal to 2"),
    ({"min_heartbeat_interval_ms": 1, "heartbeat_interval_ms": 100, "min_session_timeout_ms": 1,
      "session_timeout_ms": 100}, "group.share.heartbeat.interval.ms must be less than group.share.session"),
])
def test_share_group_config_bounds_as_kafka(kw, message):
    with pytest.raises(ValueError, match=message):
        ShareGroupConfig(**kw)
    assert ShareGroupConfig.from_properties({}) == ShareGroupConfig()
    assert ShareGroupConfig.from_properties({"group.share.record.lock.duration.ms": "20000"}).record_lock_duration_ms \
        == 20000


def test_offset_distances_cost_nothing():
    """Bad or extreme input is answered at once: a huge acknowledgement range, a compacted log with
    a gap of 10**15 offsets, a log start far ahead."""
    sp = SharePartition(0)
    far = 10**15
    got = sp.acquire("a", batches((0, 0), (far, far + 1)), far + 2, 100, 0)
    # as Kafka, the in-flight limit counts offsets from the start: the gap leaves room for one record
    assert got.ranges == (AcquiredRange(0, 0, 1), AcquiredRange(far, far, 1))
    assert sp.acknowledge("a", [(0, 2**62, [1])], 0) == INVALID_RECORD_STATE
    assert sp.acknowledge("a", [(0, 0, [1])], 0) == NONE
    assert sp.start_offset == far                      # the gap was jumped
    assert sp.acknowledge("a", [(far, far, [1])], 0) == NONE
    assert sp.start_offset == sp.end_offset == far + 1 and not sp.records
    assert sp.acquire("a", batches((far, far + 1)), far + 2, 100, 0).ranges == (AcquiredRange(far + 1, far + 1, 1),)
    sp.move_start(10**18)
    assert sp.next_fetch_offset(0) == 10**18


def test_an_acknowledgement_over_a_gap_stops_at_the_gap():
    sp = SharePartition(0)
    far = 10**15
    sp.acquire("a", batches((0, 0), (far, far)), far + 1, 100, 0)
    assert sp.acknowledge("a", [(0, far, [1])], 0) == INVALID_RECORD_STATE     # offset 1 holds no record
    assert sp.records[0].state == RecordState.ACQUIRED
