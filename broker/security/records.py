"""Security metadata as Kafka's KRaft keeps it: records (AccessControlEntryRecord,
RemoveAccessControlEntryRecord, UserScramCredentialRecord, RemoveUserScramCredentialRecord)
replayed into an immutable image.

Until the cluster metadata log exists, the records live in an append-only file of JSON lines
(``<log.dirs>/__security_metadata.jsonl``), fsynced before an answer is released and replayed at
start-up. ``SecurityImage`` and ``replay`` do not know about the file, so they can move onto
the metadata log unchanged.
"""
from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping

import structlog

log = structlog.get_logger("samsa.security")

FILE_NAME = "__security_metadata.jsonl"


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL, in Kafka's numeric enums (resource type, pattern type, operation, permission)."""
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class ScramCredential:
    mechanism: int          # 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512 (Kafka's ScramMechanism ids)
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True)
class SecurityImage:
    """ACLs by id and SCRAM credentials by (user, mechanism); never mutated."""
    acls: Mapping[str, AclBinding] = field(default_factory=lambda: MappingProxyType({}))
    scram: Mapping[tuple[str, int], ScramCredential] = field(default_factory=lambda: MappingProxyType({}))


def _b(data: str) -> bytes:
    return base64.b64decode(data)


def replay(image: SecurityImage, record: Mapping[str, Any]) -> SecurityImage:
    """The image after one record; unknown record types are ignored (newer writers)."""
    kind = record.get("type")
    if kind == "AccessControlEntryRecord":
        acls = dict(image.acls)
        acls[record["id"]] = AclBinding(record["resourceType"], record["resourceName"], record["patternType"],
                                        record["principal"], record["host"], record["operation"],
                                        record["permissionType"])
        return replace(image, acls=MappingProxyType(acls))
    if kind == "RemoveAccessControlEntryRecord":
        acls = dict(image.acls)
        acls.pop(record["id"], None)
        return replace(image, acls=MappingProxyType(acls))
    if kind == "UserScramCredentialRecord":
        scram = dict(image.scram)
        scram[(record["name"], record["mechanism"])] = ScramCredential(
            record["mechanism"], _b(record["salt"]), _b(record["storedKey"]), _b(record["serverKey"]),
            record["iterations"])
        return replace(image, scram=MappingProxyType(scram))
    if kind == "RemoveUserScramCredentialRecord":
        scram = dict(image.scram)
        scram.pop((record["name"], record["mechanism"]), None)
        return replace(image, scram=MappingProxyType(scram))
    return image


def acl_record(acl_id: str, acl: AclBinding) -> dict[str, Any]:
    return {"type": "AccessControlEntryRecord", "id": acl_id, "resourceType": acl.resource_type,
            "resourceName": acl.resource_name, "patternType": acl.pattern_type, "principal": acl.principal,
            "host": acl.host, "operation": acl.operation, "permissionType": acl.permission_type}


def scram_record(name: str, cred: ScramCredential) -> dict[str, Any]:
    enc = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return {"type": "UserScramCredentialRecord", "name": name, "mechanism": cred.mechanism,
            "salt": enc(cred.salt), "storedKey": enc(cred.stored_key), "serverKey": enc(cred.server_key),
            "iterations": cred.iterations}


class SecurityStore:
    """The record file and the current image. ``append`` writes and fsyncs records, then
    replays them: callers answer only after it returns."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, FILE_NAME)
        self.image = SecurityImage()

    def load(self) -> None:
        image = SecurityImage()
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break   # a torn last line from a crash: the answer was never released
            try:
                image = replay(image, json.loads(line))
            except (ValueError, KeyError, TypeError):
                log.warning("skipping an unreadable security record", file=self.path)
            good += len(line)
        if good != len(data):
            with open(self.path, "r+b") as f:
                f.truncate(good)
        self.image = image

    def append(self, records: Iterable[Mapping[str, Any]]) -> None:
        records = list(records)
        if not records:
            return
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path, "ab") as f:
            for r in records:
                f.write(json.dumps(r, separators=(",", ":")).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
        image = self.image
        for r in records:
            image = replay(image, r)
        self.image = image
