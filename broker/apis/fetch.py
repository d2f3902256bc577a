"""Fetch v4-v18.

Quirks: consumers' fetches are sessionless (session id 0, KIP-227 allows it: clients fall
back to full fetches); followers' fetches get incremental fetch sessions (KIP-227,
broker/replica/fetch_session.py): a full fetch creates one, incremental ones name only the
changed partitions and are answered with only the partitions that have something new, while
every partition of the session is fetched (and its follower's offset reported to the replica
manager) as in a full fetch; v13+ names topics by id; the first batch is returned even when larger than
the limits; batches are served as stored bytes, whole, starting with the one that holds
the fetch offset; reads of 32 KiB and more are spliced into the encoded answer and sent
from the segment files (sendfile, see protocol/splice.py), smaller ones copied; a fetch
past the log end answers OFFSET_OUT_OF_RANGE; the long poll is woken by appends, never by
a timer loop.
Authorization: READ on each topic; a follower's fetch needs CLUSTER_ACTION.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio
from kafka.protocol.consumer import FetchRequest, FetchResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.splice import placeholder

from broker.common.services import RequestScope
from broker.apis.shared.common import ZERO_UUID, absent_partition_error, check_leader_epoch, find_topic
from broker.log.partition import Partition
from broker.log.region import FileRegion
from broker.log.segment import Segment
from broker.network.dispatch import RequestContext, Spliced, handles
from broker.replica.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, CachedPartition, FetchContext
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


@dataclass
class SessionCollect:
    """A fetch session's partitions to collect: every one is read (and long-polled on) as in a
    full fetch, but an incremental answer gets only those that must respond (records, errors,
    offsets the follower has not been told; CachedPartition.must_respond) — the others get no
    answer object at all, which is most of the saving. ``pairs`` holds (cached partition,
    answer) for each answer of the last collection."""
    topics: list[SessionTopic]
    incremental: bool
    pairs: list[tuple[CachedPartition, Any]] = field(default_factory=list)
    watched: list[Partition] = field(default_factory=list)   # the local partitions collected

    def signature(self, broker: Any) -> tuple[int, int, int]:
        """What a wake must have changed for a follower's parked fetch to find anything new:
        a leader's log end (follower fetches read to it) or the metadata image (leadership,
        deletions); high watermark moves alone never end the wait. Far cheaper than collecting."""
        return (sum(p.log_end_offset for p in self.watched), len(self.watched), id(broker.replicas.image))


@dataclass(slots=True)
class SessionTopic:
    """A topic of a fetch session's partitions, shaped as a request's FetchTopic for _collect."""
    topic: str | None
    topic_id: Any
    partitions: list[CachedPartition]


def session_topics(partitions: list[CachedPartition]) -> list[SessionTopic]:
    """Consecutive partitions of one topic grouped, in the session's order (as Kafka's
    FetchResponse.of groups its partition map)."""
    out: list[SessionTopic] = []
    for cp in partitions:
        last = out[-1] if out else None
        if last is not None and last.topic == cp.topic and last.topic_id == cp.topic_id:
            last.partitions.append(cp)
        else:
            out.append(SessionTopic(cp.topic, cp.topic_id, [cp]))
    return out


def _collect(ctx: RequestContext, req: FetchRequest, by_topic: dict[str, int] | None = None,
             session: SessionCollect | None = None) -> tuple[list, list[FileRegion], int]:
    """The answer's topics (records as placeholders), the file regions behind them, and
    the number of record bytes (also summed per topic into ``by_topic`` when given).
    With ``session`` its partitions replace the request's topics (see SessionCollect)."""
    broker = ctx.broker
    regions: list[FileRegion] = []
    by_id = ctx.api_version >= 13
    replica_id = replica_id_of(ctx, req)
    remaining = req.max_bytes if req.max_bytes and req.max_bytes > 0 else 0x7FFFFFFF
    total = 0
    first = True
    out = []
    if session is not None:
        session.pairs = []
        session.watched = []
    for ft in req.topics if session is None else session.topics:
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
                if session is not None:
                    session.pairs.append((fp, parts[-1]))
                continue
            assert topic is not None   # a partition was found in it
            if session is not None:
                session.watched.append(part)
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
            if (session is not None and session.incremental
                    and not fp.must_respond(bool(records), hw, part.last_stable_offset, part.log_start_offset, err,
                                            False)):
                continue     # nothing new for the follower: left out, and no answer object built
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
            if session is not None:
                session.pairs.append((fp, answer))
        if session is not None and session.incremental and not parts:
            continue
        out.append(FT(topic=ft.topic if not by_id else None, topic_id=tid if tid is not None else ZERO_UUID,
                      partitions=parts))
    return out, regions, total


def _has_error(topics: list) -> bool:
    return any(p.error_code for t in topics for p in t.partitions)


