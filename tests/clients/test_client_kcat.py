"""kcat (Debian's package, librdkafka 2.0.2 at the time of writing) against a real Samsa broker.

Skipped when kcat is not installed (scripts/test.sh installs it with apt-get when it can).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import time

import pytest
from confluent_kafka import Producer

from tests.support.clienthelpers import (CODECS, PARTITIONS, advertised_apis, all_batches, create_topic, fetch_batches, librdkafka_codec_gate, new_topic)

KCAT = shutil.which("kcat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat; "
                                                     "scripts/test.sh installs it when it can)")


def kcat(*args: str, input: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    proc = subprocess.run([KCAT, *args], input=input, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    return proc


def kcat_librdkafka_version() -> tuple[int, ...]:
    out = subprocess.run([KCAT, "-V"], capture_output=True, timeout=10).stdout.decode()
    m = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", out)
    assert m, out
    return tuple(int(x) for x in m.groups())


def consume_json(bootstrap: str, topic: str, partition: int, *extra: str) -> list[dict]:
    """Every record of a partition from the beginning, as kcat's JSON lines."""
    out = kcat("-b", bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", "beginning", "-e", "-J", "-q", *extra)
    return [json.loads(line) for line in out.stdout.decode().splitlines() if line.strip()]


def sent_codecs(stderr: bytes) -> set[str]:
    """What librdkafka actually put on the wire, from its `-d msg` lines
    ("Produce MessageSet with N message(s) (... PID{...}, <codec>)")."""
    return set(re.findall(rb"Produce MessageSet with \d+ message\(s\) \(.*, (\w+)\)", stderr))


def test_metadata_listing(broker3) -> None:
    topic = new_topic("k-meta")
    create_topic(broker3.bootstrap_servers, topic)
    props = dict(line.split("=", 1) for line in (broker3.data_dir / "meta.properties").read_text().splitlines()
                 if "=" in line and not line.startswith("#"))
    node = int(props["node.id"])
    md = json.loads(kcat("-b", broker3.bootstrap_servers, "-L", "-J").stdout)
    assert md["brokers"] == [{"id": node, "name": broker3.bootstrap_servers}]
    assert md["controllerid"] == node
    assert md["originating_broker"]["id"] == node
    (t,) = [t for t in md["topics"] if t["topic"] == topic]
    assert "error" not in t
    assert t["partitions"] == [{"partition": p, "leader": node, "replicas": [{"id": node}], "isrs": [{"id": node}]}
                               for p in range(PARTITIONS)]

    # one topic asked by name
    md = json.loads(kcat("-b", broker3.bootstrap_servers, "-L", "-J", "-t", topic).stdout)
    assert [t["topic"] for t in md["topics"]] == [topic]
    assert len(md["topics"][0]["partitions"]) == PARTITIONS


def test_produce_consume_round_trip(broker3) -> None:
    topic = new_topic("k-rt")
    create_topic(broker3.bootstrap_servers, topic)
    for part in range(PARTITIONS):
        lines = b"".join(b"key-%d-%d:value-%d-%d\n" % (part, i, part, i) for i in range(300))
        kcat("-b", broker3.bootstrap_servers, "-P", "-t", topic, "-p", str(part), "-K:",
             "-H", f"part={part}", "-H", "origin=kcat", "-X", "acks=all", input=lines)
    for part in range(PARTITIONS):
        got = [(m["partition"], m["offset"], m["key"], m["payload"], m["headers"], m["tstype"])
               for m in consume_json(broker3.bootstrap_servers, topic, part)]
        assert got == [(part, i, f"key-{part}-{i}", f"value-{part}-{i}", ["part", str(part), "origin", "kcat"],
                        "create") for i in range(300)]
    # kcat's own -o -N (N from the end) relies on the latest offset being last + 1
    tail = kcat("-b", broker3.bootstrap_servers, "-C", "-t", topic, "-p", "1", "-o", "-2", "-e", "-q",
                "-f", "%o %s\n").stdout.decode().splitlines()
    assert tail == ["298 value-1-298", "299 value-1-299"]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(broker3, acks: str) -> None:
    topic = new_topic(f"k-acks{acks}")
    create_topic(broker3.bootstrap_servers, topic)
    lines = b"".join(b"k%d:v%d\n" % (i, i) for i in range(500))
    kcat("-b", broker3.bootstrap_servers, "-P", "-t", topic, "-p", "2", "-K:", "-X", f"acks={acks}", input=lines)
    got = [(m["offset"], m["key"], m["payload"]) for m in consume_json(broker3.bootstrap_servers, topic, 2)]
    assert got == [(i, f"k{i}", f"v{i}") for i in range(500)]


@pytest.mark.parametrize("codec", list(CODECS))
def test_codec_round_trip(broker3, codec: str, request: pytest.FixtureRequest) -> None:
    topic = new_topic(f"k-codec-{codec}")
    create_topic(broker3.bootstrap_servers, topic)
    lines = b"".join(b"key-%d:value-%d-%s\n" % (i, i, b"p" * 200) for i in range(400))
    proc = kcat("-b", broker3.bootstrap_servers, "-P", "-t", topic, "-p", "0", "-K:", "-z", codec,
                "-X", "linger.ms=50", "-d", "msg", input=lines)
    got = [(m["offset"], m["key"], m["payload"]) for m in consume_json(broker3.bootstrap_servers, topic, 0)]
    assert got == [(i, f"key-{i}", f"value-{i}-{'p' * 200}") for i in range(400)]

    batches = all_batches(broker3.bootstrap_servers, topic, 0)
    assert all(b.crc_ok for b in batches)
    sent = sent_codecs(proc.stderr)
    # stored as sent: whatever kcat put on the wire is what the broker serves
    assert {b.compression for b in batches} == {CODECS.get(c.decode(), 0) for c in sent}

    gate = librdkafka_codec_gate(kcat_librdkafka_version(), codec, advertised_apis(broker3.bootstrap_servers))
    if gate:
        request.applymarker(pytest.mark.xfail(reason=gate, strict=True))
    assert sent == {codec.encode()}


def test_consume_compressed_batches_from_another_client(broker3) -> None:
    """kcat decodes each codec as produced by librdkafka 2.16 (confluent-kafka)."""
    topic = new_topic("k-decomp")
    create_topic(broker3.bootstrap_servers, topic)
    for part, codec in enumerate(["gzip", "snappy", "zstd"]):
        p = Producer({"bootstrap.servers": broker3.bootstrap_servers, "compression.type": codec, "linger.ms": 20})
        for i in range(200):
            p.produce(topic, key=b"k%d" % i, value=b"%s-%d-" % (codec.encode(), i) + b"z" * 100, partition=part)
        assert p.flush(10) == 0
        assert {b.compression for b in all_batches(broker3.bootstrap_servers, topic, part)} == {CODECS[codec]}
        got = [(m["offset"], m["key"], m["payload"]) for m in consume_json(broker3.bootstrap_servers, topic, part)]
        assert got == [(i, f"k{i}", f"{codec}-{i}-" + "z" * 100) for i in range(200)]


def test_query_offset_by_timestamp(broker3) -> None:
    topic = new_topic("k-query")
    create_topic(broker3.bootstrap_servers, topic)
    t0 = int(time.time() * 1000) - 60_000
    p = Producer({"bootstrap.servers": broker3.bootstrap_servers, "linger.ms": 500})
    for i in range(3):
        p.produce(topic, value=b"early-%d" % i, partition=1, timestamp=t0 - 1000 + i)
    assert p.flush(10) == 0
    for i in range(10):  # one batch, timestamps t0 .. t0+90 at offsets 3..12
        p.produce(topic, value=b"timed-%d" % i, partition=1, timestamp=t0 + 10 * i)
    assert p.flush(10) == 0
    _, hw, batches = fetch_batches(broker3.bootstrap_servers, topic, 1)
    assert (hw, [(b.base_offset, b.record_count) for b in batches]) == (13, [(0, 3), (3, 10)])

    def query(ts: int) -> int:
        out = json.loads(kcat("-b", broker3.bootstrap_servers, "-Q", "-J", "-t", f"{topic}:1:{ts}").stdout)
        entry = out[topic]["1"]
        assert "error" not in entry, entry
        return entry["offset"]

    assert query(t0 + 45) == 8
    assert query(t0 + 50) == 8
    assert query(t0) == 3
    assert query(t0 - 999) == 1
    assert query(t0 + 90) == 12
    assert query(t0 + 91) == -1
    # and kcat starts consuming at a timestamp (-o s@ts) from that record inside the batch
    out = kcat("-b", broker3.bootstrap_servers, "-C", "-t", topic, "-p", "1", "-o", f"s@{t0 + 45}", "-e", "-q",
               "-f", "%o %s %T\n").stdout.decode().splitlines()
    assert out == [f"{3 + i} timed-{i} {t0 + 10 * i}" for i in range(5, 10)]
