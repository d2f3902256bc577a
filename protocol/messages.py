"""Request/response classes by API key, straight from kafka-python's JSON-schema messages, each
API's imported when it is first looked up."""
from __future__ import annotations

import importlib
import inspect
import struct
from collections.abc import Iterator
from typing import Any, TypeGuard

from kafka.protocol.api_header import ResponseHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.codecs.encode_buffer import EncodeBuffer, EncodeBufferPool

from protocol.decode_checks import NullCheck, null_check
from protocol.kafka_import import import_submodule_alone
from protocol.build import build
from protocol.tagged_encode import without_empty_tagged_fields

_SIZE = struct.Struct(">i")
_SIZE_AND_ID = struct.Struct(">ii")   # a response frame's size and its header's correlation id
# kafka-python's per-thread encode buffer, reset (``EncodeBufferPool.acquire()`` without its
# context manager, which only wraps these two calls; its buffer starts at 64 KiB and never shrinks)
_buffer = EncodeBufferPool._get

# Each API's kafka-python module and classes (key: (module, request class, response class)). The
# classes are imported on first use, one module at a time: importing every family of kafka-python's
# messages took about as long as ``import trio`` at start-up, and a fresh broker's first requests
# need only a few APIs. tests/unit/test_lazy_loading.py checks this index against every class
# kafka-python and protocol/schema_messages.py define (a new API cannot be left out).
INDEX: dict[int, tuple[str, str, str]] = {
    0: ('kafka.protocol.producer.produce', 'ProduceRequest', 'ProduceResponse'),
    1: ('kafka.protocol.consumer.fetch', 'FetchRequest', 'FetchResponse'),
    2: ('kafka.protocol.consumer.offsets', 'ListOffsetsRequest', 'ListOffsetsResponse'),
    3: ('kafka.protocol.metadata.metadata', 'MetadataRequest', 'MetadataResponse'),
    8: ('kafka.protocol.consumer.group', 'OffsetCommitRequest', 'OffsetCommitResponse'),
    9: ('kafka.protocol.consumer.group', 'OffsetFetchRequest', 'OffsetFetchResponse'),
    10: ('kafka.protocol.metadata.find_coordinator', 'FindCoordinatorRequest', 'FindCoordinatorResponse'),
    11: ('kafka.protocol.consumer.group', 'JoinGroupRequest', 'JoinGroupResponse'),
    12: ('kafka.protocol.consumer.group', 'HeartbeatRequest', 'HeartbeatResponse'),
    13: ('kafka.protocol.consumer.group', 'LeaveGroupRequest', 'LeaveGroupResponse'),
    14: ('kafka.protocol.consumer.group', 'SyncGroupRequest', 'SyncGroupResponse'),
    15: ('kafka.protocol.admin.groups', 'DescribeGroupsRequest', 'DescribeGroupsResponse'),
    16: ('kafka.protocol.admin.groups', 'ListGroupsRequest', 'ListGroupsResponse'),
    17: ('kafka.protocol.sasl', 'SaslHandshakeRequest', 'SaslHandshakeResponse'),
    18: ('kafka.protocol.metadata.api_versions', 'ApiVersionsRequest', 'ApiVersionsResponse'),
    19: ('kafka.protocol.admin.topics', 'CreateTopicsRequest', 'CreateTopicsResponse'),
    20: ('kafka.protocol.admin.topics', 'DeleteTopicsRequest', 'DeleteTopicsResponse'),
    21: ('kafka.protocol.admin.topics', 'DeleteRecordsRequest', 'DeleteRecordsResponse'),
    22: ('kafka.protocol.producer.transaction', 'InitProducerIdRequest', 'InitProducerIdResponse'),
    23: ('kafka.protocol.consumer.offsets', 'OffsetForLeaderEpochRequest', 'OffsetForLeaderEpochResponse'),
    24: ('kafka.protocol.producer.transaction', 'AddPartitionsToTxnRequest', 'AddPartitionsToTxnResponse'),
    25: ('kafka.protocol.producer.transaction', 'AddOffsetsToTxnRequest', 'AddOffsetsToTxnResponse'),
    26: ('kafka.protocol.producer.transaction', 'EndTxnRequest', 'EndTxnResponse'),
    27: ('kafka.protocol.producer.transaction', 'WriteTxnMarkersRequest', 'WriteTxnMarkersResponse'),
    28: ('kafka.protocol.producer.transaction', 'TxnOffsetCommitRequest', 'TxnOffsetCommitResponse'),
    29: ('kafka.protocol.admin.acl', 'DescribeAclsRequest', 'DescribeAclsResponse'),
    30: ('kafka.protocol.admin.acl', 'CreateAclsRequest', 'CreateAclsResponse'),
    31: ('kafka.protocol.admin.acl', 'DeleteAclsRequest', 'DeleteAclsResponse'),
    32: ('kafka.protocol.admin.configs', 'DescribeConfigsRequest', 'DescribeConfigsResponse'),
    33: ('kafka.protocol.admin.configs', 'AlterConfigsRequest', 'AlterConfigsResponse'),
    34: ('kafka.protocol.admin.cluster', 'AlterReplicaLogDirsRequest', 'AlterReplicaLogDirsResponse'),
    35: ('kafka.protocol.admin.cluster', 'DescribeLogDirsRequest', 'DescribeLogDirsResponse'),
    36: ('kafka.protocol.sasl', 'SaslAuthenticateRequest', 'SaslAuthenticateResponse'),
    37: ('kafka.protocol.admin.topics', 'CreatePartitionsRequest', 'CreatePartitionsResponse'),
    42: ('kafka.protocol.admin.groups', 'DeleteGroupsRequest', 'DeleteGroupsResponse'),
    43: ('kafka.protocol.admin.topics', 'ElectLeadersRequest', 'ElectLeadersResponse'),
    44: ('kafka.protocol.admin.configs', 'IncrementalAlterConfigsRequest', 'IncrementalAlterConfigsResponse'),
    45: ('kafka.protocol.admin.topics', 'AlterPartitionReassignmentsRequest', 'AlterPartitionReassignmentsResponse'),
    46: ('kafka.protocol.admin.topics', 'ListPartitionReassignmentsRequest', 'ListPartitionReassignmentsResponse'),
    47: ('kafka.protocol.consumer.group', 'OffsetDeleteRequest', 'OffsetDeleteResponse'),
    48: ('kafka.protocol.admin.client_quotas', 'DescribeClientQuotasRequest', 'DescribeClientQuotasResponse'),
    49: ('kafka.protocol.admin.client_quotas', 'AlterClientQuotasRequest', 'AlterClientQuotasResponse'),
    50: ('kafka.protocol.admin.users', 'DescribeUserScramCredentialsRequest', 'DescribeUserScramCredentialsResponse'),
    51: ('kafka.protocol.admin.users', 'AlterUserScramCredentialsRequest', 'AlterUserScramCredentialsResponse'),
    55: ('kafka.protocol.admin.cluster', 'DescribeQuorumRequest', 'DescribeQuorumResponse'),
    57: ('kafka.protocol.admin.cluster', 'UpdateFeaturesRequest', 'UpdateFeaturesResponse'),
    60: ('kafka.protocol.admin.cluster', 'DescribeClusterRequest', 'DescribeClusterResponse'),
    61: ('kafka.protocol.admin.transactions', 'DescribeProducersRequest', 'DescribeProducersResponse'),
    65: ('kafka.protocol.admin.transactions', 'DescribeTransactionsRequest', 'DescribeTransactionsResponse'),
    66: ('kafka.protocol.admin.transactions', 'ListTransactionsRequest', 'ListTransactionsResponse'),
    68: ('protocol.schema_messages', 'ConsumerGroupHeartbeatRequest', 'ConsumerGroupHeartbeatResponse'),
    69: ('protocol.schema_messages', 'ConsumerGroupDescribeRequest', 'ConsumerGroupDescribeResponse'),
    74: ('kafka.protocol.admin.configs', 'ListConfigResourcesRequest', 'ListConfigResourcesResponse'),
    75: ('kafka.protocol.admin.topics', 'DescribeTopicPartitionsRequest', 'DescribeTopicPartitionsResponse'),
    76: ('protocol.schema_messages', 'ShareGroupHeartbeatRequest', 'ShareGroupHeartbeatResponse'),
    77: ('protocol.schema_messages', 'ShareGroupDescribeRequest', 'ShareGroupDescribeResponse'),
    78: ('protocol.schema_messages', 'ShareFetchRequest', 'ShareFetchResponse'),
    79: ('protocol.schema_messages', 'ShareAcknowledgeRequest', 'ShareAcknowledgeResponse'),
    83: ('protocol.schema_messages', 'InitializeShareGroupStateRequest', 'InitializeShareGroupStateResponse'),
    84: ('protocol.schema_messages', 'ReadShareGroupStateRequest', 'ReadShareGroupStateResponse'),
    85: ('protocol.schema_messages', 'WriteShareGroupStateRequest', 'WriteShareGroupStateResponse'),
    86: ('protocol.schema_messages', 'DeleteShareGroupStateRequest', 'DeleteShareGroupStateResponse'),
    87: ('protocol.schema_messages', 'ReadShareGroupStateSummaryRequest', 'ReadShareGroupStateSummaryResponse'),
    90: ('protocol.schema_messages', 'DescribeShareGroupOffsetsRequest', 'DescribeShareGroupOffsetsResponse'),
    91: ('protocol.schema_messages', 'AlterShareGroupOffsetsRequest', 'AlterShareGroupOffsetsResponse'),
    92: ('protocol.schema_messages', 'DeleteShareGroupOffsetsRequest', 'DeleteShareGroupOffsetsResponse'),
}


