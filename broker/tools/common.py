"""What every tool shares: Kafka-style argument parsing (usage errors print the message and the
help on stderr and exit 1, as Kafka's ``CommandLineUtils.printUsageAndExit`` does), the
``--command-config`` properties file mapped onto librdkafka's (confluent-kafka) or kafka-python's
configuration, and Java's ``HashMap`` iteration order, which decides the row order of several of
Kafka's outputs.

The tools are Kafka clients: nothing here (or in any tool) imports the rest of ``broker``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")


class ToolError(Exception):
    """A failure a tool reports with its own message and exit code (no stack trace)."""

    def __init__(self, message: str, exit_code: int = 1, stream: str = "stdout") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stream = stream


class KafkaArgumentParser(argparse.ArgumentParser):
    """argparse with Kafka's conventions: ``--opt value`` and ``--opt=value``; an error prints the
    message, then the help, on stderr and exits 1 (argparse's own convention is exit 2)."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """Parsed arguments; ``--version`` prints the version and exits 0 before any other check,
        as Kafka's ``CommandLineUtils.maybePrintHelpOrVersion`` does."""
        parsed = super().parse_args(args, namespace)
        if getattr(parsed, "version", False):
            print(KAFKA_VERSION)
            sys.exit(0)
        return parsed

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^unrecognized arguments: ", "", message)
        self.usage_and_exit(message)

    def usage_and_exit(self, message: str) -> NoReturn:
        sys.stderr.write(message + "\n")
        self.print_help(sys.stderr)
        sys.exit(1)


def tool_parser(prog: str, description: str) -> KafkaArgumentParser:
    parser = KafkaArgumentParser(prog=prog, description=description, allow_abbrev=True,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-server", metavar="server to connect to",
                        help="REQUIRED: The Kafka server(s) to connect to (host:port[,host:port]).")
    parser.add_argument("--command-config", metavar="command config property file",
                        help="Property file containing configs to be passed to the client "
                             "(security.protocol, sasl.*, ssl.*).")
    parser.add_argument("--version", action="store_true", help="Display Kafka version.")
    return parser


def require_bootstrap(parser: KafkaArgumentParser, args: argparse.Namespace,
                      missing: str | None = None, usage: str = 'Missing required argument "[bootstrap-server]"') -> str:
    """``--version`` answered, else the ``--bootstrap-server`` value; without one, Kafka's usage
    error (``usage``, with the help; ``missing``: the tool's own message, printed without the
    help, as Kafka's tools that throw it do)."""
    if args.version:
        print(KAFKA_VERSION)
        sys.exit(0)
    if not args.bootstrap_server:
        if missing is not None:
            raise ToolError(missing, stream="stderr")
        parser.usage_and_exit(usage)
    return str(args.bootstrap_server)


def check_describe_options(parser: KafkaArgumentParser, args: argparse.Namespace) -> None:
    """The --describe checks Kafka's ConsumerGroupCommandOptions and ShareGroupCommandOptions
    share: a group scope, at most one of --members/--offsets/--state, --state without a value."""
    if not args.group and not args.all_groups:
        parser.usage_and_exit("Option [describe] takes one of these options: [group], [all-groups]")
    if sum(1 for x in (args.members, args.offsets, args.state is not None) if x) > 1:
        parser.usage_and_exit("Option [describe] takes at most one of these options: [members], [offsets], [state]")
    if args.state:
        parser.usage_and_exit("Option [describe] does not take a value for [state]")


# the Kafka release whose tools' flags and output these follow (printed by --version)
KAFKA_VERSION = "4.1.0 (Samsa's kafka tools)"


# --- properties files -------------------------------------------------------------------------

def load_properties(path: str) -> dict[str, str]:
    """A Java properties file (``key=value`` or ``key: value`` lines, ``#``/``!`` comments,
    backslash line continuations), as Kafka's ``Utils.loadProps`` reads it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ToolError(f"{path} ({e.strerror})") from e
    return parse_properties(text)


def parse_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        m = re.match(r"((?:[^=:\s\\]|\\.)+)\s*[=:\s]\s*(.*)$", logical)
        if m:
            props[m.group(1).replace("\\", "")] = m.group(2).rstrip()
        elif logical:
            props[logical] = ""
        logical = ""
    return props


def parse_key_values(items: Iterable[str]) -> dict[str, str]:
    """``--property``/``--producer-property`` style ``key=value`` arguments."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ToolError(f"Invalid command line properties: {item}")
        out[key.strip()] = value.strip()
    return out


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_JAAS_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
}

