"""Authorization: the operations Kafka's KafkaApis checks for each API, in one place.

Only reached when an authorizer is configured (dispatch checks ``broker.authorizer is None``
first, so PLAINTEXT without ACLs pays nothing). Each API family has one check function that
(1) answers the whole request with Kafka's *_AUTHORIZATION_FAILED code when the request-level
resource (group, transactional id, cluster) is denied, or (2) removes the denied topics from
the request, lets the handler answer the rest, and adds the denied topics back with
TOPIC_AUTHORIZATION_FAILED — so the handlers stay unaware of security.

Kafka's rules (KafkaApis, Kafka 4): Produce WRITE topic (+ WRITE transactional id); Fetch
READ topic (CLUSTER_ACTION for replicas); ListOffsets / OffsetForLeaderEpoch / Metadata
DESCRIBE topic (Metadata hides what is not describable; auto-creation needs CREATE on the
cluster or topic); group APIs READ group (DescribeGroups DESCRIBE, DeleteGroups/OffsetDelete
DELETE; ListGroups DESCRIBE cluster or filters by DESCRIBE group); OffsetCommit READ topic,
OffsetFetch DESCRIBE topic; FindCoordinator DESCRIBE group / transactional id; InitProducerId
WRITE transactional id, or IDEMPOTENT_WRITE cluster / WRITE on any topic (KIP-679);
AddPartitionsToTxn / AddOffsetsToTxn / EndTxn / TxnOffsetCommit WRITE transactional id (+ the
topic and group checks); CreateTopics CREATE cluster or topic (configs returned only with
DESCRIBE_CONFIGS on the topic); DeleteTopics DELETE cluster or topic; DeleteRecords DELETE topic; CreatePartitions ALTER topic; DescribeConfigs / AlterConfigs DESCRIBE_CONFIGS /
ALTER_CONFIGS on the topic or cluster; ACL and SCRAM admin DESCRIBE / ALTER cluster;
DescribeProducers READ topic; DescribeTransactions / ListTransactions DESCRIBE transactional id.
"""
from __future__ import annotations

import struct
import uuid
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from protocol import records as rb
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from broker.metadata import topic_catalog  # the cluster's topics (the metadata image in cluster mode)
from broker.common.connection_close import CloseConnection
from .acl import (CLUSTER_NAME, CLUSTER_OPERATIONS, GROUP_OPERATIONS, TOPIC_OPERATIONS, Operation as Op,
                  ResourceType as RT)

if TYPE_CHECKING:
    from broker.common.services import RequestScope

Handler = Callable[..., Awaitable[Any]]
# an API's authorization rule: (request scope, request, its handler) -> the answer; the rule calls
# the handler with what the principal may touch and adds Kafka's answers for the rest
Rule = Callable[["RequestScope", Any, Handler], Awaitable[Any]]
RULES: dict[ApiKey, Rule] = {}

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
_ZERO_UUID = uuid.UUID(int=0)   # the topic id Kafka answers when it does not disclose one
CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."   # Kafka's ClusterAuthorizationException text
# Kafka's Errors messages, which ApiError(error) puts in the answers that carry one
DENIED_MESSAGES = {TOPIC_DENIED: "Topic authorization failed.", GROUP_DENIED: "Group authorization failed.",
                   CLUSTER_DENIED: CLUSTER_DENIED_MESSAGE, TXN_DENIED: "Transactional Id authorization failed."}


def authorizes(*api_keys: ApiKey) -> Callable[[Rule], Rule]:
    """Register the decorated function as the authorization rule of ``api_keys`` (Kafka's
    KafkaApis checks for those APIs); an API's module declares it beside its handler."""
    def register(fn: Rule) -> Rule:
        for k in api_keys:
            RULES[k] = fn
        return fn
    return register


async def authorized(ctx: "RequestScope", request: Any, handler: Handler) -> Any:
    return await RULES[ApiKey(ctx.api_key)](ctx, request, handler)


def allowed(ctx: "RequestScope", op: int, rtype: int, name: str) -> bool:
    return ctx.broker.authorizer.authorize(ctx.principal, ctx.client_host, op, rtype, name)


def cluster(ctx: "RequestScope", op: int) -> bool:
    return allowed(ctx, op, RT.CLUSTER, CLUSTER_NAME)


def _cls(api_key: int, *path: str) -> Any:
    """A nested response struct class: _cls(ApiKey.PRODUCE, 'TopicProduceResponse', 'PartitionProduceResponse')."""
    c = RESPONSES[api_key]
    for p in path:
        c = getattr(c, p)
    return c


def _message(response: Any) -> Any:
    """The message inside a handler's answer (Fetch answers come wrapped as Spliced)."""
    return getattr(response, "message", response)


def _topic_name(ctx: "RequestScope", name: str | None, topic_id: Any) -> str | None:
    if name:
        return name
    topic = topic_catalog.topic_by_id(ctx.broker, topic_id) if topic_id is not None else None
    return topic.name if topic is not None else None


def _split(ctx: "RequestScope", items: list, op: int, name_of: Callable[[Any], str | None]) -> tuple[list, list]:
    """(allowed, denied) items by ``op`` on each item's topic; unknown topics stay allowed so
    the handler answers them as Kafka would (Kafka checks DESCRIBE before existence; an
    unresolvable topic id has no name to check)."""
    ok, denied = [], []
    for item in items or []:
        name = name_of(item)
        (ok if name is None or allowed(ctx, op, RT.TOPIC, name) else denied).append(item)
    return ok, denied


async def _answer_allowed(ctx: "RequestScope", req: Any, handler: Handler, attr: str, ok: list, denied: list,
                          out: str, denied_answers: Callable[[list], Any], **empty: Any) -> Any:
    """The handler answers the allowed items (``req.<attr>`` narrowed to ``ok``; none left: an
    empty answer with ``empty``'s fields, the handler not called), then Kafka's answers for the
    denied items are added to ``response.<out>`` — so handlers never see what they may not touch."""
    if not denied:
        return await handler(ctx, req)
    setattr(req, attr, ok)
    response = await handler(ctx, req) if ok else ctx.response(throttle_time_ms=0, **{out: []}, **empty)
    getattr(response, out).extend(denied_answers(denied))
    return response


