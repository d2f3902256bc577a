"""The README's and the manual's examples, run verbatim: the pytest examples as a user's own suite
(a separate pytest process in a folder without this repository's conftest.py, so the fixtures can
only come from the installed ``samsa`` entry point), the first-client example as a script.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.doc_pages import code_blocks, page, section

pytest_plugins = ["pytester"]


def test_fixture_examples_run_as_a_users_suite(pytester: pytest.Pytester):
    examples = code_blocks(section(page("testing.md"), "## Using Samsa in your own tests"), "python")
    assert len(examples) == 2 and "kafka import" in examples[0] and "confluent_kafka import" in examples[1]
    pytester.makepyfile(test_kafka_python=examples[0], test_confluent_kafka=examples[1])
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_fault_and_clock_examples_run_as_a_users_suite(pytester: pytest.Pytester):
    examples = code_blocks(section(page("testing.md"), "## Faults and the clock"), "python")
    assert len(examples) == 5
    pytester.makepyfile(**{f"test_example_{i}": code for i, code in enumerate(examples)})
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=5)


@pytest.mark.slow  # ~17 s in CI's run
def test_partition_example_runs_as_a_users_suite(pytester: pytest.Pytester):
    from broker.testing.local_cluster import find_etcd

    if find_etcd() is None:
        pytest.skip("etcd is not installed (the 'etcd' extra or Debian's etcd-server): samsa_cluster needs it")
    examples = code_blocks(section(page("testing.md"), "## Network partitions"), "python")
    assert len(examples) == 1 and "samsa_cluster.isolate(" in examples[0]
    pytester.makepyfile(test_partition_example=examples[0])
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=1)


def test_readme_pytest_example_runs_as_a_users_suite(pytester: pytest.Pytester):
    examples = code_blocks(section(page("README.md"), "## Samsa in your tests"), "python")
    assert len(examples) == 1 and "def test_" in examples[0] and "samsa_broker" in examples[0]
    pytester.makepyfile(test_readme=examples[0])
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_first_client_example_prints_the_record(samsa_broker, tmp_path):
    """The README's and Getting started's kafka-python example (one text, checked below), run as a
    script against a fresh broker: only its address, localhost:9092, is replaced."""
    readme = code_blocks(section(page("README.md"), "## A first producer and consumer"), "python")
    guide = code_blocks(section(page("getting-started.md"), "## A first producer and consumer"), "python")
    assert len(readme) == 1 and readme == guide
    assert readme[0].count('"localhost:9092"') == 2
    script = tmp_path / "first_client.py"
    script.write_text(readme[0].replace('"localhost:9092"', repr(samsa_broker.bootstrap_servers)))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == "[b'hello, Samsa']\n"
