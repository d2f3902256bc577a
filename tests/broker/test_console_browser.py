"""The web console in a real browser: headless Chromium (Debian's ``chromium`` driven through
``chromium-driver`` by Selenium) loads the pages of a live broker with a running consumer group and
an open transaction, and the test reads what a person would see. Screenshots are kept under
``tests/artifacts/`` (or ``$SAMSA_TEST_ARTIFACTS``)."""
from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Callable

import pytest
from confluent_kafka import Producer

from broker.testing import SamsaBroker
from tests.support.clienthelpers import PARTITIONS, consume_and_commit, create_topic, produce
from tests.support.console_browser import (_browser_missing, navigate, browser, console_broker, rows, shot,  # noqa: F401
                                           text_of, wait_until)

pytestmark = pytest.mark.skipif(_browser_missing() is not None, reason=_browser_missing() or "")


def test_console_shows_group_lag_topics_and_transactions(console_broker: SamsaBroker, browser: object) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    bootstrap = console_broker.bootstrap_servers
    base = console_broker.overrides["samsa.http.listener"]
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"billing-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 30)
    consumer = consume_and_commit(bootstrap, topic, group, 30)
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "invoices-writer"})
    try:
        produce(bootstrap, topic, 12, start=30)           # 4 more per partition: 14 records each
        txn.init_transactions(30)
        txn.begin_transaction()
        txn.produce(topic, value=b"pending invoice", partition=0)
        txn.flush(30)                                     # the transaction stays open at offset 14 of p0
        # lag is kafka_exporter's: high watermark less committed, so p0's open record counts (5, 4, 4)

        driver.get(base + "/")
        groups = {r[0]: r for r in rows(driver, "groups")}
        assert groups[group][1:] == ["Stable", "consumer/range", "1", "3", "13", "1"]   # coordinator: 1
        topics = {r[0]: r for r in rows(driver, "topics")}
        assert topics[topic][1:3] == ["3", "43"]
        assert rows(driver, "brokers")[0][0] == "1"
        (t,) = rows(driver, "transactions")
        assert t[:2] == ["invoices-writer", "Ongoing"] and t[-2:] == [f"{topic}[0]", "1"]
        shot(driver, "overview")

        navigate(driver, driver.find_element(By.LINK_TEXT, group).click)
        assert text_of(driver, "group-state") == "Stable"
        (member,) = rows(driver, "members")
        assert member[2] == "obs-consumer" and member[4] == f"{topic}: 0,1,2"
        assert rows(driver, "offsets") == [[topic, "0", "10", "15", "5"], [topic, "1", "10", "14", "4"],
                                           [topic, "2", "10", "14", "4"]]
        (gen,) = rows(driver, "timeline")
        assert gen[0] == "1" and member[0] in gen[5] and gen[7] == f"{member[0]}: 3 partitions"
        assert int(gen[3]) >= 0
        # live refresh: three more records and the page shows lag 16 without a reload
        produce(bootstrap, topic, 3, start=42)
        wait_until(lambda: text_of(driver, "total-lag") == "16")
        assert rows(driver, "offsets") == [[topic, "0", "10", "16", "6"], [topic, "1", "10", "15", "5"],
                                           [topic, "2", "10", "15", "5"]]
        shot(driver, "group")

        driver.get(base + f"/topics/{topic}")
        parts = rows(driver, "partitions")
        # partition 0 holds the open transaction's record at 14: HW 16, LSO 14
        assert [r[:8] for r in parts] == [
            ["0", "1", "1", "1", "0", "16", "14", "16"],
            ["1", "1", "1", "1", "0", "15", "15", "15"],
            ["2", "1", "1", "1", "0", "15", "15", "15"]]
        values = {(r[0], r[1]): r[4] for r in rows(driver, "records")}
        # the last 20 committed records of each partition: offsets 0-13 of p0 (below the LSO), 0-14 of p1 and p2
        assert len(values) == 14 + 15 + 15
        assert values[("1", "14")] == "value-43" and values[("2", "14")] == "value-44"
        assert values[("0", "13")] == "value-39"
        assert "pending invoice" not in driver.page_source and "value-42" not in values.values()
        open_txn = [r for r in rows(driver, "producers") if r[5] == "14"]
        assert len(open_txn) == 1 and open_txn[0][0] == "0"
        shot(driver, "topic")
    finally:
        consumer.close()
        del txn


def timeline_drawing(driver: object) -> tuple[list[str], list[tuple[str, int, list[str]]], list[tuple[str, str]]]:
    """The timeline SVG's lanes (member ids), spans (member, generation, partitions) and marks
    (member, join/leave/expire), read in one script call."""
    lanes, spans, marks = driver.execute_script(  # type: ignore[attr-defined]
        "var s = document.querySelector('#timeline-chart svg');"
        "return [Array.from(s.querySelectorAll('g.lane')).map(g => g.dataset.member),"
        " Array.from(s.querySelectorAll('rect.span')).map(r => [r.dataset.member, r.dataset.generation, r.dataset.partitions]),"
        " Array.from(s.querySelectorAll('path.mark')).map(p => [p.dataset.member, p.classList[1]])];")
    return lanes, [(m, int(g), p.split(",")) for m, g, p in spans], [(m, k) for m, k in marks]


