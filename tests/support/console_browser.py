"""The web console tests' browser (tests/broker/test_console_*browser.py): headless Chromium
(Debian's ``chromium`` driven through ``chromium-driver`` by Selenium) as a fixture, a broker with
the console on as a fixture, and what a test reads of a page: table rows, an element's text,
screenshots kept under ``tests/broker/artifacts/`` (or ``$SAMSA_TEST_ARTIFACTS``)."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from broker.testing import SamsaBroker, free_port, running_broker
from tests.support.clienthelpers import PARTITIONS

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ARTIFACTS = Path(os.environ.get("SAMSA_TEST_ARTIFACTS", Path(__file__).resolve().parents[1] / "broker" / "artifacts"))


def _browser_missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(os.path.basename(path))):
            return f"{path} is missing (apt-get install chromium chromium-driver; scripts/test.sh does it as root)"
    return None


@pytest.fixture
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium") or CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    driver_path = CHROMEDRIVER if os.path.exists(CHROMEDRIVER) else shutil.which("chromedriver")
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def console_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides={
        "samsa.http.listener": f"http://127.0.0.1:{free_port()}", "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000", "num.partitions": str(PARTITIONS)}) as broker:
        yield broker


def shot(driver: object, name: str, element_id: str | None = None) -> Path:
    """A screenshot of the page (or of one element: a small image, as the docs use)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"console-{name}.png"
    if element_id is not None:
        from selenium.webdriver.common.by import By
        driver.find_element(By.ID, element_id).screenshot(str(path))  # type: ignore[attr-defined]
    else:
        driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    return path


def rows(driver: object, table_class: str) -> list[list[str]]:
    """The cells' rendered text, read in one script call (live refresh replaces the DOM every 2 s)."""
    return driver.execute_script(  # type: ignore[attr-defined]
        "return Array.from(document.querySelectorAll('table.' + arguments[0] + ' tbody tr'))"
        ".map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.innerText.trim()));", table_class)


def text_of(driver: object, element_id: str) -> str:
    return driver.execute_script(  # type: ignore[attr-defined]
        "var e = document.getElementById(arguments[0]); return e ? e.innerText : null;", element_id)


def navigate(driver: object, click: Callable[[], object]) -> None:
    """Click something that loads a new page (a link, a GET or POST form) and wait until that page
    is there: reading right after the click can read the page being left."""
    driver.execute_script("window.__leaving = true;")  # type: ignore[attr-defined]
    click()
    wait_until(lambda: bool(driver.execute_script(  # type: ignore[attr-defined]
        "return window.__leaving === undefined && document.readyState === 'complete';")))


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    assert check()
