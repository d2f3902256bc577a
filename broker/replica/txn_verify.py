"""KIP-890 verification of a transaction's partitions with its transaction coordinator, for the
leader of a partition about to append a transaction's first batch (Produce) and for the group
coordinator about to write a TxnOffsetCommit: Kafka's AddPartitionsToTxnManager.

``verify_transaction`` asks the coordinator of the transactional id: in process when this broker
leads the id's ``__transaction_state`` partition (through ``broker.txns``, answered once the
coordinator's records are committed), else broker-to-broker with AddPartitionsToTxn v4
(``verify_only``: transactions v1, is each partition already in the transaction?) or v5 with
``verify_only`` false (transactions v2: the partitions are added). Remote checks are batched per
coordinator broker, as Kafka's manager does: while one AddPartitionsToTxn is in flight to a
broker, the transactions that arrive for it wait and go out together in the next one; a
transactional id already waiting with the same epoch has its partitions merged into the waiting
entry (Kafka answers the older one NETWORK_EXCEPTION instead; merging spares the producer a
retry), a newer epoch fences the waiting one (INVALID_PRODUCER_EPOCH), an older one is fenced at
once. An unreachable broker answers NETWORK_EXCEPTION, a coordinator without a leader
COORDINATOR_NOT_AVAILABLE; a top-level CLUSTER_AUTHORIZATION_FAILED becomes INVALID_TXN_STATE
and PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH (the errors producers expect). The caller
maps the rest to its API's errors (broker/apis/produce.py).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
import trio
from kafka.protocol.producer import AddPartitionsToTxnRequest

from coordinator.txn import coordinator as tx
from protocol.errors import ErrorCode

from .client import BrokerConnection, BrokerConnectionError
from .manager import endpoint_of

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.txn")

T = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
TopicPartition = tuple[str, int]
VERIFY_TIMEOUT_S = 10.0


def remote_transaction_coordinator(broker: BrokerServices, transactional_id: str) -> int | None:
    """The broker leading the transactional id's partition when it is not this one (in a cluster;
    -1 while it has no leader)."""
    shell = broker.txns
    if not shell.clustered:
        return None     # a single node leads every partition (spares listing them per Produce)
    index = shell.partition_for(transactional_id)
    state = next((p for p in broker.topology.partitions(shell.topic) if p.index == index), None)
    if state is None or state.leader == broker.node_id:
        return None     # led here (a single node leads every partition), or not created yet
    return state.leader


async def verify_transaction(broker: BrokerServices, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: list[TopicPartition], add: bool) -> dict[TopicPartition, int]:
    """The transaction coordinator's error for each of ``partitions`` (NONE: in the
    transaction, or added to it when ``add``)."""
    remote = remote_transaction_coordinator(broker, transactional_id)
    if remote is None:
        r: tx.AddPartitionsResult = await broker.txns.call_for(transactional_id, tx.AddPartitionsToTxn(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            partitions=list(partitions), verify_only=not add, api_version=5 if add else 4))
        return {tp: _producer_error(r.error_for(tp)) for tp in partitions}
    return await _manager(broker).verify(remote, transactional_id, producer_id, producer_epoch, partitions, add)


async def verify_remotely(broker: BrokerServices, leader: int, transactional_id: str, producer_id: int,
                          producer_epoch: int, topic: str, partition: int, add: bool) -> int:
    """One partition's check with the coordinator on broker ``leader`` (TxnOffsetCommit)."""
    errors = await _manager(broker).verify(leader, transactional_id, producer_id, producer_epoch,
                                           [(topic, partition)], add)
    return errors[(topic, partition)]


def _producer_error(code: int) -> int:
    """Kafka's AddPartitionsToTxnManager: producers expect INVALID_PRODUCER_EPOCH when fenced."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code


@dataclass(slots=True)
class _Waiter:
    """One caller's partitions of a waiting transaction, and its answer once known."""
    partitions: list[TopicPartition]
    result: dict[TopicPartition, int] | None = None
    event: trio.Event = field(default_factory=trio.Event)

    def answer(self, errors: dict[TopicPartition, int]) -> None:
        if self.result is None:
            self.result = {tp: errors.get(tp, ErrorCode.NONE) for tp in self.partitions}
        self.event.set()

    def fail(self, code: int) -> None:
        self.answer({tp: code for tp in self.partitions})


@dataclass(slots=True)
class _Txn:
    """One transactional id waiting to go to a coordinator broker."""
    producer_id: int
    producer_epoch: int
    add: bool
    waiters: list[_Waiter] = field(default_factory=list)

    def partitions(self) -> list[TopicPartition]:
        return sorted({tp for w in self.waiters for tp in w.partitions})

    def fail(self, code: int) -> None:
        for w in self.waiters:
            w.fail(code)


