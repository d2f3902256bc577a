"""The console's share-group, transactions and producers pages in headless Chromium (issue 24), on
one broker: a confluent-kafka ShareConsumer that accepted some of its records and holds the others
shows as the group's member with the share partition's exact start offset and in-flight counts; an
open transaction shows as Ongoing with its partition, then CompleteCommit; the producers page shows
an idempotent producer's last sequence and the transactional producer's open transaction."""
from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from broker.testing import SamsaBroker, free_port, running_broker
from tests.support.console_browser import navigate, _browser_missing, browser, rows, shot, text_of, wait_until  # noqa: F401
from tests.support.clienthelpers import create_topic

ck = pytest.importorskip("confluent_kafka")
pytestmark = [pytest.mark.skipif(_browser_missing() is not None, reason=_browser_missing() or ""),
              pytest.mark.skipif(not hasattr(ck, "ShareConsumer"), reason="confluent-kafka without ShareConsumer")]


@pytest.fixture
def share_broker(tmp_path: Path) -> Iterator[SamsaBroker]:
    with running_broker(tmp_path / "data", overrides={
            "samsa.http.listener": f"http://127.0.0.1:{free_port()}", "num.partitions": "1",
            "group.share.enable": "true", "samsa.share.auto.offset.reset": "earliest",
            "group.share.heartbeat.interval.ms": "500", "group.share.min.heartbeat.interval.ms": "100",
            "group.share.record.lock.duration.ms": "60000"}) as broker:
        yield broker


def _poll(c: Any, n: int, timeout: float = 60) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        out += [m for m in c.poll(1.0) if m.error() is None]
    return out


def test_share_group_page_shows_member_and_exact_in_flight_counts(share_broker: SamsaBroker, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    bs, base = share_broker.bootstrap_servers, share_broker.overrides["samsa.http.listener"]
    topic, group = f"queue-{uuid.uuid4().hex[:6]}", f"workers-{uuid.uuid4().hex[:6]}"
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 500, "batch.num.messages": 20})
    for i in range(20):
        p.produce(topic, value=f"v{i}".encode(), partition=0)
    assert p.flush(30) == 0
    c = ck.ShareConsumer({"bootstrap.servers": bs, "group.id": group, "client.id": "share-worker",
                          "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    try:
        got = _poll(c, 20)
        assert sorted(m.offset() for m in got) == list(range(20))
        # accept 0-4 and 10-14: the start moves to 5; 5-9 and 15-19 stay acquired (lock 60 s)
        for m in got:
            if m.offset() < 5 or 10 <= m.offset() < 15:
                c.acknowledge(m, ck.AcknowledgeType.ACCEPT)
        c.commit_sync(30)
        browser.get(base + "/share-groups")
        (listed,) = [r for r in rows(browser, "share-groups") if r[0] == group]
        assert listed[1:] == ["Stable", "1", listed[3], "1", "10", "10", "1"]
        navigate(browser, browser.find_element(By.LINK_TEXT, group).click)
        assert text_of(browser, "group-state") == "Stable"
        (member,) = rows(browser, "members")
        assert member[2] == "share-worker" and member[4] == topic and member[5] == f"{topic}: 0"
        assert int(member[1]) >= 1
        # start 5, end 20, in flight 15: 10 acquired, 5 acknowledged; lag 20 - 5 - 5
        assert rows(browser, "share-partitions") == [[topic, "0", "5", "20", "15", "0", "10", "5", "0", "20", "10", "1"]]
        browser.set_window_size(1220, 560)      # a small image, as docs/observability.md shows it
        shot(browser, "share-group")
    finally:
        c.close()


def test_transactions_and_producers_pages(share_broker: SamsaBroker, browser: Any) -> None:
    bs, base = share_broker.bootstrap_servers, share_broker.overrides["samsa.http.listener"]
    topic, txn_id = f"ledger-{uuid.uuid4().hex[:6]}", f"ledger-writer-{uuid.uuid4().hex[:6]}"
    itopic = f"{topic}-idem"
    create_topic(bs, topic, 1)
    create_topic(bs, itopic, 1)
    idem = ck.Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 0})
    for i in range(3):
        idem.produce(itopic, value=f"i{i}".encode(), partition=0)
        assert idem.flush(30) == 0          # three batches: sequences 0, 1, 2
    txn = ck.Producer({"bootstrap.servers": bs, "transactional.id": txn_id})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(topic, value=b"pending", partition=0)
    assert txn.flush(30) == 0

    browser.get(base + "/transactions")
    (t,) = [r for r in rows(browser, "all-transactions") if r[0] == txn_id]
    assert t[1] == "Ongoing" and t[4] == "60000" and t[7] == f"{topic}-0" and t[8] == "1"
    producer_id = t[2]
    browser.get(base + "/transactions?state=Ongoing")
    assert [r[0] for r in rows(browser, "all-transactions")] == [txn_id]

    browser.get(base + "/producers")
    prods = rows(browser, "producers")
    # [topic, partition, producer id, epoch, last sequence, last write, open txn from]
    assert [[r[1], r[2], r[4], r[6]] for r in prods if r[0] == topic] == [["0", producer_id, "0", "0"]]
    (p1,) = [r for r in prods if r[0] == itopic]
    assert p1[4] == "2" and p1[6] == "" and p1[2] != producer_id and p1[5]
    shot(browser, "producers")
    browser.get(base + f"/topics/{topic}")
    assert [r[:2] for r in rows(browser, "producers")] == [["0", producer_id]]

    txn.commit_transaction(30)
    browser.get(base + "/transactions")
    wait_until(lambda: [r[1] for r in rows(browser, "all-transactions") if r[0] == txn_id] == ["CompleteCommit"])
    browser.get(base + "/transactions?state=Ongoing")
    assert rows(browser, "all-transactions") == []
    browser.get(base + f"/producers?topic={topic}")
    assert [r[6] for r in rows(browser, "producers")] == [""]
