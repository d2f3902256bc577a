"""The routes of ``samsa.http.listener``: ``/metrics`` (Prometheus text format) and the web
console (``/``, broker/observability/console.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from .console import console_app
from broker.network.http_serve import Receive, Routes, Scope, Send, respond, serve_http

if TYPE_CHECKING:
    from broker.server.broker_server import Broker


def observe_routes(broker: Broker) -> Routes:
    from broker.observability.metrics import CONTENT_TYPE

    async def metrics(scope: Scope, receive: Receive, send: Send) -> None:
        if broker.metrics is None:
            await respond(send, 503, "metrics are not enabled\n")
            return
        await respond(send, 200, broker.metrics.exposition(), CONTENT_TYPE)

    routes = Routes()
    routes.mount("/metrics", metrics)
    routes.mount("/", console_app(broker))
    return routes


async def run_http_listener(broker: Broker, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``samsa.http.listener`` until cancelled; the broker keeps metrics only from here on,
    and the console's charts sample them (broker/observability/history.py) alongside."""
    from broker.observability.history import History, run_sampler
    from broker.observability.metrics import BrokerMetrics

    broker.metrics = BrokerMetrics(broker)
    broker.metrics.history = History()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_sampler, broker, broker.metrics.history)
        await serve_http(observe_routes(broker), str(broker.config["samsa.http.listener"]), "samsa.http.listener",
                         task_status=task_status)
