"""KIP-932 share groups: ShareGroupHeartbeat v1, ShareGroupDescribe v1, ShareFetch v1, ShareAcknowledge v1.
Advertised only when share groups are enabled (broker/server/api_table.py); state in broker/coordinator_runtime/share_runtime.py.

Quirks: ShareFetch reads whole stored batches from the first AVAILABLE record of each session
partition (no per-record decoding: only batch headers are parsed to know their offsets) and
returns those holding an acquired record, as stored bytes, with AcquiredRecords ranges (the client
skips the records of a batch it did not acquire); it long-polls on appends up to MaxWaitMs when
nothing was acquired. Acknowledgements piggy-backed on ShareFetch are applied before fetching;
a ShareFetch or ShareAcknowledge with epoch -1 closes the share session and releases the member's
remaining acquired records. Answers name only partitions with records, errors or acknowledgement
results. v2 (renew acknowledgements, KIP-1222) is not implemented. A ShareGroupHeartbeat for the id
of a classic or consumer group answers GROUP_ID_NOT_FOUND, as Kafka. ShareGroupDescribe reports authorized
operations as "not requested".
"""
from __future__ import annotations

import uuid
from typing import Any

import trio

from coordinator.share.group import ASSIGNOR_NAME, ShareGroupHeartbeat
from coordinator.share.partition import FINAL_SESSION_EPOCH, INITIAL_SESSION_EPOCH, AcquiredRange
from protocol import records as rb
from protocol.errors import ErrorCode

from broker.metadata import topic_catalog
from protocol.api_keys import ApiKey

from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation, ResourceType
from broker.replica.answers import image_leader
from broker.metadata.topic_catalog import absent_partition_error
from broker.apis.shared.common import coordinator_fields, group_heartbeat_answer, other_group_type_answer

_AUTHORIZED_OPERATIONS_OMITTED = -2147483648
Fetched = tuple[int, bytes, list[AcquiredRange]]    # a partition's fetch error, batches, acquired ranges


def _topics_view(ctx: RequestContext) -> dict[str, tuple[uuid.UUID, int]]:
    return {name: (t.topic_id, t.partition_count) for name, t in topic_catalog.all_topics(ctx.broker).items()
            if not t.internal}


