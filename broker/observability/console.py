"""The web console on ``samsa.http.listener``: server-rendered HTML pages and a few lines of
JavaScript that re-fetch the page's content every two seconds (no CDN, no build step).

Pages: ``/`` (brokers, topics, consumer groups, transactions in flight), ``/topics/<name>``
(partitions with leader, ISR, log start, HW, LSO, size; producers per partition; recent records)
and ``/groups/<id>`` (state, members and assignments, committed offsets and lag, rebalance
timeline). Brokers are read from what Metadata would say, so a cluster shows every node; in
cluster mode the groups, transactions and partition offsets of the other brokers are asked of
them (broker/observability/cluster_view.py), and a group's rebalance timeline is read from its coordinator's
console (``/timeline/<group>``, JSON), since the coordinator keeps it in memory.

The other pages live in their own modules: the record browser and a record's page
(records_view.py over record_source.py), the writes behind ``samsa.http.console.write.enable``
(console_writes.py), the charts (charts.py over history.py's samples), the rebalance timeline
drawing (timeline_view.py), the search (search_view.py), the share groups (share_groups_view.py:
``/share-groups``, ``/share-groups/<id>``, and this broker's part as JSON at ``/share-state``), every
transaction (transactions_view.py: ``/transactions``) and the producers per partition
(producers_view.py: ``/producers``); markup.py holds the HTML pieces.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, unquote

from broker.observability import (charts, cluster_view, console_writes, introspect, markup, producers_view, records_view,
                                  search_view, share_groups_view, timeline_view, transactions_view)
from broker.observability.cluster_view import ClusterView, LeaderOffsets
from broker.coordinator_runtime.group_timeline import Rebalance, timeline_to_json
from ..log.manager import INTERNAL_TOPICS
from broker.network.http_serve import ASGIApp, Receive, Scope, Send, respond, respond_json

if TYPE_CHECKING:
    from broker.observability.history import History

    from broker.server.broker_server import Broker

RECORD_PREVIEW_BYTES = 200

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:center}
header a{color:#cfd6e4;text-decoration:none}header b{font-size:18px;color:#fff}
main{padding:16px 24px}h2{font-size:16px;margin:22px 0 8px}
table{border-collapse:collapse;background:#fff;font-size:13px;min-width:420px}
th,td{border:1px solid #dde1e8;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef0f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.lag{font-weight:bold;color:#b3261e}.ok{color:#1e7a34}.muted{color:#778}
.missing{background:#fdecea;border:1px solid #f5c2bd;padding:6px 12px;margin:8px 0}
.done{background:#e7f5ea;border:1px solid #b7dfc0;padding:6px 12px;margin:8px 0}
code{font-size:12px}.state{font-weight:bold}label{font-size:12px;color:#cfd6e4;margin-left:auto}
form label{color:#1d2330;margin:0 12px 6px 0;display:inline-block}form{margin:8px 0}
pre.v{margin:0;white-space:pre-wrap;word-break:break-all;font-size:12px;max-width:640px}
header form.search{margin:0}header input{font-size:13px;padding:3px 6px}time.local{border-bottom:1px dotted #99a}
table.record th{width:150px}.timeline-chart{overflow-x:auto;margin-bottom:8px}
""" + charts.STYLE + """
"""

_SCRIPT = """
(function(){
  function pad(n,w){return String(n).padStart(w||2,'0');}
  // times arrive as UTC text; shown in the browser's zone, the UTC text kept on hover (title)
  function localize(root){root.querySelectorAll('time[data-ms]').forEach(function(t){var d=new Date(+t.dataset.ms);
    t.textContent=d.getFullYear()+'-'+pad(d.getMonth()+1)+'-'+pad(d.getDate())+' '+pad(d.getHours())+':'+
      pad(d.getMinutes())+':'+pad(d.getSeconds())+'.'+pad(d.getMilliseconds(),3);t.classList.add('local');});}
  localize(document);
  var box=document.getElementById('live');
  setInterval(function(){
    if(!box.checked) return;
    fetch(location.href,{headers:{'X-Samsa-Fragment':'1'}}).then(function(r){return r.text();})
      .then(function(t){var c=document.getElementById('content');c.innerHTML=t;localize(c);
        document.getElementById('refreshed').textContent=new Date().toLocaleTimeString();});
  },2000);
})();
"""


_e, _table, _td, _ms, _size = markup.e, markup.table, markup.td, markup.ms, markup.size


