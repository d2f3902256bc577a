"""Message objects built from a plan made once per class and version.

kafka-python's ``DataContainer.__init__`` walks every field of the struct for each object it
builds, asking each whether it is tagged and whether it exists at the version, and reads each
default through a property: ~3 µs for a two-field partition entry here, and a small answer
builds several (the response, a topic, a partition, the header). ``build`` does the same from
a plan made once per (class, version) — the in-version fields with their defaults (kafka-python's
own default objects, shared as kafka-python shares them), the tagged names — and gives the class
itself anything the plan does not cover (unknown or underscore-prefixed names, a version out of
range, a version-pinned class, ``min_version``/``max_version``), so errors and edge cases stay
kafka-python's. The object is the same: every slot holds what ``cls(version=..., **fields)``
would put there (tests/unit/test_message_build.py)."""
from __future__ import annotations

from typing import Any, NamedTuple

from kafka.protocol.api_message import ApiMessage


class _Plan(NamedTuple):
    names: frozenset[str]                  # every field of the struct
    tagged: frozenset[str]
    defaults: tuple[tuple[str, Any], ...]  # in-version fields and their defaults
    in_version: frozenset[str]
    message: bool                          # an ApiMessage (its own slots to set)


_PLANS: dict[tuple[type, int | None], _Plan | None] = {}


def _plan(cls: type, version: int | None) -> _Plan | None:
    struct = cls._struct  # type: ignore[attr-defined]
    message = issubclass(cls, ApiMessage)
    if struct is None or (message and cls._class_version is not None):  # type: ignore[attr-defined]
        return None
    if version is not None and not struct.min_version <= version <= struct.max_version:
        return None
    fields = struct._fields
    defaults = tuple((f.name, f.default) for f in fields if version is not None and f.for_version_q(version))
    return _Plan(frozenset(f.name for f in fields), frozenset(f.name for f in fields if f._tag is not None),
                 defaults, frozenset(n for n, _ in defaults), message)


def build(cls: type, version: int | None, fields: dict[str, Any]) -> Any:
    """``cls(version=version, **fields)`` for a kafka-python message or nested struct class."""
    key = (cls, version)
    try:
        plan = _PLANS[key]
    except KeyError:
        plan = _PLANS[key] = _plan(cls, version)
    if plan is None or not plan.names.issuperset(fields):
        return cls(version=version, **fields)
    obj: Any = object.__new__(cls)
    obj._version = version
    obj.unknown_tags = None
    tags = plan.tagged.intersection(fields) if plan.tagged else None
    obj.tags = set(tags) if tags else None
    for name, default in plan.defaults:
        setattr(obj, name, fields[name] if name in fields else default)
    if not plan.in_version.issuperset(fields):
        for name in fields.keys() - plan.in_version:
            setattr(obj, name, fields[name])
    if plan.message:
        obj._header = obj._min_version = obj._max_version = None
    return obj