def _topics_allowed(ctx: "RequestScope", req: Any, handler: Handler, op: int, denied_answers: Callable[[list], Any],
                    name_of: Callable[[Any], str | None] = lambda t: t.name, out: str = "topics",
                    **empty: Any) -> Awaitable[Any]:
    """_answer_allowed for the common shape: ``req.topics`` split by ``op`` on each topic."""
    ok, denied = _split(ctx, req.topics, op, name_of)
    return _answer_allowed(ctx, req, handler, "topics", ok, denied, out, denied_answers, **empty)


def _no_check(ctx: "RequestScope", req: Any, handler: Handler) -> Awaitable[Any]:
    return handler(ctx, req)


# APIs Kafka does not authorize (beyond authentication)
for _key in (ApiKey.SASL_HANDSHAKE, ApiKey.API_VERSIONS, ApiKey.SASL_AUTHENTICATE):
    RULES[_key] = _no_check


# -- Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DescribeProducers, DeleteRecords ----
def _first_batch_transactional(records: Any) -> bool:
    """Kafka's RequestUtils.flags: the first batch's transactional attribute (header bytes only)."""
    return bool(records) and len(records) > rb.OFF_ATTRIBUTES + 1 and records[rb.OFF_MAGIC] == 2 and \
        bool(struct.unpack_from(">h", records, rb.OFF_ATTRIBUTES)[0] & rb.TRANSACTIONAL_MASK)


@authorizes(ApiKey.PRODUCE)
async def produce(ctx, req, handler):
    """KafkaApis.handleProduceRequest: a request with transactional records (first batch of any
    partition) needs WRITE on its transactional id (none named: denied), else every partition
    answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then WRITE on each topic."""
    TR = _cls(ApiKey.PRODUCE, "TopicProduceResponse")
    PR = TR.PartitionProduceResponse
    txn_id = getattr(req, "transactional_id", None)
    transactional = any(_first_batch_transactional(p.records) for t in req.topic_data for p in t.partition_data)
    if transactional and (txn_id is None or not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, txn_id)):
        ok, denied, code = [], list(req.topic_data), TXN_DENIED
    else:
        ok, denied = _split(ctx, req.topic_data, Op.WRITE, lambda t: _topic_name(ctx, t.name, getattr(t, "topic_id", None)))
        code = TOPIC_DENIED
    if not denied:
        return await handler(ctx, req)
    req.topic_data = ok
    if req.acks == 0:   # the allowed partitions are still written; then Kafka closes (no answer is due)
        if ok:
            await handler(ctx, req)
        raise CloseConnection(f"acks=0 produce denied on {[t.name or t.topic_id for t in denied]}: "
                              f"error code {code}")
    response = await handler(ctx, req) if ok else ctx.response(responses=[], throttle_time_ms=0)
    response.responses.extend(
        TR(name=t.name, topic_id=getattr(t, "topic_id", None),
           partition_responses=[PR(index=p.index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                                   log_start_offset=-1, record_errors=[], error_message=None)
                                for p in t.partition_data])
        for t in denied)
    return response


@authorizes(ApiKey.FETCH)
async def fetch(ctx, req, handler):
    replica = getattr(req, "replica_id", None)
    state = getattr(req, "replica_state", None)
    if state is not None and getattr(state, "replica_id", None) is not None:
        replica = state.replica_id if replica is None or replica < 0 else replica
    if replica is not None and replica >= 0:   # a follower's fetch (v15+ names it in replica_state)
        if not cluster(ctx, Op.CLUSTER_ACTION):
            return ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, session_id=0, responses=[])
        return await handler(ctx, req)
    ok, denied = _split(ctx, req.topics, Op.READ, lambda t: _topic_name(ctx, t.topic, getattr(t, "topic_id", None)))
    if not denied:
        return await handler(ctx, req)
    req.topics = ok
    # nothing left to read: answer now rather than long-poll (fetches here are sessionless)
    response = await handler(ctx, req) if ok else ctx.response(throttle_time_ms=0, error_code=0, session_id=0,
                                                                responses=[])
    TR = _cls(ApiKey.FETCH, "FetchableTopicResponse")
    PD = TR.PartitionData
    _message(response).responses.extend(
        TR(topic=t.topic, topic_id=getattr(t, "topic_id", None),
           partitions=[PD(partition_index=p.partition, error_code=TOPIC_DENIED, high_watermark=-1,
                          last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                          preferred_read_replica=-1, records=b"") for p in t.partitions])
        # empty, not null, records: librdkafka cannot parse a null records field
        for t in denied)
    return response


@authorizes(ApiKey.LIST_OFFSETS)
async def list_offsets(ctx, req, handler):
    TR = _cls(ApiKey.LIST_OFFSETS, "ListOffsetsTopicResponse")
    P = TR.ListOffsetsPartitionResponse
    return await _topics_allowed(ctx, req, handler, Op.DESCRIBE, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=p.partition_index, error_code=TOPIC_DENIED, old_style_offsets=[], timestamp=-1,
          offset=-1, leader_epoch=-1) for p in t.partitions]) for t in denied))


@authorizes(ApiKey.OFFSET_FOR_LEADER_EPOCH)
async def offset_for_leader_epoch(ctx, req, handler):
    TR = _cls(ApiKey.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderTopicResult")
    E = TR.EpochEndOffset
    return await _topics_allowed(ctx, req, handler, Op.DESCRIBE, lambda denied: (TR(topic=t.topic, partitions=[
        E(error_code=TOPIC_DENIED, partition=p.partition, leader_epoch=-1, end_offset=-1) for p in t.partitions])
        for t in denied), name_of=lambda t: t.topic)


@authorizes(ApiKey.DESCRIBE_PRODUCERS)
async def describe_producers(ctx, req, handler):
    TR = _cls(ApiKey.DESCRIBE_PRODUCERS, "TopicResponse")
    P = TR.PartitionResponse
    return await _topics_allowed(ctx, req, handler, Op.READ, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=i, error_code=TOPIC_DENIED, error_message=DENIED_MESSAGES[TOPIC_DENIED], active_producers=[])
        for i in t.partition_indexes]) for t in denied))