@dataclass(slots=True)
class _Node:
    waiting: dict[str, _Txn] = field(default_factory=dict)
    sending: bool = False
    conn: BrokerConnection | None = None


class AddPartitionsToTxnManager:
    """The per-coordinator-broker batching of remote verifications (one request in flight per
    broker). No task of its own: the first caller that finds no request in flight sends, and
    keeps sending what queued meanwhile until nothing waits; if it is cancelled, a waiting caller
    takes over."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self._nodes: dict[int, _Node] = {}

    async def verify(self, node_id: int, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[TopicPartition], add: bool) -> dict[TopicPartition, int]:
        waiter = _Waiter(list(partitions))
        if node_id < 0:
            waiter.fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return waiter.result or {}
        node = self._nodes.setdefault(node_id, _Node())
        txn = node.waiting.get(transactional_id)
        if txn is not None and txn.producer_id == producer_id and txn.producer_epoch > producer_epoch:
            waiter.fail(ErrorCode.INVALID_PRODUCER_EPOCH)        # fenced by the one already waiting
            return waiter.result or {}
        if txn is None or txn.producer_id != producer_id or txn.producer_epoch != producer_epoch \
                or txn.add != add:
            if txn is not None:   # a newer epoch fences the waiting one; else Kafka's retriable error
                txn.fail(ErrorCode.INVALID_PRODUCER_EPOCH if txn.producer_id == producer_id
                         and txn.producer_epoch < producer_epoch else ErrorCode.NETWORK_EXCEPTION)
            txn = node.waiting[transactional_id] = _Txn(producer_id, producer_epoch, add)
        txn.waiters.append(waiter)
        while waiter.result is None:
            if not node.sending:
                node.sending = True
                try:
                    await self._send_waiting(node_id, node)
                finally:
                    node.sending = False
                    for t in node.waiting.values():   # wake the waiters: one of them sends next
                        for w in t.waiters:
                            w.event.set()
            else:
                await waiter.event.wait()
                if waiter.result is None:
                    waiter.event = trio.Event()
        return waiter.result

    async def _send_waiting(self, node_id: int, node: _Node) -> None:
        while node.waiting:
            batch, node.waiting = node.waiting, {}
            try:
                await self._send(node_id, node, batch)
            finally:   # cancelled mid-request: the callers learn it as a network error
                for txn in batch.values():
                    txn.fail(ErrorCode.NETWORK_EXCEPTION)

    async def _send(self, node_id: int, node: _Node, batch: dict[str, _Txn]) -> None:
        rm = self.broker.replicas
        endpoint = endpoint_of(rm.image, node_id, rm.listener)
        if endpoint is None:
            for txn in batch.values():
                txn.fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        if node.conn is None or (node.conn.host, node.conn.port) != endpoint:
            if node.conn is not None:
                await node.conn.close()
            node.conn = BrokerConnection(*endpoint, f"samsa-txn-verify-{self.broker.node_id}",
                                         timeout_s=VERIFY_TIMEOUT_S)
        transactions = []
        for tid, txn in batch.items():
            by_topic: dict[str, list[int]] = {}
            for topic, p in txn.partitions():
                by_topic.setdefault(topic, []).append(p)
            transactions.append(T(transactional_id=tid, producer_id=txn.producer_id,
                                  producer_epoch=txn.producer_epoch, verify_only=not txn.add,
                                  topics=[T.AddPartitionsToTxnTopic(name=t, partitions=ps)
                                          for t, ps in by_topic.items()]))
        version = 5 if any(txn.add for txn in batch.values()) else 4
        try:
            resp = await node.conn.call(AddPartitionsToTxnRequest(transactions=transactions), version)
        except BrokerConnectionError as exc:
            log.info("transaction verification failed", coordinator=node_id, error=str(exc))
            for txn in batch.values():
                txn.fail(ErrorCode.NETWORK_EXCEPTION)
            return
        if resp.error_code:
            code = ErrorCode.INVALID_TXN_STATE if resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED \
                else resp.error_code
            for txn in batch.values():
                txn.fail(code)
            return
        for result in resp.results_by_transaction:
            answered = batch.get(result.transactional_id)
            if answered is None:
                continue
            errors = {(t.name, p.partition_index): _producer_error(p.partition_error_code)
                      for t in result.topic_results for p in t.results_by_partition}
            for w in answered.waiters:
                w.answer(errors)


_MANAGERS: weakref.WeakKeyDictionary[Any, AddPartitionsToTxnManager] = weakref.WeakKeyDictionary()


def _manager(broker: BrokerServices) -> AddPartitionsToTxnManager:
    manager = _MANAGERS.get(broker)
    if manager is None:
        manager = _MANAGERS[broker] = AddPartitionsToTxnManager(broker)
    return manager
