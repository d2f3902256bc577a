"""The container, tested without a container engine: the image's entrypoint script starts the
broker from KAFKA_* variables exactly as it does in the image, `samsa healthcheck` (the image's
HEALTHCHECK) answers 0/1, the files the Dockerfile copies are enough to build and run the
package, and the Dockerfile and docker-compose.yml say what the README promises.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Iterator

import pytest
from kafka import KafkaProducer

from broker.testing import free_port
from tests.support.rawclient import RawClient

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "docker" / "entrypoint.sh"
DOCKERFILE = REPO / "Dockerfile"
COMPOSE = REPO / "docker-compose.yml"
BIN = Path(sys.executable).parent


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "SAMSA_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def healthcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "samsa"), "healthcheck", *args], env=env or clean_env(),
                          capture_output=True, text=True, timeout=30)


def wait_healthy(bootstrap: str, proc: subprocess.Popen, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"entrypoint exited with {proc.returncode}"
        if healthcheck("--bootstrap", bootstrap, "--timeout", "0.5").returncode == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"broker on {bootstrap} did not answer within {timeout}s")


class Entrypoint:
    """docker/entrypoint.sh run directly, as the image's ENTRYPOINT runs it."""

    def __init__(self, env: dict[str, str], *args: str, log: Path) -> None:
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(["/bin/sh", str(ENTRYPOINT), *args], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture
def entrypoints() -> Iterator[list[Entrypoint]]:
    started: list[Entrypoint] = []
    yield started
    for e in started:
        e.stop()


def metadata_brokers(port: int) -> list[tuple[int, str, int]]:
    """The brokers a Metadata v12 request on this port is told about: (node id, host, port)."""
    with RawClient(f"127.0.0.1:{port}") as client:
        resp = client.request(3, 12, topics=[], allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
    return [(b.node_id, b.host, b.port) for b in resp.brokers]


# ---------------------------------------------------------------- entrypoint + healthcheck
def test_entrypoint_serves_from_kafka_env_and_exits_cleanly(tmp_path: Path, entrypoints: list[Entrypoint]):
    port = free_port()
    data = tmp_path / "data"
    env = clean_env(KAFKA_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}",
                    KAFKA_ADVERTISED_LISTENERS=f"PLAINTEXT://broker.example:{port}",
                    KAFKA_LOG_DIRS=str(data), KAFKA_NODE_ID="7")
    ep = Entrypoint(env, log=tmp_path / "log")
    entrypoints.append(ep)
    wait_healthy(f"127.0.0.1:{port}", ep.proc)
    # The script exec'd the broker: the process the engine would signal is samsa itself.
    cmdline = Path(f"/proc/{ep.proc.pid}/cmdline").read_bytes().split(b"\0")
    assert b"serve" in cmdline and not any(c.endswith(b"entrypoint.sh") for c in cmdline)
    assert metadata_brokers(port) == [(7, "broker.example", port)]
    assert (data / "meta.properties").is_file()
    assert healthcheck("--bootstrap", f"127.0.0.1:{port}").returncode == 0
    assert ep.stop() == 0  # SIGTERM: clean shutdown, exit 0
    # A new, empty log dir had no previous shutdown: it is not reported as an unclean one.
    log = (tmp_path / "log").read_text()
    assert "new_log_dir=True" in log and "clean_shutdown" not in log and "not clean" not in log
    again = Entrypoint(env, log=tmp_path / "log2")
    entrypoints.append(again)
    wait_healthy(f"127.0.0.1:{port}", again.proc)
    assert again.stop() == 0
    log = (tmp_path / "log2").read_text()
    assert "clean_shutdown=True" in log and "new_log_dir" not in log


def test_entrypoint_passes_options_to_serve(tmp_path: Path, entrypoints: list[Entrypoint]):
    port = free_port()
    env = clean_env(KAFKA_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}",
                    KAFKA_ADVERTISED_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}", KAFKA_LOG_DIRS=str(tmp_path / "d"))
    ep = Entrypoint(env, "--override", "num.partitions=3", log=tmp_path / "log")
    entrypoints.append(ep)
    wait_healthy(f"127.0.0.1:{port}", ep.proc)
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}")
    try:
        assert producer.partitions_for("auto-created") == {0, 1, 2}
    finally:
        producer.close(timeout=5)


