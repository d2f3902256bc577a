"""A Samsa broker as a child process, exactly as users run it (``python -m broker serve``): the
fixtures' broker (broker/testing/plugin.py) and each broker of the dev cluster (broker/testing/local_cluster.py).
Its own module so the dev cluster need not import the pytest plugin that uses it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from broker.control.client import BrokerClock, Faults, Links, SamsaControl, refused
from broker.control.healthcheck import healthcheck
from .ports import free_port


class SamsaBroker:
    """A broker child process; ``restart`` keeps the data dir and port.

    ``properties``: the server.properties text given to ``samsa serve --config``. By default an
    empty file, so the broker starts from Kafka's code defaults (group.initial.rebalance.delay.ms
    3000), as the tests were written for; ``None`` runs ``samsa serve`` without a file, as
    ./scripts/serve.sh and the image do (Kafka's quick-start settings). ``overrides`` are KAFKA_*
    variables either way."""

    def __init__(self, data_dir: str | os.PathLike, port: int | None = None,
                 overrides: dict[str, str] | None = None, log_path: str | None = None,
                 control: bool = True, topics: dict[str, int] | None = None,
                 properties: str | None = "") -> None:
        self.properties = properties
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        if control and "samsa.control.listener" not in self.overrides:
            self.overrides["samsa.control.listener"] = f"http://127.0.0.1:{free_port()}"
        self.topics = dict(topics or {})
        self.log_path = Path(log_path) if log_path else self.data_dir.parent / f"samsa-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self._control: SamsaControl | None = None

    @property
    def control_url(self) -> str | None:
        return self.overrides.get("samsa.control.listener")

    def _control_call(self, op: str, args: dict) -> object:
        if self.control_url is None:
            return refused("this broker was started without samsa.control.listener, so it takes no faults "
                           "and its clock cannot move; start it with control=True")(op, args)
        if self._control is None:
            self._control = SamsaControl(self.control_url, connect_wait=5.0)
        return self._control._call(op, args)

    @property
    def faults(self) -> Faults:
        return Faults(self._control_call)

    @property
    def clock(self) -> BrokerClock:
        return BrokerClock(self._control_call)

    @property
    def links(self) -> Links:
        """This broker's cut links (a cluster's partitions: LocalCluster.partition/isolate/heal)."""
        return Links(self._control_call)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> str:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers)
        try:
            admin.create_topics([NewTopic(name, partitions, 1, topic_configs=dict(configs or {}))])
        except TopicAlreadyExistsError:
            pass
        finally:
            admin.close()
        return name

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

    def start(self, timeout: float = 20.0) -> SamsaBroker:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "broker", "serve"]
        if self.properties is not None:
            props = self.data_dir.parent / f"server-{self.port}.properties"
            props.write_text(self.properties)
            command += ["--config", str(props)]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(command, env=self.env(),
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}; log:\n{self.read_log()}")
            if healthcheck(self.bootstrap_servers, timeout=0.5):
                for name, partitions in self.topics.items():
                    self.create_topic(name, partitions)
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
        if self._control is not None:
            self._control.close()
            self._control = None
        return code

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def restart(self, sig: int = signal.SIGTERM) -> SamsaBroker:
        self.stop(sig)
        return self.start()