@authorizes(ApiKey.DELETE_RECORDS)
async def delete_records(ctx, req, handler):
    TR = _cls(ApiKey.DELETE_RECORDS, "DeleteRecordsTopicResult")
    P = TR.DeleteRecordsPartitionResult
    return await _topics_allowed(ctx, req, handler, Op.DELETE, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=p.partition_index, low_watermark=-1, error_code=TOPIC_DENIED) for p in t.partitions])
        for t in denied))


# -- Metadata -------------------------------------------------------------------------------
@authorizes(ApiKey.METADATA)
async def metadata(ctx, req, handler):
    return _with_authorized_operations(ctx, req, await _metadata(ctx, req, handler))


def _with_authorized_operations(ctx, req, response):
    """KIP-430: the operations the principal may perform, when the request asks for them."""
    auth = ctx.broker.authorizer
    if getattr(req, "include_topic_authorized_operations", False):
        for t in response.topics:   # Kafka: every topic answered for a describable name, errors included
            if t.name and t.error_code != TOPIC_DENIED:
                t.authorized_operations = auth.authorized_operations(ctx.principal, ctx.client_host, RT.TOPIC,
                                                                     t.name, TOPIC_OPERATIONS)
    if getattr(req, "include_cluster_authorized_operations", False) and not getattr(response, "error_code", 0):
        # Kafka (KafkaApis, AuthHelper.computeDescribeClusterResponse): 0 without DESCRIBE on the cluster
        response.authorized_operations = auth.authorized_operations(
            ctx.principal, ctx.client_host, RT.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS) \
            if cluster(ctx, Op.DESCRIBE) else set()   # the bit field 0
    return response


async def _metadata(ctx, req, handler):
    T = _cls(ApiKey.METADATA, "MetadataResponseTopic")
    if req.topics is None or (ctx.api_version == 0 and not req.topics):
        response = await handler(ctx, req)
        response.topics = [t for t in response.topics if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name)]
        return response
    auto_create = ctx.broker.config["auto.create.topics.enable"] and \
        (ctx.api_version < 4 or bool(req.allow_auto_topic_creation))
    may_create_any = auto_create and cluster(ctx, Op.CREATE)
    keep, denied = [], []
    for rt in req.topics:
        name = _topic_name(ctx, rt.name, getattr(rt, "topic_id", None))
        if name is None:
            keep.append(rt)
        elif not allowed(ctx, Op.DESCRIBE, RT.TOPIC, name):
            denied.append(rt)
        elif auto_create and topic_catalog.topic(ctx.broker, name) is None and not may_create_any and \
                not allowed(ctx, Op.CREATE, RT.TOPIC, name):
            denied.append(rt)
        else:
            keep.append(rt)
    if not denied:
        return await handler(ctx, req)
    req.topics = keep
    response = await handler(ctx, req)
    response.topics.extend(T(error_code=TOPIC_DENIED, name=rt.name, topic_id=getattr(rt, "topic_id", None),
                             is_internal=False, partitions=[], authorized_operations=None) for rt in denied)
    return response


@authorizes(ApiKey.DESCRIBE_CLUSTER)
async def describe_cluster(ctx, req, handler):
    return _with_authorized_operations(ctx, req, await handler(ctx, req))


# -- groups and offsets ------------------------------------------------------------------------
def _group_error(ctx, req, handler, op: int, **fields):
    if allowed(ctx, op, RT.GROUP, req.group_id):
        return handler(ctx, req)

    async def denied():
        return ctx.response(throttle_time_ms=0, error_code=GROUP_DENIED, **fields)
    return denied()


@authorizes(ApiKey.JOIN_GROUP)
def join_group(ctx, req, handler):
    return _group_error(ctx, req, handler, Op.READ, generation_id=-1, protocol_type=None, protocol_name=None,
                        leader="", skip_assignment=False, member_id=req.member_id or "", members=[])


@authorizes(ApiKey.SYNC_GROUP)
def sync_group(ctx, req, handler):
    return _group_error(ctx, req, handler, Op.READ, protocol_type=None, protocol_name=None, assignment=b"")


@authorizes(ApiKey.HEARTBEAT)
def heartbeat(ctx, req, handler):
    return _group_error(ctx, req, handler, Op.READ)


@authorizes(ApiKey.LEAVE_GROUP)
def leave_group(ctx, req, handler):
    return _group_error(ctx, req, handler, Op.READ, members=[])


@authorizes(ApiKey.ADD_OFFSETS_TO_TXN)
async def add_offsets_to_txn(ctx, req, handler):
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=TXN_DENIED)
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_DENIED)
    return await handler(ctx, req)


@authorizes(ApiKey.END_TXN)
async def end_txn(ctx, req, handler):
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.transactional_id):
        return ctx.response(throttle_time_ms=0, error_code=TXN_DENIED, producer_id=-1, producer_epoch=-1)
    return await handler(ctx, req)


def _denied_offset_topics(api_key: int, topics: list, code: int, topic_path: str, part_path: str) -> list:
    TR = _cls(api_key, topic_path)
    P = getattr(TR, part_path)
    ids = {"topic_id": None} if "topic_id" in TR.fields else {}
    return [TR(name=t.name, **({"topic_id": getattr(t, "topic_id", None)} if ids else {}),
               partitions=[P(partition_index=p.partition_index, error_code=code) for p in t.partitions])
            for t in topics]


