"""Fault injection: make the broker misbehave on purpose, so a client's retry, rebalance and
timeout paths can be tested deterministically (franz-go's kfake has this; no Kafka does).

A fault matches requests by Kafka's API name and optionally by topic, group and client id
(read from the decoded request), and fires on the next ``count`` of them (None: until
cleared):

- ``fail``: the answer carries the Kafka error in every item it has, and nothing is applied
  (protocol/error_response.py builds it from the request's shape);
- ``delay``: the answer goes out ``ms`` later; requests on the same connection stay in order,
  because a connection answers its requests one after another (server.py), as Kafka does;
- ``drop``: the connection is closed instead of answering;
- ``hold``: the request waits until the fault is released (or the registry cleared).

dispatch.py asks :meth:`FaultRegistry.before` once per request, before the handler, and only
while some fault is armed, so an idle registry costs one attribute read. The registry runs on
the broker's trio thread; the control endpoint (broker/control/endpoint.py) and the in-process fixture
call it there.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

import trio

from protocol.api_keys import ApiKey, api_names
from protocol.error_response import error_response
from protocol.errors import ErrorCode
from protocol.frame import FrameError
from protocol.messages import RESPONSES

from broker.common.connection_close import CloseConnection

if TYPE_CHECKING:
    from broker.common.services import RequestScope

KINDS = ("fail", "delay", "drop", "hold")
MATCH_KEYS = ("topic", "group", "client_id")
LOG_LIMIT = 10_000
PASS = object()  # before(): no fault fired, run the handler


class DroppedByFault(FrameError):
    """A ``drop`` fault fired: the server closes the connection as for a bad request."""


def api_key_of(api: Any) -> int:
    """Kafka's API name (``"Produce"``, ``"JoinGroup"``, …) → its key; a clear error otherwise."""
    names = api_names()
    if isinstance(api, str) and api in names:
        return names[api]
    raise ValueError(f"unknown Kafka API name {api!r}; expected one of: {', '.join(names)}")


def error_code_of(error: Any) -> int:
    """Kafka's error name (``"NOT_LEADER_OR_FOLLOWER"``) → its code; a clear error otherwise."""
    if isinstance(error, str) and error in ErrorCode.__members__ and error != "NONE":
        return int(ErrorCode[error])
    raise ValueError(f"unknown Kafka error name {error!r}; expected a name such as NOT_LEADER_OR_FOLLOWER, "
                     "REQUEST_TIMED_OUT, COORDINATOR_NOT_AVAILABLE (protocol/errors.py lists them)")


def _count(count: Any, allow_none: bool) -> int | None:
    if count is None and allow_none:
        return None
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer{' or None' if allow_none else ''}, got {count!r}")
    return count


def _match(match: dict[str, Any]) -> dict[str, str]:
    unknown = set(match) - set(MATCH_KEYS)
    if unknown:
        raise ValueError(f"unknown match keys {sorted(unknown)}; faults match on {', '.join(MATCH_KEYS)}")
    for key, value in match.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{key} must be a string, got {value!r}")
    return {k: v for k, v in match.items() if v is not None}


@dataclass
class Fault:
    id: int
    kind: str
    api: str
    api_key: int
    remaining: int | None          # None: every matching request until cleared/released
    match: dict[str, str]
    error: str | None = None
    ms: int | None = None
    fired: int = 0
    released: trio.Event = field(default_factory=trio.Event)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "api": self.api, "remaining": self.remaining,
                "fired": self.fired, "error": self.error, "ms": self.ms, **self.match}


@dataclass
class RequestFacts:
    """What faults match on, read from a decoded request."""
    client_id: str
    topics: set[str]
    groups: set[str]


def _is_topic_array(name: str) -> bool:
    return "topic" in name and "forgotten" not in name


def request_facts(ctx: RequestScope, request: Any, topic_name: Callable[[Any], str | None]) -> RequestFacts:
    """Topics (by name, ids resolved with ``topic_name``) and groups a request is about."""
    topics: set[str] = set()
    groups: set[str] = set()
    version = ctx.api_version

    def walk(struct: Any, obj: Any, in_topics: bool) -> None:
        for f in struct.fields.values():
            if not f.for_version_q(version):
                continue
            value = getattr(obj, f.name, None)
            if value is None:
                continue
            if f.name == "group_id" and isinstance(value, str):
                groups.add(value)
            elif in_topics and f.name in ("name", "topic") and isinstance(value, str):
                topics.add(value)
            elif in_topics and f.name == "topic_id":
                resolved = topic_name(value)
                if resolved:
                    topics.add(resolved)
            elif f.is_struct_array():
                for item in value:
                    walk(f, item, _is_topic_array(f.name))
            elif f.is_array() and value and isinstance(value[0], str):
                if _is_topic_array(f.name):
                    topics.update(value)
                elif f.name in ("groups", "groups_names") or (f.name == "coordinator_keys" and obj.key_type == 0):
                    groups.update(value)
            elif f.name == "key" and isinstance(value, str) and getattr(obj, "key_type", 0) == 0:
                groups.add(value)          # FindCoordinator v0-3 for a group

    walk(type(request)._struct, request, False)
    return RequestFacts(ctx.client_id or "", topics, groups)


