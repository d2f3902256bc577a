"""__consumer_offsets record formats, byte for byte as Kafka writes and reads them."""
from __future__ import annotations

import struct

import pytest

from coordinator.group.offsets_records import (GroupMetadataKey, GroupMetadataValue, MemberMetadataValue, OffsetCommitKey, OffsetCommitValue, RecordFormatError, UnknownKey, decode_group_metadata_value, decode_key, decode_offset_commit_value, encode_group_metadata_key, encode_group_metadata_value, encode_offset_commit_key, encode_offset_commit_value, group_metadata_record, offset_commit_record)


def s16(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def b32(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def cstr(s: str | None) -> bytes:           # compact (flexible) string, short enough for 1-byte varint
    if s is None:
        return b"\x00"
    b = s.encode()
    return bytes([len(b) + 1]) + b


def test_offset_commit_key_v1_layout() -> None:
    key = encode_offset_commit_key(OffsetCommitKey("grp", "topic", 7))
    assert key == struct.pack(">h", 1) + s16("grp") + s16("topic") + struct.pack(">i", 7)
    assert decode_key(key) == OffsetCommitKey("grp", "topic", 7)


def test_offset_commit_key_v0_is_read_too() -> None:
    key = struct.pack(">h", 0) + s16("g") + s16("t") + struct.pack(">i", 3)
    assert decode_key(key) == OffsetCommitKey("g", "t", 3)


def test_group_metadata_key_v2_layout() -> None:
    key = encode_group_metadata_key(GroupMetadataKey("grp"))
    assert key == struct.pack(">h", 2) + s16("grp")
    assert decode_key(key) == GroupMetadataKey("grp")


def test_keys_of_other_record_types_are_unknown() -> None:
    # KIP-848 ConsumerGroupMetadataKey (version 3) and friends are skipped by a classic coordinator.
    assert decode_key(struct.pack(">h", 3) + s16("g")) == UnknownKey(3)
    assert decode_key(struct.pack(">h", 11) + s16("g")) == UnknownKey(11)


def test_offset_commit_value_v3_layout() -> None:
    v = OffsetCommitValue(offset=42, metadata="meta", commit_timestamp=1000, leader_epoch=5)
    data = encode_offset_commit_value(v)
    assert data == (struct.pack(">hqi", 3, 42, 5) + s16("meta") + struct.pack(">q", 1000))
    assert decode_offset_commit_value(data) == v


def test_offset_commit_value_with_expiry_is_written_as_v1() -> None:
    v = OffsetCommitValue(offset=1, metadata="", commit_timestamp=10, expire_timestamp=99)
    data = encode_offset_commit_value(v)
    assert data == struct.pack(">hq", 1, 1) + s16("") + struct.pack(">qq", 10, 99)
    assert decode_offset_commit_value(data) == v


def test_offset_commit_value_old_versions_decode() -> None:
    v0 = struct.pack(">hq", 0, 9) + s16("m") + struct.pack(">q", 5)
    assert decode_offset_commit_value(v0) == OffsetCommitValue(9, "m", 5, -1, -1)
    v2 = struct.pack(">hq", 2, 9) + s16("m") + struct.pack(">q", 5)
    assert decode_offset_commit_value(v2) == OffsetCommitValue(9, "m", 5, -1, -1)


def test_offset_commit_value_flexible_v4_decodes_and_skips_tagged_fields() -> None:
    data = (struct.pack(">hqi", 4, 77, 2) + cstr("x") + struct.pack(">q", 123)
            + b"\x01" + b"\x00" + b"\x03" + b"abc")      # one unknown tagged field (tag 0, 3 bytes)
    assert decode_offset_commit_value(data) == OffsetCommitValue(77, "x", 123, 2, -1)
    assert decode_offset_commit_value(encode_offset_commit_value(OffsetCommitValue(1, "y", 2, 3), 4)) \
        == OffsetCommitValue(1, "y", 2, 3)


def member_v3_bytes(m: MemberMetadataValue) -> bytes:
    return (s16(m.member_id) + s16(m.group_instance_id) + s16(m.client_id) + s16(m.client_host)
            + struct.pack(">ii", m.rebalance_timeout, m.session_timeout) + b32(m.subscription) + b32(m.assignment))


def test_group_metadata_value_v3_layout() -> None:
    m1 = MemberMetadataValue("c-1", "c", "/127.0.0.1", 10000, b"sub", b"asg", 30000, None)
    m2 = MemberMetadataValue("i-2", "c2", "/10.0.0.1", 45000, b"", b"x", 300000, "i")
    v = GroupMetadataValue("consumer", 3, "range", "c-1", (m1, m2), 1700)
    data = encode_group_metadata_value(v)
    assert data == (struct.pack(">h", 3) + s16("consumer") + struct.pack(">i", 3) + s16("range") + s16("c-1")
                    + struct.pack(">q", 1700) + struct.pack(">i", 2) + member_v3_bytes(m1) + member_v3_bytes(m2))
    assert decode_group_metadata_value(data) == v


def test_empty_group_metadata_value_v3_layout() -> None:
    v = GroupMetadataValue("", 0, None, None, (), 55)
    data = encode_group_metadata_value(v)
    assert data == struct.pack(">h", 3) + s16("") + struct.pack(">i", 0) + s16(None) + s16(None) \
        + struct.pack(">qi", 55, 0)
    assert decode_group_metadata_value(data) == v


def test_group_metadata_value_v0_v1_v2_decode() -> None:
    member_v0 = s16("m") + s16("cid") + s16("host") + struct.pack(">i", 6000) + b32(b"s") + b32(b"a")
    v0 = struct.pack(">h", 0) + s16("consumer") + struct.pack(">i", 2) + s16("rr") + s16("m") \
        + struct.pack(">i", 1) + member_v0
    assert decode_group_metadata_value(v0) == GroupMetadataValue(
        "consumer", 2, "rr", "m", (MemberMetadataValue("m", "cid", "host", 6000, b"s", b"a", -1, None),), -1)
    member_v1 = s16("m") + s16("cid") + s16("host") + struct.pack(">ii", 9000, 6000) + b32(b"s") + b32(b"a")
    v1 = struct.pack(">h", 1) + s16("consumer") + struct.pack(">i", 2) + s16("rr") + s16("m") \
        + struct.pack(">i", 1) + member_v1
    assert decode_group_metadata_value(v1).members[0].rebalance_timeout == 9000
    v2 = struct.pack(">h", 2) + s16("consumer") + struct.pack(">i", 2) + s16("rr") + s16("m") \
        + struct.pack(">q", 4242) + struct.pack(">i", 1) + member_v1
    decoded = decode_group_metadata_value(v2)
    assert decoded.current_state_timestamp == 4242
    assert decoded.members[0] == MemberMetadataValue("m", "cid", "host", 6000, b"s", b"a", 9000, None)


def test_group_metadata_value_flexible_v4_roundtrip() -> None:
    m = MemberMetadataValue("m", "cid", "h", 6000, b"s" * 3, b"", 9000, "inst")
    v = GroupMetadataValue("consumer", 4, "range", "m", (m,), 17)
    data = encode_group_metadata_value(v, version=4)
    # compact encodings: string lengths are length+1 varints, arrays count+1, struct tags at the end
    assert data[:2] == struct.pack(">h", 4)
    assert data[2:2 + 9] == cstr("consumer")
    assert data.endswith(b"\x00\x00")              # member tagged fields, then group tagged fields
    assert decode_group_metadata_value(data) == v


def test_truncated_values_raise() -> None:
    data = encode_offset_commit_value(OffsetCommitValue(1, "abc", 2, 3))
    with pytest.raises(RecordFormatError):
        decode_offset_commit_value(data[:-3])
    with pytest.raises(RecordFormatError):
        decode_group_metadata_value(struct.pack(">h", 9))


def test_record_helpers_make_tombstones() -> None:
    key, value = offset_commit_record("g", "t", 1, None)
    assert decode_key(key) == OffsetCommitKey("g", "t", 1) and value is None
    key, value = group_metadata_record("g", None)
    assert key == encode_group_metadata_key(GroupMetadataKey("g")) and value is None


@pytest.mark.parametrize("group,topic,partition", [
    ("g", "t", 0), ("", "", 2**31 - 1), ("grüppe-✓", "tópico", 7), ("x" * 300, "y" * 249, 12)])
def test_offset_commit_key_packed_matches_field_by_field(group: str, topic: str, partition: int) -> None:
    from coordinator.group.offsets_records import _encode_offset_commit_key_fields
    key = OffsetCommitKey(group, topic, partition)
    assert encode_offset_commit_key(key) == _encode_offset_commit_key_fields(key)


@pytest.mark.parametrize("value", [
    OffsetCommitValue(0), OffsetCommitValue(42, "", 1700000000000, -1),
    OffsetCommitValue(2**63 - 1, "méta ✓" * 50, 1700000000123, 2**31 - 1), OffsetCommitValue(5, "m", -1, 3)])
def test_offset_commit_value_v3_packed_matches_field_by_field(value: OffsetCommitValue) -> None:
    from coordinator.group.offsets_records import _encode_offset_commit_value_fields
    assert encode_offset_commit_value(value) == _encode_offset_commit_value_fields(value, 3)


@pytest.mark.parametrize("value", [
    OffsetCommitValue(0), OffsetCommitValue(42, "", 1700000000000, -1), OffsetCommitValue(7, "m✓", 10, 2, 99)])
def test_offset_commit_record_of_fields_matches_record_of_value(value: OffsetCommitValue) -> None:
    from coordinator.group.offsets_records import offset_commit_record_of
    assert offset_commit_record_of("g", "t", 3, value.offset, value.leader_epoch, value.metadata,
                                   value.commit_timestamp, value.expire_timestamp) == \
        offset_commit_record("g", "t", 3, value)
