"""The console's search box (in every page's header): topics and consumer groups whose name
contains the text, case-insensitively, cluster-wide (topics from the Topology, groups as the
overview gathers them). A plain GET form: it works without JavaScript."""
from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote

from .cluster_view import ClusterView
from .markup import e, table, td

if TYPE_CHECKING:
    from broker.server.broker_server import Broker


def query_of(query_string: str) -> str:
    return (parse_qs(query_string).get("q") or [""])[-1].strip()


def search_page(broker: Broker, q: str, view: ClusterView) -> str:
    needle = q.lower()
    topics = sorted(name for name in broker.topology.topics() if needle in name.lower())
    groups = sorted((g for g in view.groups if needle in g.group_id.lower()), key=lambda g: g.group_id)
    found_topics = table(["Topic", "Partitions"], [[
        td(f'<a href="/topics/{quote(t, safe="")}">{e(t)}</a>', raw=True),
        td(len(broker.topology.partitions(t)), num=True)] for t in topics], "found-topics") \
        if topics else '<p class="muted">No topic matches.</p>'
    found_groups = table(["Group", "State", "Members", "Total lag"], [[
        td(f'<a href="/groups/{quote(g.group_id, safe="")}">{e(g.group_id)}</a>', raw=True), td(g.state),
        td(len(g.members), num=True), td(g.total_lag, num=True)] for g in groups], "found-groups") \
        if groups else '<p class="muted">No group matches.</p>'
    return (f'<h2>Search: “{e(q)}”</h2><p class="muted" id="search-summary">{len(topics)} topics, {len(groups)} '
            f'groups</p><h2>Topics</h2>{found_topics}<h2>Consumer groups</h2>{found_groups}')