@authorizes(ApiKey.OFFSET_COMMIT)
async def offset_commit(ctx, req, handler):
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, topics=_denied_offset_topics(
            ApiKey.OFFSET_COMMIT, req.topics, GROUP_DENIED, "OffsetCommitResponseTopic", "OffsetCommitResponsePartition"))
    return await _topics_allowed(ctx, req, handler, Op.READ, lambda denied: _denied_offset_topics(
        ApiKey.OFFSET_COMMIT, denied, TOPIC_DENIED, "OffsetCommitResponseTopic", "OffsetCommitResponsePartition"),
        name_of=lambda t: _topic_name(ctx, t.name, getattr(t, "topic_id", None)))


@authorizes(ApiKey.TXN_OFFSET_COMMIT)
async def txn_offset_commit(ctx, req, handler):
    code = None
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.transactional_id):
        code = TXN_DENIED
    elif not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        code = GROUP_DENIED
    if code is not None:
        return ctx.response(throttle_time_ms=0, topics=_denied_offset_topics(
            ApiKey.TXN_OFFSET_COMMIT, req.topics, code, "TxnOffsetCommitResponseTopic", "TxnOffsetCommitResponsePartition"))
    return await _topics_allowed(ctx, req, handler, Op.READ, lambda denied: _denied_offset_topics(
        ApiKey.TXN_OFFSET_COMMIT, denied, TOPIC_DENIED, "TxnOffsetCommitResponseTopic", "TxnOffsetCommitResponsePartition"))


def _denied_fetch_topics(T: Any, topics: list) -> list:
    """Kafka's answer for requested topics the principal may not DESCRIBE: every requested
    partition with offset -1 and TOPIC_AUTHORIZATION_FAILED (KafkaApis.fetchOffsetsForGroup)."""
    P = next(getattr(T, f) for f in ("OffsetFetchResponsePartitions", "OffsetFetchResponsePartition") if hasattr(T, f))
    ids = "topic_id" in T.fields
    return [T(name=t.name, **({"topic_id": getattr(t, "topic_id", None)} if ids else {}), partitions=[
        P(partition_index=i, committed_offset=-1, committed_leader_epoch=-1, metadata="", error_code=TOPIC_DENIED)
        for i in t.partition_indexes]) for t in topics]


def _describable(ctx, topics: list) -> list:
    return [t for t in topics if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name)]


@authorizes(ApiKey.OFFSET_FETCH)
async def offset_fetch(ctx, req, handler):
    """KafkaApis.handleOffsetFetchRequest: DESCRIBE on each group (else the group answers
    GROUP_AUTHORIZATION_FAILED); named topics the principal may not DESCRIBE are not fetched and
    answer TOPIC_AUTHORIZATION_FAILED per partition; with all topics requested (null) they are
    left out. A group that failed otherwise (e.g. COORDINATOR_LOAD_IN_PROGRESS) gets no topics added."""
    if ctx.api_version >= 8:
        G = _cls(ApiKey.OFFSET_FETCH, "OffsetFetchResponseGroup")
        denied_groups = [g for g in req.groups if not allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id)]
        req.groups = [g for g in req.groups if g not in denied_groups]
        denied_topics: list[list | None] = []   # per allowed group, in request order (as answered)
        for g in req.groups:
            denied_topics.append(None)
            if g.topics is not None:
                ok, denied = _split(ctx, g.topics, Op.DESCRIBE,
                                    lambda t: _topic_name(ctx, t.name, getattr(t, "topic_id", None)))
                for t in denied:
                    t.name = _topic_name(ctx, t.name, getattr(t, "topic_id", None))
                g.topics, denied_topics[-1] = ok, denied
        response = await handler(ctx, req) if req.groups else ctx.response(throttle_time_ms=0, groups=[])
        T = G.OffsetFetchResponseTopics
        for g, denied in zip(response.groups, denied_topics):
            if denied is None:     # all topics were asked for: the undescribable are hidden
                g.topics = _describable(ctx, g.topics)
            elif not g.error_code:
                g.topics.extend(_denied_fetch_topics(T, denied))
        response.groups.extend(G(group_id=g.group_id, topics=[], error_code=GROUP_DENIED) for g in denied_groups)
        return response
    if not allowed(ctx, Op.DESCRIBE, RT.GROUP, req.group_id):
        return ctx.response(throttle_time_ms=0, topics=[], error_code=GROUP_DENIED)
    if req.topics is None:
        response = await handler(ctx, req)
        response.topics = _describable(ctx, response.topics)
        return response
    ok, denied = _split(ctx, req.topics, Op.DESCRIBE, lambda t: t.name)
    req.topics = ok
    response = await handler(ctx, req)
    if denied and not response.error_code:
        response.topics.extend(_denied_fetch_topics(_cls(ApiKey.OFFSET_FETCH, "OffsetFetchResponseTopic"), denied))
    return response


@authorizes(ApiKey.FIND_COORDINATOR)
async def find_coordinator(ctx, req, handler):
    rtype, code = (RT.TRANSACTIONAL_ID, TXN_DENIED) if req.key_type == 1 else (RT.GROUP, GROUP_DENIED)
    if ctx.api_version < 4:
        if allowed(ctx, Op.DESCRIBE, rtype, req.key):
            return await handler(ctx, req)
        return ctx.response(throttle_time_ms=0, error_code=code, error_message=DENIED_MESSAGES[code], node_id=-1,
                            host="", port=-1, coordinators=[])   # Kafka's v0-3 answer carries error.message()
    denied = [k for k in req.coordinator_keys if not allowed(ctx, Op.DESCRIBE, rtype, k)]
    C = _cls(ApiKey.FIND_COORDINATOR, "Coordinator")
    return await _answer_allowed(
        ctx, req, handler, "coordinator_keys", [k for k in req.coordinator_keys if k not in denied], denied,
        "coordinators", lambda denied: (C(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None)
                                        for k in denied))


