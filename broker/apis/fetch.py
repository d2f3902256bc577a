"""Fetch v4-v18.

Quirks: sessionless answers only (session id 0, KIP-227 allows it: clients fall back to
full fetches); v13+ names topics by id; the first batch is returned even when larger than
the limits; batches are served as stored bytes, whole, starting with the one that holds
the fetch offset; reads of 32 KiB and more are spliced into the encoded answer and sent
from the segment files (sendfile, see protocol/splice.py), smaller ones copied; a fetch
past the log end answers OFFSET_OUT_OF_RANGE; the long poll is woken by appends, never by
a timer loop.
Authorization: READ on each topic; a follower's fetch needs CLUSTER_ACTION.
"""
from __future__ import annotations

from typing import Any

import trio
from kafka.protocol.consumer import FetchRequest, FetchResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.splice import placeholder

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID, absent_partition_error, check_leader_epoch, find_topic
from broker.log.region import FileRegion
from broker.log.segment import Segment
from broker.network.dispatch import RequestContext, Spliced, handles
from broker.replica.answers import (LEADER_HINT_ERRORS, absent_leader_answer, follower_fetched, leader_endpoints,
                                    not_leader_answer, replica_id_of)
from broker.security.acl import Operation as Op
from broker.security.authz import (CLUSTER_DENIED, TOPIC_DENIED, Handler, answer_message, authorizes, cluster,
                                   response_class, split_topics, topic_name)

FT = FetchResponse.FetchableTopicResponse
PD = FT.PartitionData


# Reads this small are copied (cheaper than a descriptor and a sendfile call); at most this
# many regions per answer, so a fetch of thousands of partitions cannot exhaust descriptors.
SPLICE_MIN_BYTES = 32 * 1024
MAX_REGIONS = 64


def _records(found: tuple[Segment, int, int], regions: list[FileRegion]) -> tuple[bytes, int]:
    """The records field for a located read: a placeholder for a file region, or the bytes."""
    seg, pos, length = found
    if length >= SPLICE_MIN_BYTES and len(regions) < MAX_REGIONS:
        try:
            region = FileRegion(seg.fd, pos, length)
        except OSError:  # out of descriptors: copy instead
            pass
        else:
            regions.append(region)
            return placeholder(len(regions) - 1), length
    return seg.read(pos, length), length


def _collect(ctx: RequestContext, req: FetchRequest,
             by_topic: dict[str, int] | None = None) -> tuple[list, list[FileRegion], int]:
    """The answer's topics (records as placeholders), the file regions behind them, and
    the number of record bytes (also summed per topic into ``by_topic`` when given)."""
    broker = ctx.broker
    regions: list[FileRegion] = []
    by_id = ctx.api_version >= 13
    replica_id = replica_id_of(ctx, req)
    remaining = req.max_bytes if req.max_bytes and req.max_bytes > 0 else 0x7FFFFFFF
    total = 0
    first = True
    out = []
    for ft in req.topics:
        tid = getattr(ft, "topic_id", None)
        topic = find_topic(broker, None if by_id else ft.topic, tid if by_id else None)
        parts = []
        for fp in ft.partitions:
            pidx = fp.partition
            part = topic.partitions.get(pidx) if topic is not None else None
            if part is None:
                # no local replica: NOT_LEADER_OR_FOLLOWER when the cluster has the partition
                name, topic_id = (None, tid) if by_id else (ft.topic, None)
                code = absent_partition_error(broker, name, pidx, topic_id)
                parts.append(absent_leader_answer(ctx, name, topic_id, pidx, PD(
                    partition_index=pidx, error_code=code, high_watermark=-1, last_stable_offset=-1,
                    log_start_offset=-1, aborted_transactions=None, preferred_read_replica=-1,
                    records=b"")))   # empty, as Kafka sends (librdkafka fails on null at v16)
                continue
            assert topic is not None   # a partition was found in it
            if by_topic is not None and topic.name not in by_topic:
                by_topic[topic.name] = 0
            hw = part.high_watermark
            upper = part.last_stable_offset if req.isolation_level == 1 else hw
            err = check_leader_epoch(part, getattr(fp, "current_leader_epoch", -1))
            if part.replica is not None and not err:
                # a cluster: only the leader serves; a follower (replica id set) reads to the log end
                if not part.replica.is_leader:
                    err = ErrorCode.NOT_LEADER_OR_FOLLOWER
                elif replica_id >= 0:
                    upper = part.log_end_offset
            records = b""
            if not err:
                off = fp.fetch_offset
                if off < part.log_start_offset or off > part.log_end_offset:
                    err = ErrorCode.OFFSET_OUT_OF_RANGE
                elif off < upper:
                    limit = min(fp.partition_max_bytes, remaining)
                    found = part.locate(off, limit, upper, min_one=first)
                    if found is not None:
                        records, size = _records(found, regions)
                        first = False
                        remaining -= size
                        total += size
                        if by_topic is not None:
                            by_topic[topic.name] = by_topic.get(topic.name, 0) + size
            aborted: list[Any] | None = [] if req.isolation_level == 1 else None
            if aborted is not None and records:
                aborted = [FT.PartitionData.AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                           for a in part.aborted_in_range(fp.fetch_offset, upper)]
            answer = PD(partition_index=pidx, error_code=err, high_watermark=hw,
                        last_stable_offset=part.last_stable_offset, log_start_offset=part.log_start_offset,
                        aborted_transactions=aborted,
                        preferred_read_replica=-1, records=records)
            if err in LEADER_HINT_ERRORS and part.replica is not None:
                not_leader_answer(ctx, part, answer)
            parts.append(answer)
        out.append(FT(topic=ft.topic if not by_id else None, topic_id=tid if tid is not None else ZERO_UUID,
                      partitions=parts))
    return out, regions, total