def _bytes(b: bytes | None) -> str:
    if b is None:
        return '<span class="muted">null</span>'
    text = b[:RECORD_PREVIEW_BYTES].decode("utf-8", "replace")
    more = f' <span class="muted">(+{len(b) - RECORD_PREVIEW_BYTES} bytes)</span>' if len(b) > RECORD_PREVIEW_BYTES else ""
    return f"<code>{_e(text)}</code>{more}"


def _link(kind: str, name: str) -> str:
    return f'<a href="/{kind}/{quote(name, safe="")}">{_e(name)}</a>'


# -- pages ------------------------------------------------------------------------------------
def _missing(view: ClusterView) -> str:
    """The brokers whose part of the page is absent, and why (down, hung or fenced)."""
    if not view.missing:
        return ""
    items = "".join(f"<li>{_e(why)}</li>" for _, why in sorted(view.missing.items()))
    return f'<div class="missing"><b>Incomplete:</b><ul>{items}</ul></div>'


def _offsets_of(view: ClusterView, p: introspect.PartitionView) -> LeaderOffsets | None:
    """A partition's offsets as its leader answers them (this broker's own log when it leads)."""
    return view.offsets.get((p.topic, p.partition))


def overview(broker: Broker, view: ClusterView) -> str:
    parts = introspect.partitions(broker, cluster_wide=True)
    by_topic: dict[str, list[introspect.PartitionView]] = {}
    for p in parts:
        by_topic.setdefault(p.topic, []).append(p)
    brokers = _table(["Node", "Endpoints", "Rack", "Controller", "Alive", "Partitions led"], [[
        _td(b.node_id), _td(", ".join(b.endpoints)), _td(b.rack or ""),
        _td("yes" if b.is_controller else "", cls="ok"),
        _td("yes" if b.state == "alive" else f"yes ({b.state})" if b.alive else f"no ({b.state})",
            cls="ok" if b.alive else "lag"),
        _td(sum(1 for p in parts if p.leader == b.node_id), num=True)] for b in introspect.brokers(broker)], "brokers")
    # sizes and record counts are the leaders' (a partition whose leader did not answer adds none)
    known = {name: [o for p in ps if (o := _offsets_of(view, p)) is not None and o.high_watermark >= 0]
             for name, ps in by_topic.items()}
    topics = _table(["Topic", "Partitions", "Records (HW − log start)", "Size", "Internal"], [[
        _td(_link("topics", name), raw=True), _td(len(ps), num=True),
        _td(sum(o.high_watermark - o.log_start_offset for o in known[name]), num=True),
        _td(_size(sum(max(o.size_bytes, 0) for o in known[name])), num=True),
        _td("yes" if name in INTERNAL_TOPICS else "")] for name, ps in by_topic.items()], "topics")
    create = '<p><a id="create-topic" href="/create-topic">Create a topic</a></p>' \
        if console_writes.enabled(broker) else ""
    groups = view.groups
    group_table = _table(["Group", "State", "Protocol", "Members", "Partitions committed", "Total lag",
                          "Coordinator"], [[
        _td(_link("groups", v.group_id), raw=True), _td(v.state, cls="state"),
        _td(f"{v.protocol_type}/{v.protocol}" if v.protocol else v.protocol_type), _td(len(v.members), num=True),
        _td(len(v.offsets), num=True), _td(v.total_lag, num=True, cls="lag" if v.total_lag else "ok"),
        _td(v.coordinator, num=True)]
        for v in groups], "groups") if groups else '<p class="muted">No consumer groups.</p>'
    return (f"{_missing(view)}<h2>Brokers</h2>{brokers}<h2>Topics</h2>{topics}{create}<h2>Consumer groups</h2>{group_table}"
            f"<h2>Transactions in flight</h2>{_transactions(broker, view)}"
            f'<p><a id="all-transactions" href="/transactions">Every transaction, in any state</a> · '
            f'<a href="/producers">Producers per partition</a> · <a href="/share-groups">Share groups</a></p>')


def _transactions(broker: Broker, view: ClusterView) -> str:
    txns = view.transactions
    if not txns:
        return '<p class="muted">No transactions in flight.</p>'
    now = broker.now_ms()
    return _table(["Transactional id", "State", "Producer id", "Epoch", "Started", "Age (ms)", "Timeout (ms)",
                   "Partitions", "Coordinator"], [[
        _td(d.transactional_id), _td(d.state, cls="state"), _td(d.producer_id, num=True),
        _td(d.producer_epoch, num=True), _td(markup.when(d.start_time_ms), raw=True),
        _td(now - d.start_time_ms if d.start_time_ms > 0 else "", num=True), _td(d.timeout_ms, num=True),
        _td(", ".join(f"{t}[{','.join(map(str, ps))}]" for t, ps in d.topics)),
        _td(d.coordinator, num=True)] for d in txns], "transactions")


