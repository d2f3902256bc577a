"""The API-version table this broker advertises, from its config.

Both the start-up lobby (broker/startup.py, answering ApiVersions while loading) and the loaded
broker need it, and must agree; it imports only protocol/ so the lobby stays light.
"""
from __future__ import annotations

from typing import Any

from protocol.api_versions import SUPPORTED


def advertised_table(config: Any) -> dict[int, tuple[int, int]]:
    """SUPPORTED, or narrowed to what Kafka ``samsa.emulate.kafka.version`` advertised; an unknown
    release ends start-up with a clear message."""
    release = config.get("samsa.emulate.kafka.version")
    if not release:
        return SUPPORTED
    from protocol.emulation import emulated_table
    try:
        return emulated_table(release)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
