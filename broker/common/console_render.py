"""The console log line of ``structlog.dev.ConsoleRenderer(colors=False)``, built without its
per-column ``StringIO`` objects: ~25 µs per line there, a few here. Two INFO lines per
transaction (``transaction begun`` / ``committed``) made it a visible share of a transaction's
broker CPU. The text is the same: an event with anything the plain path does not know (an
exception, a stack, a logger name, a non-string timestamp, level or event) goes to structlog's
own renderer, and ``console_renderer()`` checks the plain path against it on sample events
before using it (a structlog version that formats differently keeps its own renderer)."""
from __future__ import annotations

from typing import Any

import structlog

_ESCAPE = frozenset(" \t=\r\n\"'")
_SPECIAL = ("stack", "exception", "exc_info", "logger", "logger_name")
_LEVELS = ("critical", "exception", "error", "warn", "warning", "info", "debug", "notset")


def _repr(val: Any) -> str:
    """ConsoleRenderer's value repr (``repr_native_str=False``): bare strings unless they hold a
    space, tab, ``=``, a line break or a quote."""
    if isinstance(val, str):
        return repr(val) if not _ESCAPE.isdisjoint(val) else val
    return repr(val)


class PlainConsoleRenderer:
    """``timestamp [level    ] event (padded to 30) key=value ...`` (keys sorted), as
    ConsoleRenderer(colors=False) writes it; anything else is handed to ``full``."""

    def __init__(self, full: structlog.dev.ConsoleRenderer, level_width: int, event_width: int) -> None:
        self.full = full
        self.level_width = level_width
        self.event_width = event_width

    def __call__(self, logger: Any, name: str, event_dict: dict[str, Any]) -> str:
        ts = event_dict.get("timestamp")
        level = event_dict.get("level")
        event = event_dict.get("event")
        if type(ts) is not str or type(level) is not str or type(event) is not str or not ts \
                or level not in _LEVELS or any(k in event_dict for k in _SPECIAL):
            return self.full(logger, name, event_dict)
        parts = [ts, f"[{level.ljust(self.level_width)}]", event.ljust(self.event_width)]
        for key in sorted(event_dict):
            if key not in ("timestamp", "level", "event"):
                parts.append(f"{key}={_repr(event_dict[key])}")
        return " ".join(parts).rstrip(" ")


_SAMPLES: tuple[dict[str, Any], ...] = (
    {"timestamp": "2026-11-27T05:18:06.123456Z", "level": "info", "event": "transaction committed",
     "transactional_id": "t 1", "producer_id": 1000, "producer_epoch": 0, "partitions": [("bench", 0)],
     "duration_ms": 3, "a": None, "b": "x=y", "c": "plain", "d": 1.5, "e": {"k": "v"}, "f": "", "g": True},
    {"timestamp": "2026-11-27T05:18:06.123456Z", "level": "warning", "event": "a long event name beyond thirty chars"},
    {"timestamp": "2026-11-27T05:18:06.123456Z", "level": "debug", "event": "", "q": "it's", "r": 'say "hi"'},
    {"timestamp": "2026-11-27T05:18:06.123456Z", "level": "critical", "event": "x", "s": "tab\there", "t": "n\nl"},
)


def console_renderer() -> Any:
    """The plain path if it renders the samples exactly as ConsoleRenderer(colors=False) does,
    else ConsoleRenderer itself."""
    full = structlog.dev.ConsoleRenderer(colors=False)
    try:
        level_width = len(max(full._level_styles.keys(), key=len)) if full._pad_level else 0
        fast = PlainConsoleRenderer(full, level_width, int(full._pad_event_to))
        for sample in _SAMPLES:
            if fast(None, "info", dict(sample)) != full(None, "info", dict(sample)):
                return full
    except Exception:   # a structlog without these attributes: its own renderer
        return full
    return fast
