"""The metadata image, its replay and the controller's pure decisions (no processes)."""
from __future__ import annotations

import trio

from broker.metadata.local import LocalMetadataStore
from coordinator.metadata.controller import (Rejection, alter_partition, broker_leaving_records, create_topic_records, leaderless_records, place_replicas)
from coordinator.metadata.image import PartitionRegistration, replay_all
from coordinator.metadata.records import (AccessControlEntryRecord, ConfigRecord, FenceBrokerRecord, PartitionChangeRecord, ProducerIdsRecord, RemoveTopicRecord, TopicRecord, UserScramCredentialRecord, decode_batch, decode_record, encode_batch, encode_record)
from protocol.errors import ErrorCode
from tests.support.metadata_image import cluster_image, register_broker


def test_records_round_trip_as_json() -> None:
    recs = [register_broker(1, "r1"), TopicRecord("t", "id1"),
            UserScramCredentialRecord("alice", 1, b"\x00salt", b"sk", b"svk", 4096),
            PartitionChangeRecord(partition_id=0, topic_id="id1", isr=(1, 2))]
    for r in recs:
        assert decode_record(encode_record(r)) == r
    assert decode_batch(encode_batch(recs)) == recs


def test_create_topic_places_replicas_and_partition_lookup() -> None:
    img = cluster_image(3)
    assignments = place_replicas(img, 3, 3, start=0)
    assert assignments == [(1, 2, 3), (2, 3, 1), (3, 1, 2)]
    img2, delta = replay_all(img, create_topic_records(img, "t", "tid", assignments), offset=7)
    assert img2.partition("t", 1) == PartitionRegistration((2, 3, 1), (2, 3, 1), 2, 0, 0)
    assert img2.topics_by_id["tid"].name == "t" and img2.offset == 7
    assert img.partition("t", 0) is None  # the old image is untouched
    local = delta.local_changes(2)
    assert set(local.leaders) == {("t", 1)} and set(local.followers) == {("t", 0), ("t", 2)}


def test_replication_factor_above_live_brokers_is_rejected_with_kafkas_message() -> None:
    img = cluster_image(3)
    rej = place_replicas(img, 1, 4)
    assert isinstance(rej, Rejection) and rej.code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "only 3 broker(s) are registered" in rej.message
    fenced, _ = replay_all(img, [FenceBrokerRecord(id=3, epoch=10)])
    assert isinstance(place_replicas(fenced, 1, 3), Rejection)


def test_rack_aware_placement_spreads_replicas_over_racks() -> None:
    img = cluster_image(4, ["a", "a", "b", "b"])
    for replicas in place_replicas(img, 8, 2, start=1):
        racks = {img.brokers[b].rack for b in replicas}
        assert racks == {"a", "b"}, replicas


def test_partition_change_bumps_epochs_like_kafka() -> None:
    img = cluster_image(3)
    img, _ = replay_all(img, create_topic_records(img, "t", "tid", [(1, 2, 3)]))
    img, _ = replay_all(img, [PartitionChangeRecord(partition_id=0, topic_id="tid", isr=(1, 2))])
    assert img.partition("t", 0) == PartitionRegistration((1, 2, 3), (1, 2), 1, 0, 1)   # ISR only: partition epoch
    img, _ = replay_all(img, [PartitionChangeRecord(partition_id=0, topic_id="tid", leader=2)])
    assert img.partition("t", 0) == PartitionRegistration((1, 2, 3), (1, 2), 2, 1, 2)   # leader: both epochs


def test_fenced_leader_moves_to_the_isr_and_never_outside_it() -> None:
    img = cluster_image(3)
    img, _ = replay_all(img, create_topic_records(img, "t", "tid", [(1, 2, 3), (2, 3, 1)]))
    img, _ = replay_all(img, [PartitionChangeRecord(partition_id=0, topic_id="tid", isr=(1, 3))])
    changes = broker_leaving_records(img, 1, unclean=lambda t: False)
    img2, _ = replay_all(img, [FenceBrokerRecord(id=1, epoch=10), *changes])
    p0 = img2.partition("t", 0)
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.partition_epoch) == (3, (3,), 1, 2)
    p1 = img2.partition("t", 1)
    assert (p1.leader, p1.isr, p1.leader_epoch) == (2, (2, 3), 0)  # follower 1 just leaves the ISR
    # ISR = {1} only: no clean leader -> none, the ISR keeps its last member
    img3, _ = replay_all(img, [PartitionChangeRecord(partition_id=0, topic_id="tid", isr=(1,))])
    img4, _ = replay_all(img3, [FenceBrokerRecord(id=1, epoch=10),
                                *broker_leaving_records(img3, 1, unclean=lambda t: False)])
    assert (img4.partition("t", 0).leader, img4.partition("t", 0).isr) == (-1, (1,))
    # unclean election picks a live out-of-sync replica, alone in the ISR
    img5, _ = replay_all(img3, [FenceBrokerRecord(id=1, epoch=10),
                                *broker_leaving_records(img3, 1, unclean=lambda t: True)])
    assert (img5.partition("t", 0).leader, img5.partition("t", 0).isr) == (2, (2,))
    # broker 1 comes back: it was the last ISR member, so it leads again
    img6, _ = replay_all(img4, [register_broker(1, epoch=11)])
    img7, _ = replay_all(img6, leaderless_records(img6, unclean=lambda t: False))
    assert (img7.partition("t", 0).leader, img7.partition("t", 0).leader_epoch) == (1, 2)


