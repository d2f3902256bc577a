"""The feature flags ApiVersions v3+ advertises (KIP-584): what this broker supports and what is
finalized, with Kafka 4.0's feature names and levels.

- ``metadata.version``: 7 (3.3-IV3, the oldest Kafka 4 accepts) to 25 (4.0-IV3); finalized 25.
- ``group.version``: 0-1, finalized 1: KIP-848 consumer groups (ConsumerGroupHeartbeat) are on.
- ``transaction.version``: supported 0 up to ``TRANSACTION_VERSION_MAX``; finalized at the level
  the broker property ``samsa.transaction.version`` names (Kafka sets it with kafka-features.sh,
  it has no broker property). Java 4.x producers use transactions v2 (KIP-890 part 2) exactly
  when the finalized level is 2 or more, so it must not exceed what is implemented.
- ``share.version``: supported 0-1 (as a Kafka 4.2 broker); finalized 1 when share groups are enabled
  (the default, as a new Kafka 4.2 cluster: broker/server/api_table.py), absent when disabled
  (level 0 is not listed, as Kafka omits features finalized at 0).

The finalized features epoch is 0: they never change while the broker runs (Java clients ignore
finalized features whose epoch is -1).
"""
from __future__ import annotations

METADATA_VERSION = ("metadata.version", 7, 25)
GROUP_VERSION = ("group.version", 0, 1)
TRANSACTION_VERSION_MAX = 2       # KIP-890 part 2 (transactions v2)
FINALIZED_FEATURES_EPOCH = 0


SHARE_VERSION = ("share.version", 0, 1)


def supported_features(share_groups: bool = True) -> list[tuple[str, int, int]]:
    """(name, min, max) per supported feature: share.version whether or not it is finalized
    (``share_groups`` is kept for callers; a disabled broker still supports the feature)."""
    return [METADATA_VERSION, GROUP_VERSION, ("transaction.version", 0, TRANSACTION_VERSION_MAX), SHARE_VERSION]


def finalized_features(transaction_version: int, share_groups: bool = True) -> list[tuple[str, int]]:
    """(name, level) per finalized feature; ``transaction_version`` is clamped to what is implemented."""
    tv = max(0, min(int(transaction_version), TRANSACTION_VERSION_MAX))
    out = [(METADATA_VERSION[0], METADATA_VERSION[2]), (GROUP_VERSION[0], GROUP_VERSION[2])]
    if tv > 0:
        out.append(("transaction.version", tv))
    if share_groups:
        out.append((SHARE_VERSION[0], SHARE_VERSION[2]))
    return out
