"""The API-version table this broker advertises, from its config.

Both the start-up lobby (broker/server/startup.py, answering ApiVersions while loading) and the loaded
broker need it, and must agree; it imports only protocol/ so the lobby stays light.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED, SUPPORTED_WITH_SHARE_GROUPS

if TYPE_CHECKING:    # the lobby imports this module: types only
    from broker.common.config import BrokerConfig


def share_groups_enabled(config: BrokerConfig) -> bool:
    """Kafka's switches for KIP-932 share groups: ``group.share.enable`` (4.0/4.1) or the finalized
    ``share.version`` feature at 1 or more (here ``samsa.share.version``)."""
    return bool(config.get("group.share.enable")) or int(config.get("samsa.share.version") or 0) >= 1


def advertised_table(config: BrokerConfig) -> dict[ApiKey, tuple[int, int]]:
    """SUPPORTED (with the share-group APIs when share groups are enabled), or narrowed to what
    Kafka ``samsa.emulate.kafka.version`` advertised; an unknown release ends start-up with a clear
    message."""
    release = config.get("samsa.emulate.kafka.version")
    if not release:
        return SUPPORTED_WITH_SHARE_GROUPS if share_groups_enabled(config) else SUPPORTED
    from protocol.emulation import emulated_table
    try:
        return emulated_table(release)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
