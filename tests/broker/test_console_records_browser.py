"""The console's record browser in headless Chromium (the fixtures of test_console_browser.py):
seeking to an offset and to a timestamp shows exactly the records there, a key filter finds
exactly the matching records among 10,000, one record's page shows its headers, producer and
transaction status, and read_committed hides an aborted record that read_uncommitted marks."""
from __future__ import annotations

import time
import uuid
from urllib.parse import quote

from confluent_kafka import Producer

from broker.testing import SamsaBroker
from tests.support.console_browser import browser, console_broker, rows, shot, text_of, navigate  # noqa: F401
from tests.support.clienthelpers import PARTITIONS, create_topic


def _submit(driver: object, **fields: str) -> None:
    """Fill the browse form as a person would and press Show."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    for name, value in fields.items():
        el = driver.find_element(By.ID, f"f-{name}")  # type: ignore[attr-defined]
        if el.tag_name == "select":
            Select(el).select_by_value(value)
        else:
            el.clear()
            el.send_keys(value)
    navigate(driver, driver.find_element(By.ID, "f-go").click)  # type: ignore[attr-defined]


def test_seek_to_offset_and_timestamp(console_broker: SamsaBroker, browser: object) -> None:
    driver = browser
    bootstrap = console_broker.bootstrap_servers
    base = console_broker.overrides["samsa.http.listener"]
    topic = f"payments-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)
    t0 = (int(time.time()) - 3600) * 1000          # an hour ago, one record a second
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(40):
        p.produce(topic, key=f"k{i}".encode(), value=f'{{"payment": {i}, "amount": {i * 10}}}'.encode(),
                  partition=1, timestamp=t0 + i * 1000, headers=[("source", f"test-{i}".encode())])
    p.produce(topic, value=b"other partition", partition=0)
    p.flush(30)

    driver.get(f"{base}/topics/{quote(topic)}")  # type: ignore[attr-defined]
    from selenium.webdriver.common.by import By
    navigate(driver, driver.find_element(By.ID, "browse").click)  # type: ignore[attr-defined]
    _submit(driver, partition="1", seek="offset", offset="12", limit="5")
    got = rows(driver, "records-browse")
    assert [(r[0], r[1]) for r in got] == [("1", str(o)) for o in range(12, 17)]
    assert got[0][3] == "k12" and '"payment": 12' in got[0][4] and got[0][5] == "source: test-12"
    assert '{\n  "payment": 12,\n  "amount": 120\n}' == got[0][4]      # JSON pretty-printed
    assert "continue" in driver.page_source  # type: ignore[attr-defined]

    # ListOffsets' semantics: the first record whose timestamp is at or after the one asked for
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((t0 + 20_500) / 1000)) + ".500Z"
    _submit(driver, seek="timestamp", timestamp=stamp, limit="3")
    got = rows(driver, "records-browse")
    assert [(r[0], r[1], r[3]) for r in got] == [("1", "21", "k21"), ("1", "22", "k22"), ("1", "23", "k23")]
    shot(driver, "records-timestamp")
    # the continue link carries the next offset
    navigate(driver, driver.find_element(By.ID, "continue").click)  # type: ignore[attr-defined]
    assert [r[1] for r in rows(driver, "records-browse")] == ["24", "25", "26"]

    # all partitions from the end: the newest of each
    _submit(driver, partition="", seek="end", offset="", timestamp="", limit="2")
    got = rows(driver, "records-browse")
    assert [(r[0], r[1]) for r in got] == [("0", "0"), ("1", "38"), ("1", "39")]


def test_key_filter_among_10000_and_one_record(console_broker: SamsaBroker, browser: object) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    bootstrap = console_broker.bootstrap_servers
    base = console_broker.overrides["samsa.http.listener"]
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)
    needles = {137, 2024, 5000, 7777, 9999}
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    for i in range(10_000):
        key = b"customer-42" if i in needles else f"customer-{i % 1000 + 100}".encode()
        p.produce(topic, key=key, value=f"order {i}".encode(), headers=[("n", str(i).encode())])
        if i % 2000 == 0:
            p.poll(0)
    p.flush(60)
    # one aborted transaction with the same key: hidden from read_committed, marked otherwise
    tx = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    tx.init_transactions(30)
    tx.begin_transaction()
    tx.produce(topic, key=b"customer-42", value=b"order aborted")
    tx.flush(30)
    tx.abort_transaction(30)

    started = time.monotonic()
    driver.get(f"{base}/topics/{quote(topic)}/records")  # type: ignore[attr-defined]
    _submit(driver, seek="beginning", key="customer-42", limit="100")
    got = rows(driver, "records-browse")
    took = time.monotonic() - started
    assert sorted(r[4] for r in got) == sorted(f"order {i}" for i in needles)
    assert all(r[3] == "customer-42" for r in got) and len({r[0] for r in got}) == 1   # one partition by key
    assert "continue" not in driver.page_source  # type: ignore[attr-defined]  # scanned to the end
    assert took < 20, took
    shot(driver, "records-key-filter")
    shot(driver, "records-key-filter-content", "content")

    _submit(driver, isolation="read_uncommitted")
    got = rows(driver, "records-browse")
    assert len(got) == len(needles) + 1 and got[-1][4] == "order aborted" and got[-1][6] == "aborted"

    # one record whole: its headers, producer id and batch
    row = next(r for r in got if r[4] == "order 5000")
    navigate(driver, driver.find_element(By.LINK_TEXT, row[1]).click)  # type: ignore[attr-defined]
    assert text_of(driver, "rec-value") == "order 5000"
    assert text_of(driver, "rec-headers") == "n: 5000"
    assert text_of(driver, "rec-timestamp-type") == "CreateTime"
    assert text_of(driver, "rec-transaction") == "not transactional"
    assert text_of(driver, "rec-producer-id-epoch").split(" / ")[0].isdigit()   # idempotent: a producer id
    shot(driver, "record")

    # a value substring and a header filter
    driver.get(f"{base}/topics/{quote(topic)}/records?seek=beginning&value=der+999&limit=50")  # type: ignore[attr-defined]
    assert sorted(r[4] for r in rows(driver, "records-browse")) == sorted(
        f"order {i}" for i in range(10_000) if "der 999" in f"order {i}")
    driver.get(f"{base}/topics/{quote(topic)}/records?seek=beginning&header=n%3D4242&limit=50")  # type: ignore[attr-defined]
    assert [r[4] for r in rows(driver, "records-browse")] == ["order 4242"]
