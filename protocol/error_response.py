"""An error answer to any request, built from the request's own shape (Kafka's
``AbstractRequest.getErrorResponse``, generically).

Kafka writes ``getErrorResponse`` by hand for every API; here the response schema is walked
alongside the decoded request instead: every error-code field gets the error, every array of
the response that answers an array of the request (same name, or the request's array in the
same position when the answer's items carry an error code) gets one item per request item
with its keys (topic name or id, partition index, group id, …) copied, and everything else
keeps its schema default. Used by fault injection (broker/network/faults.py) to answer "as if the
broker had failed it", nothing applied.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage

# a response key filled from a request field of another name
_ALIASES: dict[str, tuple[str, ...]] = {
    "partition_index": ("partition_index", "partition", "index"),
    "index": ("index", "partition", "partition_index"),
    "partition": ("partition", "partition_index", "index"),
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
}


def is_error_field(name: str) -> bool:
    return name == "error_code" or name.endswith("_error_code")


def _fields(struct: Any, version: int) -> list[Any]:
    return [f for f in struct.fields.values() if f.for_version_q(version) and not f.tagged_field_q(version)]


def _has_error_field(struct: Any, version: int) -> bool:
    for f in _fields(struct, version):
        if is_error_field(f.name) or (f.is_struct_array() and _has_error_field(f, version)):
            return True
    return False


def _request_arrays(req_struct: Any, version: int) -> list[Any]:
    return [f for f in _fields(req_struct, version) if f.is_array()]


def _fill(resp_struct: Any, req_struct: Any | None, req: Any, version: int, code: int,
          message: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {}
    req_arrays = _request_arrays(req_struct, version) if req_struct is not None else []
    paired: set[str] = set()
    resp_fields = _fields(resp_struct, version)
    resp_arrays = [f for f in resp_fields if f.is_struct_array()]
    pairs: dict[str, Any] = {}
    by_name = {f.name: f for f in req_arrays}
    for f in resp_arrays:                      # same name first
        if f.name in by_name:
            pairs[f.name] = by_name[f.name]
            paired.add(f.name)
    spare = [f for f in req_arrays if f.name not in paired]
    for f in resp_arrays:                      # then by position, for answers that carry errors
        if f.name not in pairs and spare and _has_error_field(f, version):
            pairs[f.name] = spare.pop(0)
    for f in resp_fields:
        name = f.name
        if is_error_field(name):
            values[name] = code
        elif name == "error_message" and message is not None:
            values[name] = message
        elif name == "records":            # Kafka answers errors with empty records, never null
            values[name] = b""               # (librdkafka cannot parse null records in Fetch v16)
        elif f.is_struct_array():
            rf = pairs.get(name)
            items = getattr(req, rf.name, None) if rf is not None and req is not None else None
            values[name] = [_item(f, rf, item, version, code, message) for item in (items or [])]
        elif f.is_array():
            continue
        elif req is not None and not f.is_struct():
            for alias in _ALIASES.get(name, (name,)):
                if req_struct is not None and alias in req_struct.fields and \
                        req_struct.fields[alias].for_version_q(version) and not req_struct.fields[alias].is_array():
                    values[name] = getattr(req, alias)
                    break
    return values


def _item(resp_field: Any, req_field: Any, item: Any, version: int, code: int, message: str | None) -> Any:
    if req_field.is_struct_array():
        values = _fill(resp_field, req_field, item, version, code, message)
    else:                                      # an array of keys (partition ids, group ids)
        values = _fill(resp_field, None, None, version, code, message)
        key = next((f.name for f in _fields(resp_field, version)
                    if not is_error_field(f.name) and not f.is_array() and not f.is_struct()), None)
        if key is not None:
            values[key] = item
    return resp_field.data_class(version=version, **values)


def error_response(response_cls: type[ApiMessage], request: ApiMessage, version: int, code: int,
                   message: str | None = None) -> ApiMessage:
    """The answer to ``request`` (of ``version``) with ``code`` in every error field."""
    values = _fill(response_cls._struct, type(request)._struct, request, version, code, message)
    return response_cls(version=version, **values)
