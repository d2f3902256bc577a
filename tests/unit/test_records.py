"""Record batch v2 header handling and framing, without a broker."""
from __future__ import annotations

import random
import struct

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from protocol import records as rb
from protocol.frame import FrameDecoder, FrameError, peek_header


def kp_batch(n: int, compression: int = 0, ts: int = 1000, pid: int = -1, seq: int = -1) -> bytearray:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=compression, is_transactional=False,
                                  producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq,
                                  batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=ts + i * 10, key=f"k{i}".encode(), value=f"v{i}".encode(),
                 headers=[("h", f"{i}".encode())])
    return bytearray(b.build())


def test_header_fields_match_kafka_python():
    buf = kp_batch(5, pid=42, seq=7)
    h = rb.parse_header(buf)
    ref = DefaultRecordBatch(bytes(buf))
    assert (h.base_offset, h.record_count, h.last_offset_delta) == (0, 5, 4)
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence) == (42, 0, 7, 11)
    assert h.base_timestamp == 1000 and h.max_timestamp == 1040
    assert h.crc == ref.crc and h.size == len(buf)
    assert [b.record_count for b in rb.iter_batches(buf)] == [5]


def test_iter_records_gzip_exact():
    buf = kp_batch(60, compression=1)  # enough records that gzip pays off and is kept
    h = rb.parse_header(buf)
    assert h.compression == rb.CODEC_GZIP
    recs = list(rb.iter_records(buf, h))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (i, 1000 + i * 10, f"k{i}".encode(), f"v{i}".encode(), [("h", f"{i}".encode())]) for i in range(60)]


def test_corrupt_crc_rejected():
    buf = kp_batch(3)
    buf[-1] ^= 0xFF
    with pytest.raises(rb.InvalidBatch) as exc:
        list(rb.iter_batches(buf))
    assert exc.value.error_code == 2  # CORRUPT_MESSAGE


def test_truncated_and_bad_magic_rejected():
    buf = kp_batch(3)
    with pytest.raises(rb.InvalidBatch) as exc:
        list(rb.iter_batches(buf[:-5]))
    assert exc.value.error_code == 2
    bad = bytearray(buf)
    bad[rb.OFF_MAGIC] = 1
    with pytest.raises(rb.InvalidBatch) as exc:
        list(rb.iter_batches(bad))
    assert exc.value.error_code == 43  # UNSUPPORTED_FOR_MESSAGE_FORMAT
    with pytest.raises(rb.InvalidBatch) as exc:
        list(rb.iter_batches(b""))
    assert exc.value.error_code == 87  # INVALID_RECORD


def test_record_count_mismatch_is_invalid_record():
    buf = kp_batch(3)
    struct.pack_into(">i", buf, 57, 5)
    struct.pack_into(">I", buf, rb.OFF_CRC, crc32c.crc32c(bytes(buf[rb.CRC_START:])))
    with pytest.raises(rb.InvalidBatch) as exc:
        list(rb.iter_batches(buf))
    assert exc.value.error_code == 87


def test_stamp_keeps_crc_valid_and_log_append_time_rewrites_it():
    buf = kp_batch(2)
    crc_before = rb.parse_header(buf).crc
    rb.stamp(buf, 0, 1234, 0)
    h = rb.parse_header(buf)
    assert h.base_offset == 1234 and h.crc == crc_before
    rb.validate_batch(buf, h)
    rb.stamp(buf, 0, 99, 0, log_append_time=555)
    h = rb.parse_header(buf)
    assert h.is_log_append_time and h.max_timestamp == 555 and h.base_offset == 99
    rb.validate_batch(buf, h)
    assert [r.timestamp for r in rb.iter_records(buf, h)] == [555, 555]
    ref = list(DefaultRecordBatch(bytes(buf)))
    assert [r.offset for r in ref] == [99, 100]


def test_stamped_parts_write_what_stamp_writes_in_place():
    payload = bytes(kp_batch(2) + kp_batch(3) + kp_batch(1))
    headers = list(rb.iter_batches(payload))
    offset = 500
    for h in headers:
        h.base_offset = offset
        offset += h.last_offset_delta + 1
    parts = rb.stamped_parts(payload, headers, leader_epoch=7)
    in_place = bytearray(payload)
    for h in headers:
        rb.stamp(in_place, h.position, h.base_offset, 7)
    assert b"".join(bytes(p) for p in parts) == bytes(in_place)
    assert [(h.base_offset, h.leader_epoch) for h in rb.iter_batches(in_place)] == \
        [(500, 7), (502, 7), (505, 7)]


def _blob(rnd: random.Random) -> bytes | None:
    size = rnd.choice([None, 0, 1, 5, 62, 63, 64, 65, 200, 3000, 70000])
    return None if size is None else rnd.randbytes(size)


