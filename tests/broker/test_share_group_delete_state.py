"""DeleteGroups removes a share group's persisted state for every share partition that has some,
not only the ones this broker loaded (issue 21): state initialized by AlterShareGroupOffsets (as
by another broker's leader in a cluster) is never loaded here, and goes too. An in-process broker
with share groups enabled; the group is made with ShareGroupHeartbeat (a member joins and leaves)."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing.inprocess import InProcessBroker
from coordinator.share.persister import SharePartitionKey
from tests.support.rawclient import RawClient
from tests.support.share_state_support import alter_share_offsets, on_loop, share_heartbeat, topic_id

PROPS = {"group.share.enable": "true", "share.coordinator.state.topic.num.partitions": "2"}
GROUP = "delete-sg"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path / "data", overrides=PROPS, topics={"t": 3, "u": 2}).start()
    try:
        yield b
    finally:
        b.stop()


def start_offsets(broker: InProcessBroker, keys: list[SharePartitionKey]) -> list[int]:
    async def read() -> list[int]:
        assert broker.broker is not None
        return [(await broker.broker.share_persister.read_summary(k)).start_offset for k in keys]
    result: list[int] = on_loop(broker, read)
    return result


def test_delete_groups_deletes_state_this_broker_never_loaded(broker):
    t, u = topic_id(broker, "t"), topic_id(broker, "u")
    keys = [SharePartitionKey(GROUP, t, p) for p in range(3)] + [SharePartitionKey(GROUP, u, 1)]
    other = SharePartitionKey("other-sg", t, 0)
    with RawClient(broker.bootstrap_servers) as c:
        for group in (GROUP, "other-sg"):
            member = uuid.uuid4().hex
            for epoch, topics in ((0, ["t"]), (-1, None)):          # joins, then leaves: empty
                hb = share_heartbeat(c, group, member, epoch, topics)
                assert hb.error_code == 0, hb
            r = alter_share_offsets(c, group, {"t": {0: 0, 1: 0, 2: 0}, "u": {1: 0}})
            assert r.error_code == 0 and all(p.error_code == 0 for x in r.responses for p in x.partitions), r
        assert start_offsets(broker, keys + [other]) == [0, 0, 0, 0, 0]

        deleted = c.request(42, 2, groups_names=[GROUP])
        assert [(g.group_id, g.error_code) for g in deleted.results] == [(GROUP, 0)]
    # every share partition of the group lost its state (u-0 never had any); the other group keeps its own
    assert start_offsets(broker, keys + [other]) == [-1, -1, -1, -1, 0]
