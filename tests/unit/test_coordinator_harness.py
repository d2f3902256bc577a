"""The coordinator harness (tests/support/coordinator_harness.py) builds what the other tests assume."""
from __future__ import annotations

from tests.support.coordinator_harness import Harness


def test_harness_builds_a_stable_group() -> None:
    h = Harness()
    members, gen = h.stable_group(2)
    assert members == ["client-m1", "client-m2"]
    assert gen == 1
    assert h.co.group("g").leader_id == "client-m1"
