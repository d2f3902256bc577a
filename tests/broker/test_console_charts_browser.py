"""The console's charts in headless Chromium: server-drawn SVG whose polylines carry the numbers
they draw. After a group has committed everything and N more records are produced, the lag
chart's last point equals the group's lag (N) and the page's table; the topic's messages-in
chart saw the records arrive."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import pytest

from broker.testing import SamsaBroker, free_port, running_broker
from tests.support.console_browser import browser, rows, shot, text_of, wait_until  # noqa: F401
from tests.support.clienthelpers import PARTITIONS, consume_and_commit, create_topic, produce


@pytest.fixture
def sampled_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides={
            "samsa.http.listener": f"http://127.0.0.1:{free_port()}", "samsa.http.console.sample.interval.ms": "300",
            "group.initial.rebalance.delay.ms": "0", "num.partitions": str(PARTITIONS)}) as broker:
        yield broker


def series(driver: object, chart: str) -> dict[str, tuple[float, list[float]]]:
    """{series: (data-last, [values of data-points])} of one chart, read in one script call."""
    got = driver.execute_script(  # type: ignore[attr-defined]
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' polyline.series'))"
        ".map(p => [p.dataset.series, p.dataset.last, p.dataset.points]);", chart)
    return {name: (float(last), [float(x.split(":")[1]) for x in points.split(",")]) for name, last, points in got}


def test_lag_chart_last_point_is_the_groups_lag(sampled_broker: SamsaBroker, browser: object) -> None:
    driver = browser
    bootstrap = sampled_broker.bootstrap_servers
    base = sampled_broker.overrides["samsa.http.listener"]
    topic, group = f"clicks-{uuid.uuid4().hex[:6]}", f"reporting-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 30)
    consumer = consume_and_commit(bootstrap, topic, group, 30)
    try:
        driver.get(f"{base}/groups/{group}")  # type: ignore[attr-defined]
        wait_until(lambda: series(driver, "chart-lag").get("total", (None, []))[0] == 0)    # caught up
        n = 25
        produce(bootstrap, topic, n, start=30)
        # the live refresh redraws the chart; its last point follows the lag
        wait_until(lambda: series(driver, "chart-lag").get("total", (None, []))[0] == n, timeout=15)
        lag = series(driver, "chart-lag")
        assert text_of(driver, "total-lag") == str(n)
        assert 0.0 in lag["total"][1] and lag["total"][1][-1] == n
        by_partition = {r[1]: int(r[4]) for r in rows(driver, "offsets")}
        assert {k: int(v[0]) for k, v in lag.items() if k != "total"} == {
            f"{topic}-{p}": by_partition[str(p)] for p in range(PARTITIONS)}
        assert sum(by_partition.values()) == n
        shot(driver, "lag-chart")

        driver.get(f"{base}/topics/{topic}")  # type: ignore[attr-defined]
        wait_until(lambda: len(series(driver, "chart-messages-in").get("messages in/s", (0, []))[1]) >= 2)
        rates = series(driver, "chart-messages-in")["messages in/s"][1]
        assert max(rates) > 0 and all(r >= 0 for r in rates)
        assert set(series(driver, "chart-bytes")) == {"bytes in/s", "bytes out/s"}
        shot(driver, "topic-charts")
    finally:
        consumer.close()
