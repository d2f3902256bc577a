"""The broker loads API handler modules and message classes on first use (start-up speed, issue 23):
the static indexes that make that possible must stay complete and agree with discovery."""
from __future__ import annotations

import pkgutil
import subprocess
import sys

import broker.apis
from broker.network.dispatch import HANDLERS, api_module, check_handlers
from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED_WITH_SHARE_GROUPS
from protocol.messages import INDEX, REQUESTS, RESPONSES, discover


def test_message_index_is_what_discovery_finds() -> None:
    assert INDEX == discover()


def test_lazy_tables_hold_the_discovered_classes() -> None:
    import kafka.protocol.admin
    from protocol.schema_messages import ShareFetchRequest
    assert REQUESTS[ApiKey.CREATE_TOPICS] is kafka.protocol.admin.CreateTopicsRequest
    assert RESPONSES[ApiKey.SHARE_FETCH].__name__ == "ShareFetchResponse"
    assert REQUESTS[ApiKey.SHARE_FETCH] is ShareFetchRequest
    assert set(REQUESTS) == set(RESPONSES) == set(INDEX)
    assert 4 not in REQUESTS and REQUESTS.get(4) is None   # LeaderAndIsr: no class, not served


def test_every_advertised_api_has_its_module_handler_and_rule() -> None:
    check_handlers(load=True)
    modules = {m.name for m in pkgutil.iter_modules(broker.apis.__path__) if not m.ispkg}
    assert modules == {k.name.lower() for k in SUPPORTED_WITH_SHARE_GROUPS}
    for key in SUPPORTED_WITH_SHARE_GROUPS:
        assert HANDLERS[key].__module__ == api_module(key)


def test_serving_imports_no_handler_module_until_its_api_is_requested() -> None:
    """In a fresh interpreter, as ``samsa serve`` loads: the dispatch table imports nothing."""
    code = ("import sys\n"
            "from protocol.kafka_import import skip_client_package_init\n"
            "skip_client_package_init()\n"
            "from broker.network.dispatch import HANDLERS, check_handlers\n"
            "check_handlers()\n"
            "import broker.apis\n"
            "assert not [m for m in sys.modules if m.startswith('broker.apis.') and '.shared' not in m], 'eager'\n"
            "assert 'kafka.protocol.admin' not in sys.modules\n"
            "HANDLERS[3]\n"
            "assert 'broker.apis.metadata' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_internal_topics_are_the_shells_topics() -> None:
    from broker.coordinator_runtime.group_runtime import GroupShell
    from broker.coordinator_runtime.share_state_runtime import ShareCoordinatorShell
    from broker.coordinator_runtime.txn_runtime import TxnShell
    from broker.server.broker_server import INTERNAL_TOPICS
    assert INTERNAL_TOPICS == (GroupShell.topic, TxnShell.topic, ShareCoordinatorShell.topic)


def test_inconsistent_coordinator_config_still_refuses_to_build_the_broker(tmp_path) -> None:
    import pytest

    from broker.common.config import BrokerConfig
    from broker.server.broker_server import Broker
    fresh = Broker(BrokerConfig({"log.dirs": str(tmp_path / "a")}))
    assert not fresh.coordinators_built
    assert fresh.groups is fresh.groups and fresh.__dict__["groups"] is fresh.groups
    with pytest.raises(ValueError, match="group.consumer.max.size"):
        Broker(BrokerConfig({"log.dirs": str(tmp_path / "b"), "group.consumer.max.size": "0"}))


def test_building_a_fresh_single_node_imports_no_cluster_security_or_cleaner_module(tmp_path) -> None:
    """Building and starting a fresh single node without an authorizer or SASL imports neither the
    metadata records (ACLs, SCRAM credentials), the replica fetcher and replica state (a
    cluster's), the fetch session cache (the first Fetch's), the old security file's migration,
    the log cleaner, the compression codecs (the first compressed batch's), kafka-python's
    ``ApiKey`` enum (faults and the request log name APIs from protocol/api_keys.py), its
    ``kafka.errors`` (protocol/kafka_import.py) nor the partition log with its producer state,
    segments and record-batch code (an empty log dir opens none); they load on first use."""
    code = ("import sys\n"
            "from protocol.kafka_import import skip_client_package_init\n"
            "skip_client_package_init()\n"
            "from broker.common.config import BrokerConfig\n"
            "from broker.server.broker_server import Broker\n"
            f"b = Broker(BrokerConfig({{'log.dirs': {str(tmp_path)!r}}}))\n"
            "b.start()\n"
            "import broker.server.serving, broker.network.listeners, broker.network.faults, broker.apis.metadata\n"
            "lazy = ('coordinator.metadata.records', 'coordinator.metadata.image', 'broker.replica.fetcher',\n"
            "        'broker.replica.fetch_session', 'broker.replica.state', 'broker.security.writes',\n"
            "        'broker.log.cleaner', 'cramjam', 'kafka.protocol.api_key', 'kafka.errors',\n"
            "        'broker.log.partition', 'coordinator.txn.producer_state', 'broker.log.segment', 'protocol.records')\n"
            "assert not [m for m in lazy if m in sys.modules], [m for m in lazy if m in sys.modules]\n"
            "from broker.security.acl import AclBinding\n"
            "from coordinator.metadata.records import AccessControlEntryRecord\n"
            "assert AclBinding is AccessControlEntryRecord\n"
            "from broker.replica.fetch_session import FetchSessionCache\n"
            "assert isinstance(b.replicas.fetch_sessions, FetchSessionCache) and 'fetch_sessions' in vars(b.replicas)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_api_names_are_kafka_pythons() -> None:
    """Faults and the request log name APIs from protocol/api_keys.py, as kafka-python's enum does."""
    from kafka.protocol.api_key import ApiKey

    from protocol.api_keys import api_name, api_names
    assert list(api_names().items()) == [(m.name, int(m)) for m in ApiKey]
    assert api_name(3) == "Metadata" and api_name(10_000) is None


def test_kafka_util_without_kafka_errors_still_raises_the_real_timeout() -> None:
    """protocol/kafka_import.py loads ``kafka.util`` beside a stand-in ``kafka.errors``: its
    ``Timer`` still raises kafka-python's own ``KafkaTimeoutError``, and a later import of
    ``kafka.errors`` is the real module."""
    code = ("import sys\n"
            "from protocol.kafka_import import skip_client_package_init\n"
            "skip_client_package_init()\n"
            "import kafka.util\n"
            "assert 'kafka.errors' not in sys.modules\n"
            "try:\n"
            "    raise kafka.util.KafkaTimeoutError('late')\n"
            "except Exception as e:\n"
            "    import kafka.errors\n"
            "    assert type(e) is kafka.errors.KafkaTimeoutError and str(e).endswith('late'), repr(e)\n"
            "    assert issubclass(kafka.errors.KafkaTimeoutError, kafka.errors.KafkaError)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