def _has_error(topics: list) -> bool:
    return any(p.error_code for t in topics for p in t.partitions)


@handles(ApiKey.FETCH)
async def fetch(ctx: RequestContext, req: FetchRequest) -> Spliced:
    broker = ctx.broker
    if broker.replicas.active and replica_id_of(ctx, req) >= 0:
        follower_fetched(ctx, req)    # the follower's LEO, the HW, ISR expansion (broker/replica/)
    by_topic: dict[str, int] | None = {} if broker.metrics is not None else None
    topics, regions, total = _collect(ctx, req, by_topic)
    min_bytes = max(req.min_bytes, 1)
    if total < min_bytes and req.max_wait_ms > 0 and not _has_error(topics) and not broker.stopping.is_set():
        # every append notifies, so the last collection is current when the wait times out
        with trio.move_on_after(req.max_wait_ms / 1000):
            while not broker.stopping.is_set():
                await broker.appends.wait()
                by_topic = {} if by_topic is not None else None
                topics, regions, total = _collect(ctx, req, by_topic)
                if total >= min_bytes or _has_error(topics):
                    break
    if by_topic is not None:   # the bytes of the answer that goes out, per topic
        assert broker.metrics is not None   # by_topic is kept only when there are metrics
        broker.metrics.fetched(by_topic)
    endpoints = leader_endpoints(ctx, topics, "partitions", FetchResponse) if broker.replicas.active else []
    return Spliced(ctx.response(throttle_time_ms=0, error_code=0, session_id=0, responses=topics,
                                node_endpoints=endpoints), regions)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.FETCH)
async def authorize_fetch(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    replica = getattr(req, "replica_id", None)
    state = getattr(req, "replica_state", None)
    if state is not None and getattr(state, "replica_id", None) is not None:
        replica = state.replica_id if replica is None or replica < 0 else replica
    if replica is not None and replica >= 0:   # a follower's fetch (v15+ names it in replica_state)
        if not cluster(ctx, Op.CLUSTER_ACTION):
            return ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, session_id=0, responses=[])
        return await handler(ctx, req)
    ok, denied = split_topics(ctx, req.topics, Op.READ, lambda t: topic_name(ctx, t.topic, getattr(t, "topic_id", None)))
    if not denied:
        return await handler(ctx, req)
    req.topics = ok
    # nothing left to read: answer now rather than long-poll (fetches here are sessionless)
    response = await handler(ctx, req) if ok else ctx.response(throttle_time_ms=0, error_code=0, session_id=0,
                                                                responses=[])
    TR = response_class(ApiKey.FETCH, "FetchableTopicResponse")
    PD = TR.PartitionData
    answer_message(response).responses.extend(
        TR(topic=t.topic, topic_id=getattr(t, "topic_id", None),
           partitions=[PD(partition_index=p.partition, error_code=TOPIC_DENIED, high_watermark=-1,
                          last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                          preferred_read_replica=-1, records=b"") for p in t.partitions])
        # empty, not null, records: librdkafka cannot parse a null records field
        for t in denied)
    return response
