"""Security changes (ACLs, SCRAM credentials) as writes to the metadata log.

Why a loop: ACLs and credentials are records of the ``MetadataStore`` (the single node's local
log, or etcd in a cluster), so several brokers may decide a change at once. A change is decided
on an image and written with that image as ``base``; the store refuses it when what it decided
on moved (an ACL with the same binding now exists, an ACL to remove is gone, a credential
changed: ``conflicts`` in broker/metadata/local.py, the guard keys in broker/metadata/etcd.py),
and the change is decided again on the newer image. So creating the same ACL on two brokers,
or the bootstrap admin on every broker at start-up, writes one record.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import trio

from coordinator.metadata.image import MetadataImage
from coordinator.metadata.records import MetadataRecord

from ..metadata.store import MetadataStore, MetadataUnavailable


async def write_decided(store: MetadataStore, decide: Callable[[MetadataImage], tuple[Sequence[MetadataRecord], Any]],
                        timeout_ms: int = 30000) -> Any:
    """``decide(image) -> (records, result)``; the records are written with ``base=image``
    (an empty list writes nothing). Returns the result of the decision that was written.
    Raises ``MetadataUnavailable`` when the store stays unreachable (or keeps refusing) past
    ``timeout_ms``: the caller answers REQUEST_TIMED_OUT, as Kafka does without a controller."""
    deadline = trio.current_time() + max(timeout_ms, 0) / 1000
    delay = 0.02
    while True:
        base = store.image
        records, result = decide(base)
        if not records:
            return result
        try:
            if await store.append(list(records), base=base):
                return result
            reason = "the metadata changed meanwhile"
        except MetadataUnavailable as exc:
            reason = str(exc)
        if trio.current_time() + delay >= deadline:
            raise MetadataUnavailable(f"security metadata not written: {reason}")
        # refused: another broker's write is on its way to this image; decide again on the newer one
        await trio.sleep(delay)
        delay = min(delay * 2, 0.25)
