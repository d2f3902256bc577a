"""A cluster's transaction marker sender (Kafka's TransactionMarkerChannelManager): the
COMMIT/ABORT markers of a transaction go to each partition's current leader — written
here for partitions this broker leads, sent with WriteTxnMarkers to the others — retried
(at the leader the newest metadata names) until every partition has its marker; then the
transaction coordinator completes the transaction."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
import trio
from kafka.protocol.producer import WriteTxnMarkersRequest

from protocol.errors import ErrorCode

from broker.replica.marker_writes import write_markers
from .client import BrokerConnection, BrokerConnectionError
from .manager import endpoint_of

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.txn")

WRITE_TXN_MARKERS_VERSION = 1
RETRY_BACKOFF_S = 0.1


class MarkerSender:
    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self._conns: dict[int, tuple[BrokerConnection, trio.Lock]] = {}

    async def _send(self, leader: int, job: Any, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        rm = self.broker.replicas
        endpoint = endpoint_of(rm.image, leader, rm.listener)
        if endpoint is None:
            return {}
        cached = self._conns.get(leader)
        if cached is None or (cached[0].host, cached[0].port) != endpoint:
            cached = BrokerConnection(*endpoint, f"samsa-txn-markers-{self.broker.node_id}"), trio.Lock()
            self._conns[leader] = cached
        conn, lock = cached
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        W = WriteTxnMarkersRequest.WritableTxnMarker
        req = WriteTxnMarkersRequest(markers=[W(
            producer_id=job.producer_id, producer_epoch=job.producer_epoch, transaction_result=job.commit,
            topics=[W.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
            coordinator_epoch=job.coordinator_epoch)])
        async with lock:
            try:
                resp = await conn.call(req, WRITE_TXN_MARKERS_VERSION)
            except BrokerConnectionError as exc:
                log.info("transaction markers not delivered; retrying", leader=leader, error=str(exc))
                return {}
        return {(t.name, p.partition_index): p.error_code for m in resp.markers for t in m.topics for p in t.partitions}

    async def deliver(self, job: Any, still_coordinator: Any) -> bool:
        """Write ``job``'s markers at every partition's leader; False when this broker stopped
        being the transaction's coordinator first (the new one finishes the job)."""
        remaining = set(job.partitions)
        while remaining:
            if not still_coordinator():
                return False
            image = self.broker.replicas.image
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for key in list(remaining):
                reg = image.partition(*key) if image is not None else None
                if reg is None:
                    log.warning("dropping transaction marker for a partition that no longer exists",
                                topic=key[0], partition=key[1], transactional_id=job.transactional_id)
                    remaining.discard(key)
                    continue
                by_leader.setdefault(reg.leader, []).append(key)
            for leader, keys in by_leader.items():
                if leader < 0:
                    continue
                if leader == self.broker.node_id:
                    codes = await write_markers(self.broker, job.producer_id, job.producer_epoch, job.commit,
                                                job.coordinator_epoch, keys)
                else:
                    codes = await self._send(leader, job, keys)
                for key, code in codes.items():
                    if code == ErrorCode.NONE:
                        remaining.discard(key)
                    elif code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                        log.error("transaction marker rejected", topic=key[0], partition=key[1],
                                  transactional_id=job.transactional_id, error=ErrorCode(code).name)
                        remaining.discard(key)
            if remaining:
                await trio.sleep(RETRY_BACKOFF_S)
        return True
