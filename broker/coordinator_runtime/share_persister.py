"""The broker's :class:`~coordinator.share.persister.Persister` (Kafka's ``DefaultStatePersister``
with its ``PersisterStateManager``): how a share partition's leader initializes, reads, writes and
deletes its state held by the share coordinator.

The share coordinator of a share partition is the leader of its ``__share_group_state`` partition
(``abs(hash("<group>:<topic id>:<partition>")) % partitions``,
broker/coordinator_runtime/share_state_runtime.py). When that is this broker — always on a single
node — the request is stepped in process through ``broker.share_coordinator`` and answered once
its records are committed. Otherwise it goes broker to broker: InitializeShareGroupState v0,
ReadShareGroupState v0, WriteShareGroupState v1, DeleteShareGroupState v0 or
ReadShareGroupStateSummary v1 to the leader the metadata image names (the topic is created through
the controller on first use, as FindCoordinator's key type 2 would), with client id
``samsa-share-persister-<node id>``.

NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE (also an unreachable
broker, a partition without a leader, a write that timed out) are retried with a doubling backoff
(50 ms up to 1 s) for at most ``RETRY_TIMEOUT_S``, as Kafka's persister retries them; the last
answer is returned then. Every other answer (FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH,
INVALID_REQUEST for a share partition never initialized, ...) is returned as it is.

Deviation: Kafka's persister batches the requests bound for one coordinator broker into one
request; here each share partition is its own request (one in flight per peer broker).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog
import trio

from coordinator.hashing import partition_for_group
from coordinator.share.persister import (PersisterStateBatch, ReadStateResult, SharePartitionKey, ShareState,
                                         StateSummary)
from coordinator.share_state import coordinator as sc
from coordinator.share_state.records import share_coordinator_key
from protocol import schema_messages as m
from protocol.errors import ErrorCode

from broker.metadata.topic_creation import auto_create
from broker.replica.client import BrokerConnection, BrokerConnectionError
from broker.replica.manager import endpoint_of

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.share")

RETRIABLE = frozenset((ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                       ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.REQUEST_TIMED_OUT))
RETRY_TIMEOUT_S = 15.0
BACKOFF_INITIAL_S = 0.05
BACKOFF_MAX_S = 1.0
REQUEST_TIMEOUT_S = 10.0

Remote = Callable[[BrokerConnection], Awaitable[Any]]


def _code(result: Any) -> int:
    return int(result) if isinstance(result, int) else int(result.error_code)


class SharePersister:
    """Implements :class:`coordinator.share.persister.Persister` for this broker."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self._conns: dict[int, BrokerConnection] = {}
        self._locks: dict[int, trio.Lock] = {}
        self.remote_requests = 0      # requests sent to another broker (tests, metrics)

    # -- the Persister protocol ----------------------------------------------------------------
    async def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> int:
        def local() -> Any:
            return sc.InitializeState(key=key, state_epoch=state_epoch, start_offset=start_offset)

        async def remote(conn: BrokerConnection) -> int:
            R = m.InitializeShareGroupStateRequest
            p = await _ask(conn, R, R.InitializeStateData, 0, key, state_epoch=state_epoch, start_offset=start_offset)
            return int(p.error_code)

        return _code(await self._call(key, local, remote, lambda code: code))

    async def read_state(self, key: SharePartitionKey, leader_epoch: int) -> ReadStateResult:
        def local() -> Any:
            return sc.ReadState(key=key, leader_epoch=leader_epoch)

        async def remote(conn: BrokerConnection) -> ReadStateResult:
            R = m.ReadShareGroupStateRequest
            p = await _ask(conn, R, R.ReadStateData, 0, key, leader_epoch=leader_epoch)
            if p.error_code:
                return ReadStateResult(p.error_code, error_message=p.error_message)
            return ReadStateResult(0, ShareState(
                state_epoch=p.state_epoch, start_offset=p.start_offset, leader_epoch=leader_epoch,
                batches=tuple(PersisterStateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                              for b in p.state_batches)))

        result: ReadStateResult = await self._call(key, local, remote, lambda code: ReadStateResult(code))
        return result

    async def write_state(self, key: SharePartitionKey, state: ShareState) -> int:
        def local() -> Any:
            return sc.WriteState(key=key, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
                                 start_offset=state.start_offset, batches=tuple(state.batches),
                                 delivery_complete_count=state.delivery_complete_count)

        async def remote(conn: BrokerConnection) -> int:
            R = m.WriteShareGroupStateRequest
            B = R.WriteStateData.PartitionData.StateBatch
            p = await _ask(conn, R, R.WriteStateData, 1, key, state_epoch=state.state_epoch,
                           leader_epoch=state.leader_epoch, start_offset=state.start_offset,
                           delivery_complete_count=state.delivery_complete_count,
                           state_batches=[B(first_offset=b.first_offset, last_offset=b.last_offset,
                                            delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                                          for b in state.batches])
            return int(p.error_code)

        return _code(await self._call(key, local, remote, lambda code: code))

    async def delete_state(self, key: SharePartitionKey) -> int:
        def local() -> Any:
            return sc.DeleteState(key=key)

        async def remote(conn: BrokerConnection) -> int:
            R = m.DeleteShareGroupStateRequest
            return int((await _ask(conn, R, R.DeleteStateData, 0, key)).error_code)

        return _code(await self._call(key, local, remote, lambda code: code))

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int = -1) -> StateSummary:
        def local() -> Any:
            return sc.ReadStateSummary(key=key, leader_epoch=leader_epoch)

        async def remote(conn: BrokerConnection) -> StateSummary:
            R = m.ReadShareGroupStateSummaryRequest
            p = await _ask(conn, R, R.ReadStateSummaryData, 1, key, leader_epoch=leader_epoch)
            if p.error_code:
                return StateSummary(p.error_code, error_message=p.error_message)
            return StateSummary(0, state_epoch=p.state_epoch, leader_epoch=p.leader_epoch,
                                start_offset=p.start_offset, delivery_complete_count=p.delivery_complete_count)

        result: StateSummary = await self._call(key, local, remote, lambda code: StateSummary(code))
        return result

    # -- routing and retries -----------------------------------------------------------------
    async def _call(self, key: SharePartitionKey, local: Callable[[], Any], remote: Remote,
                    error: Callable[[int], Any]) -> Any:
        """The coordinator's answer, retried while it is one of RETRIABLE, within RETRY_TIMEOUT_S."""
        deadline = trio.current_time() + RETRY_TIMEOUT_S
        backoff = BACKOFF_INITIAL_S
        while True:
            result = await self._once(key, local, remote, error)
            code = _code(result)
            if code not in RETRIABLE or trio.current_time() + backoff > deadline:
                return result
            log.debug("share coordinator not ready; retrying", key=share_coordinator_key(key),
                      error=ErrorCode(code).name, backoff_s=backoff)
            await trio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    async def _once(self, key: SharePartitionKey, local: Callable[[], Any], remote: Remote,
                    error: Callable[[int], Any]) -> Any:
        shell = self.broker.share_coordinator
        if not shell.clustered:
            return await shell.call_key(key, local())
        leader = await self._coordinator_node(key)
        if leader is None or leader < 0:
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if leader == self.broker.node_id:
            return await shell.call_key(key, local())
        return await self._remote(leader, remote, error)

    async def _coordinator_node(self, key: SharePartitionKey) -> int | None:
        """The leader of ``key``'s ``__share_group_state`` partition (-1 without one), creating the
        topic through the controller on first use; None when it cannot be created."""
        broker = self.broker
        topic = broker.share_coordinator.topic
        parts = broker.topology.partitions(topic)
        if not parts:
            if await auto_create(broker, topic):
                return None
            parts = broker.topology.partitions(topic)
            if not parts:
                return None
        index = partition_for_group(share_coordinator_key(key), len(parts))
        state = next((p for p in parts if p.index == index), None)
        return state.leader if state is not None else None

    async def _remote(self, node_id: int, remote: Remote, error: Callable[[int], Any]) -> Any:
        rm = self.broker.replicas
        endpoint = endpoint_of(rm.image, node_id, rm.listener)
        if endpoint is None:
            return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        lock = self._locks.setdefault(node_id, trio.Lock())
        async with lock:    # one request in flight per connection
            conn = self._conns.get(node_id)
            if conn is None or (conn.host, conn.port) != endpoint:
                if conn is not None:
                    await conn.close()
                conn = self._conns[node_id] = BrokerConnection(
                    *endpoint, f"samsa-share-persister-{self.broker.node_id}", timeout_s=REQUEST_TIMEOUT_S)
            self.remote_requests += 1
            try:
                return await remote(conn)
            except BrokerConnectionError as exc:
                log.info("share coordinator unreachable", node_id=node_id, error=str(exc))
                return error(ErrorCode.COORDINATOR_NOT_AVAILABLE)

    async def close(self) -> None:
        for conn in self._conns.values():
            await conn.close()
        self._conns.clear()


async def _ask(conn: BrokerConnection, request: Any, topic_data: Any, version: int, key: SharePartitionKey,
               **partition: Any) -> Any:
    """Sends ``request`` (version ``version``) for the one share partition ``key`` — group, then
    ``topic_data``, then its ``PartitionData`` with the fields ``partition``, as every
    *ShareGroupState request nests them — and returns the response's one partition result."""
    resp = await conn.call(request(group_id=key.group_id, topics=[topic_data(
        topic_id=key.topic_id, partitions=[topic_data.PartitionData(partition=key.partition, **partition)])]), version)
    return resp.results[0].partitions[0]
