"""Migration of ``<log.dirs>/__security_metadata.jsonl``, where earlier Samsa versions kept ACLs
and SCRAM credentials before they became records of the metadata log.

Why migrate (not replay on every start): one metadata log is the only source of ACLs and
credentials, so every broker of a cluster sees the same ones. At start-up the old file, if
present, is read to its final state (creations minus removals; a torn last line, never
answered, is ignored as the old loader did), and what the metadata image lacks is written to the
metadata store once: ACLs whose binding is not there yet (with their old ids), credentials for a
(user, mechanism) that has none (a newer one in the log wins). Then the file is renamed to
``__security_metadata.jsonl.migrated`` (kept, not deleted). A crash between the write and the
rename only repeats the migration, which then writes nothing.
"""
from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import structlog

if TYPE_CHECKING:   # imported when there is a file to migrate: start-up checks only FILE_NAME
    from coordinator.metadata.image import MetadataImage
    from coordinator.metadata.records import MetadataRecord

log = structlog.get_logger("samsa.security")

FILE_NAME = "__security_metadata.jsonl"
MIGRATED_SUFFIX = ".migrated"


def _record(d: dict[str, Any]) -> MetadataRecord | None:
    """One line of the old file (Kafka's JSON field names, bytes in base64) as a metadata record."""
    from coordinator.metadata.records import (AccessControlEntryRecord, RemoveAccessControlEntryRecord,
                                              RemoveUserScramCredentialRecord, UserScramCredentialRecord)
    kind = d.get("type")
    if kind == "AccessControlEntryRecord":
        return AccessControlEntryRecord(str(d["id"]), int(d["resourceType"]), str(d["resourceName"]),
                                        int(d["patternType"]), str(d["principal"]), str(d["host"]),
                                        int(d["operation"]), int(d["permissionType"]))
    if kind == "RemoveAccessControlEntryRecord":
        return RemoveAccessControlEntryRecord(str(d["id"]))
    if kind == "UserScramCredentialRecord":
        b = base64.b64decode
        return UserScramCredentialRecord(str(d["name"]), int(d["mechanism"]), b(d["salt"]), b(d["storedKey"]),
                                         b(d["serverKey"]), int(d["iterations"]))
    if kind == "RemoveUserScramCredentialRecord":
        return RemoveUserScramCredentialRecord(str(d["name"]), int(d["mechanism"]))
    return None


def read_legacy(path: str) -> MetadataImage | None:
    """The old file's final state as an image holding only ACLs and credentials (None: no file)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    records = []
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break   # a torn last line from a crash: its answer was never released
        try:
            r = _record(json.loads(line))
        except (ValueError, KeyError, TypeError):
            log.warning("skipping an unreadable security record", file=path)
            continue
        if r is not None:
            records.append(r)
    from coordinator.metadata.image import MetadataImage, replay_all
    image, _ = replay_all(MetadataImage(), records)
    return image


def missing_records(legacy: MetadataImage, image: MetadataImage) -> list[MetadataRecord]:
    """What of the old file's state the metadata image lacks."""
    from coordinator.metadata.records import AccessControlEntryRecord
    out: list[MetadataRecord] = []
    bindings = {a.binding() for a in image.acls.values()}
    for acl_id, acl in legacy.acls.items():
        if acl.binding() in bindings:
            continue
        bindings.add(acl.binding())
        out.append(acl if acl_id not in image.acls else AccessControlEntryRecord(
            acl_id + "-migrated", *acl.binding()))
    for key, cred in legacy.scram_credentials.items():
        if key not in image.scram_credentials:
            out.append(cred)
    return out


__all__ = ["FILE_NAME", "MIGRATED_SUFFIX", "read_legacy", "missing_records"]