def _session_context(ctx: RequestContext, req: FetchRequest, replica_id: int) -> FetchContext | None:
    """A follower's fetch session context; None for a sessionless fetch (session id 0 with the
    final epoch, or a version before sessions), answered exactly as before sessions."""
    session_id = getattr(req, "session_id", None)
    epoch = getattr(req, "session_epoch", None)
    if session_id is None or epoch is None or (session_id == INVALID_SESSION_ID and epoch == FINAL_EPOCH):
        return None
    by_id = ctx.api_version >= 13
    requested = [CachedPartition.of(None if by_id else ft.topic, ft.topic_id if by_id else None, fp)
                 for ft in req.topics for fp in ft.partitions]
    forgotten = [(ft.topic_id if by_id else ft.topic, index)
                 for ft in getattr(req, "forgotten_topics_data", None) or () for index in ft.partitions]
    broker = ctx.broker
    return broker.replicas.fetch_sessions.new_context(session_id, epoch, requested, forgotten, by_id, replica_id,
                                                      broker.now_ms())


def _session_answer(ctx: RequestContext, fc: FetchContext, collected: SessionCollect, topics: list,
                    replica_id: int) -> tuple[list, int, int]:
    """(the answer's topics, its session id, its error) for a fetch with a session context: the
    cached partitions take what the answer tells; a full fetch's answer creates the session; an
    incremental one's partitions that carried records move to the end of the session (Kafka's
    fairness across partitions under the byte limits)."""
    cache = ctx.broker.replicas.fetch_sessions
    session = fc.session
    if session is not None and (cache.get(session.id) is not session or session.epoch != fc.expected_epoch):
        # another request of this session came in meanwhile (Kafka: a possible duplicate)
        return [], session.id, ErrorCode.INVALID_FETCH_SESSION_EPOCH
    for cp, pd in collected.pairs:
        cp.must_respond(bool(pd.records), pd.high_watermark, pd.last_stable_offset, pd.log_start_offset,
                        pd.error_code, True)
    if session is None:
        if not fc.full:
            return topics, INVALID_SESSION_ID, ErrorCode.NONE
        session_id = cache.maybe_create_session(fc.partitions, ctx.api_version >= 13, replica_id, True,
                                                ctx.broker.now_ms())
        return topics, session_id, ErrorCode.NONE
    for cp, pd in collected.pairs:
        if pd.records:
            session.partitions.move_to_end((cp.topic_id if session.uses_topic_ids else cp.topic, cp.partition))
    return topics, session.id, ErrorCode.NONE


@handles(ApiKey.FETCH)
async def fetch(ctx: RequestContext, req: FetchRequest) -> Spliced:
    broker = ctx.broker
    fc: FetchContext | None = None
    collecting: SessionCollect | None = None
    replica_id = replica_id_of(ctx, req) if broker.replicas.active else -1
    if replica_id >= 0:
        fc = _session_context(ctx, req, replica_id)
        if fc is not None and fc.error:
            return Spliced(ctx.response(throttle_time_ms=0, error_code=fc.error, session_id=INVALID_SESSION_ID,
                                        responses=[], node_endpoints=[]), [])
        if fc is not None:
            collecting = SessionCollect(session_topics(fc.partitions), fc.incremental)
        # the follower's LEO (every partition of its session), the HW, ISR expansion (broker/replica/)
        follower_fetched(ctx, req, collecting.topics if collecting is not None else None)
    by_topic: dict[str, int] | None = {} if broker.metrics is not None else None
    topics, regions, total = _collect(ctx, req, by_topic, collecting)
    min_bytes = max(req.min_bytes, 1)
    if total < min_bytes and req.max_wait_ms > 0 and not _has_error(topics) and not broker.stopping.is_set():
        # every append notifies, so the last collection is current when the wait times out
        seen = collecting.signature(broker) if collecting is not None else None
        stale = False
        with trio.move_on_after(req.max_wait_ms / 1000):
            while not broker.stopping.is_set():
                await broker.appends.wait()
                if collecting is not None:
                    # a follower's session: every append anywhere wakes it; collect only on news
                    now_seen = collecting.signature(broker)
                    if now_seen == seen:
                        stale = True
                        continue
                    seen = now_seen
                by_topic = {} if by_topic is not None else None
                topics, regions, total = _collect(ctx, req, by_topic, collecting)
                stale = False
                if total >= min_bytes or _has_error(topics):
                    break
        if stale:     # skipped wakes may have moved high watermarks: the answer tells them
            by_topic = {} if by_topic is not None else None
            topics, regions, total = _collect(ctx, req, by_topic, collecting)
    if by_topic is not None:   # the bytes of the answer that goes out, per topic
        assert broker.metrics is not None   # by_topic is kept only when there are metrics
        broker.metrics.fetched(by_topic)
    session_id, error = INVALID_SESSION_ID, int(ErrorCode.NONE)
    if fc is not None:
        assert collecting is not None      # set with the context
        topics, session_id, error = _session_answer(ctx, fc, collecting, topics, replica_id)
        if error:
            regions = []
    endpoints = leader_endpoints(ctx, topics, "partitions", FetchResponse) if broker.replicas.active else []
    return Spliced(ctx.response(throttle_time_ms=0, error_code=error, session_id=session_id, responses=topics,
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
