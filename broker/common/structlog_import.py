"""Start-up speed: structlog without rich, colorama and Twisted in the broker process.

structlog imports rich and colorama, when they are installed, as it is imported
(``structlog.dev`` for pretty tracebacks and Windows colours, ``structlog.tracebacks`` for the
repr of locals): with pygments that is ~50 ms here, 150 ms on a busy machine, for renderers the
broker never uses. Its console renderer runs without colours and gets exceptions already
formatted as plain text by ``format_exc_info`` (broker/common/logging_setup.py); its JSON lines
carry the same text. So ``samsa serve`` imports structlog while neither can be imported;
afterwards both import as before (nothing is left in ``sys.modules``), only structlog keeps the
defaults it has without them (plain tracebacks, its own ANSI codes), which the broker's
processors never reach. Its Twisted integration (``structlog.twisted``, tried on import) is
never used by the broker either: hiding ``twisted`` spares the search for it (the package is not
installed here). Test code and users' code that import structlog first are not affected.
"""
from __future__ import annotations

import functools
import importlib
import sys
import threading
import time
import types
from typing import Any

# twisted: structlog tries ``from structlog import twisted`` (its Twisted integration, unused here),
# which without Twisted installed costs a search of every sys.path entry before failing
_HIDDEN = ("rich", "colorama", "twisted")


def import_structlog_plain() -> None:
    """Import structlog with rich, colorama and twisted hidden, unless any of them is imported
    already."""
    if any(name in sys.modules for name in ("structlog", *_HIDDEN)):
        return
    for name in _HIDDEN:
        sys.modules[name] = None   # type: ignore[assignment]  # `import rich` raises ImportError
    stand_in = None if "asyncio" in sys.modules else _DeferredAsyncio("asyncio")
    if stand_in is not None:
        sys.modules["asyncio"] = stand_in
    try:
        importlib.import_module("structlog")
    finally:
        for name in _HIDDEN:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
        if stand_in is not None and sys.modules.get("asyncio") is stand_in:
            del sys.modules["asyncio"]


class _DeferredAsyncio(types.ModuleType):
    """What structlog's modules hold as ``asyncio`` when ``samsa serve`` imported them: the real
    module, imported on first attribute use (``asyncio.get_running_loop`` in an ``a*`` method)."""

    def __getattr__(self, name: str) -> object:
        if sys.modules.get("asyncio") is self:
            del sys.modules["asyncio"]
        return getattr(importlib.import_module("asyncio"), name)



# --------------------------------------------------------------------------------------------
# structlog after the first answers (``samsa serve`` only)
# --------------------------------------------------------------------------------------------
#
# Importing structlog (its ``_config`` needs ``dev``, ``processors``, ``tracebacks`` and with them
# ``datetime``, ``json``, ``pickle``, ``uuid``) is ~30 ms of CPU, about a third of what a fresh
# broker spent beyond ``import trio`` before its first Metadata answer, for the three lines it logs
# before then (``logs loaded``, ``broker started``, ``listening``). So ``samsa serve`` starts with
# a stand-in ``structlog`` module: the broker's modules take their module-level loggers from it
# (``structlog.get_logger(name)`` is all they call on it at import), and until structlog is
# loaded a plain console line (an event and keywords, no exception) is written at once by the
# console renderer the configured structlog uses (broker/common/console_render.py's plain path:
# ``timestamp [level] event key=value``; the stamp as ``TimeStamper(fmt="iso", utc=True)`` makes
# it), one ``write`` and a flush as structlog's ``WriteLogger`` does: the same text at the same
# moment. Anything else (JSON lines, an exception, positional arguments, a value the plain path
# hands to ConsoleRenderer, any other attribute) imports structlog first, as
# ``import_structlog_plain`` does, and configures it as before. broker/server/startup.py imports
# it once the broker is idle after its first answers (at most ``WARM_UP_DELAY_S`` after serving);
# from then on each logger forwards to structlog's own. tests/unit/test_lazy_loading.py checks
# the early lines against structlog's.

_LEVELS = {"debug": 10, "info": 20, "warn": 30, "warning": 30, "error": 40, "critical": 50}
# ConsoleRenderer(colors=False)'s level and event padding (console_renderer() reads them from it;
# the test checks these against it)
LEVEL_WIDTH = 9
EVENT_WIDTH = 30


class _Deferred:
    """The start-up's settings: the level (and console lines) ``configure`` is to be called with."""

    def __init__(self) -> None:
        self.settings: tuple[bool, str] | None = None   # (json, level) once known
        self.min_level = 0
        self.renderer: Any = None


_deferred: _Deferred | None = None   # set while the stand-in is sys.modules["structlog"]
_LOAD_LOCK = threading.RLock()


