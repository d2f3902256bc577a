"""Helpers of the share-coordinator tests: an in-process broker's topic ids and its async
functions (the Persister) run on its trio loop."""
from __future__ import annotations

import uuid
from typing import Any

import trio

from broker.testing.inprocess import InProcessBroker


def topic_id(b: InProcessBroker, name: str = "t") -> uuid.UUID:
    def get() -> uuid.UUID:
        assert b.broker is not None
        return b.broker.logs.topics[name].topic_id
    result: uuid.UUID = b._on_loop(get)
    return result


def on_loop(b: InProcessBroker, fn: Any, *args: Any) -> Any:
    """Run an async function of the broker on its trio loop and return its result."""
    return trio.from_thread.run(fn, *args, trio_token=b._token)
