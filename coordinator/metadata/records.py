"""Cluster metadata records: Kafka's metadata log records, as Python dataclasses.

Why records: like Kafka's KRaft ``__cluster_metadata`` log, every metadata change is a record;
every broker replays the same records in the same order (etcd's revision order in a cluster, the
file order on a single node) into the same immutable ``MetadataImage``
(coordinator/metadata/image.py). Nothing here does IO.

Names: the classes carry the names of Kafka's record JSONs
(metadata/src/main/resources/common/metadata/*.json) and their fields are Kafka's field names in
snake_case, as kafka-python spells message fields (``BrokerId`` -> ``broker_id``). Samsa is not
wire-compatible with KRaft's log: records are stored as JSON objects
``{"type": "<RecordName>", <fields>}`` (``encode_record``/``decode_record``); uuids are strings,
bytes are base64, arrays are lists.

Semantics kept from Kafka (PartitionRegistration.merge, ClusterControlManager):
- ``PartitionRecord`` creates a partition (leader epoch 0, partition epoch 0 when the
  controller creates it).
- ``PartitionChangeRecord``: ``leader == NO_LEADER_CHANGE (-2)`` keeps the leader and its epoch;
  any other value (also the same leader again, or ``NO_LEADER (-1)``) sets it and bumps the
  leader epoch. ``isr``/``replicas`` ``None`` mean unchanged. Every change bumps the partition
  epoch by one.
- ``RegisterBrokerRecord`` (re)registers a broker with a new ``broker_epoch`` and
  ``incarnation_id``; ``FenceBrokerRecord``/``UnfenceBrokerRecord`` flip ``fenced``;
  ``BrokerRegistrationChangeRecord`` sets ``fenced``/``in_controlled_shutdown`` (None = unchanged);
  ``UnregisterBrokerRecord`` forgets the broker.
- ``ConfigRecord`` with ``value is None`` deletes the config (resource types: Kafka's
  ConfigResource.Type, TOPIC = 2, BROKER = 4).
- ``ProducerIdsRecord.next_producer_id`` is the first id after the block just handed out.
- ``AccessControlEntryRecord``/``RemoveAccessControlEntryRecord`` add/remove an ACL by id; codes
  are Kafka's (ResourceType, PatternType, AclOperation, AclPermissionType).
- ``UserScramCredentialRecord``/``RemoveUserScramCredentialRecord`` per (user, mechanism);
  mechanism 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512.
"""
from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Union

NO_LEADER = -1
NO_LEADER_CHANGE = -2

# ConfigResource.Type codes (as in DescribeConfigs)
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    name: str                 # listener name, e.g. PLAINTEXT
    host: str
    port: int
    security_protocol: int = 0  # Kafka's SecurityProtocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    end_points: tuple[BrokerEndpoint, ...]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: str


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    topic_id: str


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    partition_id: int
    topic_id: str
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    partition_id: int
    topic_id: str
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    id: str
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    def binding(self) -> tuple[int, str, int, str, str, int, int]:
        """The ACL without its id: what makes two ACLs the same (Kafka's AclBinding), so
        creating an existing ACL again adds nothing."""
        return (self.resource_type, self.resource_name, self.pattern_type, self.principal, self.host,
                self.operation, self.permission_type)


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    id: str


@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    name: str
    mechanism: int


MetadataRecord = Union[  # noqa: UP007  (read at run time: RECORD_TYPES below lists its __args__)
    RegisterBrokerRecord, UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord,
    BrokerRegistrationChangeRecord, TopicRecord, RemoveTopicRecord, PartitionRecord,
    PartitionChangeRecord, ConfigRecord, ProducerIdsRecord, AccessControlEntryRecord,
    RemoveAccessControlEntryRecord, UserScramCredentialRecord, RemoveUserScramCredentialRecord,
]

RECORD_TYPES: dict[str, type] = {cls.__name__: cls for cls in MetadataRecord.__args__}  # type: ignore[attr-defined]


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode("ascii")}
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def record_to_dict(record: MetadataRecord) -> dict[str, Any]:
    out = {"type": type(record).__name__}
    out.update(_plain(record))
    return out


def record_from_dict(data: dict[str, Any]) -> MetadataRecord:
    data = dict(data)
    cls = RECORD_TYPES.get(data.pop("type", None))
    if cls is None:
        raise ValueError(f"unknown metadata record type in {data!r}")
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            continue  # a field added later: the dataclass default applies
        v = data[f.name]
        if isinstance(v, dict) and "b64" in v:
            v = base64.b64decode(v["b64"])
        elif f.name == "end_points":
            v = tuple(BrokerEndpoint(**e) for e in v)
        elif isinstance(v, list):
            v = tuple(v)
        kwargs[f.name] = v
    record: MetadataRecord = cls(**kwargs)
    return record


def encode_record(record: MetadataRecord) -> bytes:
    return json.dumps(record_to_dict(record), separators=(",", ":")).encode()


def decode_record(raw: bytes | str) -> MetadataRecord:
    return record_from_dict(json.loads(raw))


def encode_batch(records: list[MetadataRecord] | tuple[MetadataRecord, ...]) -> bytes:
    """A batch is applied atomically (as a KRaft record batch): one JSON list."""
    return json.dumps([record_to_dict(r) for r in records], separators=(",", ":")).encode()


def decode_batch(raw: bytes | str) -> list[MetadataRecord]:
    return [record_from_dict(d) for d in json.loads(raw)]


__all__ = [n for n in RECORD_TYPES] + [
    "BrokerEndpoint", "MetadataRecord", "NO_LEADER", "NO_LEADER_CHANGE", "TOPIC_RESOURCE", "BROKER_RESOURCE",
    "encode_record", "decode_record", "encode_batch", "decode_batch", "record_to_dict", "record_from_dict",
]
