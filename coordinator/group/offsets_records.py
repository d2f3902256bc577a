"""Byte formats of the records in ``__consumer_offsets``, exactly as Kafka writes them.

Keys start with an int16 version that doubles as the record type: 0 and 1 are offset commits
(``OffsetCommitKey``), 2 is group metadata (``GroupMetadataKey``); higher versions belong to
KIP-848/share/streams groups, which a classic coordinator skips on load. Values start with their
own int16 version. We write what Kafka 3.x/4.x brokers write (OffsetCommitValue v3, or v1 when the
commit carries an explicit expire timestamp; GroupMetadataValue v3) so a log produced by one can be
read by the other, and we read every version up to the flexible v4. A tombstone is value ``None``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


class RecordFormatError(ValueError):
    """Bytes that do not parse as the record they claim to be."""


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A key of a record type a classic coordinator does not handle (KIP-848 groups, share groups)."""
    version: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1          # v3+
    expire_timestamp: int = -1      # v1 only


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    rebalance_timeout: int = -1           # v1+
    group_instance_id: str | None = None  # v3+


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadataValue, ...] = field(default_factory=tuple)
    current_state_timestamp: int = -1     # v2+


# --------------------------------------------------------------------------- primitives

_INT16, _INT32, _INT64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_KEY_HEAD = struct.Struct(">hh")            # key version, group length
_VALUE_V3_HEAD = struct.Struct(">hqih")     # version, offset, leader epoch, metadata length

class _Writer:
    __slots__ = ("parts", "flexible")

    def __init__(self, flexible: bool = False) -> None:
        self.parts: list[bytes] = []
        self.flexible = flexible

    def int16(self, v: int) -> None:
        self.parts.append(struct.pack(">h", v))

    def int32(self, v: int) -> None:
        self.parts.append(struct.pack(">i", v))

    def int64(self, v: int) -> None:
        self.parts.append(struct.pack(">q", v))

    def uvarint(self, v: int) -> None:
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            if v:
                out.append(b | 0x80)
            else:
                out.append(b)
                break
        self.parts.append(bytes(out))

    def string(self, s: str | None) -> None:
        if s is None:
            if self.flexible:
                self.uvarint(0)
            else:
                self.int16(-1)
            return
        data = s.encode("utf-8")
        if self.flexible:
            self.uvarint(len(data) + 1)
        else:
            self.int16(len(data))
        self.parts.append(data)

    def bytes_(self, b: bytes | None) -> None:
        if b is None:
            if self.flexible:
                self.uvarint(0)
            else:
                self.int32(-1)
            return
        if self.flexible:
            self.uvarint(len(b) + 1)
        else:
            self.int32(len(b))
        self.parts.append(bytes(b))

    def array_len(self, n: int) -> None:
        if self.flexible:
            self.uvarint(n + 1)
        else:
            self.int32(n)

    def no_tagged_fields(self) -> None:
        if self.flexible:
            self.uvarint(0)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


