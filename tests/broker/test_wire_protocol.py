"""Exact protocol behaviour, checked with hand-built requests against a real broker."""
from __future__ import annotations

import struct
import threading
import time

import crc32c
import pytest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest

from broker.testing import SamsaBroker
from protocol import records as rb
from protocol.api_versions import SUPPORTED, SUPPORTED_WITH_SHARE_GROUPS
from protocol.errors import ErrorCode
from tests.support.rawclient import RawClient
from tests.support.wire import (API_VERSIONS, FETCH, INIT_PID, LIST_OFFSETS, METADATA, PRODUCE, batch, batches_in, create, fetch,
                                list_offset, produce)


@pytest.fixture
def client(samsa_broker: SamsaBroker):
    with RawClient(samsa_broker.bootstrap_servers) as c:
        yield c


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_advertises_exactly_the_table(client: RawClient, version: int):
    kw = {"client_software_name": "samsa-tests", "client_software_version": "1"} if version >= 3 else {}
    resp = client.request(API_VERSIONS, version, **kw)
    assert resp.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys} == SUPPORTED_WITH_SHARE_GROUPS   # share groups on: Kafka 4.2


def test_api_versions_newer_than_supported_gets_v0_unsupported_version(client: RawClient):
    # ApiVersions v9 in a flexible (v2) header: key, version, correlation id, client id, no tags
    header = struct.pack(">hhih", 18, 9, 77, 4) + b"test" + b"\x00"
    body = b"\x05samsa\x021\x00"
    client.send_raw(struct.pack(">i", len(header) + len(body)) + header + body)
    frame = client.recv_frame()
    corr, err = struct.unpack_from(">ih", frame)
    assert (corr, err) == (77, ErrorCode.UNSUPPORTED_VERSION)
    (count,) = struct.unpack_from(">i", frame, 6)
    entries = {struct.unpack_from(">hhh", frame, 10 + 6 * i)[0]: struct.unpack_from(">hhh", frame, 10 + 6 * i)[1:]
               for i in range(count)}
    assert entries == SUPPORTED_WITH_SHARE_GROUPS


def test_unknown_api_key_and_unsupported_version_close_only_that_connection(samsa_broker: SamsaBroker):
    with RawClient(samsa_broker.bootstrap_servers) as other:
        for key, version in ((999, 0), (PRODUCE, 2)):
            with RawClient(samsa_broker.bootstrap_servers) as bad:
                header = struct.pack(">hhih", key, version, 1, 1) + b"x"
                bad.send_raw(struct.pack(">i", len(header)) + header)
                assert bad.is_closed()
        assert other.request(API_VERSIONS, 0).error_code == 0


def test_garbage_and_huge_frames_close_connection_but_broker_keeps_serving(samsa_broker: SamsaBroker):
    with RawClient(samsa_broker.bootstrap_servers) as good:
        create(good, "keep")
        assert produce(good, "keep", batch(3)).error_code == 0
        # large frames (read into their own buffer, header parsed on its own): a client id that
        # is not UTF-8, and a flexible header whose tagged field claims 10 MB
        big_garbage = struct.pack(">hhih", PRODUCE, 9, 7, 30000) + b"\xee" * 200_000
        torn_header = struct.pack(">hhih", PRODUCE, 9, 7, 0) + bytes([1, 0, 0x80, 0xAD, 0xE2, 0x04]) + b"x" * 100_000
        for payload in (b"\xff" * 64, struct.pack(">i", 2**31 - 1) + b"abc", struct.pack(">i", 12) + b"\x00" * 12,
                        struct.pack(">i", len(big_garbage)) + big_garbage,
                        struct.pack(">i", len(torn_header)) + torn_header,
                        struct.pack(">i", 5_000_000) + b"\x00" * 1000):          # announced, never sent
            with RawClient(samsa_broker.bootstrap_servers) as bad:
                bad.send_raw(payload)
                if len(payload) > 1000 and struct.unpack(">i", payload[:4])[0] > len(payload):
                    assert not bad.is_closed(timeout=0.3)   # still waiting for the rest of the frame
                else:
                    assert bad.is_closed()
        part = fetch(good, "keep", 0)
        assert part.error_code == 0 and part.high_watermark == 3
        assert [h.record_count for h in batches_in(part.records)] == [3]


