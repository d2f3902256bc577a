"""The pytest plugin users get from the ``samsa`` pytest11 entry point, run as a user's own suite:
a separate pytest process in a folder without this repository's conftest.py, so the fixtures can
only come from the installed entry point. The manual's examples of it are run verbatim by
tests/docs/test_examples.py.
"""
from __future__ import annotations

import time
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import broker.testing
from broker.cli import healthcheck
from broker.testing import SamsaBroker

pytest_plugins = ["pytester"]


def test_entry_point_names_the_fixture_module():
    eps = [ep for ep in entry_points(group="pytest11") if ep.name == "samsa"]
    assert [ep.value for ep in eps] == ["broker.testing"], \
        "the samsa pytest11 entry point is missing: reinstall the package (pip install -e .)"
    assert eps[0].load() is broker.testing


def test_fixtures_are_defined_once_here(pytestconfig: pytest.Config):
    # The entry point and the top-level conftest.py must not both define them (pytest --fixtures
    # crashes on duplicates): conftest registers the plugin only when the entry point did not.
    pm = pytestconfig.pluginmanager
    assert pm.get_plugin("samsa") is broker.testing
    assert [p for p in pm.get_plugins() if p is broker.testing] == [broker.testing]


def test_users_suite_gets_all_three_fixtures(pytester: pytest.Pytester):
    pytester.makepyfile(test_user="""
        import socket
        from pathlib import Path

        from broker.cli import healthcheck

        PORTS = Path(__file__).with_name("ports.txt")

        def test_fresh_broker(samsa_broker):
            host, port = samsa_broker.bootstrap_servers.split(":")
            assert host == "127.0.0.1" and healthcheck(samsa_broker.bootstrap_servers)
            with PORTS.open("a") as f:
                f.write(port + "\\n")

        def test_another_fresh_broker(samsa_broker, samsa_broker_session):
            assert samsa_broker.bootstrap_servers != samsa_broker_session.bootstrap_servers
            with PORTS.open("a") as f:
                f.write(samsa_broker.bootstrap_servers.split(":")[1] + "\\n")

        def test_session_broker_is_shared(samsa_broker_session):
            assert healthcheck(samsa_broker_session.bootstrap_servers)

        def test_topic_factory(samsa_broker, samsa_topic):
            from kafka import KafkaConsumer
            a = samsa_topic(partitions=3)
            b = samsa_topic(name="named-topic", retention_ms=60000)
            assert a.startswith("topic-") and b == "named-topic"
            consumer = KafkaConsumer(bootstrap_servers=samsa_broker.bootstrap_servers)
            assert (consumer.partitions_for_topic(a), consumer.partitions_for_topic(b)) == ({0, 1, 2}, {0})
            consumer.close()
    """)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    ports = (pytester.path / "ports.txt").read_text().split()
    assert len(set(ports)) == 2
    for port in ports:  # each per-test broker was stopped when its test ended
        assert not healthcheck(f"127.0.0.1:{port}", timeout=1)


def test_fixture_brokers_start_ready_and_stop_cleanly(tmp_path: Path, record_property):
    """Each start waits until the broker answers ApiVersions; each SIGTERM stop exits 0. How long a
    start takes is a benchmark figure (``python -m bench``: start-up against the reference broker),
    not a bound here: a timed assertion fails on a loaded CI machine and proves nothing about speed."""
    times = []
    for i in range(3):
        t0 = time.monotonic()
        b = SamsaBroker(tmp_path / f"d{i}").start()
        times.append(round(time.monotonic() - t0, 3))
        assert healthcheck(b.bootstrap_servers)
        assert b.stop() == 0
    record_property("samsa_start_to_ready_s", times)
