"""The console's record browser: ``/topics/<topic>/records`` finds records from a partition and
offset, from a timestamp (ListOffsets' semantics: the first record at or after it), from the
beginning or the end, filtered by key, a substring of the value or a header, read_committed or
read_uncommitted; ``/topics/<topic>/records/<partition>/<offset>`` shows one record whole.

A page reads batch by batch (broker/observability/record_source.py) and stops at the row limit or
the bytes-scanned budget, whichever comes first, with a "continue" link that carries each
partition's next offset (``cursor=p:offset,...``): a filter over a large topic is a few pages of
bounded reads, never the topic in memory. Values read as pretty-printed JSON when they are JSON,
as text when they are printable UTF-8, else as hex.
"""
from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, quote, urlencode

from . import record_source as rs
from .markup import e, table, td, when

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

PREVIEW_CHARS = 200
DEFAULT_LIMIT, MAX_LIMIT = 50, 500
SEEKS = ("end", "beginning", "offset", "timestamp")


def render_bytes(b: bytes | None, full: bool = False, tag: str = "pre") -> str:
    """JSON pretty-printed, printable UTF-8 as text, anything else as hex; cut unless ``full``;
    ``tag="code"`` for a value inside a line (a header's)."""
    if b is None:
        return '<span class="muted">null</span>'
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    kind = "hex"
    if text is not None and all(c.isprintable() or c in "\n\r\t" for c in text):
        kind = "text"
        stripped = text.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                text, kind = json.dumps(json.loads(text), indent=2, ensure_ascii=False), "json"
            except ValueError:
                pass
    if kind == "hex":
        data = b if full else b[:PREVIEW_CHARS // 3]
        text = "\n".join(data[i:i + 16].hex(" ") for i in range(0, len(data), 16)) if full else data.hex(" ")
    assert text is not None
    cut = "" if full or len(text) <= PREVIEW_CHARS else \
        f' <span class="muted">(+{len(text) - PREVIEW_CHARS} chars)</span>'
    shown = text if full else text[:PREVIEW_CHARS]
    return f'<{tag} class="v {kind}" data-kind="{kind}">{e(shown)}</{tag}>{cut}'


def _headers(hs: list[tuple[str, bytes | None]]) -> str:
    return "<br>".join(f"<b>{e(k)}</b>: {render_bytes(v, tag='code')}" for k, v in hs)


def parse_time(text: str) -> int | None:
    """A timestamp in ms from ms since the epoch or an ISO date-time (UTC unless it names a zone)."""
    text = text.strip()
    if not text:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        dt = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp() * 1000)


def _int(q: dict[str, str], name: str, default: int) -> int:
    try:
        return int(q.get(name, "") or default)
    except ValueError:
        return default


async def records_page(broker: Broker, topic: str, query_string: str) -> str | None:
    if broker.topology.topic(topic) is None:
        return None
    q = {k: v[-1] for k, v in parse_qs(query_string, keep_blank_values=True).items()}
    parts = [p.index for p in broker.topology.partitions(topic)]
    chosen = q.get("partition", "")
    partitions = [int(chosen)] if chosen.isdigit() and int(chosen) in parts else parts
    seek = q.get("seek", "end") if q.get("seek") in SEEKS else "end"
    limit = max(1, min(MAX_LIMIT, _int(q, "limit", DEFAULT_LIMIT)))
    read_committed = q.get("isolation", "read_committed") != "read_uncommitted"
    flt = rs.Filter(key=q["key"] if q.get("key") else None, value=q.get("value") or None,
                    header=q.get("header") or None)
    cursor = {int(p): int(o) for p, _, o in (x.partition(":") for x in q.get("cursor", "").split(",") if ":" in x)
              if p.isdigit() and o.lstrip("-").isdigit() and int(p) in parts}
    if cursor:
        partitions = sorted(cursor)
    ts = parse_time(q.get("timestamp", "")) if seek == "timestamp" else None
    errors: list[str] = []
    scans: list[rs.Scan] = []
    budget = rs.SCAN_BUDGET_BYTES // max(1, len(partitions))
    for p in partitions:
        try:
            if p in cursor:
                start = cursor[p]
            elif seek == "offset":
                start = max(0, _int(q, "offset", 0))
            elif seek == "timestamp":
                start = await rs.offset_for(broker, topic, p, ts if ts is not None else -2)
            elif seek == "beginning":
                start = await rs.offset_for(broker, topic, p, -2)
            else:   # the last ``limit`` offsets (fewer records shown when some are hidden or filtered)
                start = max(await rs.offset_for(broker, topic, p, -2),
                            await rs.offset_for(broker, topic, p, -1) - limit)
        except rs.ReadError as exc:
            errors.append(f"partition {p}: {exc}")
            continue
        s = await rs.scan(broker, topic, p, start, limit, flt, read_committed, budget)
        if s.error:
            errors.append(f"partition {p}: {s.error}")
        scans.append(s)
    return _render(topic, q, parts, seek, limit, read_committed, ts, scans, errors)


