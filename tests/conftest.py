"""Marks every test by its tier, the folder it lives in (``tests/unit`` -> ``@pytest.mark.unit``),
so a run can pick tiers without listing paths: ``pytest -m unit`` is the quick loop,
``pytest -m "not cluster and not container"`` skips what needs etcd or Docker.

The markers are registered in pyproject.toml ([tool.pytest.ini_options] markers). The broker
fixtures come from the top-level conftest.py (the ``samsa`` plugin), not from here.

Parallel runs (pytest-xdist, ``-n 2 --dist loadgroup`` as scripts/test.sh does): each test is put in
an ``xdist_group`` so a worker takes a whole module at a time (its module-scoped brokers start
once), the container tier as one group (one image build, one Docker engine's worth of load) and
the Spark jobs as one (each starts a JVM of several hundred MB).
"""
from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "broker", "clients", "cluster", "container", "docs", "static")


def tier_of(path: Path) -> str | None:
    """The tier folder ``path`` lives in, or None for a file outside ``tests/<tier>/``."""
    try:
        first = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return first if first in TIERS else None


SERIAL_GROUPS = {"container": "container", "spark": "spark"}


def is_slow_module(path: Path, tier: str | None) -> bool:
    """Whole modules that are ``slow`` by nature: the container tier (builds images, runs compose
    stacks; minutes) and the Spark jobs (each starts a Spark JVM). Single long tests elsewhere
    carry ``@pytest.mark.slow`` themselves."""
    return tier == "container" or "spark" in path.stem


def xdist_group_of(path: Path, tier: str | None) -> str:
    """The group a test runs in under ``--dist loadgroup``: its tier's when that tier runs as one
    (container), Spark's for any module named for Spark, else its module's."""
    if tier == "container":
        return SERIAL_GROUPS["container"]
    if "spark" in path.stem:
        return SERIAL_GROUPS["spark"]
    try:
        return str(path.resolve().relative_to(TESTS))
    except ValueError:
        return str(path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(Path(item.path))
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
        if is_slow_module(Path(item.path), tier) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(Path(item.path), tier)))


# --- where the suite's time goes -------------------------------------------------------------
# Printed at the end of every run (CI's too): seconds per tier and for `slow` and the rest, so
# "the suite without `slow` stays under 30 minutes on 2 cores" is read off CI's own output.

_durations: dict[str, list[float | str | bool]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _durations.setdefault(report.nodeid, [0.0, "", False])
    entry[0] = float(entry[0]) + report.duration
    keywords = report.keywords
    entry[1] = next((t for t in TIERS if t in keywords), "other")
    entry[2] = "slow" in keywords


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _durations:
        return
    by_tier: dict[str, list[float]] = {}
    by_speed: dict[str, list[float]] = {}
    for seconds, tier, slow in _durations.values():
        for table, key in ((by_tier, str(tier)), (by_speed, "slow" if slow else "not slow")):
            row = table.setdefault(key, [0.0, 0])
            row[0] += float(seconds)
            row[1] += 1

    def line(table: dict[str, list[float]]) -> str:
        return "; ".join(f"{key} {int(n)} tests {seconds / 60:.1f} min"
                         for key, (seconds, n) in sorted(table.items(), key=lambda kv: -kv[1][0]))

    terminalreporter.write_sep("=", "test time (setup + call + teardown, summed over tests)")
    terminalreporter.write_line(f"by tier: {line(by_tier)}")
    terminalreporter.write_line(f"by marker: {line(by_speed)}")
