"""The ACL authorizer: Kafka's StandardAuthorizer semantics over the ACLs of the metadata image
(``MetadataImage.acls``: AccessControlEntryRecord by id, replayed from the metadata log).

A request is allowed for a super user; otherwise the ACLs whose resource pattern matches
(literal name, the literal wildcard ``*``, or a prefix) and whose principal (or ``User:*``)
and host (or ``*``) match decide: any DENY wins, then any ALLOW; READ, WRITE, DELETE and ALTER
allow imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS (for ALLOW ACLs only). With no ACL
at all on the resource, ``allow.everyone.if.no.acl.found`` decides.
"""
from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable, Mapping

if TYPE_CHECKING:
    from coordinator.metadata.records import AccessControlEntryRecord as AclBinding

Acls = Mapping[str, "AclBinding"]   # the image's ACLs by id


def __getattr__(name: str) -> Any:
    """``AclBinding`` (the metadata record an ACL is) imported on first use: the request path
    imports this module for its enums, and a broker without an authorizer never needs the
    metadata records module (start-up speed, issue 23)."""
    if name == "AclBinding":
        from coordinator.metadata.records import AccessControlEntryRecord
        return AccessControlEntryRecord
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# the ZooKeeper-era name, still found in many server.properties files
LEGACY_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME = "kafka-cluster"
_IMPLIES_DESCRIBE = frozenset((Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE,
                               Operation.ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS))
# the operations each resource type supports (Kafka's AclEntry.supportedOperations)
TOPIC_OPERATIONS = (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DESCRIBE, Operation.DELETE,
                    Operation.ALTER, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS)
CLUSTER_OPERATIONS = (Operation.CREATE, Operation.CLUSTER_ACTION, Operation.DESCRIBE_CONFIGS,
                      Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE, Operation.ALTER, Operation.DESCRIBE)
GROUP_OPERATIONS = (Operation.READ, Operation.DESCRIBE, Operation.DELETE)


def _acl_grants(acl: AclBinding, op: int) -> bool:
    """Whether an ACL's operation covers ``op`` (Kafka's findResult)."""
    if acl.operation == Operation.ALL:
        return True
    if acl.permission_type == Permission.ALLOW:
        if op == Operation.DESCRIBE:
            return acl.operation in _IMPLIES_DESCRIBE
        if op == Operation.DESCRIBE_CONFIGS:
            return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return acl.operation == op


def _pattern_matches(acl: AclBinding, rtype: int, name: str) -> bool:
    if acl.resource_type != rtype:
        return False
    if acl.pattern_type == PatternType.LITERAL:
        return acl.resource_name == name or acl.resource_name == WILDCARD
    if acl.pattern_type == PatternType.PREFIXED:
        return name.startswith(acl.resource_name)
    return False


class _Index:
    """The ACLs of one image by resource type: literal ones by name, prefixed ones in a list,
    so a check reads only the ACLs that can match (Kafka keeps a sorted map for the same end)."""

    def __init__(self, image: Acls) -> None:
        self.image = image
        self.literal: dict[tuple[int, str], list[AclBinding]] = {}
        self.prefixed: dict[int, list[AclBinding]] = {}
        for acl in image.values():
            if acl.pattern_type == PatternType.PREFIXED:
                self.prefixed.setdefault(acl.resource_type, []).append(acl)
            else:
                self.literal.setdefault((acl.resource_type, acl.resource_name), []).append(acl)

    def matching(self, rtype: int, name: str) -> list[AclBinding]:
        out = list(self.literal.get((rtype, name), ()))
        if name != WILDCARD:
            out += self.literal.get((rtype, WILDCARD), ())
        out += [a for a in self.prefixed.get(rtype, ()) if name.startswith(a.resource_name)]
        return out


class Authorizer:
    """Decisions read the metadata store's current image (``acls()`` returns its ACLs), so a
    CreateAcls, through this broker or any other of the cluster, is visible to the next request
    once applied; the index is rebuilt only when the image's ACL map changed."""

    def __init__(self, acls: Callable[[], Acls], super_users: Iterable[str],
                 allow_if_no_acl: bool) -> None:
        self._image = acls
        self._index: _Index | None = None
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl

    def _current(self) -> _Index:
        image = self._image()
        if self._index is None or self._index.image is not image:
            self._index = _Index(image)
        return self._index

    def authorize(self, principal: str, host: str, op: int, rtype: int, name: str) -> bool:
        if principal in self.super_users:
            return True
        acls = self._current().matching(rtype, name)
        allow = False
        for acl in acls:
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD and acl.host != host:
                continue
            if not _acl_grants(acl, op):
                continue
            if acl.permission_type == Permission.DENY:
                return False
            allow = True
        if allow:
            return True
        return self.allow_if_no_acl and not acls

    def authorized_operations(self, principal: str, host: str, rtype: int, name: str,
                              ops: Iterable[int]) -> set[int]:
        """KIP-430's authorized operations (kafka-python encodes the set as Kafka's bit field)."""
        return {int(op) for op in ops if self.authorize(principal, host, op, rtype, name)}

    def authorize_any(self, principal: str, host: str, op: int, rtype: int) -> bool:
        """Kafka's authorizeByResourceType: is ``op`` allowed on at least one resource of the
        type (used where KIP-679 lets WRITE on any topic stand for IDEMPOTENT_WRITE)."""
        if principal in self.super_users:
            return True
        acls = [a for a in self._image().values() if a.resource_type == rtype
                and (a.principal == principal or a.principal == WILDCARD_PRINCIPAL)
                and (a.host == WILDCARD or a.host == host) and _acl_grants(a, op)]
        denied_all = any(a.permission_type == Permission.DENY and a.pattern_type == PatternType.LITERAL
                         and a.resource_name == WILDCARD for a in acls)
        if denied_all:
            return False
        if any(a.permission_type == Permission.ALLOW for a in acls):
            return True
        return self.allow_if_no_acl and not any(a.resource_type == rtype for a in self._image().values())


def acl_filter_matches(acl: AclBinding, rtype: int, name: str | None, pattern: int, principal: str | None,
                       host: str | None, op: int, permission: int) -> bool:
    """Kafka's AclBindingFilter.matches, for DescribeAcls and DeleteAcls."""
    if rtype != ResourceType.ANY and acl.resource_type != rtype:
        return False
    if pattern == PatternType.MATCH:
        if name is not None and not (acl.resource_name == name or acl.resource_name == WILDCARD and
                                     acl.pattern_type == PatternType.LITERAL or
                                     acl.pattern_type == PatternType.PREFIXED and name.startswith(acl.resource_name)):
            return False
    else:
        if pattern != PatternType.ANY and acl.pattern_type != pattern:
            return False
        if name is not None and acl.resource_name != name:
            return False
    if principal is not None and acl.principal != principal:
        return False
    if host is not None and acl.host != host:
        return False
    if op != Operation.ANY and acl.operation != op:
        return False
    if permission != Permission.ANY and acl.permission_type != permission:
        return False
    return True


def parse_super_users(value: str | None) -> list[str]:
    """``super.users`` is separated by semicolons (principals may contain commas)."""
    return [p.strip() for p in (value or "").split(";") if p.strip()]