def test_corrupt_batch_rejected_and_nothing_appended(client: RawClient):
    create(client, "crc")
    assert produce(client, "crc", batch(2)).base_offset == 0
    bad = batch(4)
    bad[-1] ^= 0x55
    resp = produce(client, "crc", bad)
    assert resp.error_code == ErrorCode.CORRUPT_MESSAGE
    assert list_offset(client, "crc", -1).offset == 2
    assert produce(client, "crc", batch(1)).base_offset == 2


def test_produce_to_unknown_partition_and_internal_names(client: RawClient):
    create(client, "known")
    assert produce(client, "known", batch(1), partition=7).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(client, "never-created", batch(1)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_metadata_errors(client: RawClient):
    T = MetadataRequest.MetadataRequestTopic
    resp = client.request(METADATA, 12, topics=[T(name="bad/name"), T(name="no-auto")],
                          allow_auto_topic_creation=False)
    assert [(t.name, t.error_code) for t in resp.topics] == [
        ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION), ("no-auto", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    resp = client.request(METADATA, 12, topics=None, allow_auto_topic_creation=False)
    assert resp.topics == [] and resp.cluster_id and resp.controller_id == 1
    assert [(b.node_id, b.host) for b in resp.brokers] == [(1, "127.0.0.1")]


def test_metadata_all_versions_describe_partitions(client: RawClient):
    create(client, "meta")
    ids = set()
    for v in range(0, 14):
        T = MetadataRequest.MetadataRequestTopic
        resp = client.request(METADATA, v, topics=[T(name="meta")], allow_auto_topic_creation=False)
        t = resp.topics[0]
        assert (t.name, t.error_code, len(t.partitions)) == ("meta", 0, 1)
        p = t.partitions[0]
        assert (p.leader_id, p.replica_nodes, p.isr_nodes) == (1, [1], [1])
        if v >= 7:
            assert p.leader_epoch == 0
        if v >= 10:
            ids.add(t.topic_id)
    assert len(ids) == 1


def test_auto_create_disabled_by_config(tmp_path):
    broker = SamsaBroker(tmp_path / "d", overrides={"auto.create.topics.enable": "false"}).start()
    try:
        with RawClient(broker.bootstrap_servers) as c:
            T = MetadataRequest.MetadataRequestTopic
            resp = c.request(METADATA, 12, topics=[T(name="x")], allow_auto_topic_creation=True)
            assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        broker.stop()


def test_latest_offset_is_last_offset_plus_one_and_fetch_inside_batch(client: RawClient):
    create(client, "lat")
    assert produce(client, "lat", batch(10)).base_offset == 0
    assert produce(client, "lat", batch(5)).base_offset == 10
    assert list_offset(client, "lat", -1).offset == 15
    assert list_offset(client, "lat", -2).offset == 0
    part = fetch(client, "lat", 12)
    hs = batches_in(part.records)
    assert [(h.base_offset, h.record_count) for h in hs] == [(10, 5)]
    assert part.high_watermark == 15 and part.log_start_offset == 0


def test_fetch_past_end_is_offset_out_of_range_and_at_end_is_empty(client: RawClient):
    create(client, "oor")
    produce(client, "oor", batch(3))
    assert fetch(client, "oor", 4).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    at_end = fetch(client, "oor", 3)
    assert at_end.error_code == 0 and not at_end.records


def test_fetch_max_bytes_and_first_batch_rule(client: RawClient):
    create(client, "mb")
    for _ in range(4):
        produce(client, "mb", batch(20))
    size = len(batch(20))
    one = fetch(client, "mb", 0, max_bytes=10, partition_max_bytes=10)
    assert [h.base_offset for h in batches_in(one.records)] == [0]  # larger than the limit, still returned
    two = fetch(client, "mb", 0, max_bytes=2 * size + 5)
    assert [h.base_offset for h in batches_in(two.records)] == [0, 20]
    assert len(two.records) == 2 * size


def test_timestamp_lookup_exact_inside_batch(client: RawClient):
    create(client, "ts")
    # records at 1000, 1000 ... built with one timestamp; make distinct ones with kafka-python's builder
    from kafka.record.default_records import DefaultRecordBatchBuilder
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    base = int(time.time() * 1000) - 10_000
    for i in range(10):
        b.append(i, timestamp=base + i * 100, key=None, value=b"x", headers=[])
    assert produce(client, "ts", b.build()).base_offset == 0
    assert (list_offset(client, "ts", base + 450).offset, list_offset(client, "ts", base + 450).timestamp) == (5, base + 500)
    assert list_offset(client, "ts", base).offset == 0
    none = list_offset(client, "ts", base + 5000)
    assert (none.offset, none.timestamp) == (-1, -1)
    mx = list_offset(client, "ts", -3)
    assert (mx.offset, mx.timestamp) == (9, base + 900)


def test_long_poll_woken_by_append(samsa_broker: SamsaBroker, client: RawClient):
    create(client, "lp")

    def later():
        time.sleep(1.0)
        with RawClient(samsa_broker.bootstrap_servers) as p:
            produce(p, "lp", batch(1))

    t = threading.Thread(target=later)
    start = time.monotonic()
    t.start()
    part = fetch(client, "lp", 0, max_wait_ms=10_000)
    elapsed = time.monotonic() - start
    t.join()
    assert [h.record_count for h in batches_in(part.records)] == [1]
    assert 0.9 <= elapsed < 5.0
    start = time.monotonic()
    empty = fetch(client, "lp", 1, max_wait_ms=0)
    assert not empty.records and time.monotonic() - start < 1.0


def test_acks_zero_sends_no_response_but_appends(client: RawClient):
    create(client, "a0")
    produce(client, "a0", batch(2), acks=0)
    produce(client, "a0", batch(3), acks=0)
    # the next response on this connection answers the ListOffsets, not the produces
    assert list_offset(client, "a0", -1).offset == 5


@pytest.mark.parametrize("target", ["unknown topic", "unknown partition", "bad batch"])
def test_acks_zero_failure_closes_the_connection(samsa_broker: SamsaBroker, target: str):
    """Kafka (KafkaApis.handleProduceRequest) answers an acks=0 produce that failed in any
    partition by closing the connection, so the client notices; nothing is sent back."""
    with RawClient(samsa_broker.bootstrap_servers) as c:
        create(c, "a0f")
        topic, partition, data = {"unknown topic": ("a0-missing", 0, batch(1)),
                                  "unknown partition": ("a0f", 7, batch(1)),
                                  "bad batch": ("a0f", 0, batch(1)[:-3] + b"xyz")}[target]
        td = ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=bytes(data))])
        ok = ProduceRequest.TopicProduceData(name="a0f", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(batch(2)))])
        c.send(PRODUCE, 9, transactional_id=None, acks=0, timeout_ms=5000, topic_data=[ok, td])
        assert c.is_closed()
    with RawClient(samsa_broker.bootstrap_servers) as c:   # the partition without error was written
        assert list_offset(c, "a0f", -1).offset == 2