# Java-client properties with no librdkafka counterpart (or one mapped below): never passed on
_JAVA_ONLY = {
    "sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
    "ssl.keystore.type", "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
    "default.api.timeout.ms", "request.timeout.ms", "retries", "partitioner.class", "interceptor.classes",
    "ssl.enabled.protocols", "ssl.protocol", "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class", "metric.reporters", "client.dns.lookup",
    "connections.max.idle.ms", "max.block.ms", "delivery.timeout.ms", "buffer.memory",
    "ssl.key.password",
}


def librdkafka_config(props: dict[str, str], bootstrap: str | None) -> dict[str, Any]:
    """Kafka client properties (a ``--command-config`` file) as librdkafka's configuration.

    Mapped: ``sasl.jaas.config`` with PlainLoginModule/ScramLoginModule ``username``/``password``
    -> ``sasl.username``/``sasl.password``; ``ssl.truststore.location`` -> ``ssl.ca.location``
    when PEM (``ssl.truststore.type=PEM`` or a PEM file), converted to PEM when PKCS12;
    ``ssl.keystore.*`` (PKCS12) passes through; an empty ``ssl.endpoint.identification.algorithm``
    -> ``none``. librdkafka's own names (``ssl.ca.location``, ``ssl.certificate.location``,
    ``ssl.key.location``, ``sasl.username``...) are accepted as they are. Java-only properties
    (serializers, JKS) are dropped; JKS stores are refused with a message saying what to use."""
    conf: dict[str, Any] = {}
    for key, value in props.items():
        if key in _JAVA_ONLY:
            continue
        conf[key] = value
    jaas = props.get("sasl.jaas.config")
    if jaas:
        module = jaas.strip().split()[0] if jaas.strip() else ""
        options = dict(_JAAS_OPTION.findall(jaas))
        if module in _JAAS_MODULES or "username" in options:
            if "username" in options:
                conf["sasl.username"] = options["username"]
            if "password" in options:
                conf["sasl.password"] = options["password"]
        elif "OAuthBearerLoginModule" in module:
            conf.setdefault("sasl.oauthbearer.method", "default")
    if "ssl.truststore.location" in props and "ssl.ca.location" not in props:
        conf["ssl.ca.location"] = pem_truststore(props["ssl.truststore.location"],
                                                 props.get("ssl.truststore.type", ""),
                                                 props.get("ssl.truststore.password"))
    if "ssl.keystore.location" in props:
        kind = props.get("ssl.keystore.type", "").upper()
        if kind == "JKS" or props["ssl.keystore.location"].lower().endswith(".jks"):
            raise ToolError("JKS key stores are not supported: use a PKCS12 ssl.keystore.location "
                            "(ssl.keystore.type=PKCS12) or PEM ssl.certificate.location/ssl.key.location")
        if kind == "PEM":
            conf.pop("ssl.keystore.location")
            conf.pop("ssl.keystore.password", None)
            conf["ssl.certificate.location"] = props["ssl.keystore.location"]
            conf["ssl.key.location"] = props["ssl.keystore.location"]
    if "ssl.key.password" in props:
        conf["ssl.key.password"] = props["ssl.key.password"]
    if conf.get("ssl.endpoint.identification.algorithm", None) == "":
        conf["ssl.endpoint.identification.algorithm"] = "none"
    if "sasl.mechanism" in conf:
        conf["sasl.mechanism"] = conf["sasl.mechanism"].upper()
    if bootstrap:
        conf["bootstrap.servers"] = bootstrap
    # librdkafka's log lines are not part of Kafka's tools' output (its retries of an unreachable broker
    # would fill stderr); failures reach the tool as errors of its requests
    conf.setdefault("log_level", 2)
    conf.setdefault("error_cb", fail_fast_on_authentication)
    return conf