def topic_page(broker: Broker, name: str, view: ClusterView, producers_html: str | None = None) -> str | None:
    """``producers_html``: the producers per partition as their leaders answer them
    (producers_view.gather); else this broker's own partitions' producers."""
    known = broker.topology.topic(name)   # the cluster's view: a topic may have no replica here
    if known is None:
        return None
    parts = [p for p in introspect.partitions(broker, cluster_wide=True) if p.topic == name]
    described = broker.topology.topic_configs(name)
    topic_id, configs = known.topic_id, dict(described.configs) if described is not None else {}
    cfg = ", ".join(f"{k}={v}" for k, v in sorted(configs.items())) or "(broker defaults)"

    def offsets(p: introspect.PartitionView) -> list[str]:
        o = _offsets_of(view, p)
        if o is None or o.high_watermark < 0:
            why = view.missing.get(p.leader) and f"leader {p.leader} did not answer" or \
                ("no leader" if p.leader < 0 else f"not known to leader {p.leader}")
            return [_td(why, cls="muted")] + [_td("")] * 5
        # segments are counted in this broker's own replica only
        return [_td(o.log_start_offset, num=True), _td(o.high_watermark, num=True),
                _td(o.last_stable_offset, num=True), _td(o.log_end_offset, num=True),
                _td(_size(o.size_bytes) if o.size_bytes >= 0 else "", num=True),
                _td(p.segments if p.hosted else "", num=True)]

    table = _table(["Partition", "Leader", "Replicas", "ISR", "Log start", "High watermark", "LSO", "Log end",
                    "Size", "Segments", "Leader epoch"], [[
        _td(p.partition, num=True), _td(p.leader, num=True), _td(",".join(map(str, p.replicas))),
        _td(",".join(map(str, p.isr)), cls="lag" if len(p.isr) < len(p.replicas) else ""), *offsets(p),
        _td(p.leader_epoch, num=True)] for p in parts], "partitions")
    prod_rows = []
    for p in parts:
        for pr in introspect.producers(broker, name, p.partition):
            prod_rows.append([_td(p.partition, num=True), _td(pr.producer_id, num=True),
                              _td(pr.producer_epoch, num=True), _td(pr.last_sequence, num=True),
                              _td(markup.when(pr.last_timestamp), raw=True), _td(pr.current_txn_start_offset
                                                               if pr.current_txn_start_offset >= 0 else "")])
    producers = producers_html if producers_html is not None else _table(
        ["Partition", "Producer id", "Epoch", "Last sequence", "Last write", "Open txn from"],
        prod_rows, "producers") if prod_rows else '<p class="muted">No idempotent producers.</p>'
    records = introspect.recent_records(broker, name)
    rec = _table(["Partition", "Offset", "Timestamp", "Key", "Value", "Headers"], [[
        _td(r.partition, num=True), _td(r.offset, num=True), _td(markup.when(r.timestamp), raw=True), _td(_bytes(r.key), raw=True),
        _td(_bytes(r.value), raw=True),
        _td("<br>".join(f"{_e(k)}: {_bytes(v)}" for k, v in r.headers), raw=True)] for r in records],
        "records") if records else '<p class="muted">No records.</p>'
    return (f"{_missing(view)}<h2>Topic {_e(name)}</h2><p>Topic id <code>{_e(topic_id)}</code> · configs: {_e(cfg)}</p>"
            f"<p><a id=\"browse\" href=\"/topics/{quote(name, safe='')}/records\">Browse and search records</a>"
            + (f" · <a id=\"produce\" href=\"/topics/{quote(name, safe='')}/produce\">Produce a record</a> · "
               f"<a id=\"admin\" href=\"/topics/{quote(name, safe='')}/admin\">Edit configs or delete</a>"
               if console_writes.enabled(broker) else "") + "</p>"
            f"{table}{_topic_charts(broker, name)}<h2>Producers per partition</h2>{producers}"
            f"<h2>Recent records</h2><p class=\"muted\">The last 20 committed records of each partition, newest "
            f"first; values cut at {RECORD_PREVIEW_BYTES} bytes.</p>{rec}")


def _history(broker: Broker) -> History | None:
    return broker.metrics.history if broker.metrics is not None else None


def _topic_charts(broker: Broker, name: str) -> str:
    """Messages and bytes per second over the last minutes (this broker's counters)."""
    history = _history(broker)
    if history is None:
        return ""
    rates = history.topic_rates(name)
    return ("<h2>Movement</h2>"
            + charts.line_chart("chart-messages-in", "Messages in per second", {"messages in/s": rates["messages in/s"]})
            + charts.line_chart("chart-bytes", "Bytes in and out per second",
                                {"bytes in/s": rates["bytes in/s"], "bytes out/s": rates["bytes out/s"]}))


