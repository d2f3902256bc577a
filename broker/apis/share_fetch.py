"""ShareFetch v1-v2 (KIP-932 share groups; v2 is Kafka 4.2's: KIP-1206 acquire modes and KIP-1222
renew acknowledgements). Advertised only when share groups are enabled (broker/server/api_table.py);
state in broker/coordinator_runtime/share_runtime.py.

Quirks: reads whole stored batches from the first AVAILABLE record of each session partition (no
per-record decoding: only batch headers are parsed to know their offsets) and returns those
holding an acquired record, as stored bytes, with AcquiredRecords ranges (the client skips the
records of a batch it did not acquire); it long-polls on appends up to MaxWaitMs when nothing was
acquired. Acknowledgements piggy-backed on it are applied before fetching; epoch -1 closes the
share session and releases the member's remaining acquired records. Answers name only partitions
with records, errors or acknowledgement results.
v2: ShareAcquireMode 1 (record_limit, the client's ``share.acquire.mode``) acquires at most
MaxRecords records, splitting a stored batch (the batch travels whole; AcquiredRecords names only
what was acquired); 0 (batch_optimized) finishes batches as v1 does. RENEW acknowledgements (type 4,
only from v2) extend the member's locks; a request with IsRenewAck set only acknowledges and
answers at once, acquiring nothing (KIP-1222).
The group configs (broker/metadata/group_configs.py) apply per request: the lock duration
(``share.record.lock.duration.ms``, answered as AcquisitionLockTimeoutMs), the delivery count
limit and ``share.isolation.level``: a read_committed group acquires only below the last stable
offset and archives the records of aborted transactions unseen, as Kafka's SharePartition does with
the partition's aborted-transaction list.
Authorization: READ on the group and on each topic.
"""
from __future__ import annotations

import uuid
from typing import Any, cast
from collections.abc import Awaitable

import trio

from coordinator.group.group_config import ShareGroupSettings
from coordinator.share.partition import INITIAL_SESSION_EPOCH, AcquiredRange, ShareAcquireMode, never_delivered
from protocol import records as rb
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.apis.shared.share_partitions import (
    acknowledge, current_leader, load_share_partitions, local_partition, node_endpoints,
)
from broker.metadata.group_configs import share_group_settings
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation, ResourceType
from broker.security.authz import Handler, authorizes, share_records_allowed

Fetched = tuple[int, bytes, list[AcquiredRange]]    # a partition's fetch error, batches, acquired ranges


def _acquire(ctx: RequestContext, group_id: str, member_id: str, tps: list[tuple[uuid.UUID, int]],
             max_bytes: int, max_records: int, record_limit: bool,
             settings: ShareGroupSettings) -> tuple[dict[tuple[uuid.UUID, int], Fetched], int]:
    """Acquire records for the session's partitions: per partition (error, batch bytes, acquired
    ranges) for those with something to say, and the number of records acquired."""
    shares = ctx.broker.share_groups
    now = ctx.broker.now_ms()
    out: dict[tuple[uuid.UUID, int], Fetched] = {}
    acquired = 0
    remaining = max_bytes if max_bytes > 0 else 0x7FFFFFFF
    for tid, index in tps:
        part, code = local_partition(ctx, tid, index)
        if part is not None and not _may_read(ctx, tid):   # the session outlived a READ grant
            part, code = None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if part is None:
            out[(tid, index)] = (code, b"", [])
            continue
        if acquired >= max_records or remaining <= 0:
            continue
        sp = shares.partition(group_id, tid, index, part)
        if sp is None:      # its state could not be loaded (share_runtime.py)
            out[(tid, index)] = (shares.load_errors.get((group_id, tid, index), ErrorCode.NOT_LEADER_OR_FOLLOWER), b"", [])
            continue
        sp.lock_duration_ms = settings.record_lock_duration_ms
        sp.delivery_count_limit = settings.delivery_count_limit
        upper = part.last_stable_offset if settings.read_committed else part.high_watermark
        start = sp.next_fetch_offset(now)
        if start >= upper:
            continue
        data = part.read(start, remaining, upper, min_one=True)
        headers = _batch_headers(data)
        aborted = [(a.producer_id, a.first_offset, a.last_offset) for a in part.aborted_in_range(start, upper)] \
            if settings.read_committed else []
        got = sp.acquire(member_id, [(h.base_offset, h.last_offset, never_delivered(
            (h.base_offset, h.last_offset, h.is_control, h.producer_id, h.is_transactional), aborted))
            for h in headers], upper, max_records - acquired, now, record_limit=record_limit)
        if not got.ranges:
            continue
        chosen = [headers[i] for i in got.batches]
        if len(chosen) == len(headers):
            records = data
        else:
            records = b"".join(bytes(data[h.position:h.position + h.size]) for h in chosen)
        out[(tid, index)] = (ErrorCode.NONE, records, list(got.ranges))
        acquired += sum(r.last_offset - r.first_offset + 1 for r in got.ranges)
        remaining -= len(records)
    return out, acquired


