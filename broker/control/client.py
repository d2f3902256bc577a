"""What a test holds to make a broker misbehave: ``.faults`` and ``.clock``.

The same objects serve a broker in a child process or started elsewhere (through its HTTP
control endpoint, :class:`SamsaControl`) and a broker running in a thread of the test process
(calls run on its trio thread): both hand operations to broker/control/endpoint.py, so arguments, answers
and errors (ValueError for bad input) are the same.
"""
from __future__ import annotations

import time
from typing import Any
from collections.abc import Callable

Call = Callable[[str, dict[str, Any]], Any]


class FaultHandle:
    """An armed fault; ``release()`` lets the requests a ``hold`` keeps go on."""

    def __init__(self, call: Call, described: dict[str, Any]) -> None:
        self._call = call
        self.id: int = described["id"]
        self.kind: str = described["kind"]
        self.api: str = described["api"]

    def release(self) -> bool:
        return bool(self._call("release", {"id": self.id})["released"])

    def __repr__(self) -> str:
        return f"<fault {self.id}: {self.kind} {self.api}>"


class Faults:
    """``fail``/``delay``/``drop``/``hold`` the next matching requests (by Kafka API name, and
    optionally ``topic``, ``group``, ``client_id``); ``clear()``; ``log()``."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def _arm(self, kind: str, args: dict[str, Any]) -> FaultHandle:
        return FaultHandle(self._call, self._call(kind, {k: v for k, v in args.items() if v is not None or k == "count"}))

    def fail(self, api: str, error: str, count: int | None = 1, *, topic: str | None = None,
             group: str | None = None, client_id: str | None = None) -> FaultHandle:
        """Answer the next ``count`` matching requests with Kafka error ``error`` in every item,
        applying nothing."""
        return self._arm("fail", dict(api=api, error=error, count=count, topic=topic, group=group, client_id=client_id))

    def delay(self, api: str, ms: int, count: int | None = None, *, topic: str | None = None,
              group: str | None = None, client_id: str | None = None) -> FaultHandle:
        """Answer matching requests ``ms`` later (a connection's answers stay in order)."""
        return self._arm("delay", dict(api=api, ms=ms, count=count, topic=topic, group=group, client_id=client_id))

    def drop(self, api: str, count: int | None = 1, *, topic: str | None = None, group: str | None = None,
             client_id: str | None = None) -> FaultHandle:
        """Close the connection instead of answering the next ``count`` matching requests."""
        return self._arm("drop", dict(api=api, count=count, topic=topic, group=group, client_id=client_id))

    def hold(self, api: str, count: int | None = None, *, topic: str | None = None, group: str | None = None,
             client_id: str | None = None) -> FaultHandle:
        """Matching requests wait until ``handle.release()`` (or ``clear()``)."""
        return self._arm("hold", dict(api=api, count=count, topic=topic, group=group, client_id=client_id))

    def clear(self) -> int:
        """Disarm every fault and release held requests; returns how many were armed."""
        return int(self._call("clear", {})["cleared"])

    def armed(self) -> list[dict[str, Any]]:
        return list(self._call("faults", {}))

    def log(self) -> list[dict[str, Any]]:
        """The faults that fired: fault id, kind, api, api_version, correlation_id, client_id,
        topics, groups, at_ms (broker clock)."""
        return list(self._call("log", {}))


class BrokerClock:
    """The broker's clock: ``advance(ms)`` makes timeouts, retention and delayed deletes fire
    as if ``ms`` had passed."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def advance(self, ms: int) -> int:
        """Jump ``ms`` forward; returns the broker's new time (ms since the epoch)."""
        return int(self._call("advance", {"ms": ms})["now_ms"])

    def now_ms(self) -> int:
        return int(self._call("now", {})["now_ms"])


class ControlUnavailable(RuntimeError):
    """The broker has no control endpoint (``samsa.control.listener`` not set)."""


def http_call(url: str, timeout: float = 30.0, connect_wait: float = 5.0) -> Call:
    """A transport to a broker's control endpoint at ``url`` (``http://127.0.0.1:PORT``)."""
    import httpx

    from broker.control.endpoint import ROUTES

    client = httpx.Client(base_url=url.rstrip("/"), timeout=timeout)

    def call(op: str, args: dict[str, Any]) -> Any:
        method, path = ROUTES[op]
        args = dict(args)
        if "{id}" in path:
            path = path.replace("{id}", str(args.pop("id")))
        deadline = time.monotonic() + connect_wait
        while True:
            try:
                resp = client.request(method, path, json=args if method == "POST" else None)
                break
            except httpx.ConnectError as exc:
                if time.monotonic() >= deadline:   # the endpoint starts just after the Kafka listener
                    raise ControlUnavailable(
                        f"no Samsa control endpoint at {url} ({exc}); faults and the clock need the broker "
                        "started with samsa.control.listener=http://127.0.0.1:PORT") from None
                time.sleep(0.02)
            except httpx.TransportError as exc:   # something else listens there
                raise ControlUnavailable(f"no Samsa control endpoint at {url}: {exc!r}") from None
        if resp.status_code == 400:
            raise ValueError(resp.json().get("error", resp.text))
        if resp.status_code != 200:
            raise ControlUnavailable(f"{url} answered {resp.status_code} to {method} {path}: is it a Samsa "
                                     f"control endpoint? {resp.text[:200]}")
        return resp.json()

    call.close = client.close  # type: ignore[attr-defined]
    return call


class SamsaControl:
    """Faults and clock of a broker started elsewhere, through its control endpoint:
    ``SamsaControl("http://127.0.0.1:8091").faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER")``."""

    def __init__(self, url: str, timeout: float = 30.0, connect_wait: float = 1.0) -> None:
        self.url = url
        self._call = http_call(url, timeout, connect_wait)
        self.faults = Faults(self._call)
        self.clock = BrokerClock(self._call)

    def close(self) -> None:
        self._call.close()  # type: ignore[attr-defined]

    def __enter__(self) -> SamsaControl:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def refused(reason: str) -> Call:
    """A transport that refuses every operation with ``reason`` (a broker without the endpoint)."""
    def call(op: str, args: dict[str, Any]) -> Any:
        raise ControlUnavailable(reason)
    return call
