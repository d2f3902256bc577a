"""DescribeGroups, ListGroups, DeleteGroups, loading and unloading, with exact answers."""
from __future__ import annotations

from coordinator.group.coordinator import (DescribedGroup, DescribedMember, Heartbeat, JoinGroup, JoinGroupResult, ListedGroup, SyncGroup, SyncGroupResult)
from coordinator.group.offsets_records import GroupMetadataKey, OffsetCommitKey
from tests.support.coordinator_harness import RANGE, Harness, decode_records

META = RANGE[0][1]


def test_describe_stable_group_shows_members_metadata_and_assignment() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2, client_host="/10.1.1.1")
    assert h.describe("g") == [DescribedGroup("g", 0, None, "Stable", "consumer", "range", [
        DescribedMember(a, None, "client", "/10.1.1.1", META, b"a-" + a.encode()),
        DescribedMember(b, None, "client", "/10.1.1.1", META, b"a-" + b.encode()),
    ])]


def test_describe_outside_stable_shows_members_without_metadata() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)
    h.join("g", a)
    assert h.describe("g") == [DescribedGroup("g", 0, None, "PreparingRebalance", "consumer", "", [
        DescribedMember(a, None, "client", "/127.0.0.1", b"", b""),
        DescribedMember(b, None, "client", "/127.0.0.1", b"", b""),
    ])]


def test_describe_unknown_and_invalid_groups() -> None:
    h = Harness()
    assert h.describe("nope", version=5) == [DescribedGroup("nope", 0, None, "Dead")]
    assert h.describe("nope", None, version=6) == [
        DescribedGroup("nope", 69, "Group nope not found.", "Dead"),
        DescribedGroup("", 24),
    ]


def test_list_groups_with_state_and_type_filters() -> None:
    h = Harness()
    h.stable_group(1, "stable")
    h.commit({("t", 0): 1}, "simple")
    h.join("joining", version=3)
    everything = [ListedGroup("stable", "consumer", "Stable"), ListedGroup("simple", "", "Empty"),
                  ListedGroup("joining", "consumer", "PreparingRebalance")]
    assert h.list_groups().groups == everything
    assert h.list_groups(["stable", "EMPTY"]).groups == everything[:2]
    assert h.list_groups(["Dead"]).groups == []
    assert h.list_groups(types=["Classic"]).groups == everything
    assert h.list_groups(types=["consumer"]).groups == []
    assert h.list_groups().error_code == 0


def test_delete_groups() -> None:
    h = Harness()
    h.stable_group(1, "live")
    h.commit({("t", 0): 1, ("t", 1): 2}, "idle")
    token, step = h.delete_groups("live", "idle", "missing", None)
    assert [(r.group_id, r.error_code) for r in h.result(token, step).results] == \
        [("live", 68), ("idle", 0), ("missing", 69), (None, 24)]
    assert decode_records(step.records) == [
        (OffsetCommitKey("idle", "t", 0), None), (OffsetCommitKey("idle", "t", 1), None),
        (GroupMetadataKey("idle"), None)]
    assert h.state("idle") is None
    assert h.fetched("idle", {"t": [0]}) == {("t", 0): (-1, -1, "", 0)}
    assert h.describe("idle", version=6)[0].error_code == 69
    assert h.state("live") == "Stable"


def test_deleted_group_forgets_pending_members() -> None:
    h = Harness()
    first = h.result(*h.join())
    token, step = h.delete_groups("g")
    assert h.result(token, step).results[0].error_code == 0
    assert h.result(*h.join("g", first.member_id)) == JoinGroupResult(25, first.member_id)


def test_requests_while_loading_and_after_load() -> None:
    h = Harness(loading=True)
    assert h.result(*h.join()) == JoinGroupResult(14, "")
    assert h.result(*h.sync("m", 1)) == SyncGroupResult(27)    # the rebalance is lost: rejoin
    assert h.heartbeat("m", 1) == 0                            # answered blindly, as Kafka does
    assert h.commit_errors({("t", 0): 1}) == {("t", 0): 14}
    assert h.fetch(("g", None)).groups[0].error_code == 14
    assert h.describe("g")[0].error_code == 14
    assert h.list_groups().error_code == 14
    assert h.result(*h.leave("m")).error_code == 14
    assert h.co.next_deadline() is None
    h.co.load_complete(0)
    assert h.result(*h.join()).error_code == 79


def test_unload_answers_parked_requests_with_not_coordinator() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)
    ta, _ = h.join("g", a)
    step = h.co.unload()
    assert step.completions == [(ta, JoinGroupResult(16, a))]
    assert h.co.group_ids() == []
    assert h.result(*h.join()) == JoinGroupResult(16, "")
    assert h.co.next_deadline() is None


def test_parked_requests_of_a_member_superseded_by_a_retry_are_released() -> None:
    h = Harness()
    (a, b), _ = h.stable_group(2)
    t1, _ = h.join("g", a)
    t2, step = h.join("g", a)                  # the same member retries (e.g. on a new connection)
    assert step.completions == [(t1, JoinGroupResult(27, a))]
    tb, step = h.join("g", b)
    assert {t for t, _ in step.completions} == {t2, tb}


def test_request_classes_carry_the_shell_fields() -> None:
    req = JoinGroup(token="tok", api_version=7, client_id="cid", client_host="/h", group_id="g",
                    session_timeout_ms=10000, protocol_type="consumer", protocols=[])
    assert (req.token, req.api_version, req.client_id, req.client_host) == ("tok", 7, "cid", "/h")
    assert (req.member_id, req.group_instance_id, req.rebalance_timeout_ms) == ("", None, -1)
    hb = Heartbeat(group_id="g", generation_id=1, member_id="m")
    assert (hb.token, hb.api_version, hb.group_instance_id) == (None, 0, None)
    assert SyncGroup(group_id="g", generation_id=1, member_id="m").assignments == []


def test_config_defaults_and_kafka_property_names() -> None:
    from coordinator.group.coordinator import GroupCoordinatorConfig
    c = GroupCoordinatorConfig()
    assert (c.group_min_session_timeout_ms, c.group_max_session_timeout_ms, c.group_initial_rebalance_delay_ms,
            c.group_max_size, c.offsets_retention_minutes, c.offsets_retention_check_interval_ms) == \
        (6000, 1800000, 3000, 2147483647, 10080, 600000)
    assert c.offsets_retention_ms == 10080 * 60000
    c = GroupCoordinatorConfig.from_properties({
        "group.initial.rebalance.delay.ms": "0", "group.max.size": 5, "offsets.retention.minutes": "1",
        "offsets.topic.num.partitions": "3", "unrelated.setting": "x"})
    assert (c.group_initial_rebalance_delay_ms, c.group_max_size, c.offsets_retention_minutes,
            c.offsets_topic_num_partitions, c.group_min_session_timeout_ms) == (0, 5, 1, 3, 6000)
