"""The console's transactions page, ``/transactions``: every transactional id of the cluster in any
state (``?state=Ongoing`` or a comma list for some), as ``kafka-transactions.sh list`` and
``describe`` show them — producer id and epoch, state, timeout, start time, the partitions in the
transaction and the coordinator. Each broker's coordinator answers for its own
``__transaction_state`` partitions: this broker's read locally, the others' with ListTransactions
and DescribeTransactions (broker/observability/cluster_view.py gather with ``all_transactions``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from .cluster_view import ClusterView
from .markup import e, table, td, when

if TYPE_CHECKING:
    from broker.server.broker_server import Broker


def states_of(query: str) -> list[str]:
    """The ``state`` filter of a query string: Kafka's state names, case kept as given."""
    wanted = parse_qs(query).get("state", [])
    return [s.strip() for v in wanted for s in v.split(",") if s.strip()]


def page(broker: Broker, view: ClusterView, states: list[str]) -> str:
    wanted = {s.lower() for s in states}
    txns = [t for t in view.transactions if not wanted or t.state.lower() in wanted]
    now = broker.now_ms()
    missing = "".join(f"<li>{e(why)}</li>" for _, why in sorted(view.missing.items()))
    head = f'<div class="missing"><b>Incomplete:</b><ul>{missing}</ul></div>' if missing else ""
    shown = f" in state {e(', '.join(states))}" if states else ""
    if not txns:
        return f'{head}<h2>Transactions{shown}</h2><p class="muted">No transactions.</p>'
    return (f"{head}<h2>Transactions{shown}</h2><p class=\"muted\">Every transactional id the coordinators keep; "
            f"filter with <code>?state=Ongoing</code> (Kafka's state names, a comma list).</p>"
            + table(["Transactional id", "State", "Producer id", "Epoch", "Timeout (ms)", "Started", "Age (ms)",
                     "Partitions", "Coordinator"], [[
                td(t.transactional_id), td(t.state, cls="state"), td(t.producer_id, num=True),
                td(t.producer_epoch, num=True), td(t.timeout_ms, num=True), td(when(t.start_time_ms), raw=True),
                td(now - t.start_time_ms if t.start_time_ms > 0 else "", num=True),
                td(", ".join(f"{name}-{p}" for name, ps in t.topics for p in ps)), td(t.coordinator, num=True)]
                for t in txns], "all-transactions"))