@authorizes(ApiKey.DESCRIBE_GROUPS)
async def describe_groups(ctx, req, handler):
    denied = [g for g in req.groups if not allowed(ctx, Op.DESCRIBE, RT.GROUP, g)]
    req.groups = [g for g in req.groups if g not in denied]
    response = await handler(ctx, req) if req.groups else ctx.response(throttle_time_ms=0, groups=[])
    if getattr(req, "include_authorized_operations", False):
        auth = ctx.broker.authorizer
        for g in response.groups:
            if not g.error_code:   # KafkaApis: described groups only
                g.authorized_operations = auth.authorized_operations(ctx.principal, ctx.client_host, RT.GROUP,
                                                                     g.group_id, GROUP_OPERATIONS)
    if not denied:
        return response
    D = _cls(ApiKey.DESCRIBE_GROUPS, "DescribedGroup")
    response.groups.extend(D(error_code=GROUP_DENIED, error_message=None, group_id=g, group_state="",
                             protocol_type="", protocol_data="", members=[], authorized_operations=None)
                           for g in denied)
    return response


@authorizes(ApiKey.LIST_GROUPS)
async def list_groups(ctx, req, handler):
    response = await handler(ctx, req)
    if not cluster(ctx, Op.DESCRIBE):
        response.groups = [g for g in response.groups if allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id)]
    return response


@authorizes(ApiKey.DELETE_GROUPS)
async def delete_groups(ctx, req, handler):
    denied = [g for g in req.groups_names if not allowed(ctx, Op.DELETE, RT.GROUP, g)]
    R = _cls(ApiKey.DELETE_GROUPS, "DeletableGroupResult")
    return await _answer_allowed(ctx, req, handler, "groups_names", [g for g in req.groups_names if g not in denied],
                                 denied, "results", lambda denied: (R(group_id=g, error_code=GROUP_DENIED)
                                                                    for g in denied))


@authorizes(ApiKey.OFFSET_DELETE)
async def offset_delete(ctx, req, handler):
    if not allowed(ctx, Op.DELETE, RT.GROUP, req.group_id):
        return ctx.response(error_code=GROUP_DENIED, throttle_time_ms=0, topics=[])
    TR = _cls(ApiKey.OFFSET_DELETE, "OffsetDeleteResponseTopic")
    P = TR.OffsetDeleteResponsePartition
    return await _topics_allowed(ctx, req, handler, Op.READ, lambda denied: (TR(name=t.name, partitions=[
        P(partition_index=p.partition_index, error_code=TOPIC_DENIED) for p in t.partitions]) for t in denied),
        error_code=0)


# -- transactions and producer ids -------------------------------------------------------------
@authorizes(ApiKey.INIT_PRODUCER_ID)
async def init_producer_id(ctx, req, handler):
    txn_id = req.transactional_id
    if txn_id:
        ok, code = allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, txn_id), TXN_DENIED
    else:
        auth = ctx.broker.authorizer
        ok = cluster(ctx, Op.IDEMPOTENT_WRITE) or auth.authorize_any(ctx.principal, ctx.client_host, Op.WRITE,
                                                                      RT.TOPIC)
        code = CLUSTER_DENIED
    if ok:
        return await handler(ctx, req)
    return ctx.response(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)


@authorizes(ApiKey.ADD_PARTITIONS_TO_TXN)
async def add_partitions_to_txn(ctx, req, handler):
    if ctx.api_version >= 4:   # the broker-to-broker verification form
        if cluster(ctx, Op.CLUSTER_ACTION):
            return await handler(ctx, req)
        return ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, results_by_transaction=[])
    TR = _cls(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTopicResult")
    P = TR.AddPartitionsToTxnPartitionResult
    topics = req.v3_and_below_topics

    def answer(code_of: Callable[[str], int]):
        return ctx.response(throttle_time_ms=0, results_by_topic_v3_and_below=[
            TR(name=t.name, results_by_partition=[P(partition_index=p, partition_error_code=code_of(t.name))
                                                  for p in t.partitions]) for t in topics])
    if not allowed(ctx, Op.WRITE, RT.TRANSACTIONAL_ID, req.v3_and_below_transactional_id):
        return answer(lambda _: TXN_DENIED)
    denied = {t.name for t in topics if not allowed(ctx, Op.WRITE, RT.TOPIC, t.name)}
    if denied:   # Kafka adds nothing then: the others are OPERATION_NOT_ATTEMPTED
        return answer(lambda n: TOPIC_DENIED if n in denied else ErrorCode.OPERATION_NOT_ATTEMPTED)
    return await handler(ctx, req)


@authorizes(ApiKey.DESCRIBE_TRANSACTIONS)
async def describe_transactions(ctx, req, handler):
    denied = [t for t in req.transactional_ids if not allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, t)]
    req.transactional_ids = [t for t in req.transactional_ids if t not in denied]
    response = await handler(ctx, req) if req.transactional_ids else ctx.response(throttle_time_ms=0,
                                                                                   transaction_states=[])
    for state in response.transaction_states:
        state.topics = [t for t in state.topics if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.topic)]
    S = _cls(ApiKey.DESCRIBE_TRANSACTIONS, "TransactionState")
    response.transaction_states.extend(
        S(error_code=TXN_DENIED, transactional_id=t, transaction_state="", transaction_timeout_ms=0,
          transaction_start_time_ms=0, producer_id=0, producer_epoch=0, topics=[]) for t in denied)   # schema defaults
    return response


@authorizes(ApiKey.LIST_TRANSACTIONS)
async def list_transactions(ctx, req, handler):
    response = await handler(ctx, req)
    response.transaction_states = [s for s in response.transaction_states
                                   if allowed(ctx, Op.DESCRIBE, RT.TRANSACTIONAL_ID, s.transactional_id)]
    return response


