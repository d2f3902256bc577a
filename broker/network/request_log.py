"""What happens once per answered request besides answering it: the request counters and latency
histogram of ``/metrics`` (when ``samsa.http.listener`` is on) and a debug log line per request
(``SAMSA_LOG_LEVEL=DEBUG``). Called by the connection's answer loop with the request frame, so
it reads only the frame's fixed header prefix (and the client id, for the debug line)."""
from __future__ import annotations

import struct
from time import perf_counter
from typing import TYPE_CHECKING

import structlog

from protocol.api_keys import api_name
from protocol.frame import peek_header

if TYPE_CHECKING:
    from broker.server.broker_server import Broker

log = structlog.get_logger("samsa.requests")

enabled = False   # debug lines on; set once at start-up (set_request_logging)
now = perf_counter

_CLIENT_ID = struct.Struct(">h")


def set_request_logging(on: bool) -> None:
    global enabled
    enabled = on


def _client_id(frame: bytes) -> str | None:
    try:
        (n,) = _CLIENT_ID.unpack_from(frame, 8)
    except struct.error:
        return None
    return None if n < 0 else bytes(frame[10:10 + n]).decode("utf-8", "replace")


def request_answered(broker: Broker, frame: bytes, started: float, client_host: str, listener: str) -> None:
    prefix = peek_header(frame)
    if broker.metrics is not None:
        broker.metrics.request_done(prefix.api_key, prefix.api_version, started)
    if enabled:
        api = api_name(prefix.api_key) or str(prefix.api_key)
        log.debug("request", api=api, version=prefix.api_version, correlation_id=prefix.correlation_id,
                  client_id=_client_id(frame), client_host=client_host, listener=listener,
                  ms=round((perf_counter() - started) * 1000, 3))