def test_entrypoint_defaults_and_command_pass_through(tmp_path: Path):
    out = subprocess.run(["/bin/sh", str(ENTRYPOINT), "env"], env=clean_env(), capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0
    env = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert (env["KAFKA_LISTENERS"], env["KAFKA_LOG_DIRS"]) == ("PLAINTEXT://0.0.0.0:9092", "/var/lib/samsa/data")
    assert "KAFKA_ADVERTISED_LISTENERS" not in env  # the broker advertises its listeners
    mine = subprocess.run(["/bin/sh", str(ENTRYPOINT), "env"], capture_output=True, text=True, timeout=30,
                          env=clean_env(KAFKA_LISTENERS="PLAINTEXT://:19092"))
    assert "KAFKA_LISTENERS=PLAINTEXT://:19092" in mine.stdout.splitlines()


def test_entrypoint_refuses_an_unwritable_data_dir(tmp_path: Path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    proc = subprocess.run(["/bin/sh", str(ENTRYPOINT)], capture_output=True, text=True, timeout=30,
                          env=clean_env(KAFKA_LOG_DIRS=f"{blocker}/data", KAFKA_LISTENERS="PLAINTEXT://127.0.0.1:1"))
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"samsa: data folder {blocker}/data is not writable by uid {os.getuid()}; "
                                   "fix the volume's owner or set KAFKA_LOG_DIRS")


def test_two_listeners_both_answer(tmp_path: Path, entrypoints: list[Entrypoint]):
    internal, external = free_port(), free_port()
    env = clean_env(KAFKA_LISTENERS=f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
                    KAFKA_ADVERTISED_LISTENERS=f"INTERNAL://127.0.0.1:{internal},EXTERNAL://localhost:{external}",
                    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                    KAFKA_INTER_BROKER_LISTENER_NAME="INTERNAL", KAFKA_LOG_DIRS=str(tmp_path / "d"))
    ep = Entrypoint(env, log=tmp_path / "log")
    entrypoints.append(ep)
    wait_healthy(f"127.0.0.1:{internal}", ep.proc)
    assert healthcheck("--bootstrap", f"127.0.0.1:{external}").returncode == 0
    assert metadata_brokers(internal) == [(1, "127.0.0.1", internal)]


def test_each_listener_advertises_its_own_address(tmp_path: Path, entrypoints: list[Entrypoint]):
    internal, external = free_port(), free_port()
    env = clean_env(KAFKA_LISTENERS=f"INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}",
                    KAFKA_ADVERTISED_LISTENERS=f"INTERNAL://samsa:{internal},EXTERNAL://localhost:{external}",
                    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
                    KAFKA_LOG_DIRS=str(tmp_path / "d"))
    ep = Entrypoint(env, log=tmp_path / "log")
    entrypoints.append(ep)
    wait_healthy(f"127.0.0.1:{internal}", ep.proc)
    assert metadata_brokers(internal) == [(1, "samsa", internal)]
    assert metadata_brokers(external) == [(1, "localhost", external)]


def test_healthcheck_exit_codes(tmp_path: Path, entrypoints: list[Entrypoint]):
    closed = free_port()
    t0 = time.monotonic()
    failed = healthcheck("--bootstrap", f"127.0.0.1:{closed}")
    assert time.monotonic() - t0 < 5
    # It says what it tried and why it failed (docker inspect shows this under State.Health.Log).
    assert (failed.returncode, failed.stdout, failed.stderr) == (
        1, "", f"samsa healthcheck: no ApiVersions answer from 127.0.0.1:{closed}: connect failed: Connection refused\n")
    bad = healthcheck("--bootstrap", "no-port-here")
    assert (bad.returncode, bad.stderr) == (1, "samsa healthcheck: no ApiVersions answer from no-port-here: "
                                               "'no-port-here' is not HOST:PORT\n")
    port = free_port()
    ep = Entrypoint(clean_env(KAFKA_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}", KAFKA_LOG_DIRS=str(tmp_path / "d")),
                    log=tmp_path / "log")
    entrypoints.append(ep)
    wait_healthy(f"127.0.0.1:{port}", ep.proc)
    ok = healthcheck("--bootstrap", f"127.0.0.1:{port}")
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, f"samsa healthcheck: 127.0.0.1:{port} answered ApiVersions and Metadata\n", "")
    # The image's HEALTHCHECK runs `samsa healthcheck` with the address in SAMSA_BOOTSTRAP.
    assert healthcheck(env=clean_env(SAMSA_BOOTSTRAP=f"127.0.0.1:{port}")).returncode == 0
    assert healthcheck(env=clean_env(SAMSA_BOOTSTRAP=f"127.0.0.1:{closed}")).returncode == 1
    # Something that is not Kafka on the port (it accepts and closes): 1, not a hang or a crash.
    assert ep.stop() == 0
    assert healthcheck("--bootstrap", f"127.0.0.1:{port}").returncode == 1


