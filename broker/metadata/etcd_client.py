"""A small etcd v3 client over etcd's JSON gRPC-gateway, with ``httpx`` on trio.

Why this and not a gRPC library: the gateway is part of every etcd v3 server (``/v3/kv/range``,
``/v3/kv/txn``, ``/v3/watch``, ``/v3/lease/*``), speaks plain HTTP/JSON, and ``httpx`` runs on
trio natively (through anyio), so no thread or second event loop is needed; the maintained
Python etcd clients are asyncio- or thread-based. Keys and values travel base64-encoded and
64-bit numbers as strings, as the gateway's JSON mapping has them.

Every call tries the configured endpoints in turn and raises ``MetadataUnavailable`` when none
answers; callers decide whether to wait and retry.

A broker whose etcd link is cut (broker/common/link_cuts.py) gets what a dropped network gives:
a call waits the client's timeout and fails (an answer that arrives while the link is cut is
dropped, though etcd may have applied the request), and an open watch delivers nothing until the
link heals; so its lease expires and the controller fences it.
"""
from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from broker.common.link_cuts import current_links

from .store import MetadataUnavailable


def b64(data: bytes | str) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode("ascii")


def unb64(data: str | None) -> bytes:
    return base64.b64decode(data) if data else b""


def prefix_end(prefix: bytes | str) -> bytes:
    """etcd's range_end for 'every key starting with prefix'."""
    p = bytearray(prefix.encode() if isinstance(prefix, str) else prefix)
    for i in range(len(p) - 1, -1, -1):
        if p[i] < 0xFF:
            p[i] += 1
            return bytes(p[:i + 1])
    return b"\0"


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    lease: int

    @classmethod
    def from_json(cls, kv: dict[str, Any]) -> KeyValue:
        return cls(unb64(kv.get("key")).decode(), unb64(kv.get("value")), int(kv.get("create_revision", 0)),
                   int(kv.get("mod_revision", 0)), int(kv.get("lease", 0)))


# -- txn building blocks (the gateway's JSON for Compare and RequestOp) -----------------------
def cmp_absent(key: str) -> dict[str, Any]:
    return {"key": b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}


def cmp_value(key: str, value: bytes | str) -> dict[str, Any]:
    return {"key": b64(key), "target": "VALUE", "result": "EQUAL", "value": b64(value)}


