"""Writing one controller decision about a partition to the metadata log, decided again on a lost race.

ElectLeaders and AlterPartitionReassignments both decide on the current image (the decision
carries the partition epoch it was made on) and append it conditionally on that image; when
another write got in first, the decision is made again on the new image, a bounded number of times.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.network.dispatch import RequestContext

RETRIES = 10


async def write_decision(ctx: RequestContext, decide: Callable[[Any], Any]) -> tuple[int, str | None]:
    """``decide(image)`` returns a record to append, a Rejection to answer, or None (nothing to
    write: success). Returns the partition's (error code, message)."""
    from coordinator.metadata.controller import Rejection

    from ..metadata.store import MetadataUnavailable

    assert ctx.broker.cluster is not None      # the cluster's handlers call this
    store = ctx.broker.cluster.store
    for _ in range(RETRIES):
        base = store.image
        decision = decide(base)
        if decision is None:
            return 0, None
        if isinstance(decision, Rejection):
            return decision.code, decision.message
        try:
            if await store.append([decision], base=base):
                return 0, None
        except MetadataUnavailable as exc:
            return ErrorCode.REQUEST_TIMED_OUT, str(exc)
    return ErrorCode.REQUEST_TIMED_OUT, "the partition kept changing"