def test_env_to_property_is_the_official_images_rule():
    from broker.common.config import env_to_property
    assert env_to_property("KAFKA_ADVERTISED_LISTENERS") == "advertised.listeners"
    assert env_to_property("KAFKA_LISTENER_NAME_SASL__SSL_PLAIN_SASL_JAAS_CONFIG") == \
        "listener.name.sasl_ssl.plain.sasl.jaas.config"
    assert env_to_property("KAFKA_LISTENER_NAME_SASL__SSL_SCRAM___SHA___512_SASL_JAAS_CONFIG") == \
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"
    assert env_to_property("KAFKA_SAMSA_SCRAM_BOOTSTRAP_CREDENTIALS") == "samsa.scram.bootstrap.credentials"
    # apache/kafka's KafkaDockerWrapper: the JVM's and log4j's variables are not properties.
    for name in ("KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
                 "KAFKA_VERSION", "KAFKA_GC_LOG_OPTS", "KAFKA_JMX_HOSTNAME", "SAMSA_BOOTSTRAP", "PATH"):
        assert env_to_property(name) is None, name


def test_official_images_secret_file_variables(tmp_path: Path):
    """KAFKA_SSL_*_FILENAME / *_CREDENTIALS name files in /etc/kafka/secrets, as in apache/kafka."""
    from broker.common.config import BrokerConfig, ConfigError
    from broker.common.secrets_env import secret_file_properties
    (tmp_path / "ks_creds").write_text("ks-pass\n")
    (tmp_path / "key_creds").write_text("key-pass")
    env = {"KAFKA_SSL_KEYSTORE_FILENAME": "broker.p12", "KAFKA_SSL_KEYSTORE_CREDENTIALS": "ks_creds",
           "KAFKA_SSL_KEY_CREDENTIALS": "key_creds", "KAFKA_SSL_TRUSTSTORE_FILENAME": "ca.pem"}
    assert secret_file_properties(env, str(tmp_path)) == {
        "ssl.keystore.location": f"{tmp_path}/broker.p12", "ssl.truststore.location": f"{tmp_path}/ca.pem",
        "ssl.keystore.password": "ks-pass", "ssl.key.password": "key-pass"}
    # Through the broker's config: /etc/kafka/secrets, explicit properties win, a missing file is an error.
    config = BrokerConfig.load(environ={"KAFKA_SSL_TRUSTSTORE_FILENAME": "ca.pem",
                                        "KAFKA_SSL_KEYSTORE_FILENAME": "x.p12",
                                        "KAFKA_SSL_KEYSTORE_LOCATION": "/certs/mine.p12"})
    assert (config["ssl.truststore.location"], config["ssl.keystore.location"]) == (
        "/etc/kafka/secrets/ca.pem", "/certs/mine.p12")
    with pytest.raises(ConfigError, match=r"KAFKA_SSL_KEY_CREDENTIALS: cannot read /etc/kafka/secrets/nope"):
        BrokerConfig.load(environ={"KAFKA_SSL_KEY_CREDENTIALS": "nope"})


def test_healthcheck_asks_the_brokers_own_tls_and_sasl_listeners(tmp_path: Path, entrypoints: list[Entrypoint]):
    """No SAMSA_BOOTSTRAP and no PLAINTEXT listener: the probe reads KAFKA_LISTENERS and asks the
    mTLS listener with the broker's own certificate (client auth required), or with only a
    SASL_SSL listener, ApiVersions over TLS."""
    from tests.support.security_support import make_pki
    pki = make_pki(tmp_path / "pki")
    sasl, mtls = free_port(), free_port()
    env = clean_env(KAFKA_LISTENERS=f"SASL_SSL://127.0.0.1:{sasl},MTLS://127.0.0.1:{mtls}",
                    KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="SASL_SSL:SASL_SSL,MTLS:SSL",
                    KAFKA_SSL_KEYSTORE_TYPE="PEM", KAFKA_SSL_KEYSTORE_LOCATION=str(pki.server_pem),
                    KAFKA_SSL_TRUSTSTORE_TYPE="PEM", KAFKA_SSL_TRUSTSTORE_LOCATION=str(pki.ca),
                    KAFKA_SSL_CLIENT_AUTH="required", KAFKA_SASL_ENABLED_MECHANISMS="PLAIN",
                    KAFKA_LISTENER_NAME_SASL__SSL_PLAIN_SASL_JAAS_CONFIG=(
                        'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="a-secret";'),
                    KAFKA_LOG_DIRS=str(tmp_path / "d"))
    down = healthcheck(env=env)
    assert (down.returncode, down.stderr) == (
        1, f"samsa healthcheck: no ApiVersions answer from 127.0.0.1:{mtls} (MTLS, SSL): "
           "connect failed: Connection refused\n")
    ep = Entrypoint(env, log=tmp_path / "log")
    entrypoints.append(ep)
    deadline = time.monotonic() + 20
    while (ok := healthcheck(env=env)).returncode != 0:
        assert ep.proc.poll() is None and time.monotonic() < deadline, ok.stderr
        time.sleep(0.1)
    assert ok.stdout == f"samsa healthcheck: 127.0.0.1:{mtls} (MTLS, SSL) answered ApiVersions and Metadata\n"
    only_sasl = {**env, "KAFKA_LISTENERS": f"SASL_SSL://127.0.0.1:{sasl}"}
    ok = healthcheck(env=only_sasl)
    assert (ok.returncode, ok.stdout) == (0, f"samsa healthcheck: 127.0.0.1:{sasl} (SASL_SSL, SASL_SSL) answered "
                                             "ApiVersions\n")
    # Presenting the key store is what gets it in: the same probe without a certificate fails.
    import ssl
    from broker.control.healthcheck import probe
    bare = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    bare.check_hostname, bare.verify_mode = False, ssl.CERT_NONE
    assert probe(f"127.0.0.1:{mtls}", tls=bare) is not None
    # A key store it cannot load: it says so.
    bad = healthcheck(env={**env, "KAFKA_SSL_KEYSTORE_LOCATION": str(pki.client_key)})
    assert bad.returncode == 1 and "cannot load the listener's key store" in bad.stderr