def _form(topic: str, q: dict[str, str], parts: list[int], seek: str, limit: int, read_committed: bool) -> str:
    def opt(value: str, label: str, selected: bool) -> str:
        return f'<option value="{e(value)}"{" selected" if selected else ""}>{e(label)}</option>'

    part_opts = opt("", "all", not q.get("partition")) + "".join(
        opt(str(p), str(p), q.get("partition") == str(p)) for p in parts)
    seek_opts = "".join(opt(s, label, s == seek) for s, label in (
        ("end", "newest"), ("beginning", "oldest"), ("offset", "from offset"), ("timestamp", "from timestamp")))
    iso = opt("read_committed", "read_committed", read_committed) + \
        opt("read_uncommitted", "read_uncommitted", not read_committed)
    return (f'<form class="browse" method="get" action="/topics/{quote(topic, safe="")}/records">'
            f'<label>Partition <select name="partition" id="f-partition">{part_opts}</select></label>'
            f'<label>Start <select name="seek" id="f-seek">{seek_opts}</select></label>'
            f'<label>Offset <input name="offset" id="f-offset" size="8" value="{e(q.get("offset", ""))}"></label>'
            f'<label>Timestamp <input name="timestamp" id="f-timestamp" size="24" placeholder="2026-01-31T12:00:00Z or ms" '
            f'value="{e(q.get("timestamp", ""))}"></label>'
            f'<label>Key <input name="key" id="f-key" size="12" value="{e(q.get("key", ""))}"></label>'
            f'<label>Value contains <input name="value" id="f-value" size="12" value="{e(q.get("value", ""))}"></label>'
            f'<label>Header <input name="header" id="f-header" size="12" placeholder="name or name=text" '
            f'value="{e(q.get("header", ""))}"></label>'
            f'<label>Isolation <select name="isolation" id="f-isolation">{iso}</select></label>'
            f'<label>Limit <input name="limit" id="f-limit" size="4" value="{limit}"></label>'
            f'<button type="submit" id="f-go">Show</button></form>')