def test_alter_partition_checks_epochs_and_leader() -> None:
    img = cluster_image(3)
    img, _ = replay_all(img, create_topic_records(img, "t", "tid", [(1, 2, 3)]))
    ok = alter_partition(img, "t", 0, 1, 0, 0, [1, 2])
    assert isinstance(ok, PartitionChangeRecord) and ok.isr == (1, 2)
    assert alter_partition(img, "t", 0, 1, 1, 0, [1]).code == ErrorCode.FENCED_LEADER_EPOCH
    assert alter_partition(img, "t", 0, 2, 0, 0, [2]).code == ErrorCode.INVALID_REQUEST
    assert alter_partition(img, "t", 0, 1, 0, 5, [1]).code == ErrorCode.INVALID_UPDATE_VERSION
    assert alter_partition(img, "t", 0, 1, 0, 0, [1, 4]).code == ErrorCode.INVALID_REQUEST
    assert alter_partition(img, "x", 0, 1, 0, 0, [1]).code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    shrunk, _ = replay_all(img, [ok, FenceBrokerRecord(id=3, epoch=10)])
    assert alter_partition(shrunk, "t", 0, 1, 0, 1, [1, 2, 3]).code == ErrorCode.INELIGIBLE_REPLICA


def test_remove_topic_configs_acls_and_producer_ids() -> None:
    img = cluster_image(1)
    img, _ = replay_all(img, [*create_topic_records(img, "t", "tid", [(1,)]),
                              ConfigRecord(2, "t", "retention.ms", "10"), ProducerIdsRecord(1, 10, 1000),
                              AccessControlEntryRecord("a1", 2, "t", 3, "User:bob", "*", 3, 3)])
    assert img.topic_configs("t") == {"retention.ms": "10"} and img.next_producer_id == 1000
    assert img.acls["a1"].principal == "User:bob"
    img2, delta = replay_all(img, [RemoveTopicRecord("tid")])
    assert "t" not in img2.topics and "tid" not in img2.topics_by_id and not img2.topic_configs("t")
    assert delta.local_changes(1).deletes == {("t", 0)} and "t" in delta.deleted_topics


def test_local_store_appends_replays_and_refuses_stale_writes(tmp_path) -> None:
    async def main() -> None:
        store = LocalMetadataStore(str(tmp_path), 1)
        await store.start()
        seen = []
        store.subscribe(lambda old, new, delta: seen.append((old.offset, new.offset)))
        base = store.image
        assert await store.append([register_broker(1)])
        assert await store.append(create_topic_records(store.image, "t", "tid", [(1,)]))
        change = PartitionChangeRecord(partition_id=0, topic_id="tid", leader=1)
        snapshot = store.image
        assert await store.append([change], base=snapshot)
        assert not await store.append([change], base=snapshot)   # decided on a stale partition epoch
        assert not await store.append([TopicRecord("t", "other")], base=base)
        reg = await store.alter_partition("t", 0, 1, 1, 1, [1])
        assert isinstance(reg, PartitionRegistration) and reg.partition_epoch == 2
        stale = await store.alter_partition("t", 0, 1, 0, 2, [1])
        assert stale.code == ErrorCode.FENCED_LEADER_EPOCH
        assert seen == [(-1, 0), (0, 1), (1, 2), (2, 3)]
        with open(store.path, "ab") as f:
            f.write(b'[{"type":"TopicRe')           # a torn tail
        again = LocalMetadataStore(str(tmp_path), 1)
        await again.start()
        assert again.image.partition("t", 0) == store.image.partition("t", 0)
        assert again.image.offset == 3
    trio.run(main)


def test_local_store_refuses_a_producer_id_block_claimed_on_a_stale_image(tmp_path) -> None:
    async def main() -> None:
        store = LocalMetadataStore(str(tmp_path), 1)
        await store.start()
        base = store.image
        assert await store.append([ProducerIdsRecord(1, 10, 1000)], base=base)
        assert not await store.append([ProducerIdsRecord(2, 10, 1000)], base=base)  # same block: refused
        assert await store.append([ProducerIdsRecord(2, 10, 2000)], base=store.image)
        assert store.image.next_producer_id == 2000
    trio.run(main)


def test_a_late_subscriber_first_sees_the_whole_image(tmp_path) -> None:
    async def main() -> None:
        store = LocalMetadataStore(str(tmp_path), 1)
        await store.start()
        assert await store.append([register_broker(1), register_broker(2)])
        assert await store.append(create_topic_records(store.image, "t", "tid", [(1, 2), (2, 1)]))
        calls = []
        store.subscribe(lambda old, new, delta: calls.append(delta.local_changes(1)), initial=True)
        assert len(calls) == 1
        assert set(calls[0].leaders) == {("t", 0)} and set(calls[0].followers) == {("t", 1)}
        assert await store.append([FenceBrokerRecord(id=2, epoch=10)])
        assert len(calls) == 2 and not calls[1].leaders and not calls[1].followers
    trio.run(main)