def group_page(broker: Broker, group_id: str, view: ClusterView,
               remote_timeline: tuple[list[Rebalance] | None, str] | None = None) -> str | None:
    """``remote_timeline``: (the timeline or None, where it came from or why not) when another
    broker coordinates the group (broker/observability/cluster_view.py remote_timeline)."""
    if not view.groups:
        return None if not view.missing else _missing(view) + f"<h2>Group {_e(group_id)}</h2><p>Not found on " \
            f"the brokers that answered.</p>"
    v = view.groups[0]
    members = _table(["Member id", "Instance id", "Client id", "Host", "Assigned partitions"], [[
        _td(m.member_id), _td(m.group_instance_id or ""), _td(m.client_id), _td(m.client_host),
        _td("; ".join(f"{t}: {','.join(map(str, ps))}" for t, ps in m.assignment.items()))]
        for m in v.members], "members") if v.members else '<p class="muted">No members.</p>'
    offsets = _table(["Topic", "Partition", "Committed offset", "High watermark", "Lag"], [[
        _td(_link("topics", o.topic), raw=True), _td(o.partition, num=True), _td(o.committed, num=True),
        _td(o.high_watermark, num=True), _td(o.lag, num=True, cls="lag" if o.lag else "ok")]
        for o in v.offsets], "offsets") if v.offsets else '<p class="muted">No committed offsets.</p>'
    remote = v.coordinator not in (-1, broker.node_id)
    timeline, source = (remote_timeline or (None, "")) if remote else (broker.groups.timeline.timeline(group_id), "")
    tl = _table(["Generation", "Started", "Completed", "Duration (ms)", "Why", "Joined", "Left", "Assignment"], [[
        _td(r.generation if r.generation is not None else f"after {r.previous_generation} (in progress)"),
        _td(markup.when(r.started_ms), raw=True), _td(markup.when(r.completed_ms), raw=True),
        _td(r.duration_ms if r.duration_ms is not None else "", num=True),
        _td("<br>".join(_e(x) for x in r.reasons), raw=True),
        _td("<br>".join(_e(f"{c.member_id} ({c.client_id})") for c in r.joined), raw=True),
        _td("<br>".join(_e(f"{c.member_id} ({c.client_id}): {c.reason}") for c in r.left), raw=True),
        _td("<br>".join(_e(f"{m}: {n} partitions") for m, n in r.assignment.items()), raw=True)]
        for r in reversed(timeline)], "timeline") if timeline else \
        f'<p class="muted" id="timeline-elsewhere">The rebalance timeline is kept in memory by the group\'s ' \
        f'coordinator, broker {v.coordinator}, and could not be read ({_e(source)}): open this page on broker ' \
        f'{v.coordinator}\'s console (its samsa.http.listener).</p>' if remote and timeline is None else \
        '<p class="muted">No rebalance seen since the broker started.</p>'
    if remote and timeline is not None:
        tl = f'<p class="muted" id="timeline-source">Kept by the coordinator, broker {v.coordinator}; read from ' \
             f'its console at {_e(source)}.</p>{tl}'
    return (f"{_missing(view)}<h2>Group {_e(v.group_id)}</h2>"
            f"<p>State <span class=\"state\" id=\"group-state\">{_e(v.state)}</span> · protocol "
            f"{_e(v.protocol_type)}/{_e(v.protocol)} · coordinator partition {v.coordinator_partition} of "
            f"__consumer_offsets{f' (broker {v.coordinator})' if v.coordinator >= 0 else ''} · total lag <span id=\"total-lag\">{v.total_lag}</span></p>"
            f"<h2>Members</h2>{members}<h2>Committed offsets and lag</h2>{offsets}{_lag_chart(broker, v.group_id)}"
            f"<h2>Rebalance timeline</h2>{timeline_view.timeline_svg(timeline or [], broker.now_ms())}{tl}")


def _lag_chart(broker: Broker, group_id: str) -> str:
    history = _history(broker)
    if history is None:
        return ""
    return charts.line_chart("chart-lag", "Lag over the last minutes (total and per partition)",
                             history.group_lag(group_id))


