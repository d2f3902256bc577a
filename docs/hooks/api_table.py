"""MkDocs hook: the compatibility page's API/version table, generated from ``protocol.api_versions``.

The table ApiVersions advertises is the only truth about which APIs Samsa implements, so the page
never keeps a copy: each build replaces the marker ``<!-- samsa:api-versions -->`` with one row per
API key of ``SUPPORTED_WITH_SHARE_GROUPS`` (key, Kafka's request name and the Java ``ApiKeys`` name,
the version range, marked when only share groups advertise it, and the module whose ``@handles``
answers it).

Names come from ``protocol.api_keys.ApiKey`` (Kafka's Java names, e.g. ``DESCRIBE_CONFIGS``); a tree
without that module falls back to kafka-python's ``kafka.protocol.api_key.ApiKey`` (request names,
e.g. ``DescribeConfigs``). Either way both spellings are shown. The handler module is found by
reading ``broker/apis/`` for ``@handles(...)`` (a number or ``ApiKey.NAME``), so nothing of the
broker is imported.
"""
from __future__ import annotations

import enum
import re
import sys
import warnings
from pathlib import Path
from typing import Any, cast

MARKER = "<!-- samsa:api-versions -->"
REPO = Path(__file__).resolve().parents[2]
_HANDLES = re.compile(r"@handles\(\s*(?:ApiKey\.)?(\w+)\s*\)")


def _api_key_enum() -> type[enum.IntEnum]:
    """Kafka's Java names when the project has them, else kafka-python's request names."""
    try:
        from protocol.api_keys import ApiKey
    except ImportError:
        from kafka.protocol.api_key import ApiKey
    return cast("type[enum.IntEnum]", ApiKey)


def java_name(member: enum.IntEnum) -> str:
    """``DESCRIBE_CONFIGS`` from either spelling of the member's name."""
    name = member.name
    return name if name.isupper() else re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def request_name(member: enum.IntEnum) -> str:
    """``DescribeConfigs`` (the name Kafka's protocol guide and the request classes use)."""
    name = member.name
    return "".join(word.capitalize() for word in name.split("_")) if name.isupper() else name


def handler_modules(api_key: type[enum.IntEnum]) -> dict[int, str]:
    """API key -> the ``broker/apis/`` module (repository path) whose ``@handles`` names it."""
    found: dict[int, str] = {}
    by_name = {m.name: int(m) for m in api_key}
    for path in sorted((REPO / "broker" / "apis").rglob("*.py")):
        for arg in _HANDLES.findall(path.read_text()):
            key = int(arg) if arg.isdigit() else by_name.get(arg)
            if key is not None:
                found.setdefault(key, path.relative_to(REPO).as_posix())
    return found


def version_rows() -> list[dict[str, Any]]:
    """One row per advertised API key, in key order; the test of the built site reads these too."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    with warnings.catch_warnings():   # kafka-python's schema loader uses importlib.resources' legacy calls
        warnings.simplefilter("ignore", DeprecationWarning)
        from protocol import api_versions

        api_key = _api_key_enum()
    modules = handler_modules(api_key)
    always = api_versions.SUPPORTED
    rows = []
    for key, (low, high) in sorted(api_versions.SUPPORTED_WITH_SHARE_GROUPS.items()):
        member = api_key(int(key))
        rows.append({"key": int(key), "name": request_name(member), "java": java_name(member),
                     "versions": f"{low}–{high}", "module": modules.get(int(key), ""),
                     "always": int(key) in always})
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    """Four columns, so that the table fits the page: the API's two names share a cell, the module is
    named inside ``broker/apis/``, and the APIs advertised only with share groups carry a mark."""
    lines = ["| Key | API | Versions | Handled in `broker/apis/` |",
             "|---:|---|---|---|"]
    for row in rows:
        module = row["module"].removeprefix("broker/apis/")
        module = f"`{module}`" if module else "—"
        mark = "" if row["always"] else " ¹"
        lines.append(f"| {row['key']} | {row['name']}<br>`ApiKey.{row['java']}` | {row['versions']}{mark} | {module} |")
    lines += ["", "¹ Advertised when share groups are enabled: by default, as a new Kafka 4.2 cluster "
              "(`samsa.share.version=0` turns them off, and ApiVersions is then exactly the other rows). "
              "`samsa.emulate.kafka.version` narrows the table further to what an older Kafka release had "
              "([Testing your application](testing.md#faults-and-the-clock))."]
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        if page.file.src_uri == "compatibility.md":
            raise ValueError(f"compatibility.md lost its {MARKER} marker: the API table has nowhere to go")
        return markdown
    return markdown.replace(MARKER, render(version_rows()))