# ---------------------------------------------------------------- the image's files
def dockerfile_instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_promises():
    ins = dockerfile_instructions()
    get = lambda w: [r for k, r in ins if k == w]  # noqa: E731
    # Every stage starts from the slim Python image; the last one (the image) copies only the
    # virtual environment the build stage installed into, not the source tree.
    assert all(re.fullmatch(r"python:3\.\d+-slim( AS \w+)?|\w+ AS \w+", f) for f in get("FROM"))
    assert re.fullmatch(r"python:3\.\d+-slim", get("FROM")[-1])
    assert "--from=build /opt/samsa /opt/samsa" in get("COPY")
    assert get("USER") == ["samsa"]
    assert get("EXPOSE") == ["9092 8090"]   # 8090: samsa.http.listener (web console, /metrics)
    assert get("VOLUME") == ['["/var/lib/samsa/data"]']
    assert get("ENTRYPOINT") == ['["samsa-entrypoint"]'] and get("CMD") == ['["serve"]']
    health = get("HEALTHCHECK")[0]
    assert health.endswith('CMD ["samsa", "healthcheck"]')
    env = " ".join(get("ENV"))
    # No SAMSA_BOOTSTRAP: the healthcheck asks the listener KAFKA_LISTENERS names (any protocol).
    assert "SAMSA_BOOTSTRAP" not in env and "KAFKA_LOG_DIRS=/var/lib/samsa/data" in env
    assert "KAFKA_SAMSA_HTTP_LISTENER=http://0.0.0.0:8090" in env
    assert "docker/entrypoint.sh /usr/local/bin/samsa-entrypoint" in get("COPY")
    assert os.access(ENTRYPOINT, os.X_OK)  # COPY keeps the mode: the script must be executable in git
    assert not any("pyspark" in r for r in get("RUN"))


