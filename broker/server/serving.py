"""Run a broker until it is stopped: its Kafka listeners, the control and HTTP listeners, and a
graceful shutdown (stop accepting, answer what was received, flush).

This is composition, not the network path: it starts listeners of every kind (the control
endpoint, the observability routes), so it sits in broker/server above them all, while
broker/network/listeners.py keeps one listener's accept loop and its connections.
"""
from __future__ import annotations

import signal
from contextlib import nullcontext
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import structlog
import trio

from broker.network.dispatch import check_handlers
from broker.network.listeners import run_listener

if TYPE_CHECKING:
    from broker.server.broker_server import Broker
    from broker.server.startup import Startup

log = structlog.get_logger("samsa.server")

SHUTDOWN_GRACE_S = 10.0


async def serve(broker: Broker, task_status: trio.TaskStatus[list[int]] = trio.TASK_STATUS_IGNORED,
                stop: trio.Event | None = None, startup: Startup | None = None) -> None:
    """Run until SIGTERM/SIGINT (or until ``stop`` is set, for a broker in a thread of another
    program, which cannot receive signals): stop accepting, let in-flight requests finish,
    flush, return. ``startup`` (broker/server/startup.py) hands over the listening sockets and the
    connections that arrived while the broker was loading."""
    check_handlers()
    control = broker.config.get("samsa.control.listener")
    if control:
        from broker.control.endpoint import ALLOW_REMOTE, check_bind
        check_bind(str(control), bool(broker.config.get(ALLOW_REMOTE)))
    await broker.start_cluster()  # cluster mode only: join etcd before the logs load
    broker.start()
    await broker.security.start()   # old security file migrated, bootstrap SCRAM credentials written
    log.info("broker started", node_id=broker.node_id, cluster_id=broker.cluster_id,
             log_dir=broker.logs.log_dir, topics=len(broker.logs.topics))
    async with trio.open_nursery() as services:
        if broker.config.get("samsa.http.listener"):   # /metrics and the web console (broker/observability/routes.py)
            from broker.observability.routes import run_http_listener
            await services.start(run_http_listener, broker)
        await services.start(broker.run_services)
        await _serve_connections(broker, task_status, stop, startup)
        services.cancel_scope.cancel()
    broker.logs.shutdown()
    log.info("broker stopped")


async def _until_stopped(signals: AsyncIterator[int] | None, stop: trio.Event | None) -> None:
    """``stop`` set, or SIGTERM/SIGINT received (``signals`` is None exactly when ``stop`` is given)."""
    if stop is not None:
        await stop.wait()
        log.info("shutting down", reason="stopped")
        return
    assert signals is not None
    async for signum in signals:
        log.info("shutting down", signal=signal.Signals(signum).name)
        return


async def _serve_connections(broker: Broker, task_status: trio.TaskStatus[list[int]], stop: trio.Event | None = None,
                             startup: Startup | None = None) -> None:
    readers: set[trio.CancelScope] = set()
    # a broker in a thread of another program (stop given) cannot receive signals
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) if stop is None else nullcontext() as signals:
        async with trio.open_nursery() as conns:
            async with trio.open_nursery() as listeners:
                ports = []
                for listener in broker.config.listeners:
                    bound = startup.sockets.get(listener.name) if startup is not None else None
                    ports.append(await listeners.start(run_listener, broker, listener, conns, readers, bound))
                if startup is not None:
                    startup.adopt(broker, conns, readers)
                listeners.start_soon(broker.busy_poll.run)
                task_status.started(ports)
                if broker.config.get("samsa.control.listener"):  # after the Kafka listeners: start-up first
                    from broker.control.endpoint import run_control_listener
                    listeners.start_soon(run_control_listener, broker)
                await _until_stopped(signals, stop)
                await broker.controlled_shutdown()  # cluster mode: move leadership away first
                listeners.cancel_scope.cancel()
            # stop reading; requests already received are answered, then connections close
            broker.stopping.set()
            broker.faults.clear()    # held requests go on: shutdown does not wait for a release
            broker.appends.notify()  # release long polls so their answers go out now
            for scope in list(readers):
                scope.cancel()
            conns.cancel_scope.deadline = trio.current_time() + SHUTDOWN_GRACE_S
