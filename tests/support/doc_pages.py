"""The README and the manual's pages (docs/*.md) as tests read them: a page, one of its sections,
the code blocks of a language in it.

Tests that run what the documentation shows (tests/docs, the container tier) take the text from
here, so a page that moves or a heading that changes fails those tests with a clear message instead
of silently running nothing.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"


def page(name: str) -> str:
    """The text of ``docs/<name>`` (e.g. ``"testing.md"``), or of the README for ``"README.md"``."""
    path = README if name == "README.md" else DOCS / name
    assert path.is_file(), f"{path.relative_to(REPO)} is missing"
    return path.read_text()


def section(text: str, heading: str) -> str:
    """From the line ``heading`` (e.g. ``"## Faults and the clock"``) to the next heading of the
    same or a higher level; headings inside fenced code blocks (shell comments) do not count."""
    lines = text.split("\n")
    assert heading in lines, f"no heading {heading!r}"
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    fenced = False
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(rf"#{{1,{level}}} ", line):
            return "\n".join(lines[start:i])
    return "\n".join(lines[start:])


def code_blocks(text: str, language: str) -> list[str]:
    """The bodies of the fenced code blocks tagged ``language`` (```python, ```sh, ```env)."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```", text, re.S | re.M)
