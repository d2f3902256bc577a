"""The broker's console log lines are ConsoleRenderer(colors=False)'s text, rendered cheaper."""
from __future__ import annotations

import random
import string
import sys
from typing import Any

import structlog

from broker.common.console_render import PlainConsoleRenderer, console_renderer

ALPHABET = string.ascii_letters + " \t=\r\n\"'é0[]{}:,"


def _value(rnd: random.Random) -> Any:
    return [
        "".join(rnd.choice(ALPHABET) for _ in range(rnd.randrange(8))), rnd.randrange(-5, 10**6), None,
        rnd.random(), [("topic", rnd.randrange(3))], {"a": "b c"}, bool(rnd.randrange(2)),
    ][rnd.randrange(7)]


def test_plain_renderer_is_used_and_writes_consolerenderers_text() -> None:
    fast = console_renderer()
    assert isinstance(fast, PlainConsoleRenderer)
    full = structlog.dev.ConsoleRenderer(colors=False)
    rnd = random.Random(7)
    for i in range(3000):
        event = {"timestamp": f"2026-11-27T05:18:06.{i:06d}Z",
                 "level": rnd.choice(["info", "debug", "warning", "error", "critical", "exception", "warn"]),
                 "event": "".join(rnd.choice(ALPHABET) for _ in range(rnd.randrange(40)))}
        for _ in range(rnd.randrange(6)):
            event["".join(rnd.choice(string.ascii_lowercase + "_") for _ in range(rnd.randrange(1, 8)))] = _value(rnd)
        assert fast(None, "info", dict(event)) == full(None, "info", dict(event)), event


def test_exceptions_and_logger_names_go_to_consolerenderer() -> None:
    fast = console_renderer()
    assert isinstance(fast, PlainConsoleRenderer)
    handed: list[dict[str, Any]] = []
    fast.full = lambda logger, name, event: handed.append(event) or "full"   # type: ignore[assignment,misc]
    try:
        raise ValueError("boom")
    except ValueError:
        exc_info = sys.exc_info()
    extras: list[dict[str, Any]] = [{"exc_info": exc_info}, {"exception": "Traceback ...\nValueError: boom"},
                                    {"stack": "stack"}, {"logger": "samsa.server"}, {"logger_name": "samsa"}]
    for extra in extras:
        event = {"timestamp": "2026-11-27T05:18:06.000001Z", "level": "error", "event": "request failed", "peer": "x",
                 **extra}
        assert fast(None, "error", event) == "full"
    assert fast(None, "info", {"level": "info", "event": "listening", "port": 9092}) == "full"   # no timestamp
    assert len(handed) == len(extras) + 1
