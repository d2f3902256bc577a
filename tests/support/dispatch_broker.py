"""A real Broker on its own trio loop, answering request frames through ``dispatch()`` (no
sockets): for unit tests that compare a handler's encoded answers with kafka-python's own, such as
the answer caches' (tests/unit/test_*_answer_cache.py)."""
from __future__ import annotations

import tempfile
import uuid
from collections.abc import Awaitable, Callable

import trio

from broker.common.config import BrokerConfig
from broker.network.dispatch import dispatch
from broker.server.broker_server import Broker

TOPICS = ("a", "b")   # each with 3 partitions


def run_on_broker(check: Callable[[Broker, dict[str, uuid.UUID]], Awaitable[None]], **props: str) -> None:
    """Start a broker (log dir in a temporary directory, ``props`` over the defaults), create the
    topics ``a`` and ``b`` (3 partitions each), await ``check(broker, topic ids by name)``, stop."""
    async def main() -> None:
        with tempfile.TemporaryDirectory() as d:
            broker = Broker(BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": d, **props}))
            broker.start()
            async with trio.open_nursery() as nursery:
                await nursery.start(broker.run_services)
                ids = {name: broker.logs.create_topic(name, 3).topic_id for name in TOPICS}
                await check(broker, ids)
                nursery.cancel_scope.cancel()
    trio.run(main)


async def answer(broker: Broker, frame: bytes) -> bytes | None:
    """The framed answer to ``frame`` (a request with its header, unframed), as bytes; None when
    the request is not answered (acks=0 Produce). A Spliced answer is not expected here."""
    out = await dispatch(broker, frame, "127.0.0.1", "PLAINTEXT")
    if out is None:
        return None
    assert type(out) in (bytes, bytearray), f"not an encoded answer: {type(out).__name__}"
    return bytes(out)