def _load_api(api_key: int) -> bool:
    """Import ``api_key``'s message module and enter both its classes; False for a key not in INDEX.

    kafka-python's submodule is imported without its family's ``__init__`` (which would build every
    message class of the family: protocol/kafka_import.py); a later ``import kafka.protocol.admin``
    runs that ``__init__``, which finds the submodule loaded and uses the same classes."""
    entry = INDEX.get(api_key)
    if entry is None:
        return False
    module_name, request_name, response_name = entry
    module = import_submodule_alone(module_name) if module_name.startswith("kafka.") \
        else importlib.import_module(module_name)
    request, response = getattr(module, request_name), getattr(module, response_name)
    dict.__setitem__(REQUESTS, api_key, request)
    dict.__setitem__(RESPONSES, api_key, response)
    return True


class _ByApiKey(dict[int, type[ApiMessage]]):
    """Message classes by API key, filled on first lookup (``INDEX``). A hit is a plain dict
    lookup; a miss imports that API's module. Iterating (``values()``, ``items()``, ``len``...)
    loads every API first, so it sees the whole table as before."""

    def __missing__(self, api_key: int) -> type[ApiMessage]:
        if not _load_api(api_key):
            raise KeyError(api_key)
        return dict.__getitem__(self, api_key)

    def __contains__(self, api_key: object) -> bool:
        return dict.__contains__(self, api_key) or api_key in INDEX

    def get(self, api_key: int, default: Any = None) -> Any:
        try:
            return self[api_key]
        except KeyError:
            return default

    def _all(self) -> None:
        for api_key in INDEX:
            if not dict.__contains__(self, api_key):
                _load_api(api_key)

    def __iter__(self) -> Iterator[int]:
        self._all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._all()
        return dict.__len__(self)

    def keys(self) -> Any:
        self._all()
        return dict.keys(self)

    def values(self) -> Any:
        self._all()
        return dict.values(self)

    def items(self) -> Any:
        self._all()
        return dict.items(self)


