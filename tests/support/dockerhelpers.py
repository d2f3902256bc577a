"""Running the Docker CLI from tests: is a daemon there, run a command, clean up what a test made.

Container tests (pytest marker ``container``) run when ``docker info`` answers and are skipped with
the reason otherwise. Images are built once per session by the modules' session fixtures (the build
cache makes a rebuild of unchanged layers take seconds). Everything a test creates is named with
a per-session prefix and removed afterwards, also when the test fails.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
PREFIX = f"samsa-test-{uuid.uuid4().hex[:6]}"


def daemon_problem() -> str | None:
    """None when a Docker daemon answers, else why the container tests are skipped."""
    if shutil.which("docker") is None:
        return "docker is not on PATH (no container engine; see ../shared/tools/container-engine.sh up)"
    try:
        proc = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True,
                              text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 20 s"
    if proc.returncode != 0 or not proc.stdout.strip():
        return f"no Docker daemon answers `docker info`: {(proc.stderr or proc.stdout).strip()[:300]}"
    return None


DAEMON_PROBLEM = daemon_problem()
requires_docker = pytest.mark.skipif(DAEMON_PROBLEM is not None, reason=DAEMON_PROBLEM or "")


def docker(*args: str, check: bool = True, timeout: float = 120, cwd: Path = REPO,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``docker ARGS``; with check=True a non-zero exit fails the test with the command's output."""
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def sh(command: str, *, timeout: float = 900, cwd: Path = REPO, env: dict[str, str] | None = None,
       check: bool = True) -> subprocess.CompletedProcess:
    """A shell command line exactly as the manual (docs/) shows it."""
    proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"`{command}` exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


def inspect(name: str, fmt: str | None = None) -> Any:
    if fmt:
        return docker("inspect", "-f", fmt, name).stdout.strip()
    return json.loads(docker("inspect", name).stdout)[0]


def wait_for(what: str, check: Callable[[], bool], timeout: float, interval: float = 0.2) -> float:
    """Poll until check() is true; returns the seconds it took."""
    t0 = time.monotonic()
    while not check():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(interval)
    return time.monotonic() - t0


def health(name: str) -> str:
    return inspect(name, "{{if .State.Health}}{{.State.Health.Status}}{{end}}")


def logs(name: str) -> str:
    proc = docker("logs", name, check=False)
    return proc.stdout + proc.stderr


class Resources:
    """Containers and volumes a test made; removed (forcefully) afterwards."""

    def __init__(self) -> None:
        self.containers: list[str] = []
        self.volumes: list[str] = []

    def name(self, kind: str) -> str:
        return f"{PREFIX}-{kind}-{uuid.uuid4().hex[:6]}"

    def container(self, kind: str = "c") -> str:
        name = self.name(kind)
        self.containers.append(name)
        return name

    def volume(self, kind: str = "v") -> str:
        name = self.name(kind)
        self.volumes.append(name)
        return name

    def cleanup(self) -> None:
        for c in self.containers:
            docker("rm", "-f", "-v", c, check=False)
        for v in self.volumes:
            docker("volume", "rm", "-f", v, check=False)


_BUILT: dict[str, str] = {}


def build_once(config: pytest.Config, command: str, image: str) -> str:
    """Run an image's build command once per test session, whichever module's fixture asks first
    (a session fixture imported into several modules would run once per module)."""
    if command not in _BUILT:
        t0 = time.monotonic()
        sh(command, timeout=900)
        seconds = time.monotonic() - t0
        report(config, [f"{command}: {seconds:.1f} s; image size {image_size_mb(image):.0f} MB"])
        _BUILT[command] = image
    return _BUILT[command]


def image_size_mb(image: str) -> float:
    return int(docker("image", "inspect", "-f", "{{.Size}}", image).stdout.strip()) / 1e6


def report(config: pytest.Config, lines: Sequence[str]) -> None:
    """Measurements shown at the end of the run's terminal output (and kept in .cache/)."""
    out = REPO / ".cache" / "container-measurements.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write("".join(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n" for line in lines))
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for line in lines:
            reporter.write_line(f"[container] {line}")
