"""``samsa serve`` listens before it loads (broker/server/startup.py): connections made in the first
moments get ApiVersions answered at once, and any other request they pipeline is answered, in
order, on the same connection once the broker is loaded."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse

from broker.testing import SamsaBroker
from protocol.api_versions import SUPPORTED_WITH_SHARE_GROUPS
from tests.support.rawclient import RawClient

REPO = Path(__file__).resolve().parents[2]


def connect_asap(port: int, deadline: float) -> socket.socket:
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)


def test_requests_sent_while_the_broker_loads_are_answered_in_order(tmp_path: Path) -> None:
    b = SamsaBroker(tmp_path / "d", control=False)
    b.data_dir.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-m", "broker", "serve"], env=b.env(), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sock = connect_asap(b.port, time.monotonic() + 20)
        frames = []
        for corr, req in ((1, ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1")),
                          (2, MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False)),
                          (3, ApiVersionsRequest(version=0))):
            req.with_header(correlation_id=corr, client_id="early")
            frames.append(bytes(req.encode(header=True, framed=True)))
        sock.sendall(b"".join(frames))               # pipelined, as clients do
        client = RawClient.__new__(RawClient)
        client.sock = sock
        first = ApiVersionsResponse.decode(client.recv_frame(), version=3, header=True)
        second = MetadataResponse.decode(client.recv_frame(), version=12, header=True)
        third = ApiVersionsResponse.decode(client.recv_frame(), version=0, header=True)
        assert [r.header.correlation_id for r in (first, second, third)] == [1, 2, 3]
        assert {k.api_key: (k.min_version, k.max_version) for k in first.api_keys} == SUPPORTED_WITH_SHARE_GROUPS
        assert first.error_code == 0 and third.error_code == 0
        assert [(br.host, br.port) for br in second.brokers] == [("127.0.0.1", b.port)]
        sock.close()
    finally:
        proc.terminate()
        assert proc.wait(20) == 0                   # a clean SIGTERM shutdown


def test_a_broker_that_cannot_load_exits_with_its_reason(tmp_path: Path) -> None:
    b = SamsaBroker(tmp_path / "d", control=False, overrides={"samsa.emulate.kafka.version": "0.1"})
    b.data_dir.mkdir(parents=True)
    out = subprocess.run([sys.executable, "-m", "broker", "serve"], env=b.env(), cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "not a Kafka release Samsa knows" in out.stderr


def test_garbage_during_start_up_closes_only_that_connection(tmp_path: Path) -> None:
    b = SamsaBroker(tmp_path / "d", control=False)
    b.data_dir.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-m", "broker", "serve"], env=b.env(), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bad = connect_asap(b.port, time.monotonic() + 20)
        body = b"\x00\x12\x00\x03\x00\x00\x00\x01" + b"\xff" * 7         # ApiVersions v3, broken body
        bad.sendall(len(body).to_bytes(4, "big") + body)
        bad.settimeout(10)
        assert bad.recv(1) == b""                                          # closed, nothing answered
        bad.close()
        with RawClient(b.bootstrap_servers) as good:                       # the broker goes on
            resp = good.call(ApiVersionsRequest(version=0), ApiVersionsResponse, 0)
            assert resp.error_code == 0
    finally:
        proc.terminate()
        assert proc.wait(20) == 0


def test_samsa_serve_freezes_the_start_up_objects_once_warmed_up(tmp_path: Path) -> None:
    """``samsa serve`` calls ``gc.freeze()`` once its coordinators and API modules are loaded
    (broker/server/startup.py); an in-process broker (broker.testing) never does. By then the
    garbage collector paused for start-up runs again and structlog is imported."""
    code = ("import gc, os, signal, sys, threading, time\n"
            "def stop():\n"
            "    deadline = time.monotonic() + 30\n"
            "    while not gc.get_freeze_count() and time.monotonic() < deadline:\n"
            "        time.sleep(0.05)\n"
            "    seen.extend([gc.isenabled(), sys.modules['structlog'].__name__, 'structlog.dev' in sys.modules])\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "seen = []\n"
            "threading.Thread(target=stop, daemon=True).start()\n"
            "from broker.cli import main\n"
            "main(['serve'])\n"
            "print(seen, gc.isenabled())\n"
            "print(gc.get_freeze_count())\n")
    b = SamsaBroker(tmp_path / "d", control=False)
    b.data_dir.mkdir(parents=True)
    out = subprocess.run([sys.executable, "-c", code], env=b.env(), cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) > 10_000
    # the collector paused for start-up runs again, and structlog is loaded (broker/cli.py, startup.py)
    assert out.stdout.splitlines()[-2] == "[True, 'structlog', True] True"
