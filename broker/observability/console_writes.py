"""The console's writes: produce a record, create and delete a topic, edit a topic's configs —
only with ``samsa.http.console.write.enable=true`` (the console has no authentication, so it
is off by default: the forms are absent and every POST is answered 403).

Each write is the Kafka request a client would send (Produce to the partition's leader;
CreateTopics, DeleteTopics and IncrementalAlterConfigs to this broker), over the broker-to-broker
client to the inter-broker listener: the same validation, the same Topology
(broker/metadata/topology.py) and so the same outcome in a cluster as kafka-topics.sh or a
producer would get, with Kafka's error names shown as they are answered.

Cross-site request forgery: a POST is accepted only when its ``Origin`` (or, without one, its
``Referer``) names the host the request was sent to — a page on another site cannot post a
form here, since browsers set ``Origin`` on every cross-origin POST. A POST with neither
header is refused too (curl users add ``-H 'Origin: http://<host>'``).
"""
from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlsplit

import trio
from kafka.partitioner.default import murmur2
from kafka.protocol.admin import CreateTopicsRequest, DeleteTopicsRequest, IncrementalAlterConfigsRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from protocol.errors import ErrorCode
from broker.replica.client import BrokerConnection, BrokerConnectionError

from .markup import e

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

WRITE_ENABLE = "samsa.http.console.write.enable"
TIMEOUT_S = 15.0
PRODUCE_VERSION, CREATE_TOPICS_VERSION, DELETE_TOPICS_VERSION, ALTER_CONFIGS_VERSION = 9, 7, 5, 1
TOPIC_RESOURCE, SET, DELETE = 2, 0, 1


