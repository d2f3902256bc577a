"""WriteTxnMarkers v1-v2 (between brokers): a transaction coordinator asks each partition's
leader to write the COMMIT/ABORT marker of a producer's transaction.

Quirks: only the partition's leader writes (NOT_LEADER_OR_FOLLOWER otherwise, the coordinator
retries at the new leader); a marker on ``__consumer_offsets`` also settles the producer's
pending transactional offset commits there; as in Kafka the answer waits until the markers
are replicated to the ISR (acks=all) when the partition has followers.
"""
from __future__ import annotations

from typing import Any

from kafka.protocol.producer import WriteTxnMarkersResponse

from coordinator.transactions import OFFSETS_TOPIC
from protocol.errors import ErrorCode

from ..dispatch import RequestContext, handles

MR = WriteTxnMarkersResponse.WritableTxnMarkerResult
TR = MR.WritableTxnMarkerTopicResult
PR = TR.WritableTxnMarkerPartitionResult


async def write_markers(broker: Any, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                        partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Write one transaction's marker to the partitions this broker leads; the error per
    partition, once the markers are replicated to the ISR where the partition has followers."""
    now = broker.now_ms()
    codes: dict[tuple[str, int], int] = {}
    waits: list[tuple[Any, int, tuple[str, int]]] = []
    for key in partitions:
        topic, index = key
        part = broker.logs.partition(topic, index)
        if part is None:
            codes[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        if part.replica is not None and not part.replica.is_leader:
            codes[key] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            continue
        try:
            part.append_control(producer_id, producer_epoch, commit, coordinator_epoch, now)
        except RuntimeError:          # e.g. a newer producer epoch already on the partition
            codes[key] = ErrorCode.INVALID_PRODUCER_EPOCH
            continue
        codes[key] = ErrorCode.NONE
        if topic == OFFSETS_TOPIC:
            broker.groups.complete_transaction(index, producer_id, commit)
        if part.replica is not None and part.replica.followers:
            broker.replicas.leader_appended(part)
            waits.append((part, part.log_end_offset, key))
    broker.appends.notify()            # read_committed fetches wait for the LSO to move
    if waits:
        acks = await broker.replicas.wait_for_acks([(p, r) for p, r, _ in waits],
                                                   int(broker.config["replica.socket.timeout.ms"]) / 1000)
        for (_, _, key), code in zip(waits, acks):
            codes[key] = code
    return codes


@handles(27)
async def write_txn_markers(ctx: RequestContext, req: Any) -> Any:
    results = []
    for marker in req.markers:
        wanted = [(t.name, i) for t in marker.topics for i in t.partition_indexes]
        codes = await write_markers(ctx.broker, marker.producer_id, marker.producer_epoch, marker.transaction_result,
                                    marker.coordinator_epoch, wanted)
        topics = [TR(name=t.name, partitions=[PR(partition_index=i, error_code=codes[(t.name, i)])
                                              for i in t.partition_indexes]) for t in marker.topics]
        results.append(MR(producer_id=marker.producer_id, topics=topics))
    return ctx.response(markers=results)
