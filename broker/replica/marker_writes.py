"""Writing one transaction's COMMIT/ABORT marker to the partitions this broker leads: the work
of WriteTxnMarkers (broker/apis/txn_markers.py), also done directly by the marker sender
(broker/replica/markers.py) when the coordinator itself leads a partition. Its own module so
the sender needs no import of the API layer above it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coordinator.txn.coordinator import OFFSETS_TOPIC
from protocol.errors import ErrorCode

from broker.metadata.topic_catalog import absent_partition_error

if TYPE_CHECKING:
    from broker.common.services import BrokerServices


async def write_markers(broker: BrokerServices, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                        partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Write one transaction's marker to the partitions this broker leads; the error per
    partition, once the markers are replicated to the ISR where the partition has followers."""
    now = broker.now_ms()
    codes: dict[tuple[str, int], int] = {}
    waits: list[tuple[Any, int, tuple[str, int]]] = []
    for key in partitions:
        topic, index = key
        part = broker.logs.partition(topic, index)
        if part is None:    # NOT_LEADER_OR_FOLLOWER (retried at the leader) when the cluster has it
            codes[key] = absent_partition_error(broker, topic, index)
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
            waits.append((part, part.log_end_offset, key))
    if waits:
        acks = await broker.replicas.wait_for_acks([(p, r) for p, r, _ in waits],
                                                   int(broker.config["replica.socket.timeout.ms"]) / 1000)
        for (_, _, key), code in zip(waits, acks):
            codes[key] = code
    return codes