class WriteRefused(Exception):
    """A write the console will not make: (HTTP status, why)."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


def enabled(broker: Broker) -> bool:
    return str(broker.config.get(WRITE_ENABLE, False)).lower() == "true"


def _header(scope: dict, name: bytes) -> str | None:
    for k, v in scope.get("headers", []):
        if k.lower() == name:
            return v.decode("latin-1")
    return None


def check_post(broker: Broker, scope: dict) -> None:
    """Refuse (403) unless writes are enabled and the POST comes from a page of this console."""
    if not enabled(broker):
        raise WriteRefused(403, f"the console's writes are off ({WRITE_ENABLE}=false)")
    host = _header(scope, b"host")
    source = _header(scope, b"origin") or _header(scope, b"referer")
    if not host or not source or source == "null" or urlsplit(source).netloc.lower() != host.lower():
        raise WriteRefused(403, "cross-site request refused: the Origin (or Referer) must be this console")


def form(body: bytes) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}


def _error(code: int, message: str | None = None) -> str:
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = str(code)
    return f"{name}{': ' + message if message else ''}"


async def _call(broker: Broker, node: int, request: object, version: int) -> object:
    from .cluster_view import _endpoint

    endpoint = _endpoint(broker, node)
    if endpoint is None:
        raise WriteRefused(503, f"broker {node} has no endpoint")
    conn = BrokerConnection(*endpoint, f"samsa-console-{broker.node_id}", timeout_s=TIMEOUT_S)
    try:
        with trio.fail_after(TIMEOUT_S):
            return await conn.call(request, version)
    except (BrokerConnectionError, trio.TooSlowError) as exc:
        raise WriteRefused(503, f"broker {node} did not answer: {exc!r}") from None
    finally:
        with trio.CancelScope(shield=True):
            await conn.close()


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    """``name: value`` per line (``name`` alone: an empty value)."""
    out = []
    for line in text.splitlines():
        if line.strip():
            name, _, value = line.partition(":")
            out.append((name.strip(), value.strip().encode()))
    return out


async def produce(broker: Broker, topic: str, f: dict[str, str]) -> tuple[int, int]:
    """One record to ``topic`` (the partition given, else the key's as Kafka's default
    partitioner hashes it, else any): (partition, offset) as the leader answers acks=all."""
    parts = broker.topology.partitions(topic)
    if not parts:
        raise WriteRefused(404, f"no topic {topic}")
    key = f["key"].encode() if f.get("key") else None
    value = f.get("value", "").encode() if not f.get("null_value") else None
    chosen = f.get("partition", "").strip()
    if chosen:
        if not chosen.isdigit() or int(chosen) >= len(parts):
            raise WriteRefused(400, f"partition {chosen} does not exist (0..{len(parts) - 1})")
        partition = int(chosen)
    elif key is not None:
        partition = (murmur2(key) & 0x7FFFFFFF) % len(parts)
    else:
        partition = random.randrange(len(parts))
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    builder.append(0, int(time.time() * 1000), key, value, parse_headers(f.get("headers", "")))
    P = ProduceRequest.TopicProduceData
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=int(TIMEOUT_S * 1000), topic_data=[
        P(name=topic, partition_data=[P.PartitionProduceData(index=partition, records=bytes(builder.build()))])])
    leader = next((p.leader for p in parts if p.index == partition), -1)
    if leader < 0:
        raise WriteRefused(503, f"{topic}-{partition} has no leader")
    resp = await _call(broker, leader, req, PRODUCE_VERSION)
    rp = resp.responses[0].partition_responses[0]   # type: ignore[attr-defined]
    if rp.error_code:
        raise WriteRefused(400, f"Produce answered {_error(rp.error_code, rp.error_message)}")
    return partition, rp.base_offset


def _configs(text: str) -> list[tuple[str, str | None]]:
    """``name=value`` per line; ``name=`` (nothing after the '=') removes the override."""
    out: list[tuple[str, str | None]] = []
    for line in text.splitlines():
        if line.strip():
            name, eq, value = line.partition("=")
            if not eq:
                raise WriteRefused(400, f"not name=value: {line!r}")
            out.append((name.strip(), value.strip() or None))
    return out


async def create_topic(broker: Broker, f: dict[str, str]) -> str:
    name = f.get("name", "").strip()
    try:
        partitions, rf = int(f.get("partitions") or -1), int(f.get("replication_factor") or -1)
    except ValueError:
        raise WriteRefused(400, "partitions and replication factor are numbers") from None
    CT = CreateTopicsRequest.CreatableTopic
    configs = [CT.CreatableTopicConfig(name=k, value=v) for k, v in _configs(f.get("configs", "")) if v is not None]
    req = CreateTopicsRequest(timeout_ms=int(TIMEOUT_S * 1000), validate_only=False, topics=[
        CT(name=name, num_partitions=partitions, replication_factor=rf, assignments=[], configs=configs)])
    resp = await _call(broker, broker.node_id, req, CREATE_TOPICS_VERSION)
    t = resp.topics[0]   # type: ignore[attr-defined]
    if t.error_code:
        raise WriteRefused(400, f"CreateTopics answered {_error(t.error_code, t.error_message)}")
    await _until(lambda: len(broker.topology.partitions(name)) == t.num_partitions and
                 all(p.leader >= 0 for p in broker.topology.partitions(name)))
    return name


async def delete_topic(broker: Broker, topic: str, f: dict[str, str]) -> None:
    if f.get("confirm", "") != topic:
        raise WriteRefused(400, "type the topic's name to confirm its deletion")
    req = DeleteTopicsRequest(topic_names=[topic], timeout_ms=int(TIMEOUT_S * 1000))
    resp = await _call(broker, broker.node_id, req, DELETE_TOPICS_VERSION)
    r = resp.responses[0]   # type: ignore[attr-defined]
    if r.error_code:
        raise WriteRefused(400, f"DeleteTopics answered {_error(r.error_code, getattr(r, 'error_message', None))}")
    await _until(lambda: broker.topology.topic(topic) is None)


async def alter_configs(broker: Broker, topic: str, f: dict[str, str]) -> list[tuple[str, str | None]]:
    changes = _configs(f.get("configs", ""))
    if not changes:
        raise WriteRefused(400, "no config given")
    R = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(validate_only=False, resources=[R(
        resource_type=TOPIC_RESOURCE, resource_name=topic,
        configs=[R.AlterableConfig(name=k, config_operation=SET if v is not None else DELETE, value=v)
                 for k, v in changes])])
    resp = await _call(broker, broker.node_id, req, ALTER_CONFIGS_VERSION)
    r = resp.responses[0]   # type: ignore[attr-defined]
    if r.error_code:
        raise WriteRefused(400, f"IncrementalAlterConfigs answered {_error(r.error_code, r.error_message)}")
    return changes


async def _until(check: object, timeout_s: float = 5.0) -> None:
    """Wait until this broker's Topology shows a change (a cluster's arrives through etcd)."""
    with trio.move_on_after(timeout_s):
        while not check():    # type: ignore[operator]
            await trio.sleep(0.05)


# -- forms (shown only when writes are enabled) -----------------------------------------------
def produce_form(topic: str, partitions: int) -> str:
    opts = '<option value="">by key (or any)</option>' + "".join(
        f'<option value="{p}">{p}</option>' for p in range(partitions))
    return (f'<h2>Produce a record</h2><form method="post" id="produce-form" action="/topics/{quote(topic, safe="")}/produce">'
            f'<label>Partition <select name="partition" id="p-partition">{opts}</select></label>'
            f'<label>Key <input name="key" id="p-key" size="16"></label><br>'
            f'<label>Value<br><textarea name="value" id="p-value" rows="4" cols="60"></textarea></label>'
            f'<label>Headers (name: value per line)<br><textarea name="headers" id="p-headers" rows="4" cols="30">'
            f'</textarea></label><br><button type="submit" id="p-go">Produce</button></form>')


def topic_admin_forms(topic: str) -> str:
    t = quote(topic, safe="")
    return (f'<h2>Edit configs</h2><form method="post" id="config-form" action="/topics/{t}/config">'
            f'<label>name=value per line (name= removes the override)<br>'
            f'<textarea name="configs" id="c-configs" rows="3" cols="50"></textarea></label><br>'
            f'<button type="submit" id="c-go">Apply</button></form>'
            f'<h2>Delete topic</h2><form method="post" id="delete-form" action="/topics/{t}/delete">'
            f'<label>Type the topic\'s name to confirm <input name="confirm" id="d-confirm"></label>'
            f'<button type="submit" id="d-go">Delete {e(topic)}</button></form>')


def create_form() -> str:
    return ('<h2>Create topic</h2><form method="post" id="create-form" action="/topics">'
            '<label>Name <input name="name" id="n-name"></label>'
            '<label>Partitions <input name="partitions" id="n-partitions" size="4" placeholder="default"></label>'
            '<label>Replication factor <input name="replication_factor" id="n-rf" size="4" placeholder="default">'
            '</label><label>Configs (name=value per line)<br><textarea name="configs" id="n-configs" rows="2" '
            'cols="40"></textarea></label><button type="submit" id="n-go">Create</button></form>')


def _page_for(topic: str, text: str, ok: bool = True) -> str:
    cls = "done" if ok else "missing"
    return f'<div class="{cls}" id="write-result">{e(text)}</div>' + \
        (f'<p><a href="/topics/{quote(topic, safe="")}">Back to {e(topic)}</a></p>' if topic else "")


async def handle(broker: Broker, scope: dict, receive: object, path: str) -> tuple[int, str, str] | None:
    """The write pages and POSTs: (HTTP status, title, content), or None when ``path`` is not one.
    GET ``/create-topic``, ``/topics/<t>/produce``, ``/topics/<t>/admin``: the forms;
    POST ``/topics``, ``/topics/<t>/produce``, ``/topics/<t>/config``, ``/topics/<t>/delete``."""
    from broker.network.http_serve import read_body

    method = scope.get("method", "GET").upper()
    topic, action = "", ""
    if path in ("/create-topic", "/topics"):
        action = "create"
    elif path.startswith("/topics/"):
        topic, _, action = path[len("/topics/"):].rpartition("/")
        if action not in ("produce", "admin", "config", "delete") or not topic:
            return None
    else:
        return None
    if method == "GET":
        if path == "/topics" or action in ("config", "delete"):
            return None
        if not enabled(broker):
            return 403, "Writes are off", f'<div class="missing" id="write-result">The console\'s writes are off: ' \
                f'set {WRITE_ENABLE}=true to produce records and create, delete or configure topics.</div>'
        if action == "create":
            return 200, "Create topic", create_form()
        if broker.topology.topic(topic) is None:
            return 404, "Not found", f"<h2>Not found: {e(topic)}</h2>"
        if action == "produce":
            return 200, f"Produce to {topic}", produce_form(topic, len(broker.topology.partitions(topic)))
        return 200, f"Administer {topic}", topic_admin_forms(topic)
    if method != "POST":
        return 405, "Method not allowed", "<h2>Method not allowed</h2>"
    try:
        check_post(broker, scope)
        try:
            f = form(await read_body(receive))   # type: ignore[arg-type]
        except ValueError as exc:
            raise WriteRefused(413, str(exc)) from None
        if action == "create":
            name = await create_topic(broker, f)
            return 200, f"Created {name}", _page_for(name, f"Created topic {name}.")
        if broker.topology.topic(topic) is None:
            raise WriteRefused(404, f"no topic {topic}")
        if action == "produce":
            partition, offset = await produce(broker, topic, f)
            t = quote(topic, safe="")
            return 200, f"Produced to {topic}", _page_for(topic, f"Produced to partition {partition} at offset {offset}.") + \
                f'<p><a id="produced" href="/topics/{t}/records/{partition}/{offset}">See the record</a> · ' \
                f'<a href="/topics/{t}/produce">Produce another</a></p>'
        if action == "config":
            changes = await alter_configs(broker, topic, f)
            return 200, f"Configured {topic}", _page_for(topic, "Applied: " + ", ".join(
                f"{k}={v}" if v is not None else f"{k} (override removed)" for k, v in changes))
        if action == "delete":
            await delete_topic(broker, topic, f)
            return 200, f"Deleted {topic}", _page_for("", f"Deleted topic {topic}.") + '<p><a href="/">Overview</a></p>'
    except WriteRefused as exc:
        return exc.status, "Refused", _page_for(topic, str(exc), ok=False)
    return None