class FaultRegistry:
    """The broker's armed faults and the log of those that fired."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.fired: list[dict[str, Any]] = []
        self.holds: dict[int, Fault] = {}   # until released, even once their count is used up
        self._ids = itertools.count(1)

    @property
    def armed(self) -> bool:
        return bool(self.faults)

    # -- arming (validated here, so in-process and HTTP callers get the same errors) ---------
    def _add(self, kind: str, api: Any, remaining: int | None, match: dict[str, Any], **extra: Any) -> Fault:
        key = api_key_of(api)
        fault = Fault(next(self._ids), kind, api, key, remaining, _match(match), **extra)
        self.faults.append(fault)
        return fault

    def fail(self, api: str, error: str, count: int | None = 1, **match: Any) -> Fault:
        api_key_of(api)
        error_code_of(error)
        return self._add("fail", api, _count(count, True), match, error=error)

    def delay(self, api: str, ms: int, count: int | None = None, **match: Any) -> Fault:
        if isinstance(ms, bool) or not isinstance(ms, int) or ms < 0:
            raise ValueError(f"ms must be a non-negative integer, got {ms!r}")
        return self._add("delay", api, _count(count, True), match, ms=ms)

    def drop(self, api: str, count: int | None = 1, **match: Any) -> Fault:
        return self._add("drop", api, _count(count, True), match)

    def hold(self, api: str, count: int | None = None, **match: Any) -> Fault:
        fault = self._add("hold", api, _count(count, True), match)
        self.holds[fault.id] = fault
        return fault

    def release(self, fault_id: int) -> bool:
        """Let the requests a hold keeps go on, and stop holding; False if no such hold."""
        fault = self.holds.pop(fault_id, None)
        if fault is None:
            return False
        if fault in self.faults:
            self.faults.remove(fault)
        fault.released.set()
        return True

    def clear(self) -> int:
        """Disarm every fault (held requests go on); returns how many were armed."""
        faults, self.faults = self.faults, []
        for fault in self.holds.values():
            fault.released.set()
        self.holds.clear()
        return len(faults)

    def describe(self) -> list[dict[str, Any]]:
        return [f.describe() for f in self.faults]

    def log(self) -> list[dict[str, Any]]:
        return list(self.fired)

    # -- firing ------------------------------------------------------------------------------
    def _find(self, ctx: RequestScope, request: Any) -> tuple[Fault, RequestFacts] | None:
        facts: RequestFacts | None = None
        for fault in self.faults:
            if fault.api_key != ctx.api_key:
                continue
            if fault.match:
                if facts is None:
                    facts = request_facts(ctx, request, lambda tid: _topic_name(ctx, tid))
                m = fault.match
                if "client_id" in m and m["client_id"] != facts.client_id:
                    continue
                if "topic" in m and m["topic"] not in facts.topics:
                    continue
                if "group" in m and m["group"] not in facts.groups:
                    continue
            if facts is None:
                facts = request_facts(ctx, request, lambda tid: _topic_name(ctx, tid))
            return fault, facts
        return None

    async def before(self, ctx: RequestScope, request: Any) -> Any:
        """Fire the first armed fault matching this request: returns PASS (run the handler),
        or the answer to send instead; raises DroppedByFault, or CloseConnection for a failed acks=0
        Produce."""
        found = self._find(ctx, request)
        if found is None:
            return PASS
        fault, facts = found
        fault.fired += 1
        if fault.remaining is not None:
            fault.remaining -= 1
            if fault.remaining == 0:
                self.faults.remove(fault)      # a hold stays in self.holds until released
        if len(self.fired) < LOG_LIMIT:
            self.fired.append({"fault": fault.id, "kind": fault.kind, "api": fault.api,
                               "api_version": ctx.api_version, "correlation_id": ctx.correlation_id,
                               "client_id": facts.client_id, "topics": sorted(facts.topics),
                               "groups": sorted(facts.groups), "at_ms": ctx.broker.now_ms()})
        if fault.kind == "fail":
            assert fault.error is not None      # fail() requires one
            if ctx.api_key == ApiKey.PRODUCE and getattr(request, "acks", 1) == 0:
                # acks=0 is never answered: a failed one closes the connection, as Kafka does
                # (KafkaApis.handleProduceRequest); the records are not written
                raise CloseConnection(f"acks=0 produce failed with {fault.error} (injected by samsa fault {fault.id})")
            return error_response(RESPONSES[ctx.api_key], request, ctx.api_version, int(ErrorCode[fault.error]),
                                  f"{fault.error} (injected by samsa fault {fault.id})")
        if fault.kind == "drop":
            raise DroppedByFault(f"dropped by fault {fault.id}")
        if fault.kind == "delay":
            assert fault.ms is not None         # delay() requires it
            await trio.sleep(fault.ms / 1000)
        elif fault.kind == "hold":
            await fault.released.wait()
        return PASS


def _topic_name(ctx: RequestScope, topic_id: Any) -> str | None:
    from broker.metadata.topic_catalog import topic_by_id

    topic = topic_by_id(ctx.broker, topic_id)   # the cluster's topics, not only those hosted here
    return topic.name if topic is not None else None
