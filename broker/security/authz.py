"""Authorization: the library the API modules' rules are written with, and the rules' registry.

Each API's rule (the operations Kafka's KafkaApis checks for it) sits beside its handler in
broker/apis/<api_name>.py, registered with ``@authorizes(ApiKey.X)``; broker/network/dispatch.py
refuses to start when an advertised API has no rule. Only reached when an authorizer is
configured (dispatch checks ``broker.authorizer is None`` first, so PLAINTEXT without ACLs pays
nothing). A rule (1) answers the whole request with Kafka's *_AUTHORIZATION_FAILED code when the
request-level resource (group, transactional id, cluster) is denied, or (2) removes the denied
topics from the request, lets the handler answer the rest, and adds the denied topics back with
TOPIC_AUTHORIZATION_FAILED (``topics_allowed``, ``answer_allowed``), so handlers stay unaware of
security.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from broker.metadata import topic_catalog  # the cluster's topics (the metadata image in cluster mode)
from .acl import (CLUSTER_NAME, CLUSTER_OPERATIONS, TOPIC_OPERATIONS, Authorizer, Operation as Op,
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


async def authorized(ctx: RequestScope, request: Any, handler: Handler) -> Any:
    return await RULES[ApiKey(ctx.api_key)](ctx, request, handler)


def authorizer_of(ctx: RequestScope) -> Authorizer:
    """The broker's authorizer: the rules and what they call run only when one is configured
    (dispatch checks ``broker.authorizer is None`` first)."""
    auth = ctx.broker.authorizer
    assert auth is not None, "authorization rules run only when an authorizer is configured"
    return auth


def allowed(ctx: RequestScope, op: int, rtype: int, name: str) -> bool:
    return authorizer_of(ctx).authorize(ctx.principal, ctx.client_host, op, rtype, name)


def cluster(ctx: RequestScope, op: int) -> bool:
    return allowed(ctx, op, RT.CLUSTER, CLUSTER_NAME)


def response_class(api_key: int, *path: str) -> Any:
    """A nested response struct class: response_class(ApiKey.PRODUCE, 'TopicProduceResponse', 'PartitionProduceResponse')."""
    c = RESPONSES[api_key]
    for p in path:
        c = getattr(c, p)
    return c


def answer_message(response: Any) -> Any:
    """The message inside a handler's answer (Fetch answers come wrapped as Spliced)."""
    return getattr(response, "message", response)


def topic_name(ctx: RequestScope, name: str | None, topic_id: Any) -> str | None:
    if name:
        return name
    topic = topic_catalog.topic_by_id(ctx.broker, topic_id) if topic_id is not None else None
    return topic.name if topic is not None else None


def split_topics(ctx: RequestScope, items: list, op: int, name_of: Callable[[Any], str | None]) -> tuple[list, list]:
    """(allowed, denied) items by ``op`` on each item's topic; unknown topics stay allowed so
    the handler answers them as Kafka would (Kafka checks DESCRIBE before existence; an
    unresolvable topic id has no name to check)."""
    ok: list[Any] = []
    denied: list[Any] = []
    for item in items or []:
        name = name_of(item)
        (ok if name is None or allowed(ctx, op, RT.TOPIC, name) else denied).append(item)
    return ok, denied


