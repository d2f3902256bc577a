"""Request dispatch: decode with kafka-python's classes, route to the API's
handler, encode the response with the request's version and correlation id."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from collections.abc import Awaitable, Callable

import structlog
from kafka.protocol.api_message import ApiMessage

from protocol.api_keys import ApiKey
from protocol.api_versions import SUPPORTED_WITH_SHARE_GROUPS as ALL_IMPLEMENTED
from protocol.api_versions_response import unsupported_version_response
from protocol.frame import FrameError, peek_header
from protocol.build import build
from protocol.messages import REQUESTS, RESPONSES, decode_request, encode_response
from protocol.splice import splice

from .faults import PASS
from broker.common.link_cuts import peer_of_request
from broker.log.region import FileRegion
from broker.security.authz import authorized

if TYPE_CHECKING:
    from broker.server.broker_server import Broker
    from broker.common.config import Listener
    from broker.security.session import Session

log = structlog.get_logger("samsa.dispatch")


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    listener: str = ""
    session: Session | None = None   # the connection's security state (broker/security/session.py)

    @property
    def principal(self) -> str:
        return self.session.principal if self.session is not None else "User:ANONYMOUS"

    @property
    def advertised(self) -> Listener:
        """This broker's address as advertised on the listener the request arrived on."""
        advertised = self.broker.config.advertised_listeners
        return next((a for a in advertised if a.name == self.listener), advertised[0])

    def response(self, **fields: Any) -> ApiMessage:
        """A response object of this request's API and version (protocol/build.py: the same
        object as the class's constructor makes, from a plan made once per version)."""
        return build(RESPONSES[self.api_key], self.api_version, fields)


@dataclass(slots=True)
class Spliced:
    """A handler's answer whose ``records`` fields are placeholders for file regions
    (protocol/splice.py): the regions are sent from the files, never copied into the frame."""

    message: ApiMessage
    regions: list[FileRegion]


Parts = list  # encoded bytes and FileRegions, in sending order
# a handler answers a message, a Spliced one, None (no answer is due), or bytes: its framed answer, already
# encoded with the request's correlation id (ApiVersions' cached answer, broker/apis/api_versions.py)
Handler = Callable[[RequestContext, ApiMessage], Awaitable[ApiMessage | Spliced | bytes | None]]
API_PACKAGE = "broker.apis"


def api_module(api_key: ApiKey) -> str:
    """The module of ``api_key``'s handler and authorization rule: named after the API
    (``ApiKey.DESCRIBE_CONFIGS`` is broker/apis/describe_configs.py)."""
    return f"{API_PACKAGE}.{api_key.name.lower()}"


class _Handlers(dict[int, Handler]):
    """Handlers by API key, each API's module imported when its API is first requested (importing
    every handler module, and the coordinators and message classes they use, took longer than
    ``import trio`` before a fresh broker could answer). A hit is a plain dict lookup."""

    def __missing__(self, key: int) -> Handler:
        importlib.import_module(api_module(ApiKey(key)))   # registers with @handles
        try:
            return dict.__getitem__(self, key)
        except KeyError:
            raise RuntimeError(f"{api_module(ApiKey(key))} registers no handler for {ApiKey(key).name}") from None


_API_KEYS: dict[int, ApiKey] = {int(k): k for k in ApiKey}
_API_VERSIONS = int(ApiKey.API_VERSIONS)   # compared with every request's key: no enum attribute lookup
HANDLERS: dict[int, Handler] = _Handlers()   # keyed by ApiKey members; looked up with the frame's int key


def handles(api_key: ApiKey) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of ``api_key`` (in the API's own module,
    broker/apis/<api_name>.py)."""
    def register(fn: Handler) -> Handler:
        HANDLERS[api_key] = fn
        return fn
    return register


def check_handlers(load: bool = False) -> None:
    """The start-up guard: every API this broker can advertise has its module in broker/apis/,
    or start-up fails. Start-up checks only that the modules exist (one directory listing); with
    ``load`` every module is imported and must register a handler and an authorization rule
    (``@authorizes`` beside the handler): tests/unit/test_lazy_loading.py runs that, and an API
    module imported on first use without a handler fails its request the same way."""
    import pkgutil

    package = importlib.import_module(API_PACKAGE)   # by name: the handlers sit above this layer
    modules = {info.name for info in pkgutil.iter_modules(package.__path__) if not info.ispkg}
    missing = [k.name for k in ALL_IMPLEMENTED if k.name.lower() not in modules]
    if load and not missing:
        from broker.security.authz import RULES
        for k in ALL_IMPLEMENTED:
            importlib.import_module(api_module(k))
        missing += [k.name for k in ALL_IMPLEMENTED if not dict.__contains__(HANDLERS, k)]
        missing += [f"{k.name} (authorization rule)" for k in ALL_IMPLEMENTED if k not in RULES]
    if missing:
        raise RuntimeError(f"advertised APIs without a handler: {missing}")


async def dispatch(broker: Broker, frame: bytes, client_host: str,
                   listener: str = "", session: Session | None = None) -> bytes | bytearray | Parts | None:
    """Answer one request frame. Returns the framed response (or its parts, when records
    are sent from files), None when none is due (acks=0), or raises FrameError when Kafka
    would close the connection."""
    key, version, correlation_id = peek_header(frame)
    api_key = _API_KEYS.get(key)   # ApiKey(key) without the enum call's cost on every request
    if api_key is None:   # a key Kafka never defined: Kafka cannot parse such a request and closes the connection
        raise FrameError(f"unsupported api key {key} version {version}")
    advertised = broker.api_versions.get(api_key)  # SUPPORTED, or narrower when emulating an old Kafka
    is_advertised = advertised is not None and advertised[0] <= version <= advertised[1]
    if key == _API_VERSIONS and not is_advertised:
        # KIP-511: answer in v0 with UNSUPPORTED_VERSION and our table
        return unsupported_version_response(correlation_id, broker.api_versions)
    try:
        if not is_advertised:
            raise KeyError(key)
        req_cls = REQUESTS[key]     # imports the API's message classes on its first request
    except KeyError:   # Kafka cannot parse such a request and closes the connection.
        raise FrameError(f"unsupported api key {key} version {version}") from None
    try:
        request = decode_request(req_cls, frame, version)
    except Exception as exc:  # malformed body: Kafka closes the connection
        raise FrameError(f"cannot decode {req_cls.__name__} v{version}: {exc!r}") from None
    header = request.header
    ctx = RequestContext(broker, key, version, correlation_id, header.client_id, client_host, listener,
                         session)
    links = broker.links
    peer = peer_of_request(ctx, request) if links.peers else None   # broker/common/link_cuts.py
    if peer is not None and links.is_cut(peer):
        await links.swallow(peer, f"{api_key.name} request")     # raises once the link heals
    injected = await broker.faults.before(ctx, request) if broker.faults.armed else PASS  # broker/network/faults.py
    if injected is not PASS:
        response = injected
    elif broker.authorizer is None:
        response = await HANDLERS[key](ctx, request)
    else:
        response = await authorized(ctx, request, HANDLERS[key])
    if response is None:
        return None
    if links.peers and peer is None:
        peer = peer_of_request(ctx, request)
    if peer is not None and links.is_cut(peer):                 # cut while the request was handled
        await links.swallow(peer, f"the answer to a {api_key.name} request")
    if type(response) is bytes:
        return response
    if isinstance(response, Spliced):
        message = response.message
        encoded = encode_response(message, correlation_id)
        if not response.regions:
            return encoded
        return splice(encoded, response.regions, message.flexible_version_q(version))
    return encode_response(response, correlation_id)
