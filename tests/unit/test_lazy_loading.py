"""The broker loads API handler modules and message classes on first use (start-up speed, issue 23):
the static indexes that make that possible must stay complete and agree with discovery."""
from __future__ import annotations

import pkgutil
import re
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
            "        'broker.log.partition', 'coordinator.txn.producer_state', 'broker.log.segment', 'protocol.records',\n"
            "        'kafka.protocol.metadata.find_coordinator', 'importlib.resources', 'zipfile')\n"
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


def test_samsa_serve_loads_structlog_after_its_first_answers(tmp_path) -> None:
    """``samsa serve`` (broker/common/structlog_import.py): building and starting a fresh single
    node, with the serving, listener and Metadata handler modules, imports no structlog; its
    start-up lines are written at once; loading it afterwards configures it as before."""
    code = ("import sys\n"
            "from protocol.kafka_import import skip_client_package_init\n"
            "skip_client_package_init()\n"
            "from broker.common import structlog_import as si\n"
            "assert si.defer_structlog()\n"
            "assert si.configure_when_loaded(False, 'INFO')\n"
            "from broker.common.config import BrokerConfig\n"
            "from broker.server.broker_server import Broker\n"
            f"b = Broker(BrokerConfig({{'log.dirs': {str(tmp_path)!r}}}))\n"
            "b.start()\n"
            "import broker.server.serving, broker.network.listeners, broker.network.faults, broker.apis.metadata\n"
            "import broker.server.startup\n"
            "loaded = [m for m in sys.modules if m.startswith('structlog.') or m == 'datetime']\n"
            "assert not loaded and type(sys.modules['structlog']).__name__ == '_DeferredStructlog', loaded\n"
            "import structlog\n"
            "structlog.get_logger('t').info('early', k=1)\n"
            "assert 'structlog.dev' not in sys.modules\n"
            "si.load_structlog()\n"
            "import structlog\n"
            "assert 'structlog.dev' in sys.modules and structlog.is_configured()\n"
            "assert structlog.get_config()['processors'][-1].__class__.__name__ == 'PlainConsoleRenderer'\n"
            "structlog.get_logger('t').info('late', k=1)\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True)
    lines = out.stderr.splitlines()
    assert [ln for ln in lines if "logs loaded" in ln], out.stderr
    assert [ln.split(" ", 1)[1] for ln in lines[-2:]] == [
        "[info     ] early                          k=1", "[info     ] late                           k=1"]


def test_early_log_lines_are_structlogs_lines() -> None:
    """The stand-in's loggers write before structlog is loaded what the configured structlog
    writes (the samples of console_render.py, every level, filtering, an exception), in order."""
    code = r'''
import sys, re
from broker.common import structlog_import as si
assert si.defer_structlog()
assert si.configure_when_loaded(False, "INFO")
import structlog
import broker.common.console_render as cr
log = structlog.get_logger("samsa.test")
def calls(log):
    for s in cr._SAMPLES:
        s = {k: v for k, v in s.items() if k not in ("timestamp", "level", "event")}
        log.info("sample", **s)
    log.debug("hidden")
    log.warning("warned", a=1)
    log.warn("warned again", a="x y")
    log.error("erred", b=None)
    log.critical("critical", c=[1, 2])
    log.info("a list", partitions=[("t", 0)], tricky="it's \"q\"", exception="not plain: ConsoleRenderer")
print("---", file=sys.stderr)
calls(log)
assert "structlog.dev" in sys.modules   # the one ConsoleRenderer event loaded it
print("---", file=sys.stderr)
calls(log)
try:
    raise ValueError("boom")
except ValueError:
    log.exception("failed")
'''
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True)
    _, early, late = out.stderr.split("---\n")
    strip = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z ", re.M)
    assert len(strip.findall(early)) == 9 and len(early.splitlines()) == 10   # the last line: the exception text
    assert strip.sub("", early) == strip.sub("", late.split("failed")[0].rsplit("\n", 1)[0] + "\n")
    assert "ValueError: boom" in late


