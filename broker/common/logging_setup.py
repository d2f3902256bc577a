"""structlog set-up: human-readable console lines by default, JSON lines with --json-logs.

Lines go out through structlog's ``WriteLogger`` (``write(line + "\\n")`` then ``flush``): one
``write`` system call per line, where ``PrintLogger``'s ``print`` wrote the line and its newline
separately (two per line on the unbuffered stderr); the text is the same. Console lines are
rendered by broker/common/console_render.py (ConsoleRenderer(colors=False)'s text, cheaper)."""
from __future__ import annotations

import logging
import sys

import structlog

from .console_render import console_renderer


def configure(json: bool = False, level: str = "INFO") -> None:
    lvl = getattr(logging, level.upper(), logging.INFO)
    renderer = structlog.processors.JSONRenderer() if json else console_renderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
