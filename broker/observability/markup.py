"""The console's HTML pieces shared by its pages (console.py, records_view.py, charts.py,
timeline_view.py): escaping, tables, cells, times and sizes. Plain strings, no template engine:
the pages are small and rendered per request."""
from __future__ import annotations

import datetime
import html
from collections.abc import Iterable


def e(x: object) -> str:
    return html.escape("" if x is None else str(x))


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(cell for cell in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def td(x: object, num: bool = False, cls: str = "", raw: bool = False) -> str:
    classes = " ".join(c for c in ("n" if num else "", cls) if c)
    return f'<td class="{classes}">{x if raw else e(x)}</td>' if classes else f"<td>{x if raw else e(x)}</td>"


def ms(ts: int | None) -> str:
    """A timestamp in ms as UTC text (what the page shows without JavaScript)."""
    if ts is None or ts < 0:
        return ""
    return datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def when(ts: int | None) -> str:
    """A timestamp as a ``<time>`` element: UTC text, which the page's script rewrites into the
    browser's zone, keeping the UTC text on hover (``title``)."""
    if ts is None or ts < 0:
        return ""
    text = ms(ts)
    return f'<time datetime="{text.replace(" ", "T")}Z" data-ms="{ts}" title="{text} UTC">{text}</time>'


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{int(n)} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
