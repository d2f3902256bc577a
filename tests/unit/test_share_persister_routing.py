"""Where the broker's share Persister (broker/coordinator_runtime/share_persister.py) sends a
request in a cluster: to the leader of the share partition's ``__share_group_state`` partition by
Kafka's hash, in process when that is this broker, COORDINATOR_NOT_AVAILABLE without a leader, and
the topic is created through the controller on first use. Fakes for the broker; nothing is sent."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import trio

from broker.coordinator_runtime import share_persister as sp
from coordinator.hashing import partition_for_group
from coordinator.share.persister import SharePartitionKey
from coordinator.share_state.records import share_coordinator_key
from protocol.errors import ErrorCode

KEY = SharePartitionKey("g", uuid.UUID(int=7), 2)


@dataclass
class Part:
    index: int
    leader: int


class FakeShell:
    topic = "__share_group_state"
    clustered = True

    def __init__(self) -> None:
        self.local: list[Any] = []

    async def call_key(self, key: SharePartitionKey, request: Any) -> Any:
        self.local.append(request)
        return sp.StateSummary(0, state_epoch=1, start_offset=5)


class FakeTopology:
    def __init__(self, leaders: list[int] | None) -> None:
        self.leaders = leaders

    def partitions(self, name: str) -> list[Part]:
        return [Part(i, leader) for i, leader in enumerate(self.leaders or [])]


class FakeBroker:
    node_id = 1

    def __init__(self, leaders: list[int] | None) -> None:
        self.share_coordinator = FakeShell()
        self.topology = FakeTopology(leaders)


def persister(broker: FakeBroker) -> tuple[sp.SharePersister, list[int]]:
    p = sp.SharePersister(broker)      # type: ignore[arg-type]
    sent: list[int] = []

    async def remote(node_id: int, remote: Any, error: Any) -> Any:
        sent.append(node_id)
        return sp.StateSummary(0, state_epoch=2)
    p._remote = remote      # type: ignore[method-assign]
    return p, sent


def test_routes_to_the_leader_of_the_keys_partition() -> None:
    index = partition_for_group(share_coordinator_key(KEY), 3)
    leaders = [3, 3, 3]
    leaders[index] = 2
    broker = FakeBroker(leaders)
    p, sent = persister(broker)
    assert trio.run(p.read_summary, KEY).state_epoch == 2
    assert sent == [2] and broker.share_coordinator.local == []
    leaders[index] = 1      # this broker: in process
    assert trio.run(p.read_summary, KEY).state_epoch == 1
    assert sent == [2] and len(broker.share_coordinator.local) == 1


def test_no_leader_is_coordinator_not_available(monkeypatch: Any) -> None:
    monkeypatch.setattr(sp, "RETRY_TIMEOUT_S", 0.0)     # the first answer is the last
    p, sent = persister(FakeBroker([-1] * 50))
    assert trio.run(p.delete_state, KEY) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert sent == []


def test_the_state_topic_is_created_on_first_use(monkeypatch: Any) -> None:
    broker = FakeBroker(None)
    created: list[str] = []

    async def auto_create(b: Any, name: str) -> int:
        created.append(name)
        broker.topology.leaders = [2] * 4
        return 0
    monkeypatch.setattr(sp, "auto_create", auto_create)
    p, sent = persister(broker)
    assert trio.run(p.read_summary, KEY).error_code == 0
    assert created == ["__share_group_state"] and sent == [2]
