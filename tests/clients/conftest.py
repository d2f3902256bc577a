"""Brokers and certificates shared by several client-tier modules. Module-scoped fixtures: each
test module that asks for one gets its own broker, shared by that module's tests."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker, running_broker
from tests.support.clienthelpers import PARTITIONS
from tests.support.consumer_groups_support import BROKER_PROPS
from tests.support.security_support import Pki, make_pki


@pytest.fixture(scope="module")
def broker3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    """One broker per test module whose auto-created topics have 3 partitions; tests use
    their own topics (``new_topic``)."""
    with running_broker(tmp_path_factory.mktemp("samsa") / "data",
                        overrides={"num.partitions": str(PARTITIONS)}) as broker:
        yield broker


@pytest.fixture
def own_broker3(tmp_path: Path) -> Iterator[SamsaBroker]:
    """A broker of the test's own, for tests that restart or kill it."""
    with running_broker(tmp_path / "data", overrides={"num.partitions": str(PARTITIONS)}) as broker:
        yield broker


@pytest.fixture(scope="module")
def cbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    """The KIP-848 consumer-group tests' broker: fast sessions and heartbeats (BROKER_PROPS)."""
    with running_broker(tmp_path_factory.mktemp("cg-clients") / "data", overrides=BROKER_PROPS) as broker:
        yield broker


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A CA, a server certificate for localhost and client certificates (bench/tls.py)."""
    return make_pki(tmp_path_factory.mktemp("pki"))
