"""Marks every test by its tier, the folder it lives in (``tests/unit`` -> ``@pytest.mark.unit``),
so a run can pick tiers without listing paths: ``pytest -m unit`` is the quick loop,
``pytest -m "not cluster and not container"`` skips what needs etcd or Docker.

The markers are registered in pyproject.toml ([tool.pytest.ini_options] markers). The broker
fixtures come from the top-level conftest.py (the ``samsa`` plugin), not from here.
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(Path(item.path))
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
