"""Producer id blocks when brokers start at the same moment (as `docker compose up` starts them).

Each broker reserves its first block during start-up, before its watch runs. A broker that loses
the race (another one appended its ProducerIdsRecord after this one's image was read) must see
that record and reserve the next block, not retry the stale compare forever (it once did: the
broker hung after "broker registered", its lease expired and it was fenced).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from broker.testing.local_cluster import find_etcd

pytestmark = pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or "
                                                            "Debian's etcd-server)")


def test_a_broker_that_loses_the_first_block_race_reserves_the_next(tmp_path: Path) -> None:
    import trio

    from broker.testing.local_cluster import EtcdProcess
    from broker.metadata.etcd import EtcdMetadataStore
    from broker.metadata.producer_ids import BLOCK, ClusterProducerIdAllocator

    etcd = EtcdProcess(tmp_path / "etcd").start()

    async def main() -> list[list[range]]:
        stores = [EtcdMetadataStore([etcd.endpoint], node, prefix="/pids", session_timeout_ms=3000)
                  for node in (1, 2, 3)]
        try:
            for s in stores:             # all started: each image has next_producer_id 0
                await s.start()
            allocators = [ClusterProducerIdAllocator(s) for s in stores]
            with trio.fail_after(10):    # the same start-up race, one after another: 2 and 3 lose
                for a in allocators:
                    await a.reserve()
            return [list(a._blocks) for a in allocators]
        finally:
            for s in stores:
                await s.close()

    try:
        blocks = trio.run(main)
    finally:
        etcd.stop()
    assert blocks == [[range(0, BLOCK)], [range(BLOCK, 2 * BLOCK)], [range(2 * BLOCK, 3 * BLOCK)]]
