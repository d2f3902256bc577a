"""The console's writes in headless Chromium: with ``samsa.http.console.write.enable=true`` a
topic is created, a record produced (key, value, headers) and seen in the record browser, a
config edited and the topic deleted, each through the Kafka request a client would send; without
the switch the forms are absent and a POST is answered 403; a POST from another origin is 403."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from broker.testing import SamsaBroker, free_port, running_broker
from tests.support.console_browser import navigate, browser, console_broker, rows, shot, text_of  # noqa: F401


@pytest.fixture
def writable_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides={
            "samsa.http.listener": f"http://127.0.0.1:{free_port()}", "samsa.http.console.write.enable": "true",
            "num.partitions": "3"}) as broker:
        yield broker


def test_create_produce_configure_delete(writable_broker: SamsaBroker, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver = browser
    base = writable_broker.overrides["samsa.http.listener"]
    topic = f"console-{uuid.uuid4().hex[:6]}"

    def fill(**fields: str) -> None:
        for name, value in fields.items():
            el = driver.find_element(By.ID, name)  # type: ignore[attr-defined]
            if el.tag_name == "select":
                Select(el).select_by_value(value)
            else:
                el.clear()
                el.send_keys(value)

    driver.get(base + "/")  # type: ignore[attr-defined]
    navigate(driver, driver.find_element(By.ID, "create-topic").click)  # type: ignore[attr-defined]
    fill(**{"n-name": topic, "n-partitions": "2", "n-configs": "retention.ms=3600000"})
    navigate(driver, driver.find_element(By.ID, "n-go").click)  # type: ignore[attr-defined]
    assert text_of(driver, "write-result") == f"Created topic {topic}."
    navigate(driver, driver.find_element(By.LINK_TEXT, f"Back to {topic}").click)  # type: ignore[attr-defined]
    assert [r[0] for r in rows(driver, "partitions")] == ["0", "1"]
    assert "retention.ms=3600000" in driver.page_source  # type: ignore[attr-defined]

    navigate(driver, driver.find_element(By.ID, "produce").click)  # type: ignore[attr-defined]
    fill(**{"p-partition": "1", "p-key": "order-7", "p-value": '{"total": 42}', "p-headers": "trace: abc\nsource: console"})
    navigate(driver, driver.find_element(By.ID, "p-go").click)  # type: ignore[attr-defined]
    assert text_of(driver, "write-result") == "Produced to partition 1 at offset 0."
    navigate(driver, driver.find_element(By.ID, "produced").click)  # type: ignore[attr-defined]
    assert text_of(driver, "rec-key") == "order-7"
    assert text_of(driver, "rec-value") == '{\n  "total": 42\n}'
    assert text_of(driver, "rec-headers") == "trace: abc\nsource: console"
    shot(driver, "produced")
    driver.get(f"{base}/topics/{topic}/records")  # type: ignore[attr-defined]
    assert [(r[0], r[1], r[3]) for r in rows(driver, "records-browse")] == [("1", "0", "order-7")]

    driver.get(f"{base}/topics/{topic}/admin")  # type: ignore[attr-defined]
    fill(**{"c-configs": "retention.ms=\ncleanup.policy=compact"})
    navigate(driver, driver.find_element(By.ID, "c-go").click)  # type: ignore[attr-defined]
    assert text_of(driver, "write-result").startswith("Applied: retention.ms (override removed), cleanup.policy=compact")
    driver.get(f"{base}/topics/{topic}")  # type: ignore[attr-defined]
    assert "cleanup.policy=compact" in driver.page_source and "retention.ms" not in driver.page_source  # type: ignore[attr-defined]

    driver.get(f"{base}/topics/{topic}/admin")  # type: ignore[attr-defined]
    fill(**{"d-confirm": "not-it"})
    navigate(driver, driver.find_element(By.ID, "d-go").click)  # type: ignore[attr-defined]
    assert "type the topic's name" in text_of(driver, "write-result")
    driver.get(f"{base}/topics/{topic}/admin")  # type: ignore[attr-defined]
    fill(**{"d-confirm": topic})
    navigate(driver, driver.find_element(By.ID, "d-go").click)  # type: ignore[attr-defined]
    assert text_of(driver, "write-result") == f"Deleted topic {topic}."
    assert httpx.get(f"{base}/topics/{topic}").status_code == 404

    # another site's page cannot post here
    refused = httpx.post(f"{base}/topics", data={"name": "evil"}, headers={"Origin": "http://evil.example"})
    assert refused.status_code == 403 and "cross-site" in refused.text
    assert httpx.post(f"{base}/topics", data={"name": "evil"}).status_code == 403      # no Origin, no Referer


def test_writes_are_off_by_default(console_broker: SamsaBroker, browser: object) -> None:
    from tests.support.clienthelpers import PARTITIONS, create_topic

    driver = browser
    base = console_broker.overrides["samsa.http.listener"]
    topic = f"readonly-{uuid.uuid4().hex[:6]}"
    create_topic(console_broker.bootstrap_servers, topic, PARTITIONS)
    driver.get(f"{base}/topics/{topic}")  # type: ignore[attr-defined]
    assert text_of(driver, "browse") and text_of(driver, "produce") is None and text_of(driver, "admin") is None
    driver.get(base + "/")  # type: ignore[attr-defined]
    assert text_of(driver, "create-topic") is None
    driver.get(f"{base}/topics/{topic}/produce")  # type: ignore[attr-defined]
    assert "writes are off" in text_of(driver, "write-result") and text_of(driver, "produce-form") is None
    same_origin = {"Origin": base}
    for path, data in ((f"/topics/{topic}/produce", {"value": "x"}), ("/topics", {"name": "t2"}),
                       (f"/topics/{topic}/config", {"configs": "retention.ms=1"}),
                       (f"/topics/{topic}/delete", {"confirm": topic})):
        r = httpx.post(base + path, data=data, headers=same_origin)
        assert r.status_code == 403 and "samsa.http.console.write.enable=false" in r.text, path
    driver.get(f"{base}/topics/{topic}/records")  # type: ignore[attr-defined]
    assert rows(driver, "records-browse") == []      # nothing was produced