async def answer_allowed(ctx: RequestScope, req: Any, handler: Handler, attr: str, ok: list, denied: list,
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


def topics_allowed(ctx: RequestScope, req: Any, handler: Handler, op: int, denied_answers: Callable[[list], Any],
                    name_of: Callable[[Any], str | None] = lambda t: t.name, out: str = "topics",
                    **empty: Any) -> Awaitable[Any]:
    """answer_allowed for the common shape: ``req.topics`` split by ``op`` on each topic."""
    ok, denied = split_topics(ctx, req.topics, op, name_of)
    return answer_allowed(ctx, req, handler, "topics", ok, denied, out, denied_answers, **empty)


def unchecked(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    """The rule of the APIs Kafka does not authorize (beyond authentication): ApiVersions, SASL."""
    return handler(ctx, req)


def with_authorized_operations(ctx: RequestScope, req: Any, response: Any) -> Any:
    """KIP-430: the operations the principal may perform, when the request asks for them."""
    auth = authorizer_of(ctx)
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


# -- groups and offsets ------------------------------------------------------------------------
def group_allowed(ctx: RequestScope, req: Any, handler: Handler, op: int, **fields: Any) -> Awaitable[Any]:
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup: ``op`` on the request's group, else the answer
    with GROUP_AUTHORIZATION_FAILED and ``fields``."""
    if allowed(ctx, op, RT.GROUP, req.group_id):
        return handler(ctx, req)

    async def denied() -> Any:
        return ctx.response(throttle_time_ms=0, error_code=GROUP_DENIED, **fields)
    return denied()


def denied_offset_topics(api_key: int, topics: list, code: int, topic_path: str, part_path: str) -> list:
    TR = response_class(api_key, topic_path)
    P = getattr(TR, part_path)
    ids = {"topic_id": None} if "topic_id" in TR.fields else {}
    return [TR(name=t.name, **({"topic_id": getattr(t, "topic_id", None)} if ids else {}),
               partitions=[P(partition_index=p.partition_index, error_code=code) for p in t.partitions])
            for t in topics]


_TOPIC_RESOURCE, _GROUP_RESOURCE = 2, 32   # ConfigResource types
BROKER_LOGGER_RESOURCE = 8   # altered on the broker itself (KafkaApis); the other types go to the controller (ControllerApis)


def config_allowed(ctx: RequestScope, op: int, resource: Any) -> bool:
    """Topic and group configs are checked on the topic or group; broker, broker-logger and
    client-metrics configs on the cluster (KafkaApis/ConfigHelper)."""
    if resource.resource_type == _TOPIC_RESOURCE:
        return allowed(ctx, op, RT.TOPIC, resource.resource_name)
    if resource.resource_type == _GROUP_RESOURCE:
        return allowed(ctx, op, RT.GROUP, resource.resource_name)
    return cluster(ctx, op)


def config_denied_code(resource: Any) -> ErrorCode:
    return {_TOPIC_RESOURCE: TOPIC_DENIED, _GROUP_RESOURCE: GROUP_DENIED}.get(resource.resource_type, CLUSTER_DENIED)


def configs_allowed(ctx: RequestScope, req: Any, handler: Handler, op: int, out: str, denied_answers: Callable[[list], Any]) -> Awaitable[Any]:
    denied = [r for r in req.resources if not config_allowed(ctx, op, r)]
    return answer_allowed(ctx, req, handler, "resources", [r for r in req.resources if r not in denied], denied,
                           out, denied_answers)


async def alter_configs_allowed(ctx: RequestScope, req: Any, handler: Handler) -> Any:
    """AlterConfigs and IncrementalAlterConfigs: ALTER_CONFIGS on each resource (a broker logger's
    denial carries no message, as KafkaApis answers it)."""
    R = response_class(ctx.api_key, "AlterConfigsResourceResponse")
    return await configs_allowed(ctx, req, handler, Op.ALTER_CONFIGS, "responses", lambda denied: (
        R(error_code=config_denied_code(r), error_message=None if r.resource_type == BROKER_LOGGER_RESOURCE
          else DENIED_MESSAGES[config_denied_code(r)], resource_type=r.resource_type,
          resource_name=r.resource_name) for r in denied))


# -- cluster-level APIs --------------------------------------------------------------------------
async def on_cluster(ctx: RequestScope, req: Any, handler: Handler, op: int, denied: Callable[[], Any]) -> Any:
    """The handler's answer when the principal may ``op`` the cluster, else ``denied()``: Kafka's
    answer for that API with CLUSTER_AUTHORIZATION_FAILED, nothing applied."""
    if cluster(ctx, op):
        return await handler(ctx, req)
    return denied()


def cluster_denied(ctx: RequestScope, **fields: Any) -> Any:
    """A whole answer that is CLUSTER_AUTHORIZATION_FAILED with Kafka's message."""
    return ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE, **fields)


# -- whole requests -------------------------------------------------------------------------------
def whole_request(ctx: RequestScope, req: Any, handler: Handler, ok: bool, code: int) -> Awaitable[Any]:
    """The handler's answer when ``ok``, else the request answered with ``code`` in every item
    (protocol/error_response.py walks the request's shape), nothing applied."""
    if ok:
        return handler(ctx, req)
    from protocol.error_response import error_response

    async def denied() -> Any:
        message = CLUSTER_DENIED_MESSAGE if code == CLUSTER_DENIED else None
        return error_response(RESPONSES[ctx.api_key], req, ctx.api_version, code, message)
    return denied()


def alter_cluster_allowed(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    """ElectLeaders and AlterPartitionReassignments: ALTER on the cluster."""
    return whole_request(ctx, req, handler, cluster(ctx, Op.ALTER), CLUSTER_DENIED)


def _share_topics_denied(ctx: RequestScope, topics: list[Any]) -> list[Any]:
    """The request's topics (by id) the principal may not READ; unknown ids are left to the handler."""
    return [t for t in topics if (name := topic_name(ctx, None, t.topic_id)) is not None
            and not allowed(ctx, Op.READ, RT.TOPIC, name)]


async def share_records_allowed(ctx: RequestScope, req: Any, handler: Handler, api_key: int, topic_cls: str,
                                empty: dict[str, Any]) -> Any:
    """ShareFetch/ShareAcknowledge: READ on the group (else the whole request fails), READ on each
    topic (denied ones answer TOPIC_AUTHORIZATION_FAILED and are neither fetched nor acknowledged)."""
    if not allowed(ctx, Op.READ, RT.GROUP, req.group_id or ""):
        return ctx.response(throttle_time_ms=0, error_code=GROUP_DENIED, responses=[], node_endpoints=[], **empty)
    denied = _share_topics_denied(ctx, req.topics)
    if not denied:
        return await handler(ctx, req)
    req.topics = [t for t in req.topics if t not in denied]
    response = await handler(ctx, req)
    T = response_class(api_key, topic_cls)
    P = T.PartitionData
    extra = {"acknowledge_error_code": 0, "records": b"", "acquired_records": []} if api_key == ApiKey.SHARE_FETCH else {}
    response.responses.extend(
        T(topic_id=t.topic_id, partitions=[P(partition_index=p.partition_index, error_code=TOPIC_DENIED,
                                             current_leader=P.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1),
                                             **extra) for p in t.partitions])
        for t in denied)
    return response