def _batch_headers(data: bytes) -> list[rb.BatchHeader]:
    """The headers of the stored batches in ``data`` (no record is decoded)."""
    out = []
    pos = 0
    while pos + rb.HEADER_SIZE <= len(data):
        h = rb.parse_header(data, pos)
        if pos + h.size > len(data):
            break
        out.append(h)
        pos += h.size
    return out


def _may_read(ctx: RequestContext, topic_id: uuid.UUID) -> bool:
    """READ on the topic; the request's own topics were checked by the rule below, this
    covers partitions added to the share session by earlier requests."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    topic = ctx.broker.logs.topics_by_id.get(topic_id)
    return topic is None or authorizer.authorize(ctx.principal, ctx.client_host, Operation.READ,
                                                 ResourceType.TOPIC, topic.name)


def _error_fetch(ctx: RequestContext, code: int, message: str | None = None, lock_ms: int | None = None) -> Any:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message,
                        acquisition_lock_timeout_ms=ctx.broker.share_groups.lock_duration_ms if lock_ms is None
                        else lock_ms, responses=[], node_endpoints=[])


@handles(ApiKey.SHARE_FETCH)
async def share_fetch(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    group_id, member_id, epoch = req.group_id or "", req.member_id or "", req.share_session_epoch
    if not group_id or not member_id:
        return _error_fetch(ctx, ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set.")
    has_acks = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
    if epoch == INITIAL_SESSION_EPOCH and has_acks:
        return _error_fetch(ctx, ErrorCode.INVALID_REQUEST, "Acknowledge data present in initial fetch request.")
    added = [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions]
    forgotten = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
    code, session = shares.sessions.fetch(group_id, member_id, epoch, added, forgotten)
    if code:
        return _error_fetch(ctx, code)
    settings = share_group_settings(ctx.broker, group_id)
    for (tid, index) in {(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions
                         if p.acknowledgement_batches}:     # RENEW extends locks by the group's duration
        sp = shares.existing(group_id, tid, index)
        if sp is not None:
            sp.lock_duration_ms = settings.record_lock_duration_ms
    acks = await acknowledge(ctx, group_id, member_id, req.topics)
    fetched: dict[tuple[uuid.UUID, int], Fetched] = {}
    v2 = ctx.api_version >= 2
    if session is None:          # epoch -1: the session is closed; what the member still holds goes back
        shares.release(group_id, member_id)
    elif not (v2 and req.is_renew_ack):     # a renew-only request acquires nothing (KIP-1222)
        # the coordinator keeps topic ids opaque; the ones this broker put there are the requests' UUIDs
        tps = cast(list[tuple[uuid.UUID, int]], sorted(session.partitions, key=lambda tp: (str(tp[0]), tp[1])))
        max_records = req.max_records if req.max_records and req.max_records > 0 else 0x7FFFFFFF
        await load_share_partitions(ctx, group_id, tps)
        record_limit = v2 and req.share_acquire_mode == ShareAcquireMode.RECORD_LIMIT

        def acquire() -> tuple[dict[tuple[uuid.UUID, int], Fetched], int]:
            return _acquire(ctx, group_id, member_id, tps, req.max_bytes, max_records, record_limit, settings)

        fetched, count = acquire()
        if count == 0 and req.max_wait_ms > 0 and not acks and not any(e for e, *_ in fetched.values()):
            with trio.move_on_after(req.max_wait_ms / 1000):
                while not ctx.broker.stopping.is_set():
                    await ctx.broker.appends.wait()
                    fetched, count = acquire()
                    if count:
                        break
            if count == 0:          # locks may have expired meanwhile
                fetched, count = acquire()
    resp = _error_fetch(ctx, ErrorCode.NONE, lock_ms=settings.record_lock_duration_ms)
    T = resp.ShareFetchableTopicResponse
    P = T.PartitionData
    by_topic: dict[uuid.UUID, list] = {}
    for tp in sorted(set(fetched) | set(acks), key=lambda tp: (str(tp[0]), tp[1])):
        code, records, ranges = fetched.get(tp, (ErrorCode.NONE, b"", []))
        by_topic.setdefault(tp[0], []).append(P(
            partition_index=tp[1], error_code=code, error_message=None,
            acknowledge_error_code=acks.get(tp, ErrorCode.NONE), acknowledge_error_message=None,
            current_leader=current_leader(ctx, *tp, P.LeaderIdAndEpoch), records=records,
            acquired_records=[P.AcquiredRecords(first_offset=r.first_offset, last_offset=r.last_offset,
                                                delivery_count=r.delivery_count) for r in ranges]))
    resp.responses = [T(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()]
    resp.node_endpoints = node_endpoints(ctx, resp.responses, type(resp))
    return resp


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.SHARE_FETCH)   # ShareFetch: READ on the group and on each topic
def authorize_share_fetch(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return share_records_allowed(ctx, req, handler, ApiKey.SHARE_FETCH, "ShareFetchableTopicResponse", {"acquisition_lock_timeout_ms": 0})