def op_put(key: str, value: bytes | str, lease: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = {"key": b64(key), "value": b64(value)}
    if lease:
        body["lease"] = str(lease)
    return {"request_put": body}


def op_delete(key: str, prefix: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"key": b64(key)}
    if prefix:
        body["range_end"] = b64(prefix_end(key))
    return {"request_delete_range": body}


def op_range(key: str) -> dict[str, Any]:
    return {"request_range": {"key": b64(key)}}


class EtcdClient:
    def __init__(self, endpoints: Sequence[str], timeout_s: float = 5.0) -> None:
        self.endpoints = [e.strip().rstrip("/") if "://" in e else "http://" + e.strip().rstrip("/")
                          for e in endpoints if e.strip()]
        if not self.endpoints:
            raise ValueError("no etcd endpoints")
        self._client = httpx.AsyncClient(timeout=timeout_s)
        self.timeout_s = timeout_s
        self._current = 0

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _unanswered(self, what: str) -> None:
        """etcd's link is cut: wait the client's timeout (or until the link heals, when the
        request goes on as if its packets had been retransmitted); MetadataUnavailable then."""
        links = current_links()
        if links is None or not links.etcd:
            return
        if not await links.wait_healed(None, self.timeout_s):
            links.lost += 1
            raise MetadataUnavailable(f"etcd unreachable at {self.endpoints}: {what} timed out (the link is cut)")

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        await self._unanswered(path)
        out = await self._post(path, body)
        await self._unanswered(f"the answer to {path}")     # cut while the request was out
        return out

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        last: Exception | None = None
        for i in range(len(self.endpoints)):
            idx = (self._current + i) % len(self.endpoints)
            try:
                resp = await self._client.post(self.endpoints[idx] + path, json=body)
            except httpx.HTTPError as exc:
                last = exc
                continue
            self._current = idx
            if resp.status_code != 200:
                raise MetadataUnavailable(f"etcd {path} answered {resp.status_code}: {resp.text[:200]}")
            return resp.json()
        raise MetadataUnavailable(f"etcd unreachable at {self.endpoints}: {last!r}")

    async def range(self, key: str, prefix: bool = False, revision: int = 0, min_mod_revision: int = 0,
                    sort_by_mod: bool = False) -> tuple[int, list[KeyValue]]:
        body: dict[str, Any] = {"key": b64(key)}
        if prefix:
            body["range_end"] = b64(prefix_end(key))
        if revision:
            body["revision"] = str(revision)
        if min_mod_revision:
            body["min_mod_revision"] = str(min_mod_revision)
        if sort_by_mod:
            body["sort_order"] = "ASCEND"
            body["sort_target"] = "MOD"
        out = await self.post("/v3/kv/range", body)
        return int(out["header"]["revision"]), [KeyValue.from_json(kv) for kv in out.get("kvs", [])]

    async def get(self, key: str) -> KeyValue | None:
        _, kvs = await self.range(key)
        return kvs[0] if kvs else None

    async def txn(self, compare: list[dict[str, Any]], success: list[dict[str, Any]],
                  failure: list[dict[str, Any]] | None = None) -> tuple[bool, int, list[dict[str, Any]]]:
        out = await self.post("/v3/kv/txn", {"compare": compare, "success": success, "failure": failure or []})
        return bool(out.get("succeeded", False)), int(out["header"]["revision"]), out.get("responses", [])

    async def lease_grant(self, ttl_s: int) -> int:
        out = await self.post("/v3/lease/grant", {"TTL": str(ttl_s)})
        return int(out["ID"])

    async def lease_keepalive(self, lease_id: int) -> int:
        """The lease's remaining TTL in seconds; 0 when it has expired."""
        out = await self.post("/v3/lease/keepalive", {"ID": str(lease_id)})
        return int(out.get("result", {}).get("TTL", 0) or 0)

    async def lease_revoke(self, lease_id: int) -> None:
        await self.post("/v3/lease/revoke", {"ID": str(lease_id)})

    async def watch(self, key: str, start_revision: int, prefix: bool = True) -> AsyncIterator[dict[str, Any]]:
        """Watch responses (``{"events": [...], "header": ...}``) from ``start_revision`` on,
        until the stream breaks (MetadataUnavailable) or the watch is compacted
        (``compact_revision`` in a response: the caller catches up with a range)."""
        body = {"create_request": {"key": b64(key), "start_revision": str(start_revision)}}
        if prefix:
            body["create_request"]["range_end"] = b64(prefix_end(key))
        url = self.endpoints[self._current] + "/v3/watch"
        await self._unanswered("/v3/watch")
        links = current_links()
        try:
            async with self._client.stream("POST", url, json=body,
                                           timeout=httpx.Timeout(5.0, read=None)) as resp:
                if resp.status_code != 200:
                    raise MetadataUnavailable(f"etcd watch answered {resp.status_code}")
                async for line in resp.aiter_lines():
                    if not line.strip():
                        continue
                    if links is not None and links.etcd:
                        await links.wait_healed(None)    # held in the network until the link heals
                    msg = json.loads(line)
                    if "error" in msg:
                        raise MetadataUnavailable(f"etcd watch error: {msg['error']}")
                    yield msg.get("result", {})
        except httpx.HTTPError as exc:
            self._current = (self._current + 1) % len(self.endpoints)
            raise MetadataUnavailable(f"etcd watch broke: {exc!r}") from None
        raise MetadataUnavailable("etcd watch stream ended")