def test_internal_batch_is_build_batch_then_stamp_byte_for_byte():
    """The broker's own appends build their batch already stamped (rb.build_internal_batch): the
    bytes and the header are those of build_batch then stamp then parse_header, for one record
    and many (offset deltas and lengths past one varint byte), null keys and values, markers."""
    rnd = random.Random(23)
    for _ in range(300):
        records = [(_blob(rnd), _blob(rnd)) for _ in range(rnd.choice([0, 1, 1, 2, 63, 64, 65, 130]))]
        base, epoch, ts = rnd.choice([0, 5, 1 << 40]), rnd.choice([-1, 0, 7]), rnd.choice([0, 1_700_000_000_000])
        pid, pepoch = rnd.choice([(-1, -1), (0, 0), (12345, 3)])
        transactional, control = rnd.random() < 0.5, rnd.random() < 0.3
        old = rb.build_batch(records, timestamp_ms=ts, producer_id=pid, producer_epoch=pepoch,
                             transactional=transactional, control=control)
        rb.stamp(old, 0, base, epoch)
        attributes = (rb.TRANSACTIONAL_MASK if transactional else 0) | (rb.CONTROL_MASK if control else 0)
        data, h = rb.build_internal_batch(records, base, epoch, ts, pid, pepoch, attributes)
        assert data == bytes(old)
        assert h == rb.parse_header(old)


def test_build_batch_readable_by_kafka_python():
    buf = rb.build_batch([(b"a", b"1"), (None, b"2")], base_offset=10, timestamp_ms=77)
    ref = DefaultRecordBatch(bytes(buf))
    assert ref.validate_crc()
    assert [(r.offset, r.key, r.value, r.timestamp) for r in ref] == [(10, b"a", b"1", 77), (11, None, b"2", 77)]


def test_frame_decoder_splits_and_limits():
    dec = FrameDecoder(100)
    body = struct.pack(">hhi", 18, 0, 5) + b"\x00\x00"
    frame = struct.pack(">i", len(body)) + body
    assert dec.feed(frame[:3]) == []
    assert dec.feed(frame[3:] + frame) == [body, body]
    assert peek_header(body).correlation_id == 5
    with pytest.raises(FrameError):
        FrameDecoder(100).feed(struct.pack(">i", 2**31 - 1))
    with pytest.raises(FrameError):
        FrameDecoder(100).feed(struct.pack(">i", -5))


@pytest.mark.parametrize("way", ["feed", "read-into"])
def test_frame_decoder_large_frames_in_their_own_buffer_any_chunking(way):
    """Small and large frames, cut at random points, come out whole and in order, whether the
    bytes are fed or read into the decoder's buffers (large ones: straight into their own)."""
    import random
    rnd = random.Random(way)
    bodies = [rnd.randbytes(rnd.choice([8, 50, 3000, 70_000, 300_000, 1_000_000])) for _ in range(40)]
    stream = b"".join(struct.pack(">i", len(b)) + b for b in bodies)
    dec = FrameDecoder(2_000_000, scratch=4096, own_buffer_from=1000, own_buffer_to=500_000)
    out: list = []
    pos = 0
    while pos < len(stream):
        n = rnd.choice([1, 3, 100, 5000, 70_000, 400_000])
        if way == "feed":
            out += dec.feed(stream[pos:pos + n])
            pos += n
        else:
            with dec.buffer() as into:
                n = min(n, len(into), len(stream) - pos)
                into[:n] = stream[pos:pos + n]
            out += dec.consumed(n)
            pos += n
    assert [bytes(f) for f in out] == bodies
    assert dec.pending == 0


def test_frame_decoder_spends_no_memory_on_a_bare_size_prefix():
    """A client announcing a huge frame gets no buffer of that size until the bytes arrive."""
    dec = FrameDecoder(100 << 20)
    assert dec.feed(struct.pack(">i", 90 << 20) + b"x" * 100) == []
    assert dec.pending == 104
    assert len(dec.buffer()) == 1 << 18      # reads still go to the scratch buffer


@pytest.mark.parametrize("version", range(3, 14))
def test_decode_request_of_a_large_frame_matches_kafka_python(version):
    """Large requests are decoded from a view of the frame with the header read on its own
    (flexible versions: header v2 with tagged fields); the result is kafka-python's."""
    from kafka.protocol.producer import ProduceRequest

    from protocol.messages import decode_request

    P = ProduceRequest.TopicProduceData
    data = bytes(rb.build_batch([(b"k", b"v" * 100_000)], timestamp_ms=1))
    req = ProduceRequest(version=version, transactional_id="tx", acks=-1, timeout_ms=5000, topic_data=[
        P(name="t", partition_data=[P.PartitionProduceData(index=3, records=data)])])
    req.with_header(correlation_id=77, client_id="a-client-id")
    frame = bytearray(req.encode(header=True, framed=True))[4:]
    ours = decode_request(ProduceRequest, frame, version)
    theirs = ProduceRequest.decode(bytes(frame), version=version, header=True)
    assert (ours.header.correlation_id, ours.header.client_id) == (77, "a-client-id")
    assert ours == theirs
    assert bytes(ours.topic_data[0].partition_data[0].records) == data