def fail_fast_on_authentication(err: Any) -> None:
    """librdkafka retries a failed SASL/TLS login until the request times out; Kafka's Java client
    gives up at once (an authentication failure is fatal), and so does a tool: message, exit 1."""
    from confluent_kafka import KafkaError

    if err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
        sys.stdout.flush()
        sys.stderr.write(f"ERROR {err.str()}\n")
        sys.stderr.flush()
        os._exit(1)


def pem_truststore(location: str, kind: str, password: str | None) -> str:
    """A PEM file of the trust store's certificates for librdkafka's ``ssl.ca.location``: a PEM
    store as it is, a PKCS12 store converted (into a temporary file); JKS is refused."""
    kind = kind.upper()
    try:
        with open(location, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ToolError(f"ssl.truststore.location {location}: {e.strerror}") from e
    if kind == "PEM" or (not kind and b"-----BEGIN CERTIFICATE-----" in data):
        return location
    if kind == "JKS" or data[:4] == b"\xfe\xed\xfe\xed":
        raise ToolError("JKS trust stores are not supported: use a PEM file (ssl.truststore.type=PEM "
                        "or ssl.ca.location) or a PKCS12 store (ssl.truststore.type=PKCS12)")
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.append(store.cert.certificate)
    fd, path = tempfile.mkstemp(prefix="kafka-truststore-", suffix=".pem")
    with os.fdopen(fd, "wb") as out:
        for cert in certs:
            out.write(cert.public_bytes(Encoding.PEM))
    return path


def client_config(args: argparse.Namespace, bootstrap: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    props = load_properties(args.command_config) if args.command_config else {}
    props.update(extra or {})
    return librdkafka_config(props, bootstrap)


def with_known_keys(factory: Callable[[dict[str, Any]], T], conf: dict[str, Any]) -> T:
    """``factory(conf)``, dropping (with a warning on stderr) each property librdkafka does not
    know: a Java client's properties file may name Java-only settings, which Kafka's tools log as
    "supplied but not used"."""
    from confluent_kafka import KafkaException

    conf = dict(conf)
    while True:
        try:
            return factory(conf)
        except (KafkaException, ValueError) as e:
            m = re.search(r"No such configuration property: \"([^\"]+)\"", str(e))
            if not m or m.group(1) not in conf:
                raise ToolError(f"Invalid client configuration: {e}") from e
            sys.stderr.write(f"WARN The configuration '{m.group(1)}' was supplied but isn't a known config.\n")
            conf.pop(m.group(1))


# how long a tool waits for the cluster, as Kafka's admin client's default.api.timeout.ms
CONNECT_TIMEOUT_S = 60.0


def admin_client(conf: dict[str, Any]) -> Any:
    """A connected confluent-kafka AdminClient. It asks for metadata in one-second steps, serving
    the client's error callbacks between them, so a failed TLS handshake or SASL login ends the
    tool at once (librdkafka would retry it until the request timed out); an unreachable cluster
    fails after CONNECT_TIMEOUT_S with the client's error."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    admin = with_known_keys(AdminClient, conf)
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    retriable = (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN)
    while True:
        try:
            admin.list_topics(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            return admin
        except KafkaException as e:
            admin.poll(0)
            err = e.args[0] if e.args else None
            if time.monotonic() >= deadline or getattr(err, "code", lambda: None)() not in retriable:
                raise


def kafka_python_config(props: dict[str, str], bootstrap: str) -> dict[str, Any]:
    """The same properties as kafka-python's configuration (the tools built on kafka-python's
    admin client: kafka-features, kafka-transactions)."""
    conf: dict[str, Any] = {"bootstrap_servers": bootstrap.split(",")}
    if "security.protocol" in props:
        conf["security_protocol"] = props["security.protocol"].upper()
    if "sasl.mechanism" in props:
        conf["sasl_mechanism"] = props["sasl.mechanism"].upper()
    options = dict(_JAAS_OPTION.findall(props.get("sasl.jaas.config", "")))
    user = options.get("username", props.get("sasl.username"))
    password = options.get("password", props.get("sasl.password"))
    if user is not None:
        conf["sasl_plain_username"] = user
    if password is not None:
        conf["sasl_plain_password"] = password
    ca = props.get("ssl.ca.location")
    if ca is None and "ssl.truststore.location" in props:
        ca = pem_truststore(props["ssl.truststore.location"], props.get("ssl.truststore.type", ""),
                            props.get("ssl.truststore.password"))
    if ca:
        conf["ssl_cafile"] = ca
    if "ssl.certificate.location" in props:
        conf["ssl_certfile"] = props["ssl.certificate.location"]
    if "ssl.key.location" in props:
        conf["ssl_keyfile"] = props["ssl.key.location"]
    if "ssl.key.password" in props:
        conf["ssl_password"] = props["ssl.key.password"]
    if props.get("ssl.endpoint.identification.algorithm", "https").lower() in ("", "none"):
        conf["ssl_check_hostname"] = False
    if "client.id" in props:
        conf["client_id"] = props["client.id"]
    return conf


# --- Java's orders ------------------------------------------------------------------------------

def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def java_string_hash(s: str) -> int:
    """``String.hashCode()``: over UTF-16 code units, 32-bit wrap-around."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode()``: 31 * (31 + partition) + topic.hashCode()."""
    return _int32(31 * (31 + partition) + java_string_hash(topic))


def java_hashmap_order(items: Sequence[T], hash_of: Callable[[T], int]) -> list[T]:
    """The iteration order of a ``java.util.HashMap`` (default capacity, load factor 0.75) into
    which ``items`` were put in this order: by bucket of the final table, then insertion order
    (resizes keep a bucket's relative order). Kafka's tools print several maps in this order."""
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2
    keyed = []
    for index, item in enumerate(items):
        h = hash_of(item) & 0xFFFFFFFF
        keyed.append(((h ^ (h >> 16)) & (capacity - 1), index, item))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [item for _, _, item in keyed]


# --- running -----------------------------------------------------------------------------------

def run(main: Callable[[list[str]], int], argv: list[str] | None = None,
        failure: Callable[[BaseException], ToolError] | None = None) -> None:
    """Run a tool's ``main``: its return value is the exit code; a ToolError prints its message
    (where Kafka's tool prints it) and exits with its code; any other error of the client library
    becomes ``failure(error)`` (the tool's own wording of an unexpected failure); Ctrl-C exits 130
    quietly."""
    try:
        try:
            code = main(sys.argv[1:] if argv is None else argv)
        except (ToolError, KeyboardInterrupt, BrokenPipeError, SystemExit):
            raise
        except Exception as e:
            raise (failure or default_failure)(e) from e
    except ToolError as e:
        stream = sys.stderr if e.stream == "stderr" else sys.stdout
        stream.write(str(e) + "\n")
        stream.flush()
        code = e.exit_code
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    sys.stdout.flush()
    os._exit(code) if _has_native_threads() else sys.exit(code)


def default_failure(exc: BaseException) -> ToolError:
    return ToolError(f"ERROR {error_message(exc)}", stream="stderr")


def error_message(exc: BaseException) -> str:
    """An error's message as Kafka's client would carry it: the broker's text when it sent one,
    else the client library's description."""
    err = exc.args[0] if exc.args else None
    if err is not None and hasattr(err, "str"):
        return str(err.str())
    description = getattr(exc, "description", None)
    return str(exc) or str(description or type(exc).__name__)


def _has_native_threads() -> bool:
    """librdkafka's handles may keep background threads; a tool that is done exits at once."""
    return "confluent_kafka" in sys.modules