REQUESTS: dict[int, type[ApiMessage]] = _ByApiKey()
RESPONSES: dict[int, type[ApiMessage]] = _ByApiKey()


def _is_message_class(obj: object) -> TypeGuard[type[ApiMessage]]:
    """A kafka-python message class (built at run time from Kafka's JSON, hence no static type)."""
    return inspect.isclass(obj) and issubclass(obj, ApiMessage)


def discover() -> dict[int, tuple[str, str, str]]:
    """What INDEX must hold, found the slow way (every family of kafka-python's messages and
    protocol/schema_messages.py imported): for the unit test that keeps INDEX complete."""
    from protocol.schema_messages import API_MESSAGES
    found: dict[int, dict[bool, type[ApiMessage]]] = {}
    classes: list[type[ApiMessage]] = []
    for pkg in ("admin", "consumer", "metadata", "producer", "sasl"):
        mod = importlib.import_module(f"kafka.protocol.{pkg}")
        classes += [c for c in (getattr(mod, n) for n in getattr(mod, "__all__", ()))
                    if _is_message_class(c) and c.API_KEY is not None]
    classes += API_MESSAGES      # APIs kafka-python lacks, from Kafka's JSON in protocol/schemas/
    for cls in classes:
        found.setdefault(cls.API_KEY, {})[cls.is_request()] = cls
    return {k: (v[True].__module__, v[True].__name__, v[False].__name__) for k, v in found.items()}