class _Reader:
    __slots__ = ("buf", "pos", "flexible")

    def __init__(self, buf: bytes, flexible: bool = False) -> None:
        self.buf = memoryview(buf)
        self.pos = 0
        self.flexible = flexible

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise RecordFormatError("record truncated")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        value: int = struct.unpack(">h", self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = struct.unpack(">i", self._take(4))[0]
        return value

    def int64(self) -> int:
        value: int = struct.unpack(">q", self._take(8))[0]
        return value

    def uvarint(self) -> int:
        shift = 0
        value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise RecordFormatError("varint too long")

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.int16()
        if n < 0:
            return None
        try:
            return bytes(self._take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError("invalid utf-8 in string") from exc

    def bytes_(self) -> bytes | None:
        n = self.uvarint() - 1 if self.flexible else self.int32()
        if n < 0:
            return None
        return bytes(self._take(n))

    def array_len(self) -> int:
        return self.uvarint() - 1 if self.flexible else self.int32()

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()                 # tag
            self._take(self.uvarint())     # size + data


def _required(s: str | None, what: str) -> str:
    if s is None:
        raise RecordFormatError(f"{what} must not be null")
    return s


# --------------------------------------------------------------------------- keys

def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    """Every OffsetCommit writes one per partition: packed with precompiled structs, the same
    bytes as the field-by-field form (``_encode_offset_commit_key_fields``, which a null name
    still takes)."""
    if key.group is None or key.topic is None:
        return _encode_offset_commit_key_fields(key)
    return _pack_offset_commit_key(key.group, key.topic, key.partition)


def _pack_offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    g, t = group.encode("utf-8"), topic.encode("utf-8")
    return b"".join((_KEY_HEAD.pack(OFFSET_COMMIT_KEY_VERSION, len(g)), g, _INT16.pack(len(t)), t,
                     _INT32.pack(partition)))


def _encode_offset_commit_key_fields(key: OffsetCommitKey) -> bytes:
    w = _Writer()
    w.int16(OFFSET_COMMIT_KEY_VERSION)
    w.string(key.group)
    w.string(key.topic)
    w.int32(key.partition)
    return w.getvalue()


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    w = _Writer()
    w.int16(GROUP_METADATA_KEY_VERSION)
    w.string(key.group)
    return w.getvalue()


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | UnknownKey:
    """Parse a ``__consumer_offsets`` key; the leading version says which record it is."""
    r = _Reader(data)
    version = r.int16()
    if version in (0, 1):
        return OffsetCommitKey(_required(r.string(), "group"), _required(r.string(), "topic"), r.int32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupMetadataKey(_required(r.string(), "group"))
    return UnknownKey(version)


# --------------------------------------------------------------------------- values

def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """Kafka writes v1 when the commit has an explicit expire timestamp (OffsetCommit v2-v4 with
    a retention time), otherwise v3."""
    if version is None:
        version = (OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY if value.expire_timestamp != -1
                   else OFFSET_COMMIT_VALUE_VERSION)
    if version == OFFSET_COMMIT_VALUE_VERSION and value.metadata is not None:
        # what every commit without a retention time writes, packed with precompiled structs
        # (the same bytes as the field-by-field form below)
        metadata = value.metadata.encode("utf-8")
        return b"".join((_VALUE_V3_HEAD.pack(version, value.offset, value.leader_epoch, len(metadata)), metadata,
                         _INT64.pack(value.commit_timestamp)))
    return _encode_offset_commit_value_fields(value, version)


def _encode_offset_commit_value_fields(value: OffsetCommitValue, version: int) -> bytes:
    if not 0 <= version <= 4:
        raise ValueError(f"unsupported OffsetCommitValue version {version}")
    w = _Writer(flexible=version >= 4)
    w.int16(version)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata)
    w.int64(value.commit_timestamp)
    if version == 1:
        w.int64(value.expire_timestamp)
    w.no_tagged_fields()
    return w.getvalue()


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    version = _Reader(data).int16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown OffsetCommitValue version {version}")
    r = _Reader(data, flexible=version >= 4)
    r.pos = 2
    offset = r.int64()
    leader_epoch = r.int32() if version >= 3 else -1
    metadata = _required(r.string(), "metadata")
    commit_timestamp = r.int64()
    expire_timestamp = r.int64() if version == 1 else -1
    r.skip_tagged_fields()
    return OffsetCommitValue(offset=offset, metadata=metadata, commit_timestamp=commit_timestamp,
                             leader_epoch=leader_epoch, expire_timestamp=expire_timestamp)


def encode_group_metadata_value(value: GroupMetadataValue,
                                version: int = GROUP_METADATA_VALUE_VERSION) -> bytes:
    if not 0 <= version <= 4:
        raise ValueError(f"unsupported GroupMetadataValue version {version}")
    w = _Writer(flexible=version >= 4)
    w.int16(version)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp)
    w.array_len(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.no_tagged_fields()
    w.no_tagged_fields()
    return w.getvalue()


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    version = _Reader(data).int16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown GroupMetadataValue version {version}")
    r = _Reader(data, flexible=version >= 4)
    r.pos = 2
    protocol_type = _required(r.string(), "protocolType")
    generation = r.int32()
    protocol = r.string()
    leader = r.string()
    current_state_timestamp = r.int64() if version >= 2 else -1
    n = r.array_len()
    if n < 0:
        raise RecordFormatError("members must not be null")
    members = []
    for _ in range(n):
        member_id = _required(r.string(), "memberId")
        group_instance_id = r.string() if version >= 3 else None
        client_id = _required(r.string(), "clientId")
        client_host = _required(r.string(), "clientHost")
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        subscription = r.bytes_() or b""
        assignment = r.bytes_() or b""
        r.skip_tagged_fields()
        members.append(MemberMetadataValue(
            member_id=member_id, client_id=client_id, client_host=client_host,
            session_timeout=session_timeout, subscription=subscription, assignment=assignment,
            rebalance_timeout=rebalance_timeout, group_instance_id=group_instance_id))
    r.skip_tagged_fields()
    return GroupMetadataValue(protocol_type=protocol_type, generation=generation, protocol=protocol,
                              leader=leader, members=tuple(members),
                              current_state_timestamp=current_state_timestamp)


# --------------------------------------------------------------------------- record helpers

def offset_commit_record(group: str, topic: str, partition: int,
                         value: OffsetCommitValue | None) -> tuple[bytes, bytes | None]:
    """(key, value) of an offset commit; ``value=None`` makes the tombstone."""
    key = encode_offset_commit_key(OffsetCommitKey(group, topic, partition))
    return key, (None if value is None else encode_offset_commit_value(value))


def offset_commit_record_of(group: str, topic: str, partition: int, offset: int, leader_epoch: int,
                            metadata: str, commit_timestamp: int, expire_timestamp: int = -1) -> tuple[bytes, bytes]:
    """``offset_commit_record(group, topic, partition, OffsetCommitValue(...))`` from the fields,
    without making the key and value objects (every partition of every OffsetCommit writes one)."""
    if expire_timestamp == -1 and metadata is not None:
        m = metadata.encode("utf-8")
        return (_pack_offset_commit_key(group, topic, partition),
                b"".join((_VALUE_V3_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, offset, leader_epoch, len(m)), m,
                          _INT64.pack(commit_timestamp))))
    key, value = offset_commit_record(group, topic, partition, OffsetCommitValue(
        offset=offset, metadata=metadata, commit_timestamp=commit_timestamp, leader_epoch=leader_epoch,
        expire_timestamp=expire_timestamp))
    assert value is not None
    return key, value


def group_metadata_record(group: str, value: GroupMetadataValue | None) -> tuple[bytes, bytes | None]:
    """(key, value) of a group's metadata; ``value=None`` makes the tombstone."""
    key = encode_group_metadata_key(GroupMetadataKey(group))
    return key, (None if value is None else encode_group_metadata_value(value))