def test_early_line_widths_and_stamp_are_structlogs() -> None:
    import datetime

    from broker.common.console_render import console_renderer
    from broker.common.structlog_import import EVENT_WIDTH, LEVEL_WIDTH, iso_utc

    renderer = console_renderer()
    assert (renderer.level_width, renderer.event_width) == (LEVEL_WIDTH, EVENT_WIDTH)
    for ns in (0, 1_780_000_000_000_000_000, 1_780_000_000_123_456_789, 1_780_000_000_000_000_999,
               1_780_000_000_999_999_999, 951_782_400_000_001_000):
        dt = datetime.datetime.fromtimestamp(ns // 1000 / 1e6, tz=datetime.timezone.utc)
        dt = dt.replace(microsecond=ns // 1000 % 1_000_000)
        assert iso_utc(ns) == dt.isoformat().replace("+00:00", "Z")


def test_load_json_reads_every_schema_as_importlib_resources_does() -> None:
    """protocol/kafka_import.py's stand-in ``read_text`` (kafka-python's ``load_json`` without
    ``importlib.resources`` at start-up) gives every schema's text as the real one does, and the
    same errors; a served start imports neither ``importlib.resources`` nor ``zipfile``."""
    import importlib
    import importlib.resources
    import os

    import pytest

    from protocol import schema_messages
    from protocol.kafka_import import _ResourcesStandIn

    stand_in = _ResourcesStandIn("importlib.resources")
    packages = ["kafka.protocol.schemas.resources", schema_messages._SCHEMAS]
    for package in packages:
        module = importlib.import_module(package) if isinstance(package, str) else package
        directory = list(module.__spec__.submodule_search_locations or [os.path.dirname(module.__file__)])[0]
        names = [n for n in os.listdir(directory) if n.endswith(".json")]
        assert names
        for name in names:
            assert stand_in.read_text(package, name) == importlib.resources.read_text(package, name)
        with pytest.raises(FileNotFoundError):
            stand_in.read_text(package, "NoSuchMessage.json")
        with pytest.raises(ValueError):
            stand_in.read_text(package, "sub/NoSuchMessage.json")
    code = ("import sys\n"
            "from protocol.kafka_import import skip_client_package_init\n"
            "skip_client_package_init()\n"
            "import broker.server.startup, kafka.protocol.metadata, protocol.schema_messages\n"
            "assert 'importlib.resources' not in sys.modules and 'zipfile' not in sys.modules\n"
            "import importlib.resources\n"
            "assert sys.modules['kafka.protocol.schemas.load_json'].importlib.resources is importlib.resources\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_plain_serve_arguments_are_what_argparse_makes_of_them() -> None:
    """``samsa serve`` with plain arguments starts without argparse (broker/cli.py): the same
    config file, overrides and log format as argparse gives; anything else goes to argparse."""
    import pytest

    from broker.cli import command_parser, plain_serve_args

    plain = [["serve"], ["serve", "--json-logs"], ["serve", "--config", "a.properties"],
             ["serve", "--config=a.properties", "--config", "b"], ["serve", "--config="],
             ["serve", "--config", ""], ["serve", "--override", "num.partitions=3", "--override=a=-1", "--json-logs"],
             ["serve", "--json-logs", "--json-logs", "--override", "x=y=z", "--config", "c d"]]
    for argv in plain:
        args = command_parser().parse_args(argv)
        assert plain_serve_args(argv) == (args.config, args.override, args.json_logs), argv
    to_argparse = [[], ["serve", "-h"], ["serve", "--help"], ["serve", "--conf", "a"], ["serve", "--json"],
                   ["serve", "--config"], ["serve", "--config", "-x"], ["serve", "--override", "--json-logs"],
                   ["serve", "--json-logs=1"], ["serve", "x"], ["serve", "--"], ["healthcheck"], ["ctl", "now"]]
    for argv in to_argparse:
        assert plain_serve_args(argv) is None, argv
    with pytest.raises(SystemExit):
        command_parser().parse_args(["serve", "--config", "-x"])
    code = ("import sys\n"
            "import broker.cli\n"
            "broker.cli._serve_with = lambda *a: print(a) or 0\n"
            "assert broker.cli.main(['serve', '--override', 'a=b']) == 0\n"
            "assert 'argparse' not in sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], check=True, timeout=60, capture_output=True, text=True)
    assert out.stdout.strip() == "(None, ['a=b'], False)"