class _Codecs:
    """One message class and version's compiled codecs, looked up once: kafka-python compiles
    a flat encoder/decoder per (struct, version) and caches it, but its ``encode``/``decode``
    wrap them in per-call work (version checks, an ``io.BytesIO`` copy of the whole frame and
    the generic, uncompiled codec for the request/response header) that costs as much as the
    body itself for a small request. Here header and body both go through kafka-python's own
    compiled codecs (``compiled_decode_from``/``compiled_encode_into``), with the header
    flags kafka-python uses (``ApiHeader``: non-compact strings, tagged fields when flexible).
    Encoders skip kafka-python's generic tagged-fields step for structs that have none
    (protocol/tagged_encode.py).

    A response header is one field, the correlation id, and (flexible) an empty tag buffer:
    ``header_bytes`` says whether kafka-python's compiled header encoder writes exactly
    ``>i correlation_id`` (+ ``\\x00``) — checked here, once, on a sample id — so that
    ``encode_response`` can write those bytes itself instead of building a ``ResponseHeader``
    object and calling the encoder for it on every answer (tests/unit/test_tagged_encode.py
    compares whole frames with kafka-python's for every class and version)."""

    __slots__ = ("flexible", "header_decode", "body_decode", "null_check", "header_encode", "body_encode",
                 "header_bytes")

    def __init__(self, cls: type[ApiMessage], version: int) -> None:
        self.flexible = flexible = cls.flexible_version_q(version)
        hdr = cls.header_class
        hv = hdr._flexible_versions[0] if flexible else hdr._valid_versions[0]
        if cls.is_request():
            self.header_decode = hdr._struct.compiled_decode_from(hv, compact=False, tagged=flexible,
                                                                  data_class=hdr)
            self.body_decode = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible,
                                                                data_class=cls[None])
            self.null_check: NullCheck | None = null_check(cls, version)
        else:
            self.header_encode = without_empty_tagged_fields(
                hdr._struct.compiled_encode_into(hv, compact=False, tagged=flexible))
            self.body_encode = without_empty_tagged_fields(
                cls._struct.compiled_encode_into(version, compact=flexible, tagged=flexible))
            self.header_bytes = hdr is ResponseHeader and _header_is_plain(self.header_encode, flexible)


def _header_is_plain(header_encode: Any, flexible: bool) -> bool:
    """kafka-python's compiled response-header encoder writes the correlation id and, when
    flexible, one 0 byte (no tagged fields): the bytes ``encode_response`` writes itself."""
    out = EncodeBuffer(16)
    sample = -0x12345679
    header_encode(build(ResponseHeader, None, {"correlation_id": sample}), out)
    return bytes(out.result()) == _SIZE.pack(sample) + (b"\x00" if flexible else b"")