# -- topic administration and configs ------------------------------------------------------------
@authorizes(ApiKey.CREATE_TOPICS)
async def create_topics(ctx, req, handler):
    """ControllerApis.createTopics: CREATE on the cluster or on each topic (a denied one answers
    TOPIC_AUTHORIZATION_FAILED, "Authorization failed."); a created topic's configs, partition
    count and replication factor are returned only with DESCRIBE_CONFIGS on it, else its
    topic_config_error_code is TOPIC_AUTHORIZATION_FAILED (ReplicationControlManager)."""
    if cluster(ctx, Op.CREATE):
        ok, denied = list(req.topics), []
    else:
        ok, denied = _split(ctx, req.topics, Op.CREATE, lambda t: t.name)
    req.topics = ok
    response = await handler(ctx, req) if ok else ctx.response(throttle_time_ms=0, topics=[])
    if ctx.api_version >= 5:
        for r in response.topics:
            if r.error_code == 0 and not allowed(ctx, Op.DESCRIBE_CONFIGS, RT.TOPIC, r.name):
                r.topic_config_error_code, r.configs, r.num_partitions, r.replication_factor = TOPIC_DENIED, [], -1, -1
    R = _cls(ApiKey.CREATE_TOPICS, "CreatableTopicResult")
    response.topics.extend(R(name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed.",
                             topic_config_error_code=0, num_partitions=-1, replication_factor=-1, configs=[])
                           for t in denied)
    return response


@authorizes(ApiKey.DELETE_TOPICS)
async def delete_topics(ctx, req, handler):
    """ControllerApis.deleteTopics: DELETE on the cluster allows every topic; otherwise a topic
    needs DELETE on it. A denied topic answers TOPIC_AUTHORIZATION_FAILED, named only when the
    principal may DESCRIBE it (one asked for by id) and checked before it is looked up (one asked
    for by name: an undescribable name is denied whether it exists or not)."""
    everything = cluster(ctx, Op.DELETE)
    if everything:
        return await handler(ctx, req)

    def verdict(name: str | None, by_id: bool) -> tuple[bool, str | None]:
        """(denied, the name to answer with)."""
        if name is None:   # an unknown topic id: the handler answers UNKNOWN_TOPIC_ID
            return False, None
        describable = allowed(ctx, Op.DESCRIBE, RT.TOPIC, name)
        if allowed(ctx, Op.DELETE, RT.TOPIC, name):
            return False, name
        if by_id:
            return True, name if describable else None
        # by name: undescribable → denied; describable but missing → the handler's UNKNOWN_TOPIC_OR_PARTITION
        return (not describable or topic_catalog.topic(ctx.broker, name) is not None), name

    denied: list[tuple[str | None, Any]] = []
    if ctx.api_version >= 6:
        ok = []
        for t in req.topics:
            refused, name = verdict(_topic_name(ctx, t.name, t.topic_id), not t.name)
            if refused:
                denied.append((name, t.topic_id))
            else:
                ok.append(t)
        req.topics = ok
    else:
        ok = []
        for n in req.topic_names:
            refused, _ = verdict(n, False)
            if refused:
                denied.append((n, None))
            else:
                ok.append(n)
        req.topic_names = ok
    if not denied:
        return await handler(ctx, req)
    response = await handler(ctx, req) if ok else ctx.response(throttle_time_ms=0, responses=[])
    R = _cls(ApiKey.DELETE_TOPICS, "DeletableTopicResult")
    response.responses.extend(R(name=n, topic_id=tid, error_code=TOPIC_DENIED,
                                error_message=DENIED_MESSAGES[TOPIC_DENIED]) for n, tid in denied)
    return response


@authorizes(ApiKey.CREATE_PARTITIONS)
async def create_partitions(ctx, req, handler):
    R = _cls(ApiKey.CREATE_PARTITIONS, "CreatePartitionsTopicResult")
    return await _topics_allowed(ctx, req, handler, Op.ALTER, lambda denied: (
        R(name=t.name, error_code=TOPIC_DENIED, error_message=None) for t in denied), out="results")


_TOPIC_RESOURCE = 2


_GROUP_RESOURCE = 32
_BROKER_LOGGER = 8   # altered on the broker itself (KafkaApis); the other types go to the controller (ControllerApis)


def _config_allowed(ctx, op: int, resource: Any) -> bool:
    """Topic and group configs are checked on the topic or group; broker, broker-logger and
    client-metrics configs on the cluster (KafkaApis/ConfigHelper)."""
    if resource.resource_type == _TOPIC_RESOURCE:
        return allowed(ctx, op, RT.TOPIC, resource.resource_name)
    if resource.resource_type == _GROUP_RESOURCE:
        return allowed(ctx, op, RT.GROUP, resource.resource_name)
    return cluster(ctx, op)


def _config_code(resource: Any) -> int:
    return {_TOPIC_RESOURCE: TOPIC_DENIED, _GROUP_RESOURCE: GROUP_DENIED}.get(resource.resource_type, CLUSTER_DENIED)


def _configs_allowed(ctx, req, handler, op: int, out: str, denied_answers: Callable[[list], Any]) -> Awaitable[Any]:
    denied = [r for r in req.resources if not _config_allowed(ctx, op, r)]
    return _answer_allowed(ctx, req, handler, "resources", [r for r in req.resources if r not in denied], denied,
                           out, denied_answers)


@authorizes(ApiKey.DESCRIBE_CONFIGS)
async def describe_configs(ctx, req, handler):
    R = _cls(ApiKey.DESCRIBE_CONFIGS, "DescribeConfigsResult")
    return await _configs_allowed(ctx, req, handler, Op.DESCRIBE_CONFIGS, "results", lambda denied: (
        R(error_code=_config_code(r), error_message=DENIED_MESSAGES[_config_code(r)],
          resource_type=r.resource_type, resource_name=r.resource_name, configs=[]) for r in denied))


