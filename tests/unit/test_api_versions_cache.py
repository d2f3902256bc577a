"""ApiVersions answers are encoded once per key and sent with each request's correlation id
(broker/apis/api_versions.py, protocol/api_versions_response.py): every cached answer must be the
bytes a fresh encoding gives, for its own correlation id, and follow a change of its inputs."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import trio

from broker.apis import api_versions as handler
from broker.common.config import BrokerConfig
from broker.network.dispatch import RequestContext, dispatch
from protocol import api_versions_response
from protocol.api_versions import SUPPORTED, SUPPORTED_WITH_SHARE_GROUPS
from protocol.emulation import emulated_table
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS, RESPONSES, encode_response


def _broker(table: dict = SUPPORTED_WITH_SHARE_GROUPS, **props: str) -> Any:
    """What dispatch and the handler read of a broker: no link cuts, faults or authorizer."""
    return SimpleNamespace(api_versions=table, config=BrokerConfig(props), links=SimpleNamespace(peers=()),
                           faults=SimpleNamespace(armed=False), authorizer=None)


def _frame(version: int, correlation_id: int) -> bytes:
    kw = {"client_software_name": "samsa-tests", "client_software_version": "1"} if version >= 3 else {}
    req = REQUESTS[18](version=version, **kw)
    req.with_header(correlation_id=correlation_id, client_id="tests")
    return bytes(req.encode(header=True, framed=False))


def _ask(broker: Any, version: int, correlation_id: int) -> bytes:
    out = trio.run(dispatch, broker, _frame(version, correlation_id), "127.0.0.1")
    assert type(out) is bytes
    return out


def _fresh(broker: Any, version: int, correlation_id: int) -> bytes:
    """The answer encoded as dispatch encodes a handler's message, without the cache."""
    ctx = RequestContext(broker, 18, version, correlation_id, "tests", "127.0.0.1")
    tv = broker.config.get("samsa.transaction.version")
    return bytes(encode_response(handler.answer(ctx, broker.api_versions, tv), correlation_id))


def _decode(frame: bytes, version: int) -> Any:
    return RESPONSES[18].decode(frame[4:], version=version, header=True)


def _finalized(frame: bytes, version: int) -> dict[str, int]:
    return {f.name: f.max_version_level for f in _decode(frame, version).finalized_features}


@pytest.fixture(autouse=True)
def _empty_caches() -> None:
    handler.ANSWERS.clear()


# every version each table advertises (Kafka 3.6 advertises ApiVersions v0-v3: a v4 request to it is
# answered in v0 with UNSUPPORTED_VERSION, the KIP-511 test below)
@pytest.mark.parametrize(("table", "version"), [(t, v) for t in ("share groups", "no share groups") for v in range(5)]
                         + [("emulated 3.6", v) for v in range(4)])
def test_cached_answers_are_the_fresh_encoding_with_each_requests_correlation_id(version: int, table: str) -> None:
    tables = {"share groups": SUPPORTED_WITH_SHARE_GROUPS, "no share groups": SUPPORTED,
              "emulated 3.6": emulated_table("3.6")}
    broker = _broker(tables[table])
    assert version <= broker.api_versions[18][1]
    for cid in (1, 7, -5, 2**31 - 1, 1):
        got = _ask(broker, version, cid)
        assert got == _fresh(broker, version, cid)
        assert _decode(got, version).header.correlation_id == cid


def test_two_requests_get_their_own_correlation_ids() -> None:
    broker = _broker()
    first, second = _ask(broker, 3, 11), _ask(broker, 3, 12)
    assert (_decode(first, 3).header.correlation_id, _decode(second, 3).header.correlation_id) == (11, 12)
    assert first[8:] == second[8:]
    assert len(handler.ANSWERS._answers) == 1     # encoded once
    assert _decode(_ask(broker, 3, 11), 3).header.correlation_id == 11


def test_the_cached_answer_follows_a_dynamic_change_of_samsa_transaction_version() -> None:
    broker = _broker(**{"samsa.transaction.version": "2"})
    assert _finalized(_ask(broker, 3, 1), 3)["transaction.version"] == 2
    # a dynamic layer changes BrokerConfig.values in place (dynamic_broker_configs.apply)
    broker.config.set_dynamic({"samsa.transaction.version": "1"}, {}, lambda name: True, lambda name: "int")
    got = _ask(broker, 3, 2)
    assert _finalized(got, 3)["transaction.version"] == 1
    assert got == _fresh(broker, 3, 2)
    broker.config.set_dynamic({}, {}, lambda name: True, lambda name: "int")
    assert _finalized(_ask(broker, 3, 3), 3)["transaction.version"] == 2


def test_the_cached_answer_follows_the_brokers_table() -> None:
    broker = _broker(SUPPORTED_WITH_SHARE_GROUPS)
    assert "share.version" in _finalized(_ask(broker, 3, 1), 3)
    broker.api_versions = SUPPORTED
    got = _ask(broker, 3, 2)
    assert "share.version" not in _finalized(got, 3)
    assert {k.api_key: (k.min_version, k.max_version) for k in _decode(got, 3).api_keys} == SUPPORTED
    broker.api_versions = dict(SUPPORTED)      # an equal table, another object: encoded for itself
    assert _ask(broker, 3, 3) == _fresh(broker, 3, 3)


def test_the_cache_is_bounded() -> None:
    for i in range(api_versions_response.CACHE_LIMIT * 2):
        broker = _broker(dict(SUPPORTED), **{"samsa.transaction.version": str(i % 3)})
        assert _ask(broker, 3, i) == _fresh(broker, 3, i)
    assert len(handler.ANSWERS._answers) <= api_versions_response.CACHE_LIMIT


@pytest.mark.parametrize("table", [SUPPORTED_WITH_SHARE_GROUPS, SUPPORTED])
def test_the_kip_511_answer_is_cached_per_table_with_its_own_correlation_id(table: dict) -> None:
    broker = _broker(table)
    for cid in (77, 78):
        # a version newer than advertised: v0, UNSUPPORTED_VERSION and the whole table
        got = trio.run(dispatch, broker, _frame(4, cid)[:2] + b"\x00\x09" + _frame(4, cid)[4:], "127.0.0.1")
        resp = _decode(got, 0)
        assert (resp.header.correlation_id, resp.error_code) == (cid, ErrorCode.UNSUPPORTED_VERSION)
        assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys} == table
        fresh = RESPONSES[18](version=0, error_code=ErrorCode.UNSUPPORTED_VERSION,
                              api_keys=api_versions_response.api_keys(table))
        fresh.with_header(correlation_id=cid)
        assert got == bytes(fresh.encode(header=True, framed=True))
