"""The API-version table this broker advertises, from its config.

Both the start-up lobby (broker/server/startup.py, answering ApiVersions while loading) and the loaded
broker need it, and must agree; it imports only protocol/ so the lobby stays light.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED, SUPPORTED_WITH_SHARE_GROUPS

if TYPE_CHECKING:    # the lobby imports this module: types only
    from broker.common.config import BrokerConfig


# share.version a new Kafka 4.2 cluster finalizes: ShareVersion.SV_1 is its LATEST_PRODUCTION level
# (bootstrap metadata version 4.2-IV0), so share groups are on without a switch.
DEFAULT_SHARE_VERSION = 1


def share_groups_enabled(config: BrokerConfig | Mapping[str, object]) -> bool:
    """Kafka's switches for KIP-932 share groups: the finalized ``share.version`` feature at 1 or
    more (here ``samsa.share.version``; 1 unless set, as a new Kafka 4.2 cluster) or 4.0/4.1's
    ``group.share.enable=true``. ``samsa.share.version=0`` turns them off, and so does
    ``group.share.enable=false`` when share.version is not set (a 4.1 configuration that said off)."""
    enable = config.get("group.share.enable")
    version = config.get("samsa.share.version")
    if enable:
        return True
    if version is not None:
        return int(str(version)) >= 1
    if enable is not None:      # explicitly false
        return False
    return DEFAULT_SHARE_VERSION >= 1


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