class _DeferredStructlog(types.ModuleType):
    """``sys.modules["structlog"]`` while ``samsa serve`` starts (see above)."""

    def get_logger(self, *args: Any, **initial_values: Any) -> Any:
        if _deferred is None:          # loaded: the real one's logger
            return load_structlog().get_logger(*args, **initial_values)
        return DeferredLogger(args, initial_values)

    getLogger = get_logger

    def __getattr__(self, name: str) -> Any:
        return getattr(load_structlog(), name)


class _NotPlain(Exception):
    """The plain console path handed the event to ConsoleRenderer: structlog is needed."""


def _not_plain(*_args: Any) -> str:
    raise _NotPlain


class DeferredLogger:
    """A module-level logger taken from the stand-in: plain console lines at once until structlog
    is loaded, then each attribute forwarded to structlog's own logger (cached per log method, as
    structlog's ``cache_logger_on_first_use`` caches the bound logger itself)."""

    def __init__(self, args: tuple[Any, ...], initial_values: dict[str, Any]) -> None:
        self._args = args
        self._initial_values = initial_values
        self._logger: Any = None

    def _real(self) -> Any:
        if self._logger is None:
            self._logger = load_structlog().get_logger(*self._args, **self._initial_values)
        return self._logger

    def __getattr__(self, name: str) -> Any:
        if _deferred is not None and name in _LEVELS:
            return functools.partial(self._early, name)
        value = getattr(self._real(), name)
        if (name in _LEVELS or name in ("exception", "msg", "log")) \
                and load_structlog().get_config()["cache_logger_on_first_use"]:
            self.__dict__[name] = value
        return value

    def _early(self, method: str, event: Any = None, *args: Any, **kw: Any) -> Any:
        state = _deferred
        if state is not None and state.renderer is not None and not args and "exc_info" not in kw:
            if _LEVELS[method] < state.min_level:
                return None
            event_dict = {**self._initial_values, **kw}
            if event is not None:
                event_dict["event"] = event
            event_dict["level"] = "warning" if method == "warn" else method
            event_dict["timestamp"] = iso_utc_now()
            try:
                line = state.renderer(None, method, event_dict)
            except _NotPlain:
                pass
            else:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
                return None
        return getattr(self._real(), method)(event, *args, **kw)


def iso_utc_now() -> str:
    return iso_utc(time.time_ns())


def iso_utc(ns: int) -> str:
    """``datetime.datetime.now(tz=timezone.utc).isoformat().replace("+00:00", "Z")`` (structlog's
    ``TimeStamper(fmt="iso", utc=True)``) without ``datetime``, for the system clock's ``ns``:
    microseconds floored, left out when zero."""
    micros = ns // 1000
    seconds, us = divmod(micros, 1_000_000)
    t = time.gmtime(seconds)
    base = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
    return f"{base}.{us:06d}Z" if us else f"{base}Z"


def defer_structlog() -> bool:
    """Put the stand-in in place, unless structlog (or rich, colorama, Twisted) is imported
    already; True when it is."""
    global _deferred
    if any(name in sys.modules for name in ("structlog", *_HIDDEN)):
        return False
    _deferred = _Deferred()
    sys.modules["structlog"] = _DeferredStructlog("structlog")
    return True


def configure_when_loaded(json: bool, level: str) -> bool:
    """Keep the settings for the deferred ``configure`` (console lines only; JSON lines load
    structlog now); False when structlog is not deferred, or is loaded now: configure it."""
    if _deferred is None:
        return False
    if json:
        load_structlog()
        return False
    import logging

    from .console_render import PlainConsoleRenderer

    _deferred.settings = (json, level)
    _deferred.min_level = getattr(logging, level.upper(), logging.INFO)
    _deferred.renderer = PlainConsoleRenderer(_not_plain, LEVEL_WIDTH, EVENT_WIDTH)   # type: ignore[arg-type]
    return True


def load_structlog() -> types.ModuleType:
    """The real structlog: imported (without rich, colorama, Twisted) and configured with the
    kept settings, if the stand-in is still in place."""
    global _deferred
    with _LOAD_LOCK:      # another thread's logger waits until structlog is configured
        state = _deferred
        if state is None:
            return importlib.import_module("structlog")
        _deferred = None  # from here the stand-in forwards (configure's own use of it included)
        if isinstance(sys.modules.get("structlog"), _DeferredStructlog):
            del sys.modules["structlog"]
        import_structlog_plain()
        real = importlib.import_module("structlog")
        if state.settings is not None:
            from .logging_setup import configure

            configure(json=state.settings[0], level=state.settings[1])
        return real