def _page(title: str, content: str, live: bool = True, q: str = "") -> str:
    """A whole page; ``live``: the live-refresh box starts ticked (off on pages with a form, whose
    inputs a refresh would reset)."""
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{_e(title)} · Samsa</title>"
            f"<style>{_STYLE}</style></head><body><header><b>Samsa</b><a href=\"/\">Overview</a>"
            f"<a href=\"/share-groups\">Share groups</a><a href=\"/transactions\">Transactions</a>"
            f"<a href=\"/producers\">Producers</a><a href=\"/metrics\">Metrics</a><form class=\"search\" method=\"get\" action=\"/search\">"
            f"<input name=\"q\" id=\"search\" placeholder=\"Search topics and groups\" size=\"28\" value=\"{_e(q)}\"></form><label><input type=\"checkbox\" id=\"live\"{' checked' if live else ''}> live refresh "
            f"<span id=\"refreshed\"></span></label></header><main id=\"content\">{content}</main>"
            f"<script>{_SCRIPT}</script></body></html>")


def console_app(broker: Broker) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        path = unquote(scope.get("path", "/"))
        fragment = any(k.lower() == b"x-samsa-fragment" for k, _ in scope.get("headers", []))
        content: str | None     # None: not found
        query = scope.get("query_string", b"").decode("latin-1")
        live = True
        written = await console_writes.handle(broker, scope, receive, path)
        if written is not None:
            status, title, content = written
            await respond(send, status, _page(title, content, live=False), "text/html; charset=utf-8")
            return
        if path in ("/", ""):
            title, content = "Overview", overview(broker, await cluster_view.gather(broker))
        elif path.startswith("/topics/") and "/records" in path[len("/topics/"):]:
            name, _, rest = path[len("/topics/"):].partition("/records")
            live, title = False, f"{name} records"
            bits = rest.strip("/").split("/")
            if rest.strip("/") == "":
                content = await records_view.records_page(broker, name, query)
            elif len(bits) == 2 and all(b.isdigit() for b in bits):
                content = await records_view.record_page(broker, name, int(bits[0]), int(bits[1]))
            else:
                content = None
        elif path.startswith("/topics/"):
            name = path[len("/topics/"):]
            prods, prods_missing = await producers_view.gather(broker, name) if broker.topology.topic(name) else ({}, {})
            title, content = name, topic_page(broker, name, await cluster_view.gather(broker, everything=False),
                                              producers_view.section(prods, prods_missing, with_topic=False))
        elif path in ("/share-groups", "/share-groups/"):
            title, content = "Share groups", share_groups_view.list_page(await share_groups_view.gather(broker))
        elif path.startswith("/share-groups/"):
            name = path[len("/share-groups/"):]
            title, content = name, share_groups_view.group_page(await share_groups_view.gather(broker), name)
        elif path == "/share-state":
            # this broker's share groups and the share partitions it leads, as JSON: what the other
            # brokers' share-group pages merge (broker/observability/share_groups_view.py)
            await respond_json(send, 200, share_groups_view.local_state(broker))
            return
        elif path in ("/transactions", "/transactions/"):
            states = transactions_view.states_of(query)
            title, content = "Transactions", transactions_view.page(
                broker, await cluster_view.gather(broker, all_transactions=True), states)
        elif path in ("/producers", "/producers/"):
            topic = (parse_qs(query).get("topic") or [None])[0]
            prods, prods_missing = await producers_view.gather(broker, topic)
            title, content = "Producers", producers_view.page(prods, prods_missing, topic)
        elif path.startswith("/groups/"):
            name = path[len("/groups/"):]
            view = await cluster_view.gather(broker, group=name)
            coordinator = view.groups[0].coordinator if view.groups else -1
            remote = await cluster_view.remote_timeline(broker, coordinator, name) \
                if coordinator not in (-1, broker.node_id) else None
            title, content = name, group_page(broker, name, view, remote)
        elif path == "/search":
            live, title = False, "Search"
            q = search_view.query_of(query)
            content = search_view.search_page(broker, q, await cluster_view.gather(broker))
            await respond(send, 200, content if fragment else _page(title, content, live, q), "text/html; charset=utf-8")
            return
        elif path.startswith("/timeline/"):
            # this broker's in-memory rebalance timeline of a group it coordinates, as JSON: what
            # another broker's console shows for it (broker/observability/cluster_view.py remote_timeline)
            await respond_json(send, 200, timeline_to_json(broker.groups.timeline.timeline(path[len("/timeline/"):])))
            return
        else:
            title, content = "Not found", None
        if content is None:
            await respond(send, 404, _page("Not found", f"<h2>Not found: {_e(path)}</h2>"),
                          "text/html; charset=utf-8")
            return
        await respond(send, 200, content if fragment else _page(title, content, live), "text/html; charset=utf-8")
    return app
