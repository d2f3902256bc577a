"""The console's search box and its times in headless Chromium: the header's search finds topics
and groups by a piece of their name (without JavaScript too: a GET form), and a time is shown in
the browser's zone with the UTC time on hover."""
from __future__ import annotations

import datetime
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

from broker.testing import SamsaBroker
from tests.support.console_browser import browser, console_broker, rows, shot  # noqa: F401
from tests.support.clienthelpers import PARTITIONS, create_topic


def test_search_and_local_times(console_broker: SamsaBroker, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver = browser
    bootstrap = console_broker.bootstrap_servers
    base = console_broker.overrides["samsa.http.listener"]
    tag = uuid.uuid4().hex[:6]
    for name in (f"Orders-{tag}", f"orders-eu-{tag}", f"payments-{tag}"):
        create_topic(bootstrap, name, PARTITIONS)
    for group in (f"orders-audit-{tag}", f"billing-{tag}"):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        c.commit(offsets=[TopicPartition(f"payments-{tag}", 0, 0)], asynchronous=False)
        c.close()

    driver.get(base + "/")  # type: ignore[attr-defined]
    box = driver.find_element(By.ID, "search")  # type: ignore[attr-defined]
    box.send_keys("ORDERS-")
    box.send_keys(Keys.ENTER)
    found = [r[0] for r in rows(driver, "found-topics") if r[0].endswith(tag)]
    assert found == [f"Orders-{tag}", f"orders-eu-{tag}"]
    assert [r[0] for r in rows(driver, "found-groups") if r[0].endswith(tag)] == [f"orders-audit-{tag}"]
    shot(driver, "search")
    driver.get(f"{base}/search?q=billing-{tag}")  # type: ignore[attr-defined]
    assert [r[0] for r in rows(driver, "found-groups")] == [f"billing-{tag}"] and rows(driver, "found-topics") == []

    # a record's time in the browser's zone (Tokyo: UTC+9, no daylight saving), UTC on hover
    ts = 1_700_000_000_123            # 2023-11-14 22:13:20.123 UTC
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(f"payments-{tag}", value=b"x", partition=0, timestamp=ts)
    p.flush(30)
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Tokyo"})  # type: ignore[attr-defined]
    driver.get(f"{base}/topics/payments-{tag}/records?partition=0")  # type: ignore[attr-defined]
    shown = driver.execute_script(  # type: ignore[attr-defined]
        "var t = document.querySelector('table.records-browse time'); return [t.textContent, t.title];")
    assert shown == ["2023-11-15 07:13:20.123", "2023-11-14 22:13:20.123 UTC"]
    assert datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc).hour == 22
