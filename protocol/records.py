"""Record batch v2 handling without decoding records on the hot path.

Produce validates each batch from its 61-byte header and CRC-32C, the log stamps the
base offset in place, and Fetch serves the stored bytes. Only timestamp lookups and
the log cleaner ever walk individual records (``iter_record_spans``), and only the
cleaner recompresses (``compress``, ``assemble_batch``).
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import crc32c
from kafka.record.util import decode_varint, encode_varint

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base offset + batch length
MAGIC_V2 = 2

_HEADER = struct.Struct(">qiibIhiqqqhii")
# offsets of fields within a batch
OFF_BASE_OFFSET = 0
OFF_LENGTH = 8
OFF_LEADER_EPOCH = 12
OFF_MAGIC = 16
OFF_CRC = 17
OFF_ATTRIBUTES = 21
OFF_MAX_TIMESTAMP = 35
CRC_START = 21

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40  # KIP-534: base timestamp holds the time tombstones/markers may go

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD = range(5)


class InvalidBatch(Exception):
    """A batch the broker must reject; ``error_code`` is Kafka's answer for it."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


# Kafka error codes used here (protocol stays free of the broker's error module).
CORRUPT_MESSAGE = 2
INVALID_RECORD = 87
UNSUPPORTED_COMPRESSION_TYPE = 76
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    length: int  # batch length field: bytes after the length field
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    position: int = 0  # where the batch starts in the buffer it was parsed from

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % 0x80000000


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the fixed v2 header at ``pos`` (no CRC check)."""
    h = BatchHeader(*_HEADER.unpack_from(buf, pos))
    h.position = pos
    return h


def iter_batches(buf: bytes | bytearray | memoryview, validate: bool = True) -> Iterator[BatchHeader]:
    """Split a produce payload into batches, validating each.

    Raises InvalidBatch with Kafka's error code for the first bad batch, so the caller can
    reject the whole partition's data before anything is appended.
    """
    n = len(buf)
    pos = 0
    if n == 0:
        raise InvalidBatch(INVALID_RECORD, "empty record set")
    while pos < n:
        if n - pos < LOG_OVERHEAD + 5:
            raise InvalidBatch(CORRUPT_MESSAGE, "truncated batch header")
        magic = buf[pos + OFF_MAGIC]
        if magic != MAGIC_V2:
            raise InvalidBatch(UNSUPPORTED_FOR_MESSAGE_FORMAT if magic in (0, 1) else CORRUPT_MESSAGE,
                               f"record batch magic {magic} is not supported")
        if n - pos < HEADER_SIZE:
            raise InvalidBatch(CORRUPT_MESSAGE, "truncated batch header")
        h = parse_header(buf, pos)
        end = pos + h.size
        if h.length < HEADER_SIZE - LOG_OVERHEAD or end > n:
            raise InvalidBatch(CORRUPT_MESSAGE, f"batch length {h.length} does not fit the payload")
        if validate:
            validate_batch(buf, h)
        yield h
        pos = end


def validate_batch(buf: bytes | bytearray | memoryview, h: BatchHeader) -> None:
    """Check what Kafka's LogValidator checks from the header and the CRC."""
    end = h.position + h.size
    crc = crc32c.crc32c(memoryview(buf)[h.position + CRC_START:end])
    if crc != h.crc:
        raise InvalidBatch(CORRUPT_MESSAGE, "record batch CRC mismatch")
    if h.record_count <= 0 and not h.is_control:
        raise InvalidBatch(INVALID_RECORD, "record batch holds no records")
    if h.record_count != h.last_offset_delta + 1:
        raise InvalidBatch(INVALID_RECORD, "record count does not match last offset delta")
    if h.compression > CODEC_ZSTD:
        raise InvalidBatch(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {h.compression}")
    if h.compression == CODEC_NONE and h.record_count > h.length:
        raise InvalidBatch(CORRUPT_MESSAGE, "more records than bytes")


def stamp(buf: bytearray, pos: int, base_offset: int, leader_epoch: int,
          log_append_time: int | None = None) -> None:
    """Assign the base offset (and LogAppendTime) in place; recompute the CRC only if the
    CRC-covered part changed, as Kafka does."""
    struct.pack_into(">q", buf, pos + OFF_BASE_OFFSET, base_offset)
    struct.pack_into(">i", buf, pos + OFF_LEADER_EPOCH, leader_epoch)
    if log_append_time is not None:
        attrs = struct.unpack_from(">h", buf, pos + OFF_ATTRIBUTES)[0] | TIMESTAMP_TYPE_MASK
        struct.pack_into(">h", buf, pos + OFF_ATTRIBUTES, attrs)
        struct.pack_into(">q", buf, pos + OFF_MAX_TIMESTAMP, log_append_time)
        length = struct.unpack_from(">i", buf, pos + OFF_LENGTH)[0]
        end = pos + LOG_OVERHEAD + length
        struct.pack_into(">I", buf, pos + OFF_CRC, crc32c.crc32c(memoryview(buf)[pos + CRC_START:end]))


_STAMP_HEAD = struct.Struct(">qii")  # base offset, batch length, partition leader epoch


def stamped_parts(data: bytes | bytearray | memoryview, headers: Iterable[BatchHeader],
                  leader_epoch: int) -> list[bytes | bytearray | memoryview]:
    """What :func:`stamp` does without log-append time, but for data that is not ours to change
    (a produce request's records as kafka-python decoded them) and without copying it: per
    batch, a stamped copy of its first 16 bytes (base offset from ``h.base_offset``, length,
    leader epoch; none of it covered by the CRC) and a view of the rest, ready for writev."""
    view = memoryview(data)
    parts: list[bytes | bytearray | memoryview] = []
    for h in headers:
        pos = h.position
        parts.append(_STAMP_HEAD.pack(h.base_offset, h.size - LOG_OVERHEAD, leader_epoch))
        parts.append(view[pos + OFF_MAGIC:pos + h.size])
    return parts


# ---------------------------------------------------------------------------------------
# Record-level walking, used off the hot path (timestamp lookups, recovery, tests).

def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """A records section decompressed; bytes the codec cannot read are a corrupt batch."""
    if codec == CODEC_NONE:
        return bytes(data)
    import cramjam      # the codecs, loaded with the first compressed batch (not at start-up)
    try:
        return _decompress(codec, data)
    except (cramjam.DecompressionError, struct.error) as exc:
        raise InvalidBatch(CORRUPT_MESSAGE, f"cannot decompress the records: {exc}") from None


def _decompress(codec: int, data: bytes | memoryview) -> bytes:
    import cramjam
    if codec == CODEC_NONE:
        return bytes(data)
    if codec == CODEC_GZIP:
        return bytes(cramjam.gzip.decompress(bytes(data)))
    if codec == CODEC_SNAPPY:
        raw = bytes(data)
        if raw[:8] == b"\x82SNAPPY\x00":  # xerial framing used by the Java client
            out = bytearray()
            pos = 16
            while pos < len(raw):
                (size,) = struct.unpack_from(">i", raw, pos)
                pos += 4
                out += bytes(cramjam.snappy.decompress_raw(raw[pos:pos + size]))
                pos += size
            return bytes(out)
        return bytes(cramjam.snappy.decompress_raw(raw))
    if codec == CODEC_LZ4:
        return bytes(cramjam.lz4.decompress(bytes(data)))
    if codec == CODEC_ZSTD:
        return bytes(cramjam.zstd.decompress(bytes(data)))
    raise InvalidBatch(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}")


_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Compress a batch's records section the way the Java client writes it: gzip, snappy in
    xerial framing (32 KiB blocks), an LZ4 frame with independent blocks and no content
    checksum (what KafkaLZ4BlockInputStream reads), zstd."""
    raw = bytes(data)
    if codec == CODEC_NONE:
        return raw
    import cramjam      # the codecs, loaded with the first compressed batch (not at start-up)
    if codec == CODEC_GZIP:
        return bytes(cramjam.gzip.compress(raw))
    if codec == CODEC_SNAPPY:
        out = bytearray(_XERIAL_HEADER)
        for i in range(0, len(raw), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(raw[i:i + _XERIAL_BLOCK]))
            out += struct.pack(">i", len(block)) + block
        return bytes(out)
    if codec == CODEC_LZ4:
        c = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        c.compress(raw)
        return bytes(c.finish())
    if codec == CODEC_ZSTD:
        return bytes(cramjam.zstd.compress(raw))
    raise InvalidBatch(UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}")


def records_section(buf: bytes | bytearray | memoryview, h: BatchHeader) -> bytes:
    """The (decompressed) records section of the batch at ``h.position`` in ``buf``."""
    return decompress(h.compression, memoryview(buf)[h.position + HEADER_SIZE:h.position + h.size])


@dataclass(slots=True)
class RecordSpan:
    """Where one record sits in a decompressed records section, for copying it unchanged."""
    start: int          # first byte of the length varint
    rest: int           # first byte after the offset delta (key length onwards)
    end: int
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    has_value: bool


def iter_record_spans(data: bytes, count: int) -> Iterator[RecordSpan]:
    try:
        yield from _record_spans(data, count)
    except (IndexError, ValueError) as exc:  # a varint or length past the data
        raise InvalidBatch(CORRUPT_MESSAGE, f"undecodable records: {exc}") from None


def _record_spans(data: bytes, count: int) -> Iterator[RecordSpan]:
    pos = 0
    for _ in range(count):
        start = pos
        length, pos = decode_varint(data, pos)
        end = pos + length
        pos += 1  # attributes
        ts_delta, pos = decode_varint(data, pos)
        off_delta, pos = decode_varint(data, pos)
        rest = pos
        klen, pos = decode_varint(data, pos)
        key = None
        if klen >= 0:
            key = bytes(data[pos:pos + klen])
            pos += klen
        vlen, pos = decode_varint(data, pos)
        if end > len(data):
            raise InvalidBatch(CORRUPT_MESSAGE, "record runs past the batch")
        yield RecordSpan(start, rest, end, ts_delta, off_delta, key, vlen >= 0)
        pos = end


def encode_record(attributes: int, timestamp_delta: int, offset_delta: int,
                  rest: bytes | memoryview) -> bytes:
    """One record from its parts; ``rest`` is the key/value/headers bytes as stored."""
    body = bytes((attributes & 0xFF,)) + _zigzag(timestamp_delta) + _zigzag(offset_delta) + bytes(rest)
    return _zigzag(len(body)) + body


def assemble_batch(base_offset: int, leader_epoch: int, attributes: int, last_offset_delta: int,
                   base_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int,
                   base_sequence: int, record_count: int, records: bytes | bytearray) -> bytearray:
    """A v2 batch from an uncompressed records section, compressed with the codec named in
    ``attributes``, with its CRC computed."""
    body = compress(attributes & COMPRESSION_MASK, records) if record_count else b""
    length = HEADER_SIZE - LOG_OVERHEAD + len(body)
    buf = bytearray(_HEADER.pack(base_offset, length, leader_epoch, MAGIC_V2, 0, attributes, last_offset_delta,
                                 base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                                 record_count))
    buf += body
    struct.pack_into(">I", buf, OFF_CRC, crc32c.crc32c(memoryview(buf)[CRC_START:]))
    return buf


@dataclass(slots=True)
class RecordInfo:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def iter_records(buf: bytes | bytearray | memoryview, h: BatchHeader) -> Iterator[RecordInfo]:
    """Decode the records of one batch (decompressing if needed)."""
    try:
        yield from _records(buf, h)
    except (IndexError, ValueError) as exc:  # a varint or length past the data
        raise InvalidBatch(CORRUPT_MESSAGE, f"undecodable records: {exc}") from None


def _records(buf: bytes | bytearray | memoryview, h: BatchHeader) -> Iterator[RecordInfo]:
    start = h.position + HEADER_SIZE
    end = h.position + h.size
    data = decompress(h.compression, memoryview(buf)[start:end])
    pos = 0
    for _ in range(h.record_count):
        length, pos = decode_varint(data, pos)
        rec_end = pos + length
        pos += 1  # attributes
        ts_delta, pos = decode_varint(data, pos)
        off_delta, pos = decode_varint(data, pos)
        klen, pos = decode_varint(data, pos)
        key = None
        if klen >= 0:
            key = bytes(data[pos:pos + klen])
            pos += klen
        vlen, pos = decode_varint(data, pos)
        value = None
        if vlen >= 0:
            value = bytes(data[pos:pos + vlen])
            pos += vlen
        nh, pos = decode_varint(data, pos)
        headers = []
        for _ in range(nh):
            hk, pos = decode_varint(data, pos)
            hkey = bytes(data[pos:pos + hk]).decode("utf-8", "replace")
            pos += hk
            hv, pos = decode_varint(data, pos)
            hval = None
            if hv >= 0:
                hval = bytes(data[pos:pos + hv])
                pos += hv
            headers.append((hkey, hval))
        if pos != rec_end:
            raise InvalidBatch(CORRUPT_MESSAGE, "record length mismatch")
        ts = h.max_timestamp if h.is_log_append_time else h.base_timestamp + ts_delta
        yield RecordInfo(h.base_offset + off_delta, ts, key, value, headers)


def build_batch(records: Sequence[tuple[bytes | None, bytes | None]], base_offset: int = 0,
                timestamp_ms: int = 0, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                base_sequence: int = NO_SEQUENCE, transactional: bool = False,
                control: bool = False) -> bytearray:
    """Build an uncompressed v2 batch: used for the broker's own records (internal topics,
    transaction markers), never for client data."""
    attrs = (TRANSACTIONAL_MASK if transactional else 0) | (CONTROL_MASK if control else 0)
    return assemble_batch(base_offset, -1, attrs, len(records) - 1, timestamp_ms, timestamp_ms, producer_id,
                          producer_epoch, base_sequence, len(records), _records_body(records))


def _records_body(records: Sequence[tuple[bytes | None, bytes | None]]) -> bytes:
    """The records of a batch the broker builds: attributes 0, timestamp delta 0, offset delta i,
    key, value, no headers, each behind its length."""
    parts = []
    for i, (key, value) in enumerate(records):
        rec = b"".join((_ATTRS_TS_DELTA, _zigzag_size(i), _NULL if key is None else _zigzag_size(len(key)),
                        key or b"", _NULL if value is None else _zigzag_size(len(value)), value or b"",
                        _NO_HEADERS))
        parts.append(_zigzag_size(len(rec)))
        parts.append(rec)
    return b"".join(parts)


_HEAD_BEFORE_CRC = struct.Struct(">qiib")    # base offset, length, leader epoch, magic
_HEAD_TO_CRC = struct.Struct(">qiibI")       # the same and the CRC: everything before the CRC's bytes
_HEAD_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. record count: the CRC's first bytes
_CRC = struct.Struct(">I")
_crc32c = crc32c.crc32c
_LENGTH_BEFORE_CRC = _HEAD_TO_CRC.size - LOG_OVERHEAD  # the batch length's bytes before the CRC's


def internal_batch(records: Sequence[tuple[bytes | None, bytes | None]], base_offset: int, leader_epoch: int,
                   timestamp_ms: int, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                   attributes: int = 0) -> bytes:
    """The bytes of :func:`build_internal_batch` without its header: an offset commit's append
    reads nothing from the header that it does not know already (the size is ``len``, the
    last offset delta the record count less one), so it is not made. The CRC runs over the
    packed tail of the header and the records, and the batch is two packs and a join."""
    n = len(records)
    rest = _HEAD_AFTER_CRC.pack(attributes, n - 1, timestamp_ms, timestamp_ms, producer_id, producer_epoch,
                                NO_SEQUENCE, n) + _records_body(records)
    return _HEAD_TO_CRC.pack(base_offset, _LENGTH_BEFORE_CRC + len(rest), leader_epoch, MAGIC_V2,
                             _crc32c(rest)) + rest


def build_internal_batch(records: Sequence[tuple[bytes | None, bytes | None]], base_offset: int, leader_epoch: int,
                         timestamp_ms: int, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                         attributes: int = 0) -> tuple[bytes, BatchHeader]:
    """What :func:`build_batch` then :func:`stamp` (``base_offset``, ``leader_epoch``, no
    log-append time) make, byte for byte, and the header :func:`parse_header` would read from
    it: the broker's own appends (coordinator records, transaction markers) in as few Python
    steps as the format allows (:func:`internal_batch`); the header for the appends that keep
    producer state (markers, transactional offset commits)."""
    data = internal_batch(records, base_offset, leader_epoch, timestamp_ms, producer_id, producer_epoch, attributes)
    n = len(records)
    return data, BatchHeader(base_offset, len(data) - LOG_OVERHEAD, leader_epoch, MAGIC_V2,
                             _CRC.unpack_from(data, _HEAD_BEFORE_CRC.size)[0], attributes, n - 1, timestamp_ms,
                             timestamp_ms, producer_id, producer_epoch, NO_SEQUENCE, n)


def _varint(v: int) -> bytes:
    out = bytearray()
    encode_varint(v, out.append)
    return bytes(out)


# zigzag varints of -64..63 are one byte: the deltas, lengths and counts of the broker's own
# small records (coordinator records, markers), built on every commit
_ONE_BYTE = {v: _varint(v) for v in range(-64, 64)}


def _zigzag(v: int) -> bytes:
    b = _ONE_BYTE.get(v)
    return b if b is not None else _varint(v)


def _zigzag_size(v: int) -> bytes:
    """:func:`_zigzag` of a size or an index (``v`` >= 0): one and two bytes without a call."""
    z = v << 1
    if z < 0x80:
        return _ONE_BYTE[v]
    if z < 0x4000:
        return bytes((z & 0x7F | 0x80, z >> 7))
    return _varint(v)


_ATTRS_TS_DELTA = b"\x00" + _ONE_BYTE[0]    # a built record's attributes and timestamp delta
_NULL = _ONE_BYTE[-1]                       # a null key or value
_NO_HEADERS = _ONE_BYTE[0]
