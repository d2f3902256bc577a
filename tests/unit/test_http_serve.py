"""The shared HTTP serving mechanism (broker/network/http_serve.py) on a real socket."""
from __future__ import annotations

import httpx
import pytest
import trio

from broker.network.http_serve import (HttpListenerError, Routes, parse_http_listener, read_body, respond, respond_json)


def test_parse_http_listener() -> None:
    assert parse_http_listener("http://127.0.0.1:8090") == ("127.0.0.1", 8090)
    assert parse_http_listener("http://:0") == ("0.0.0.0", 0)
    for bad in ("127.0.0.1:8090", "https://h:1", "http://h", "http://h:1/x"):
        with pytest.raises(HttpListenerError):
            parse_http_listener(bad)


def test_routes_longest_prefix_and_404() -> None:
    from broker.network.http_serve import serve_http

    async def main() -> list:
        routes = Routes()

        async def text(scope, receive, send):
            await respond(send, 200, "root " + scope["path"])

        async def api(scope, receive, send):
            await respond_json(send, 201, {"body": (await read_body(receive)).decode()})

        routes.mount("/api", api)
        routes.mount("/console", text)
        async with trio.open_nursery() as nursery:
            port = await nursery.start(serve_http, routes, "http://127.0.0.1:0", "test")
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                out = [await client.get("/console/x"), await client.post("/api/faults", content=b"{}"),
                       await client.get("/nothing")]
            nursery.cancel_scope.cancel()
        return out

    console, api, missing = trio.run(main)
    assert (console.status_code, console.text) == (200, "root /console/x")
    assert (api.status_code, api.json()) == (201, {"body": "{}"})
    assert missing.status_code == 404