def test_dockerfile_sources_build_and_run_the_broker(tmp_path: Path, entrypoints: list[Entrypoint]):
    """Copy exactly what the Dockerfile copies, build the wheel `pip install .` would install, and
    run the entrypoint with that wheel's code only (a missing package would fail here)."""
    context = tmp_path / "context"
    copies = [r.split() for k, r in dockerfile_instructions() if k == "COPY"]
    for args in copies:
        if any(a.startswith("--from=") for a in args):
            continue  # from another build stage, not from the context
        *sources, _dest = [a for a in args if not a.startswith("--")]
        for src in sources:
            if src.startswith("docker/"):
                continue
            target = context / src
            if (REPO / src).is_dir():
                shutil.copytree(REPO / src, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / src, target)
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            "--disable-pip-version-check", "-w", str(wheels), str(context)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("samsa_broker-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
        names = zf.namelist()
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "samsa = broker.cli:main" in (site / entry_points).read_text()
    # A `samsa` launcher that sees only the wheel's code (-I: no cwd, no user site, no PYTHONPATH),
    # plus the venv's third-party dependencies.
    deps = [p for p in sys.path if p.endswith("site-packages")]
    launcher = tmp_path / "bin" / "samsa"
    launcher.parent.mkdir()
    launcher.write_text(f"#!{sys.executable} -I\n"
                        "import sys\n"
                        f"sys.path[:0] = {[str(site), *deps]!r}\n"
                        "import broker\n"
                        "assert broker.__file__.startswith(sys.path[0]), broker.__file__\n"
                        "from broker.cli import main\n"
                        "sys.exit(main())\n")
    launcher.chmod(0o755)
    port = free_port()
    env = clean_env(KAFKA_LISTENERS=f"PLAINTEXT://127.0.0.1:{port}", KAFKA_LOG_DIRS=str(tmp_path / "d"),
                    SAMSA_BIN=str(launcher))
    ep = Entrypoint(env, log=tmp_path / "log")
    entrypoints.append(ep)
    try:
        wait_healthy(f"127.0.0.1:{port}", ep.proc)
    except AssertionError:
        raise AssertionError((tmp_path / "log").read_text()[-4000:]) from None
    assert metadata_brokers(port) == [(1, "127.0.0.1", port)]
    assert ep.stop() == 0


def test_compose_file_services_and_ports():
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed; the compose file is checked with it")
    doc = yaml.safe_load(COMPOSE.read_text())
    services = doc["services"]
    assert set(services) == {"samsa", "spark-master", "spark-worker", "events", "streaming-job",
                             "etcd", "samsa-1", "samsa-2", "samsa-3"}
    # the three-broker profile: etcd + brokers 1..3, each with its node id and host port
    for i in (1, 2, 3):
        node = services[f"samsa-{i}"]
        assert node["profiles"] == ["cluster"] and node["depends_on"] == ["etcd"]
        assert node["environment"]["KAFKA_NODE_ID"] == str(i)
        assert node["environment"]["KAFKA_SAMSA_METADATA_ETCD_ENDPOINTS"] == "http://etcd:2379"
        assert node["environment"]["KAFKA_ADVERTISED_LISTENERS"].endswith(f"EXTERNAL://localhost:3909{i}")
        assert node["ports"] == [f"3909{i}:29092"]
    assert services["etcd"]["profiles"] == ["cluster"] and "http://etcd:2379" in services["etcd"]["command"]
    # nothing to pull: etcd is built from docker/etcd, the brokers with the samsa service's build
    assert services["etcd"]["build"]["context"] == "docker/etcd" and services["etcd"]["pull_policy"] == "build"
    assert all(services[f"samsa-{i}"]["build"] == services["samsa"]["build"] for i in (1, 2, 3))
    samsa = services["samsa"]
    env = samsa["environment"]
    listeners = dict(item.split("://") for item in env["KAFKA_LISTENERS"].split(","))
    advertised = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert listeners == {"INTERNAL": "0.0.0.0:9092", "EXTERNAL": "0.0.0.0:29092"}
    assert advertised == {"INTERNAL": "samsa:9092", "EXTERNAL": "localhost:29092"}
    assert samsa["ports"] == ["29092:29092", "8090:8090"] and samsa["build"] == {"context": ".", "network": "host"}
    assert samsa["environment"]["KAFKA_SAMSA_HTTP_LISTENER"] == "http://0.0.0.0:8090"
    job = services["streaming-job"]
    command = " ".join(job["command"])
    assert "python3 -m spark_jobs.streaming_aggregate" in command
    assert "--master spark://spark-master:7077 --bootstrap samsa:9092" in command
    assert "SAMSA_SPARK_KAFKA_JARS" not in command  # the connector comes from spark.jars.packages
    assert job["depends_on"]["samsa"] == {"condition": "service_healthy"}
    assert services["spark-worker"]["command"][-1] == "spark://spark-master:7077"
    assert services["spark-master"]["image"] == services["spark-worker"]["image"] == job["image"]
    assert re.fullmatch(r"apache/spark:4\.0\.\d+-python3", job["image"])


def test_every_source_folder_is_a_package_the_image_installs():
    """The image installs with `pip install .` (not editable): a folder of modules without an
    __init__.py would be missing from it (broker/replica once was), so every folder holding
    Python modules is a package that setuptools' discovery, as pyproject.toml configures it, finds."""
    from setuptools import find_packages

    found = set(find_packages(str(REPO), include=["broker*", "protocol*", "coordinator*", "spark_jobs*"]))
    folders = {str(p.parent.relative_to(REPO)).replace("/", ".")
               for top in ("broker", "protocol", "coordinator", "spark_jobs") for p in (REPO / top).rglob("*.py")
               if "__pycache__" not in p.parts}
    assert folders <= found, sorted(folders - found)
    assert "include = [\"broker*\", \"protocol*\", \"coordinator*\", \"spark_jobs*\"]" in (REPO / "pyproject.toml").read_text()