_CODECS: dict[tuple[type, int], _Codecs] = {}
_PLAIN: dict[type, bool] = {}
# per (class, version): its _Codecs where decode_request/encode_response take the compiled path,
# None where kafka-python's own decode/encode must run (a class overriding them, a version out of range)
_FAST_DECODE: dict[tuple[type, int], _Codecs | None] = {}
_FAST_ENCODE: dict[tuple[type, int | None], _Codecs | None] = {}


def _codecs(cls: type[ApiMessage], version: int) -> _Codecs:
    c = _CODECS.get((cls, version))
    if c is None:
        c = _CODECS[(cls, version)] = _Codecs(cls, version)
    return c


def _plain(cls: type[ApiMessage], *methods: str) -> bool:
    """The class keeps kafka-python's generic methods (a few override them for quirks, e.g.
    ApiVersionsResponse's never-flexible header): only those take the compiled shortcut."""
    plain = _PLAIN.get(cls)
    if plain is None:
        plain = _PLAIN[cls] = all(next(k for k in cls.__mro__ if m in k.__dict__) is ApiMessage for m in methods)
    return plain


def _fast_decode(cls: type[ApiMessage], version: int) -> _Codecs | None:
    """What ``decode_request`` checks on every call, decided once per (class, version)."""
    fast = _codecs(cls, version) if _plain(cls, "decode", "parse_header") and 0 <= version <= cls.max_version \
        else None
    _FAST_DECODE[(cls, version)] = fast
    return fast


def _fast_encode(cls: type[ApiMessage], version: int | None) -> _Codecs | None:
    """What ``encode_response`` checks on every call, decided once per (class, version)."""
    fast = None
    if version is not None and _plain(cls, "encode", "encode_header", "encode_header_into", "with_header"):
        fast = _codecs(cls, version)
    _FAST_ENCODE[(cls, version)] = fast
    return fast


def decode_request(cls: type[ApiMessage], frame: bytes | bytearray, version: int) -> ApiMessage:
    """``cls.decode(frame, version=version, header=True)`` through the compiled codecs, from a
    view of the frame (no copy: a produce request's records stay where they were received).

    A request with a null where its version's schema allows none is refused here
    (``MalformedRequest``, a ValueError like any other decode failure), never handed on."""
    try:
        c = _FAST_DECODE[(cls, version)]
    except KeyError:
        c = _fast_decode(cls, version)
    if c is None:
        request = cls.decode(frame, version=version, header=True)
        check = null_check(cls, request.API_VERSION)
        if check is not None:
            check(request)
        return request
    view = memoryview(frame)
    header, pos = c.header_decode(view, 0)
    if pos > len(view):
        raise ValueError("request header longer than the request")
    request, _ = c.body_decode(view, pos)
    if c.null_check is not None:
        c.null_check(request)
    request._header = header
    return request


def encode_response(message: ApiMessage, correlation_id: int) -> bytes | bytearray:
    """``message.with_header(correlation_id=...)`` then ``message.encode(header=True,
    framed=True)``, through the compiled codecs of its class and version. (The response header
    is written as bytes, not kept on the message: nothing reads an answer's header back.)"""
    cls = type(message)
    version = message._version
    try:
        c = _FAST_ENCODE[(cls, version)]
    except KeyError:
        c = _fast_encode(cls, version)
    if c is None:
        message.with_header(correlation_id=correlation_id)
        encoded: bytes | bytearray = message.encode(header=True, framed=True)
        return encoded
    out = _buffer()
    if c.header_bytes:
        if c.flexible:
            out.buf[8] = 0
            out.pos = 9
        else:
            out.pos = 8
        c.body_encode(message, out)
        _SIZE_AND_ID.pack_into(out.buf, 0, out.pos - 4, correlation_id)
    else:
        message._header = build(ResponseHeader, None, {"correlation_id": correlation_id})
        out.pos = 4   # the frame size, written last
        c.header_encode(message._header, out)
        c.body_encode(message, out)
        _SIZE.pack_into(out.buf, 0, out.pos - 4)
    frame: bytes | bytearray = out.result()
    return frame


__all__ = ["REQUESTS", "RESPONSES", "decode_request", "encode_response"]
