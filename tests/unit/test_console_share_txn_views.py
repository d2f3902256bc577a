"""The console's share-group, transactions and producers views without a broker: a share
partition's counts and KIP-1226 lag, the JSON a broker serves at /share-state read back by another
(a group coordinated by one broker, its share partition led by another), and the transactions
page's state filter."""
from __future__ import annotations

import json
import uuid
from types import SimpleNamespace

from broker.observability import share_groups_view as sv, transactions_view as tv
from broker.observability.cluster_view import ClusterView, TxnView
from coordinator.share.group import ShareGroup, ShareMember
from coordinator.share.partition import InFlight, RecordState, SharePartition

TID = uuid.uuid4()


def _broker(node: int, groups: dict, partitions: dict, hw: int = -1) -> SimpleNamespace:
    part = SimpleNamespace(high_watermark=hw)
    return SimpleNamespace(
        node_id=node,
        share_groups=SimpleNamespace(coordinator=SimpleNamespace(groups=groups), partitions=partitions),
        topology=SimpleNamespace(topics=lambda: {"q": SimpleNamespace(topic_id=TID)}),
        logs=SimpleNamespace(partition=lambda name, index: part if hw >= 0 else None))


def test_lag_is_hw_less_start_less_delivery_complete_records() -> None:
    p = sv.SharePartitionView("g", "q", 0, 5, 20, 0, 10, 4, 1, 20, 1)
    assert (p.in_flight, p.lag) == (15, 10)
    assert sv.SharePartitionView("g", "q", 0, 5, 5, 0, 0, 0, 0, -1, 1).lag == -1


def test_share_state_json_from_two_brokers_merges_into_one_group_page() -> None:
    member = ShareMember("m-1", 3, "worker", "/10.0.0.7", None, ("q",), {TID: frozenset({0})}, 0)
    coordinator = _broker(2, {"g": ShareGroup("g", group_epoch=3, assignment_epoch=3, members={"m-1": member})}, {})
    sp = SharePartition(start_offset=5, end_offset=9, records={
        5: InFlight(RecordState.ACQUIRED, 1, "m-1", 10**13), 6: InFlight(RecordState.ACKNOWLEDGED, 1),
        7: InFlight(RecordState.AVAILABLE, 1), 8: InFlight(RecordState.ARCHIVED, 5)})
    leader = _broker(3, {}, {("g", TID, 0): sp}, hw=12)
    view = sv.ShareView()
    for b in (coordinator, leader):    # as gather merges each broker's /share-state answer
        sv._merge(view, json.loads(json.dumps(sv.local_state(b))))
    (g,) = view.groups
    assert (g.coordinator, g.members[0].assignment, g.members[0].member_epoch) == (2, {"q": [0]}, 3)
    (p,) = view.partitions
    assert (p.start_offset, p.end_offset, p.available, p.acquired, p.acknowledged, p.archived) == (5, 9, 1, 1, 1, 1)
    assert (p.leader, p.high_watermark, p.lag) == (3, 12, 5)
    html = sv.group_page(view, "g")
    assert html is not None and "worker" in html and "q: 0" in html and 'class="share-partitions"' in html
    assert sv.group_page(view, "other") is None
    view.missing[1] = "broker 1 registered no samsa.http.listener: its console is off"
    assert "Not found on the brokers that answered" in (sv.group_page(view, "other") or "")
    assert "its console is off" in sv.list_page(view)


def test_transactions_page_filters_by_state() -> None:
    assert tv.states_of("state=Ongoing,PrepareCommit&state=CompleteAbort") == ["Ongoing", "PrepareCommit", "CompleteAbort"]
    view = ClusterView(transactions=[TxnView("a", "Ongoing", 7, 0, 1000, 60000, [("t", [0, 2])], 3),
                                     TxnView("b", "CompleteCommit", 8, 1, -1, 60000, [], 1)])
    broker = SimpleNamespace(now_ms=lambda: 1500)
    html = tv.page(broker, view, ["ongoing"])  # type: ignore[arg-type]
    assert "t-0, t-2" in html and ">b<" not in html and ">500<" in html
    assert "No transactions." in tv.page(broker, ClusterView(), [])  # type: ignore[arg-type]
