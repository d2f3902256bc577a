"""Hand-built Produce, Fetch, ListOffsets and Metadata requests over a RawClient, and record
batches to send: the broker-tier tests check answers field by field with these."""
from __future__ import annotations

import time
from typing import Any

from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest

from protocol import records as rb
from tests.support.rawclient import RawClient

PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, INIT_PID = 0, 1, 2, 3, 18, 22


def kafka_python_frame(message: Any, correlation_id: int) -> bytes:
    """``message``'s framed answer as kafka-python itself encodes it: what the broker's own
    encoders (protocol/messages.py) are compared with."""
    message.with_header(correlation_id=correlation_id)
    return bytes(message.encode(header=True, framed=True))


def create(client: RawClient, topic: str) -> None:
    """Auto-create ``topic`` through Metadata (the broker default allows it)."""
    resp = client.request(METADATA, 12, topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                          allow_auto_topic_creation=True)
    assert resp.topics[0].error_code == 0


def produce(client: RawClient, topic: str, batch: bytes, partition: int = 0, acks: int = -1,
            version: int = 9):
    """Produce one batch to one partition; its partition response (None for acks=0, which gets none)."""
    td = ProduceRequest.TopicProduceData(name=topic, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=bytes(batch))])
    if acks == 0:
        client.send(PRODUCE, version, transactional_id=None, acks=0, timeout_ms=5000, topic_data=[td])
        return None
    resp = client.request(PRODUCE, version, transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[td])
    return resp.responses[0].partition_responses[0]


def fetch(client: RawClient, topic: str, offset: int, partition: int = 0, max_wait_ms: int = 0,
          max_bytes: int = 1 << 20, partition_max_bytes: int = 1 << 20, version: int = 11):
    """Fetch one partition from ``offset`` (read_uncommitted, no session); its partition response."""
    FT = FetchRequest.FetchTopic
    resp = client.request(FETCH, version, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
                          isolation_level=0, session_id=0, session_epoch=-1,
                          topics=[FT(topic=topic, partitions=[FT.FetchPartition(
                              partition=partition, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                              partition_max_bytes=partition_max_bytes)])],
                          forgotten_topics_data=[], rack_id="")
    return resp.responses[0].partitions[0]


def list_offset(client: RawClient, topic: str, ts: int, partition: int = 0, version: int = 7):
    """ListOffsets for timestamp ``ts`` (-1 latest, -2 earliest); the partition response."""
    LT = ListOffsetsRequest.ListOffsetsTopic
    resp = client.request(LIST_OFFSETS, version, replica_id=-1, isolation_level=0, topics=[
        LT(name=topic, partitions=[LT.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                           timestamp=ts)])])
    return resp.topics[0].partitions[0]


def batch(n: int, ts: int | None = None, **kw) -> bytearray:
    """One batch of ``n`` records ``k<i>``/``v<i>``, timestamped ``ts`` (default now)."""
    now = ts if ts is not None else int(time.time() * 1000)
    return rb.build_batch([(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)], timestamp_ms=now, **kw)


def batches_in(records: bytes) -> list[rb.BatchHeader]:
    """The batch headers in a Fetch answer's records (none for null or empty)."""
    return list(rb.iter_batches(records)) if records else []


def value_batch(values: list[bytes], **kw) -> bytearray:
    """One batch of ``values`` with null keys, timestamped now."""
    return rb.build_batch([(None, v) for v in values], timestamp_ms=int(time.time() * 1000), **kw)