@handles(ApiKey.SHARE_GROUP_HEARTBEAT)
async def share_group_heartbeat(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    fields = coordinator_fields(ctx)
    request = ShareGroupHeartbeat(
        group_id=req.group_id or "", member_id=req.member_id or "", member_epoch=req.member_epoch,
        rack_id=req.rack_id,
        subscribed_topic_names=None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
        client_id=fields["client_id"], client_host=fields["client_host"], topics=_topics_view(ctx))
    if request.group_id not in shares.coordinator.groups and request.group_id \
            and ctx.broker.groups.coordinator_for(request.group_id)[1].has_group(request.group_id):
        return other_group_type_answer(ctx, request.group_id, request.member_epoch, "share")
    r = shares.coordinator.heartbeat(request, ctx.broker.now_ms())
    shares.settle_departures()
    return group_heartbeat_answer(ctx, r)


@handles(ApiKey.SHARE_GROUP_DESCRIBE)
async def share_group_describe(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    described = shares.coordinator.describe([g or "" for g in req.group_ids], ctx.broker.now_ms())
    shares.settle_departures()
    topics = {t.topic_id: t for t in topic_catalog.all_topics(ctx.broker).values()}
    resp = ctx.response(throttle_time_ms=0, groups=[])
    DG = resp.DescribedGroup
    for d in described:
        resp.groups.append(DG(
            error_code=d.error_code, error_message=d.error_message, group_id=d.group_id, group_state=d.group_state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch, assignor_name=ASSIGNOR_NAME,
            members=[DG.Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                               client_id=m.client_id, client_host=m.client_host,
                               subscribed_topic_names=list(m.subscribed),
                               assignment=DG.Member.Assignment(topic_partitions=[
                                   DG.Member.Assignment.TopicPartitions(topic_id=tid, topic_name=topics[tid].name,
                                                                        partitions=sorted(ps))
                                   for tid, ps in sorted(m.assignment.items(), key=lambda kv: str(kv[0]))
                                   if tid in topics and ps]))
                     for m in d.members],
            authorized_operations=_AUTHORIZED_OPERATIONS_OMITTED))
    return resp


# -- ShareFetch / ShareAcknowledge -----------------------------------------------------------------------
def _local_partition(ctx: RequestContext, topic_id: uuid.UUID, index: int) -> tuple[Any, int]:
    """(the partition, 0) or (None, Kafka's error code)."""
    topic = ctx.broker.logs.topics_by_id.get(topic_id)
    part = topic.partitions.get(index) if topic is not None else None
    if part is None:   # no local replica: NOT_LEADER_OR_FOLLOWER if the cluster has the partition
        return None, absent_partition_error(ctx.broker, None, index, topic_id)
    if part.replica is not None and not part.replica.is_leader:
        return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
    return part, ErrorCode.NONE


def _acknowledge(ctx: RequestContext, group_id: str, member_id: str, topics: Any) -> dict[tuple[uuid.UUID, int], int]:
    """Apply every partition's acknowledgement batches; error code per (topic id, partition)."""
    shares = ctx.broker.share_groups
    now = ctx.broker.now_ms()
    out: dict[tuple[uuid.UUID, int], int] = {}
    for t in topics:
        for p in t.partitions:
            batches = [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in p.acknowledgement_batches]
            if not batches:
                continue
            part, code = _local_partition(ctx, t.topic_id, p.partition_index)
            sp = shares.existing(group_id, t.topic_id, p.partition_index) if part is not None else None
            if part is not None:
                code = sp.acknowledge(member_id, batches, now) if sp is not None else ErrorCode.INVALID_RECORD_STATE
            out[(t.topic_id, p.partition_index)] = code
    return out


def _leader(ctx: RequestContext, topic_id: uuid.UUID, index: int, cls: Any) -> Any:
    """The partition's current leader (another broker's after NOT_LEADER_OR_FOLLOWER in a cluster)."""
    topic = ctx.broker.logs.topics_by_id.get(topic_id)
    part = topic.partitions.get(index) if topic is not None else None
    if part is None:   # hosted elsewhere: the leader the metadata image names
        leader_id, epoch = image_leader(ctx, None, topic_id, index) or (-1, -1)
        return cls(leader_id=leader_id, leader_epoch=epoch)
    if part.replica is not None:
        leader_id, epoch = ctx.broker.replicas.current_leader(part)
        return cls(leader_id=leader_id, leader_epoch=epoch)
    return cls(leader_id=ctx.broker.node_id, leader_epoch=part.leader_epoch)


def _node_endpoints(ctx: RequestContext, responses: list, response_cls: Any) -> list:
    """NodeEndpoints of the leaders named by partitions answered NOT_LEADER_OR_FOLLOWER."""
    replicas = ctx.broker.replicas
    ids = sorted({p.current_leader.leader_id for t in responses for p in t.partitions
                  if p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and p.current_leader.leader_id >= 0})
    out = []
    for node_id in ids if replicas.active else ():
        ep = replicas.endpoint(node_id)
        if ep is not None:
            out.append(response_cls.NodeEndpoint(node_id=node_id, host=ep[0], port=ep[1], rack=None))
    return out


def _acquire(ctx: RequestContext, group_id: str, member_id: str, tps: list[tuple[uuid.UUID, int]],
             max_bytes: int, max_records: int) -> tuple[dict[tuple[uuid.UUID, int], Fetched], int]:
    """Acquire records for the session's partitions: per partition (error, batch bytes, acquired
    ranges) for those with something to say, and the number of records acquired."""
    shares = ctx.broker.share_groups
    now = ctx.broker.now_ms()
    out: dict[tuple[uuid.UUID, int], Fetched] = {}
    acquired = 0
    remaining = max_bytes if max_bytes > 0 else 0x7FFFFFFF
    for tid, index in tps:
        part, code = _local_partition(ctx, tid, index)
        if part is not None and not _may_read(ctx, tid):   # the session outlived a READ grant
            part, code = None, ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if part is None:
            out[(tid, index)] = (code, b"", [])
            continue
        if acquired >= max_records or remaining <= 0:
            continue
        sp = shares.partition(group_id, tid, index, part)
        hw = part.high_watermark
        start = sp.next_fetch_offset(now)
        if start >= hw:
            continue
        data = part.read(start, remaining, hw, min_one=True)
        headers = _batch_headers(data)
        got = sp.acquire(member_id, [(h.base_offset, h.last_offset, h.is_control) for h in headers], hw,
                         max_records - acquired, now)
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
    """READ on the topic; the request's own topics were checked by broker/security/authz.py, this
    covers partitions added to the share session by earlier requests."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    topic = ctx.broker.logs.topics_by_id.get(topic_id)
    return topic is None or authorizer.authorize(ctx.principal, ctx.client_host, Operation.READ,
                                                 ResourceType.TOPIC, topic.name)


def _error_fetch(ctx: RequestContext, code: int, message: str | None = None) -> Any:
    return ctx.response(throttle_time_ms=0, error_code=code, error_message=message,
                        acquisition_lock_timeout_ms=ctx.broker.share_groups.lock_duration_ms, responses=[],
                        node_endpoints=[])


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
    acks = _acknowledge(ctx, group_id, member_id, req.topics)
    fetched: dict[tuple[uuid.UUID, int], Fetched] = {}
    if session is None:          # epoch -1: the session is closed; what the member still holds goes back
        shares.release(group_id, member_id)
    else:
        tps = sorted(session.partitions, key=lambda tp: (str(tp[0]), tp[1]))
        max_records = req.max_records if req.max_records and req.max_records > 0 else 0x7FFFFFFF
        fetched, count = _acquire(ctx, group_id, member_id, tps, req.max_bytes, max_records)
        if count == 0 and req.max_wait_ms > 0 and not acks and not any(e for e, *_ in fetched.values()):
            with trio.move_on_after(req.max_wait_ms / 1000):
                while not ctx.broker.stopping.is_set():
                    await ctx.broker.appends.wait()
                    fetched, count = _acquire(ctx, group_id, member_id, tps, req.max_bytes, max_records)
                    if count:
                        break
            if count == 0:          # locks may have expired meanwhile
                fetched, count = _acquire(ctx, group_id, member_id, tps, req.max_bytes, max_records)
    resp = _error_fetch(ctx, ErrorCode.NONE)
    T = resp.ShareFetchableTopicResponse
    P = T.PartitionData
    by_topic: dict[uuid.UUID, list] = {}
    for tp in sorted(set(fetched) | set(acks), key=lambda tp: (str(tp[0]), tp[1])):
        code, records, ranges = fetched.get(tp, (ErrorCode.NONE, b"", []))
        by_topic.setdefault(tp[0], []).append(P(
            partition_index=tp[1], error_code=code, error_message=None,
            acknowledge_error_code=acks.get(tp, ErrorCode.NONE), acknowledge_error_message=None,
            current_leader=_leader(ctx, *tp, P.LeaderIdAndEpoch), records=records,
            acquired_records=[P.AcquiredRecords(first_offset=r.first_offset, last_offset=r.last_offset,
                                                delivery_count=r.delivery_count) for r in ranges]))
    resp.responses = [T(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()]
    resp.node_endpoints = _node_endpoints(ctx, resp.responses, type(resp))
    return resp


@handles(ApiKey.SHARE_ACKNOWLEDGE)
async def share_acknowledge(ctx: RequestContext, req: Any) -> Any:
    shares = ctx.broker.share_groups
    group_id, member_id, epoch = req.group_id or "", req.member_id or "", req.share_session_epoch
    resp = ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, responses=[],
                        node_endpoints=[])
    if not group_id or not member_id:
        resp.error_code, resp.error_message = ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set."
        return resp
    code = shares.sessions.acknowledge(group_id, member_id, epoch)
    if code:
        resp.error_code = code
        return resp
    acks = _acknowledge(ctx, group_id, member_id, req.topics)
    if epoch == FINAL_SESSION_EPOCH:
        shares.release(group_id, member_id)
    T = resp.ShareAcknowledgeTopicResponse
    P = T.PartitionData
    by_topic: dict[uuid.UUID, list] = {}
    for (tid, index), code in sorted(acks.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        by_topic.setdefault(tid, []).append(P(partition_index=index, error_code=code, error_message=None,
                                              current_leader=_leader(ctx, tid, index, P.LeaderIdAndEpoch)))
    resp.responses = [T(topic_id=tid, partitions=parts) for tid, parts in by_topic.items()]
    resp.node_endpoints = _node_endpoints(ctx, resp.responses, type(resp))
    return resp
