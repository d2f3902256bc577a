"""Top-level pytest configuration: Samsa's broker fixtures (``samsa_broker``,
``samsa_broker_session``, ``samsa_topic``) for this repository's tests.

Installed packages get them from the ``samsa`` pytest11 entry point (broker/testing/plugin.py). A source
checkout without the installed entry point gets the same plugin registered here, under the same
name, so the fixtures are defined exactly once either way (defining them twice makes
``pytest --fixtures`` crash); ``-p no:samsa`` turns them off in both cases.
"""
from __future__ import annotations

import pytest

import broker.testing


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(broker.testing) and not config.pluginmanager.is_blocked("samsa"):
        config.pluginmanager.register(broker.testing, "samsa")
