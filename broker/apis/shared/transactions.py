"""What the transaction APIs share: Kafka's PRODUCER_FENCED downgrade for older clients.
"""
from __future__ import annotations

from protocol.errors import ErrorCode

PRODUCER_FENCED = ErrorCode.PRODUCER_FENCED


def fenced_for(version: int, first_version_with_fenced: int, code: int) -> int:
    """Clients older than the version that introduced PRODUCER_FENCED get INVALID_PRODUCER_EPOCH."""
    if code == PRODUCER_FENCED and version < first_version_with_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code