_CRASHING_MEMBER = """
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": "crashing-consumer",
              "session.timeout.ms": 1500, "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[3]])
while True:
    c.poll(0.2)
    if c.assignment():
        print("assigned", flush=True)
"""


def test_rebalance_timeline_join_expire_leave(console_broker: SamsaBroker, browser: object, tmp_path: Path) -> None:
    """Each generation of a group with the member that joined, the one whose session expired (a
    SIGKILLed process) and the one that left, in the console's rebalance timeline."""
    import subprocess
    import sys

    from confluent_kafka import Consumer

    driver = browser
    bootstrap = console_broker.bootstrap_servers
    base = console_broker.overrides["samsa.http.listener"]
    topic, group = f"events-{uuid.uuid4().hex[:6]}", f"analytics-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)

    def member(client_id: str) -> Consumer:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
        c.subscribe([topic])
        return c

    def generations() -> list[list[str]]:
        driver.get(f"{base}/groups/{group}")  # type: ignore[attr-defined]
        return [r for r in rows(driver, "timeline") if r[0].isdigit()]

    def serve_until(members: list[Consumer], check: Callable[[], bool], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in members:
                m.poll(0.05)
            if check():
                return
        raise AssertionError(f"timed out; timeline: {generations()}")

    first = member("first-consumer")
    serve_until([first], lambda: len(first.assignment()) == PARTITIONS)
    crashing = subprocess.Popen([sys.executable, "-c", _CRASHING_MEMBER, bootstrap, group, topic],
                                stdout=subprocess.PIPE, text=True)
    try:
        serve_until([first], lambda: len(first.assignment()) < PARTITIONS)        # generation 2: two members
        crashing.kill()                                                           # no LeaveGroup: it expires
        crashing.wait(10)
        serve_until([first], lambda: len(first.assignment()) == PARTITIONS)      # generation 3
        third = member("leaving-consumer")
        serve_until([first, third], lambda: len(third.assignment()) > 0)         # generation 4
        third.close()                                                             # LeaveGroup
        serve_until([first], lambda: len(first.assignment()) == PARTITIONS and len(generations()) >= 5)
        gens = {int(r[0]): r for r in generations()}
        shot(driver, "timeline")
        shot(driver, "timeline-chart", "timeline-chart")
    finally:
        if crashing.poll() is None:
            crashing.kill()
        first.close()
    # columns: generation, started, completed, duration, why, joined, left, assignment
    assert sorted(gens) == [1, 2, 3, 4, 5]
    assert "first-consumer" in gens[1][5] and "joined: new member" in gens[1][4]
    assert "crashing-consumer" in gens[2][5] and gens[2][6] == ""
    assert "crashing-consumer" in gens[3][6] and "session timeout expired" in gens[3][6]
    assert "expired: session timeout expired" in gens[3][4]
    assert "leaving-consumer" in gens[4][5]
    assert "leaving-consumer" in gens[5][6] and "left:" in gens[5][4]
    for n in (2, 4):   # two members share the 3 partitions
        assert sorted(int(x.rsplit(": ", 1)[1].split()[0]) for x in gens[n][7].split("\n")) == [1, 2]
    for n in (1, 3, 5):
        assert gens[n][7].endswith(": 3 partitions") and "\n" not in gens[n][7]
    assert all(int(r[3]) >= 0 for r in gens.values())
    # the same sequence drawn as a timeline: one lane per member, one span per generation it was in
    lanes, spans, marks = timeline_drawing(driver)
    ids = {gens[1][5].split(" (")[0]: "first", gens[2][5].split(" (")[0]: "crashing", gens[4][5].split(" (")[0]: "leaving"}
    assert set(lanes) == set(ids)
    assert {ids[m]: sorted(g for mm, g, _ in spans if mm == m) for m in ids} == {
        "first": [1, 2, 3, 4, 5], "crashing": [2], "leaving": [4]}
    held = {(ids[m], g): ps for m, g, ps in spans}
    assert len(held[("first", 1)]) == PARTITIONS and len(held[("first", 2)]) + len(held[("crashing", 2)]) == PARTITIONS
    assert sorted((ids[m], kind) for m, kind in marks) == [
        ("crashing", "expire"), ("crashing", "join"), ("first", "join"), ("leaving", "join"), ("leaving", "leave")]
    log = console_broker.read_log()
    assert "member expired" in log and "session timeout expired" in log