@authorizes(ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def alter_configs(ctx, req, handler):
    R = _cls(ctx.api_key, "AlterConfigsResourceResponse")
    return await _configs_allowed(ctx, req, handler, Op.ALTER_CONFIGS, "responses", lambda denied: (
        R(error_code=_config_code(r), error_message=None if r.resource_type == _BROKER_LOGGER
          else DENIED_MESSAGES[_config_code(r)], resource_type=r.resource_type,
          resource_name=r.resource_name) for r in denied))


# -- security administration ---------------------------------------------------------------------
async def _on_cluster(ctx, req, handler, op: int, denied: Callable[[], Any]) -> Any:
    """The handler's answer when the principal may ``op`` the cluster, else ``denied()``: Kafka's
    answer for that API with CLUSTER_AUTHORIZATION_FAILED, nothing applied."""
    if cluster(ctx, op):
        return await handler(ctx, req)
    return denied()


def _cluster_denied(ctx, **fields: Any) -> Any:
    """A whole answer that is CLUSTER_AUTHORIZATION_FAILED with Kafka's message."""
    return ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE, **fields)


@authorizes(ApiKey.DESCRIBE_ACLS)
def describe_acls(ctx, req, handler):
    return _on_cluster(ctx, req, handler, Op.DESCRIBE, lambda: _cluster_denied(ctx, resources=[]))


@authorizes(ApiKey.CREATE_ACLS)
def create_acls(ctx, req, handler):
    R = _cls(ApiKey.CREATE_ACLS, "AclCreationResult")
    return _on_cluster(ctx, req, handler, Op.ALTER, lambda: ctx.response(throttle_time_ms=0, results=[
        R(error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE) for _ in req.creations]))


@authorizes(ApiKey.DELETE_ACLS)
def delete_acls(ctx, req, handler):
    R = _cls(ApiKey.DELETE_ACLS, "DeleteAclsFilterResult")
    return _on_cluster(ctx, req, handler, Op.ALTER, lambda: ctx.response(throttle_time_ms=0, filter_results=[
        R(error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE, matching_acls=[]) for _ in req.filters]))


@authorizes(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
def describe_scram(ctx, req, handler):
    return _on_cluster(ctx, req, handler, Op.DESCRIBE, lambda: _cluster_denied(ctx, results=[]))


@authorizes(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def alter_scram(ctx, req, handler):
    R = _cls(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentialsResult")
    return _on_cluster(ctx, req, handler, Op.ALTER, lambda: ctx.response(throttle_time_ms=0, results=[
        R(user=u, error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE)
        for u in dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])]))


# -- APIs added beside the authorizer: consoles, KIP-848 groups, cluster administration -----------
def _whole_request(ctx, req, handler, ok: bool, code: int):
    """The handler's answer when ``ok``, else the request answered with ``code`` in every item
    (protocol/error_response.py walks the request's shape), nothing applied."""
    if ok:
        return handler(ctx, req)
    from protocol.error_response import error_response

    async def denied():
        message = CLUSTER_DENIED_MESSAGE if code == CLUSTER_DENIED else None
        return error_response(RESPONSES[ctx.api_key], req, ctx.api_version, code, message)
    return denied()


@authorizes(ApiKey.DESCRIBE_LOG_DIRS)   # DescribeLogDirs: DESCRIBE on the cluster; denied: no results (KafkaApis)
def describe_log_dirs(ctx, req, handler):
    return _on_cluster(ctx, req, handler, Op.DESCRIBE,
                       lambda: ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, results=[]))


@authorizes(ApiKey.DESCRIBE_CLIENT_QUOTAS)   # DescribeClientQuotas: DESCRIBE_CONFIGS on the cluster; denied: null entries (getErrorResponse)
def describe_client_quotas(ctx, req, handler):
    return _on_cluster(ctx, req, handler, Op.DESCRIBE_CONFIGS, lambda: _cluster_denied(ctx, entries=None))


@authorizes(ApiKey.LIST_PARTITION_REASSIGNMENTS)   # ListPartitionReassignments: DESCRIBE on the cluster; denied: the asked partitions echoed
def list_partition_reassignments(ctx, req, handler):
    T = _cls(ApiKey.LIST_PARTITION_REASSIGNMENTS, "OngoingTopicReassignment")
    P = T.OngoingPartitionReassignment
    return _on_cluster(ctx, req, handler, Op.DESCRIBE, lambda: _cluster_denied(ctx, topics=[
        T(name=t.name, partitions=[P(partition_index=i, replicas=[], adding_replicas=[], removing_replicas=[])
                                   for i in t.partition_indexes]) for t in req.topics or []]))


@authorizes(ApiKey.ELECT_LEADERS, ApiKey.ALTER_PARTITION_REASSIGNMENTS)   # ElectLeaders, AlterPartitionReassignments: ALTER on the cluster
def alter_cluster(ctx, req, handler):
    return _whole_request(ctx, req, handler, cluster(ctx, Op.ALTER), CLUSTER_DENIED)


@authorizes(ApiKey.WRITE_TXN_MARKERS)   # WriteTxnMarkers (between brokers): CLUSTER_ACTION on the cluster
def write_txn_markers(ctx, req, handler):
    return _whole_request(ctx, req, handler, cluster(ctx, Op.CLUSTER_ACTION), CLUSTER_DENIED)


@authorizes(ApiKey.CONSUMER_GROUP_HEARTBEAT)   # ConsumerGroupHeartbeat: READ on the group
def consumer_group_heartbeat(ctx, req, handler):
    return _whole_request(ctx, req, handler, allowed(ctx, Op.READ, RT.GROUP, req.group_id), GROUP_DENIED)