def _render(topic: str, q: dict[str, str], parts: list[int], seek: str, limit: int, read_committed: bool,
            ts: int | None, scans: list[rs.Scan], errors: list[str]) -> str:
    t = quote(topic, safe="")
    records = [r for s in scans for r in s.records]
    rows = [[td(r.partition, num=True),
             td(f'<a href="/topics/{t}/records/{r.partition}/{r.offset}">{r.offset}</a>', num=True, raw=True),
             td(when(r.timestamp), raw=True), td(render_bytes(r.key), raw=True), td(render_bytes(r.value), raw=True),
             td(_headers(r.headers), raw=True),
             td(r.status or "", cls="lag" if r.status == "aborted" else "")] for r in records]
    listing = table(["Partition", "Offset", "Timestamp", "Key", "Value", "Headers", "Transaction"], rows,
                    "records-browse") if records else '<p class="muted" id="no-records">No records matched.</p>'
    pending = {s.partition: s.next_offset for s in scans if s.stopped in ("limit", "budget") and not s.error}
    scanned = sum(s.scanned_bytes for s in scans)
    summary = "; ".join(f"partition {s.partition}: {len(s.records)} shown, scanned to offset {s.next_offset} "
                        f"of HW {s.high_watermark}" + (" (byte budget reached)" if s.stopped == "budget" else "")
                        for s in scans)
    more = ""
    if pending:
        keep = {k: v for k, v in q.items() if k in ("key", "value", "header", "isolation", "limit")}
        keep["cursor"] = ",".join(f"{p}:{o}" for p, o in sorted(pending.items()))
        more = (f'<p><a id="continue" href="/topics/{t}/records?{urlencode(keep)}">Continue from offset'
                f'{"s" if len(pending) > 1 else ""} {", ".join(f"{p}:{o}" for p, o in sorted(pending.items()))}'
                f'</a></p>')
    seen = f' (offset of timestamp {ts})' if ts is not None else ""
    errs = "".join(f"<li>{e(x)}</li>" for x in errors)
    return (f'<h2>Records of <a href="/topics/{t}">{e(topic)}</a></h2>{_form(topic, q, parts, seek, limit, read_committed)}'
            + (f'<div class="missing"><b>Not read:</b><ul>{errs}</ul></div>' if errors else "")
            + f'<p class="muted" id="scan-summary">{e(summary)}{e(seen)}; {scanned} bytes of batches scanned; '
              f'at most {limit} records per partition.</p>{listing}{more}')


async def record_page(broker: Broker, topic: str, partition: int, offset: int) -> str | None:
    if broker.topology.topic(topic) is None:
        return None
    try:
        r = await rs.record_at(broker, topic, partition, offset)
    except rs.ReadError as exc:
        return f'<h2>{e(topic)}-{partition} @ {offset}</h2><div class="missing">{e(exc)}</div>'
    t = quote(topic, safe="")
    if r is None:
        return f'<h2>{e(topic)}-{partition} @ {offset}</h2><p class="muted">No record at this offset.</p>'
    status = {"": "not transactional", "committed": "transactional, committed",
              "aborted": "transactional, aborted (hidden from read_committed consumers)",
              "open": "transactional, not yet decided (above the last stable offset)"}[r.status]
    fields = [("Timestamp", when(r.timestamp) + f' <span class="muted">({r.timestamp})</span>'),
              ("Timestamp type", "LogAppendTime" if r.log_append_time else "CreateTime"),
              ("Key", render_bytes(r.key, full=True)),
              ("Headers", "<br>".join(f"<b>{e(k)}</b>: {render_bytes(v, full=True, tag='code')}" for k, v in r.headers)
               or '<span class="muted">none</span>'),
              ("Transaction", e(status)),
              ("Producer id / epoch", e(f"{r.producer_id} / {r.producer_epoch}" if r.producer_id >= 0 else "none")),
              ("Sequence", e(r.sequence if r.sequence >= 0 else "none")),
              ("Batch", e(f"offsets {r.batch_base_offset}-{r.batch_last_offset}, leader epoch {r.leader_epoch}, "
                          f"compression {r.compression}")),
              ("Value size", e(f"{len(r.value)} bytes" if r.value is not None else "null")),
              ("Value", render_bytes(r.value, full=True))]
    body = "".join(f'<tr><th>{k}</th><td id="rec-{k.lower().replace(" / ", "-").replace(" ", "-")}">{v}</td></tr>' for k, v in fields)
    nav = (f'<p><a href="/topics/{t}/records?partition={partition}&seek=offset&offset={offset}">'
           f'browse from this offset</a> · <a href="/topics/{t}/records/{partition}/{offset + 1}">next offset</a></p>')
    return f'<h2>{e(topic)}-{partition} @ {offset}</h2><table class="record">{body}</table>{nav}'
