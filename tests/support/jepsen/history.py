"""The history of a Jepsen-style run: every operation a workload or the nemesis performed and
what it was told, with the time it happened, written line by line to a JSON-lines file as it
happens (so a run that hangs or crashes still leaves what it did for the replay)."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


class History:
    """Thread-safe, append-only list of events; ``t`` is seconds since the run started."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.t0 = time.monotonic()
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._file = open(path, "w", encoding="utf-8")

    def now(self) -> float:
        return time.monotonic() - self.t0

    def add(self, process: str, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"t": round(self.now(), 4), "process": process, "type": kind, **fields}
        with self._lock:
            self.events.append(event)
            self._file.write(json.dumps(event, default=str) + "\n")
            self._file.flush()
        return event

    def of(self, kind: str, process: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["type"] == kind and (process is None or e["process"] == process)]

    def close(self) -> None:
        with self._lock:
            self._file.close()
