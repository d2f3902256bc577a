"""Refuse a decoded request that carries a null where its schema, at its version, allows none.

kafka-python's decoders read a length of -1 (or a compact length of 0) as ``None`` for every
string, bytes, records and array field, nullable or not; Kafka's generated readers instead throw
``non-nullable field X was serialized as null`` and the broker closes the connection. Without this
check such a request reaches its handler, which fails with ``TypeError: 'NoneType' object is not
iterable`` deep inside, logged as a broker error. With it, decoding fails where it happens, with
the field's name, and dispatch closes the connection as for any undecodable request.

What to check comes from the schema kafka-python's message classes carry (``cls._struct``: the
fields of Kafka's JSON definition with their ``versions``, ``nullableVersions`` and tags), never a
hand-kept list. For each (message class, version) the check is compiled once into a flat Python
function, the way kafka-python compiles its decoders: a chain of ``is None`` tests and loops over
just the arrays whose elements hold something to test, so a request costs a few attribute reads
(see ``null_check``). A version with nothing to test has no check at all.

What may be null after decoding, and so is tested where the version does not allow it:
- ``string``, ``bytes`` and ``records`` fields, and arrays (of structs or of simple values);
- the elements of an array of strings or bytes (Kafka's array elements are never nullable);
- a struct field only when the version makes it nullable (otherwise there is no null marker on
  the wire, so the decoder always builds it), and then only its contents are tested.
A tagged field is tested only when the request carried its tag: an absent tagged field takes its
schema default, which may be null.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.schemas.fields.base import BaseField

NullCheck = Callable[[Any], None]
"""Runs on a decoded message (a kafka-python data class, whose attributes are built at run time
from the schema, hence ``Any``); raises ``MalformedRequest`` or returns None."""

_NULLABLE_SIMPLE_TYPES = frozenset({"string", "bytes", "records"})


class MalformedRequest(ValueError):
    """A request that decodes but breaks its schema: a null in a field its version does not allow
    to be null. A ValueError like kafka-python's own decode failures, so the network layer treats
    it the same way (Kafka closes the connection on a request it cannot read)."""


class _Emitter:
    """Source lines of one check function, with fresh local names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.labels: list[str] = []
        self._n = 0

    def var(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def refuse(self, depth: int, label: str) -> None:
        self.labels.append(label)
        self.emit(depth, f"raise _refuse({len(self.labels) - 1})")


def _struct_fields(struct: BaseField) -> list[BaseField]:
    fields: tuple[BaseField, ...] | None = struct._fields
    return list(fields or ())


def _emit_struct(out: _Emitter, struct: BaseField, version: int, obj: str, path: str, depth: int) -> bool:
    """Emit the tests for the fields of ``struct`` held in local ``obj``; False when none apply."""
    start = len(out.lines)
    for field in _struct_fields(struct):
        if not field.for_version_q(version):
            continue
        _emit_field(out, field, version, obj, path + field._name, depth)
    return len(out.lines) > start


def _may_be_null(field: BaseField) -> bool:
    """The decoder can produce None for this field (given it is not a nullable struct)."""
    return field.is_array() or (not field.is_struct() and field.type_str in _NULLABLE_SIMPLE_TYPES)


def _emit_field(out: _Emitter, field: BaseField, version: int, obj: str, label: str, depth: int) -> None:
    nullable = field.nullable_for_version_q(version)
    tagged = field.tagged_field_q(version)
    value = out.var("v")
    mark = len(out.lines)
    out.emit(depth, f"{value} = {obj}.{field.name}")
    tests_start = len(out.lines)
    if _may_be_null(field) and not nullable:
        if tagged:
            out.emit(depth, f"if {value} is None and {obj}.tags is not None and {field.name!r} in {obj}.tags:")
        else:
            out.emit(depth, f"if {value} is None:")
        out.refuse(depth + 1, label)
    # The contents, tested only when present: a nullable value, or an absent tagged one, may be None.
    contents_start = len(out.lines)
    inner = depth
    if nullable or tagged:
        out.emit(depth, f"if {value} is not None:")
        inner = depth + 1
    guard_end = len(out.lines)
    if field.is_struct_array():
        item = out.var("i")
        out.emit(inner, f"for {item} in {value}:")
        _emit_struct(out, field.array_of, version, item, label + "[].", inner + 1)
        if len(out.lines) == guard_end + 1:
            del out.lines[guard_end:]
    elif field.is_array():
        if field.array_of.type_str in _NULLABLE_SIMPLE_TYPES:
            out.emit(inner, f"if None in {value}:")
            out.refuse(inner + 1, label + "[]")
    elif field.is_struct():
        _emit_struct(out, field, version, value, label + ".", inner)
    if len(out.lines) == guard_end:
        del out.lines[contents_start:]  # nothing inside to test: drop the guard
    if len(out.lines) == tests_start:
        del out.lines[mark:]  # nothing to test at all: not even the attribute read


def compile_null_check(cls: Any, version: int) -> NullCheck | None:
    """The check for messages of ``cls`` (a kafka-python ``ApiMessage`` class) at ``version``,
    or None when that version has no field a decoder could leave null against its schema."""
    out = _Emitter()
    out.emit(0, "def _check(obj):")
    if not _emit_struct(out, cls._struct, version, "obj", "", 1):
        return None
    name = f"{cls.__name__} v{version}"
    labels = tuple(out.labels)

    def refuse(i: int) -> MalformedRequest:
        return MalformedRequest(f"{name}: non-nullable field {labels[i]} is null")

    namespace: dict[str, Any] = {"_refuse": refuse}
    exec(compile("\n".join(out.lines), f"<null_check:{name}>", "exec"), namespace)
    check: NullCheck = namespace["_check"]
    check.__doc__ = "\n".join(out.lines)  # the generated source, for reading in a debugger
    return check


_CHECKS: dict[tuple[type, int], NullCheck | None] = {}


def null_check(cls: Any, version: int) -> NullCheck | None:
    """``compile_null_check`` once per (class, version)."""
    key = (cls, version)
    try:
        return _CHECKS[key]
    except KeyError:
        check = _CHECKS[key] = compile_null_check(cls, version)
        return check


__all__ = ["MalformedRequest", "NullCheck", "compile_null_check", "null_check"]
