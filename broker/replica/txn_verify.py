"""A cluster's KIP-890 check of a TxnOffsetCommit when the transaction's coordinator is another
broker (Kafka's AddPartitionsToTxnManager): the group coordinator's broker asks the leader of the
transactional id's ``__transaction_state`` partition with AddPartitionsToTxn v4 (``verify_only``,
transactions v1) or v5 (the group's offsets partition added, transactions v2), and takes the
answer for that one partition. An unreachable or moved coordinator answers
COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR, which the client retries."""
from __future__ import annotations

from typing import TYPE_CHECKING

import structlog
from kafka.protocol.producer import AddPartitionsToTxnRequest

from protocol.errors import ErrorCode

from .client import BrokerConnection, BrokerConnectionError

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

log = structlog.get_logger("samsa.txn")

T = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction


def remote_transaction_coordinator(broker: Broker, transactional_id: str) -> int | None:
    """The broker leading the transactional id's partition when it is not this one (in a cluster;
    -1 while it has no leader)."""
    shell = broker.txns
    index = shell.partition_for(transactional_id)
    state = next((p for p in broker.topology.partitions(shell.topic) if p.index == index), None)
    if state is None or state.leader == broker.node_id:
        return None     # led here (a single node leads every partition), or not created yet
    return state.leader


async def verify_remotely(broker: Broker, leader: int, transactional_id: str, producer_id: int,
                          producer_epoch: int, topic: str, partition: int, add: bool) -> int:
    """The transaction coordinator's error for ``topic``/``partition`` in the transaction."""
    if leader < 0:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    node = next((b for b in broker.topology.brokers() if b.id == leader), None)
    ep = node.endpoint(broker.replicas.listener) if node is not None else None
    endpoint = None if ep is None else (ep.host, ep.port)
    if endpoint is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    conn = BrokerConnection(*endpoint, f"samsa-txn-verify-{broker.node_id}", timeout_s=10.0)
    version = 5 if add else 4
    req = AddPartitionsToTxnRequest(transactions=[T(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        verify_only=not add, topics=[T.AddPartitionsToTxnTopic(name=topic, partitions=[partition])])])
    try:
        resp = await conn.call(req, version)
    except BrokerConnectionError as exc:
        log.info("transaction verification failed", leader=leader, transactional_id=transactional_id,
                 error=str(exc))
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    finally:
        await conn.close()
    if resp.error_code:
        return resp.error_code
    for result in resp.results_by_transaction:
        for t in result.topic_results:
            for p in t.results_by_partition:
                if t.name == topic and p.partition_index == partition:
                    return p.partition_error_code
    return ErrorCode.UNKNOWN_SERVER_ERROR
