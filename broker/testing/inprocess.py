"""A broker inside the test process: the real broker (same listeners, dispatch, log) on its own
trio loop in one thread, ready in milliseconds because nothing is spawned or imported.

The thread is the one place Samsa runs outside structured concurrency: pytest's test runs on
the main thread and the broker needs an event loop of its own. Everything the test asks of the
broker (faults, clock, topics, stop) is handed to that loop with ``trio.from_thread``. Crash
tests (kill -9) need the subprocess broker (broker/testing/plugin.py's ``SamsaBroker``).
"""
from __future__ import annotations

import os
import threading
from functools import partial
from pathlib import Path
from typing import Any
from collections.abc import Callable

import trio

from broker import apis  # noqa: F401  (registers the API handlers)
from broker.server.broker_server import Broker
from broker.common.config import BrokerConfig
from broker.control.endpoint import run_operation
from broker.control.client import BrokerClock, Faults, Links
from .ports import free_port
from broker.server.serving import serve


class InProcessBroker:
    """``InProcessBroker(data_dir).start()``; ``.bootstrap_servers``, ``.faults``, ``.clock``,
    ``.create_topic()``, ``.stop()``, ``.restart()``."""

    def __init__(self, data_dir: str | os.PathLike, port: int | None = None,
                 overrides: dict[str, Any] | None = None, topics: dict[str, int] | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self.topics = dict(topics or {})
        self.broker: Broker | None = None
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.faults = Faults(self._call)
        self.clock = BrokerClock(self._call)
        self.links = Links(self._call)      # cut links: a single node has no peers or etcd to cut, but the table is there

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def config(self) -> BrokerConfig:
        props = {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                 "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                 "log.dirs": str(self.data_dir),
                 # polling for a connection's next request holds the GIL that the test's own
                 # threads (its clients) need: this broker sleeps between requests
                 "samsa.socket.busy.poll.us": "0"}
        props.update(self.overrides)
        return BrokerConfig(props)

    def start(self, timeout: float = 20.0) -> InProcessBroker:
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(target=self._run, name=f"samsa-broker-{self.port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"in-process broker did not start within {timeout}s")
        if self._error is not None:
            raise RuntimeError(f"in-process broker failed to start: {self._error!r}") from self._error
        for name, partitions in self.topics.items():
            self.create_topic(name, partitions)
        return self

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # noqa: BLE001 - reported to start() or kept for stop()
            self._error = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        self.broker = Broker(self.config())
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(serve, self.broker, stop=self._stop))
            self._ready.set()

    def _on_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._token is None or self._thread is None or not self._thread.is_alive():
            raise RuntimeError("the in-process broker is not running")
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    def _call(self, op: str, args: dict[str, Any]) -> Any:
        return self._on_loop(run_operation, self.broker, op, args)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> str:
        """Create a topic directly (as CreateTopics does); returns its name."""
        def create() -> None:
            assert self.broker is not None
            if name not in self.broker.logs.topics:
                self.broker.logs.create_topic(name, partitions, dict(configs or {}))
        self._on_loop(create)
        return name

    def stop(self, timeout: float = 20.0) -> None:
        """Clean shutdown (as SIGTERM does for the process): answer what was received, flush."""
        if self._thread is None:
            return
        if self._thread.is_alive() and self._stop is not None:
            try:
                self._on_loop(self._stop.set)
            except (RuntimeError, trio.RunFinishedError):
                pass
        self._thread.join(timeout)
        self._thread = None
        self._token = None

    def restart(self) -> InProcessBroker:
        self.stop()
        return self.start()