def test_idempotent_sequences(client: RawClient):
    create(client, "idem")
    pid_resp = client.request(INIT_PID, 4, transactional_id=None, transaction_timeout_ms=60000,
                              producer_id=-1, producer_epoch=-1)
    assert pid_resp.error_code == 0
    pid = pid_resp.producer_id
    first = batch(3, producer_id=pid, producer_epoch=0, base_sequence=0)
    assert produce(client, "idem", first).base_offset == 0
    # the retry of the same batch is answered with its original offset and not appended again
    dup = produce(client, "idem", batch(3, producer_id=pid, producer_epoch=0, base_sequence=0))
    assert (dup.error_code, dup.base_offset) == (0, 0)
    assert produce(client, "idem", batch(2, producer_id=pid, producer_epoch=0, base_sequence=3)).base_offset == 3
    gap = produce(client, "idem", batch(2, producer_id=pid, producer_epoch=0, base_sequence=9))
    assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(client, "idem", batch(1, producer_id=pid, producer_epoch=1, base_sequence=0)).base_offset == 5
    stale = produce(client, "idem", batch(1, producer_id=pid, producer_epoch=0, base_sequence=5))
    assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert list_offset(client, "idem", -1).offset == 6


def test_message_too_large(tmp_path):
    broker = SamsaBroker(tmp_path / "d", overrides={"message.max.bytes": "200"}).start()
    try:
        with RawClient(broker.bootstrap_servers) as c:
            create(c, "big")
            resp = produce(c, "big", rb.build_batch([(None, b"x" * 500)]))
            assert resp.error_code == ErrorCode.MESSAGE_TOO_LARGE
            assert produce(c, "big", batch(1)).base_offset == 0
    finally:
        broker.stop()


