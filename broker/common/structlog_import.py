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

import importlib
import sys
import types

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