@authorizes(ApiKey.CONSUMER_GROUP_DESCRIBE)   # ConsumerGroupDescribe: DESCRIBE on each group; denied ones answer GROUP_AUTHORIZATION_FAILED
async def consumer_group_describe(ctx, req, handler):
    response = await handler(ctx, req)
    G = _cls(ApiKey.CONSUMER_GROUP_DESCRIBE, "DescribedGroup")
    response.groups = [g if allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id) else
                       G(error_code=GROUP_DENIED, error_message=None, group_id=g.group_id, group_state="",
                         group_epoch=0, assignment_epoch=0, assignor_name="", members=[],   # schema defaults
                         authorized_operations=-2147483648)
                       for g in response.groups]
    if getattr(req, "include_authorized_operations", False):   # KafkaApis: the allowed groups' own
        auth = ctx.broker.authorizer
        for g in response.groups:
            if g.error_code == 0:
                ops = auth.authorized_operations(ctx.principal, ctx.client_host, RT.GROUP, g.group_id,
                                                 GROUP_OPERATIONS)
                g.authorized_operations = sum(1 << op for op in ops)   # an int32 here, Kafka's bit field
    return response


@authorizes(ApiKey.DESCRIBE_TOPIC_PARTITIONS)   # DescribeTopicPartitions: DESCRIBE on each topic; unnamed ones are left out, named ones denied
async def describe_topic_partitions(ctx, req, handler):
    """DescribeTopicPartitionsRequestHandler: a named topic without DESCRIBE answers
    TOPIC_AUTHORIZATION_FAILED with the zero topic id (existence not disclosed), a listed one is
    left out, and the next cursor never names a hidden topic (it moves to the next visible one:
    none of a hidden topic's partitions would be returned anyway). Authorized topics carry their
    authorized operations, which Kafka always fills in."""
    response = await handler(ctx, req)
    named = bool(req.topics)
    auth = ctx.broker.authorizer
    out = []
    for t in response.topics:
        if allowed(ctx, Op.DESCRIBE, RT.TOPIC, t.name):
            if t.error_code == 0:
                ops = auth.authorized_operations(ctx.principal, ctx.client_host, RT.TOPIC, t.name, TOPIC_OPERATIONS)
                t.topic_authorized_operations = sum(1 << op for op in ops)   # an int32 here, Kafka's bit field
            out.append(t)
        elif named:
            t.error_code, t.partitions, t.is_internal = TOPIC_DENIED, [], False
            t.topic_id = _ZERO_UUID
            out.append(t)
    response.topics = out
    cursor = response.next_cursor
    if cursor is not None and not named and not allowed(ctx, Op.DESCRIBE, RT.TOPIC, cursor.topic_name):
        later = sorted(n for n in topic_catalog.all_topics(ctx.broker)
                       if n > cursor.topic_name and allowed(ctx, Op.DESCRIBE, RT.TOPIC, n))
        response.next_cursor = type(cursor)(topic_name=later[0], partition_index=0) if later else None
    return response


# -- KIP-932 share groups (broker/apis/share_groups.py), as Kafka's KafkaApis authorizes them -----
@authorizes(ApiKey.SHARE_GROUP_HEARTBEAT)   # ShareGroupHeartbeat: READ on the group, DESCRIBE on every subscribed topic (v1)
def share_group_heartbeat(ctx, req, handler):
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id):
        return _whole_request(ctx, req, handler, False, GROUP_DENIED)
    topics = req.subscribed_topic_names or []
    return _whole_request(ctx, req, handler, all(allowed(ctx, Op.DESCRIBE, RT.TOPIC, t) for t in topics),
                          TOPIC_DENIED)


@authorizes(ApiKey.SHARE_GROUP_DESCRIBE)   # ShareGroupDescribe: DESCRIBE on each group; denied ones answer GROUP_AUTHORIZATION_FAILED
async def share_group_describe(ctx, req, handler):
    response = await handler(ctx, req)
    G = _cls(ApiKey.SHARE_GROUP_DESCRIBE, "DescribedGroup")
    response.groups = [g if allowed(ctx, Op.DESCRIBE, RT.GROUP, g.group_id) else
                       G(error_code=GROUP_DENIED, error_message=None, group_id=g.group_id, group_state="",
                         group_epoch=-1, assignment_epoch=-1, assignor_name="", members=[],
                         authorized_operations=-2147483648)
                       for g in response.groups]
    return response


def _share_topics_denied(ctx, topics) -> list:
    """The request's topics (by id) the principal may not READ; unknown ids are left to the handler."""
    return [t for t in topics if (name := _topic_name(ctx, None, t.topic_id)) is not None
            and not allowed(ctx, Op.READ, RT.TOPIC, name)]


async def _share_records(ctx, req, handler, api_key: int, topic_cls: str, empty: dict):
    """ShareFetch/ShareAcknowledge: READ on the group (else the whole request fails), READ on each
    topic (denied ones answer TOPIC_AUTHORIZATION_FAILED and are neither fetched nor acknowledged)."""
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id or ""):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_DENIED, responses=[], node_endpoints=[], **empty)
    denied = _share_topics_denied(ctx, req.topics)
    if not denied:
        return await handler(ctx, req)
    req.topics = [t for t in req.topics if t not in denied]
    response = await handler(ctx, req)
    T = _cls(api_key, topic_cls)
    P = T.PartitionData
    extra = {"acknowledge_error_code": 0, "records": b"", "acquired_records": []} if api_key == ApiKey.SHARE_FETCH else {}
    response.responses.extend(
        T(topic_id=t.topic_id, partitions=[P(partition_index=p.partition_index, error_code=TOPIC_DENIED,
                                             current_leader=P.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1),
                                             **extra) for p in t.partitions])
        for t in denied)
    return response


@authorizes(ApiKey.SHARE_FETCH)   # ShareFetch: READ on the group and on each topic
def share_fetch(ctx, req, handler):
    return _share_records(ctx, req, handler, ApiKey.SHARE_FETCH, "ShareFetchableTopicResponse", {"acquisition_lock_timeout_ms": 0})


@authorizes(ApiKey.SHARE_ACKNOWLEDGE)   # ShareAcknowledge: READ on the group and on each topic
def share_acknowledge(ctx, req, handler):
    return _share_records(ctx, req, handler, ApiKey.SHARE_ACKNOWLEDGE, "ShareAcknowledgeTopicResponse", {})