def test_pipelined_requests_answered_in_order(client: RawClient):
    create(client, "pipe")
    corrs = [client.send(LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name="pipe", partitions=[
            ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                                     timestamp=-1)])]) for _ in range(20)]
    got = [client.receive(LIST_OFFSETS, 7).header.correlation_id for _ in corrs]
    assert got == corrs


def test_topic_ids_in_produce_v13_and_fetch_v13_plus(client: RawClient):
    create(client, "byid")
    meta = client.request(METADATA, 12, topics=None, allow_auto_topic_creation=False)
    tid = next(t.topic_id for t in meta.topics if t.name == "byid")
    P = ProduceRequest.TopicProduceData
    resp = client.request(PRODUCE, 13, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        P(topic_id=tid, partition_data=[P.PartitionProduceData(index=0, records=bytes(batch(4)))])])
    r = resp.responses[0]
    assert (r.topic_id, r.partition_responses[0].error_code, r.partition_responses[0].base_offset) == (tid, 0, 0)
    import uuid
    unknown = client.request(PRODUCE, 13, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        P(topic_id=uuid.uuid4(), partition_data=[P.PartitionProduceData(index=0, records=bytes(batch(1)))])])
    assert unknown.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    FT = FetchRequest.FetchTopic
    for version in (13, 15, 16, 17, 18):
        fr = client.request(FETCH, version, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1, cluster_id=None,
                            topics=[FT(topic_id=tid, partitions=[FT.FetchPartition(
                                partition=0, current_leader_epoch=0, fetch_offset=2, log_start_offset=-1,
                                partition_max_bytes=1 << 20)])],
                            forgotten_topics_data=[], rack_id="")
        part = fr.responses[0].partitions[0]
        assert fr.responses[0].topic_id == tid and fr.session_id == 0
        assert (part.error_code, part.high_watermark) == (0, 4)
        assert [(h.base_offset, h.record_count) for h in batches_in(part.records)] == [(0, 4)]


def test_leader_epoch_checks(client: RawClient):
    create(client, "epochs")
    FT = FetchRequest.FetchTopic
    for epoch, expected in ((0, 0), (-1, 0), (1, ErrorCode.UNKNOWN_LEADER_EPOCH)):
        fr = client.request(FETCH, 12, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1,
                            topics=[FT(topic="epochs", partitions=[FT.FetchPartition(
                                partition=0, current_leader_epoch=epoch, fetch_offset=0, log_start_offset=-1,
                                last_fetched_epoch=-1, partition_max_bytes=1 << 20)])],
                            forgotten_topics_data=[], rack_id="")
        assert fr.responses[0].partitions[0].error_code == expected


