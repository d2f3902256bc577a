"""Running Kafka's command-line tools (broker/tools/) as a script would: the console scripts
installed in this environment's bin directory, as child processes, with their stdout, stderr and
exit code. And Kafka's output shapes, built from the values a test knows (written here from
Kafka's format strings, not with the tools' own code)."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.prefix) / "bin"


@dataclass
class ToolRun:
    returncode: int
    stdout: str
    stderr: str


def tool(name: str, *args: str, stdin: str | None = None, timeout: float = 90.0) -> ToolRun:
    """``name`` (e.g. ``kafka-topics.sh``) run with ``args``; stdout/stderr as text."""
    exe = BIN / name
    assert exe.exists(), f"{exe} is missing: pip install -e . installs the console scripts"
    done = subprocess.run([str(exe), *args], input=stdin, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return ToolRun(done.returncode, done.stdout, done.stderr)


def kafka_uuid(raw: bytes) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding."""
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def offsets_row(widths: tuple[int, int, int, int], *cells: object) -> str:
    """One line of ``kafka-consumer-groups --describe``: Kafka's
    ``%-Gs %-Ts %-10s %-15s %-15s %-15s %-Cs %-Hs %s``."""
    g, t, c, h = widths
    cells_s = [str(x) for x in cells]
    return (f"{cells_s[0]:<{g}} {cells_s[1]:<{t}} {cells_s[2]:<10} {cells_s[3]:<15} {cells_s[4]:<15} "
            f"{cells_s[5]:<15} {cells_s[6]:<{c}} {cells_s[7]:<{h}} {cells_s[8]}")


def reset_row(*cells: object) -> str:
    """One line of the NEW-OFFSET table: Kafka's ``%-30s %-30s %-10s %-15s``."""
    c = [str(x) for x in cells]
    return f"{c[0]:<30} {c[1]:<30} {c[2]:<10} {c[3]:<15}"