def test_every_advertised_produce_fetch_list_offsets_version(client: RawClient):
    create(client, "allv")
    meta = client.request(METADATA, 12, topics=None, allow_auto_topic_creation=False)
    tid = next(t.topic_id for t in meta.topics if t.name == "allv")
    P = ProduceRequest.TopicProduceData
    expected_offset = 0
    lo, hi = SUPPORTED[PRODUCE]
    for v in range(lo, hi + 1):
        td = P(name="allv", topic_id=tid, partition_data=[P.PartitionProduceData(index=0, records=bytes(batch(2)))])
        resp = client.request(PRODUCE, v, transactional_id=None, acks=1, timeout_ms=5000, topic_data=[td])
        pr = resp.responses[0].partition_responses[0]
        assert (v, pr.error_code, pr.base_offset) == (v, 0, expected_offset)
        expected_offset += 2
    FT = FetchRequest.FetchTopic
    lo, hi = SUPPORTED[FETCH]
    for v in range(lo, hi + 1):
        fr = client.request(FETCH, v, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                            isolation_level=0, session_id=0, session_epoch=-1,
                            topics=[FT(topic="allv", topic_id=tid, partitions=[FT.FetchPartition(
                                partition=0, current_leader_epoch=-1, fetch_offset=4, log_start_offset=-1,
                                partition_max_bytes=1 << 20)])],
                            forgotten_topics_data=[], rack_id="")
        part = fr.responses[0].partitions[0]
        assert (v, part.error_code, part.high_watermark) == (v, 0, expected_offset)
        assert [h.base_offset for h in batches_in(part.records)] == list(range(4, expected_offset, 2))
    lo, hi = SUPPORTED[LIST_OFFSETS]
    for v in range(lo, hi + 1):
        assert (v, list_offset(client, "allv", -1, version=v).offset) == (v, expected_offset)
        assert (v, list_offset(client, "allv", -2, version=v).offset) == (v, 0)


def test_undecodable_records_on_a_compacted_topic_are_corrupt_message(client: RawClient):
    """A compacted topic walks every record for its key: a batch with a good CRC whose records
    cannot be decompressed or walked is CORRUPT_MESSAGE, nothing is appended, and the
    connection keeps serving."""
    from kafka.protocol.admin import CreateTopicsRequest
    CT = CreateTopicsRequest.CreatableTopic
    r = client.request(19, 4, topics=[CT(name="cmp", num_partitions=1, replication_factor=1, assignments=[],
                                          configs=[CT.CreatableTopicConfig(name="cleanup.policy", value="compact")])],
                       timeout_ms=5000, validate_only=False)
    assert r.topics[0].error_code == 0
    now = int(time.time() * 1000)

    def with_records(section: bytes, codec: int) -> bytes:
        good = rb.assemble_batch(0, -1, 0, 0, now, now, -1, -1, -1, 1, section)
        struct.pack_into(">h", good, rb.OFF_ATTRIBUTES, codec)       # claim a codec, keep the bytes
        struct.pack_into(">I", good, rb.OFF_CRC, crc32c.crc32c(memoryview(good)[rb.CRC_START:]))
        return bytes(good)

    truncated = with_records(b"\x40\x00\x00", rb.CODEC_NONE)       # a 32-byte record of 2 bytes
    not_gzip = with_records(b"\x1f\x8b but not gzip", rb.CODEC_GZIP)
    not_zstd = with_records(b"garbage", rb.CODEC_ZSTD)
    for data in (truncated, not_gzip, not_zstd):
        assert produce(client, "cmp", data, acks=1).error_code == ErrorCode.CORRUPT_MESSAGE
    assert produce(client, "cmp", batch(2)).base_offset == 0
    assert list_offset(client, "cmp", -1).offset == 2
