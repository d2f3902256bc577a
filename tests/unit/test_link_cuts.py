"""Cut links (broker/common/link_cuts.py) and the partition plans of broker/control/client.py:
who is cut from whom, how inter-broker clients are recognised, and what a call through a cut
link does (no answer until its timeout; at once after the heal), on trio without a network."""
from __future__ import annotations

import pytest
import trio

from broker.common.link_cuts import LINKS, LinkCuts, SwallowedByLinkCut, inter_broker_client_id, node_of_client_id
from broker.control.client import plan_partition
from broker.replica.client import BrokerConnection, BrokerConnectionError


def test_inter_broker_client_ids_name_their_node() -> None:
    assert node_of_client_id("samsa-replica-fetcher-2-1") == 2
    assert node_of_client_id("samsa-txn-markers-3") == 3
    assert node_of_client_id("samsa-txn-verify-1") == 1
    assert node_of_client_id("samsa-console-12") == 12
    assert inter_broker_client_id(4, "txn-markers") == "samsa-txn-markers-4"
    assert inter_broker_client_id(4, "replica-fetcher", 1) == "samsa-replica-fetcher-4-1"
    for client in ("rdkafka", "kafka-python-2.0", "samsa", "samsa-1", "console-consumer-1", "", None):
        assert node_of_client_id(client) is None, client


def test_a_broker_connection_must_name_its_node() -> None:
    with pytest.raises(ValueError, match="does not name the sending node"):
        BrokerConnection("127.0.0.1", 9092, "my-client")


def test_partition_plans() -> None:
    nodes = [1, 2, 3]
    assert plan_partition(nodes, [{1}, {2, 3}]) == {
        1: (frozenset({2, 3}), False), 2: (frozenset({1}), False), 3: (frozenset({1}), False)}
    # etcd with the majority: the minority loses it too
    with_etcd = {1: (frozenset({2, 3}), True), 2: (frozenset({1}), False), 3: (frozenset({1}), False)}
    assert plan_partition(nodes, [{1}, {2, 3, "etcd"}]) == with_etcd
    assert plan_partition(nodes, [{1}, {2, 3}], etcd={2, 3}) == with_etcd
    # a node named in no group keeps its links to everyone (a bridge), but not etcd
    assert plan_partition(nodes, [{1}, {3, "etcd"}]) == {
        1: (frozenset({3}), True), 2: (frozenset(), True), 3: (frozenset({1}), False)}
    assert plan_partition(nodes, []) == {n: (frozenset(), False) for n in nodes}
    for bad in ([{1}, {1, 2}], [{4}], [{1, "etcd"}, {2, "etcd"}]):
        with pytest.raises(ValueError):
            plan_partition(nodes, bad)
    with pytest.raises(ValueError):
        plan_partition(nodes, [{1}, {2, 3}], etcd={2})


def test_cut_table_validates_and_heals() -> None:
    links = LinkCuts(1)
    assert not links.active
    assert links.cut([2, 3], etcd=True) == {"node_id": 1, "peers": [2, 3], "etcd": True, "swallowed": 0, "lost": 0}
    assert links.is_cut(2) and links.is_cut(None) and not links.is_cut(1)
    for bad in ([1], ["2"], [True]):
        with pytest.raises(ValueError):
            links.cut(bad)
    assert links.heal()["peers"] == [] and not links.active


def test_a_call_through_a_cut_link_gets_no_answer_then_fails_at_heal() -> None:
    """A listener stands in for the peer: while cut, nothing reaches it (no connection, no
    request); the call fails after its timeout; after the heal the same connection object works."""

    async def main() -> None:
        accepted: list[int] = []

        async def peer(stream: trio.SocketStream) -> None:
            accepted.append(1)
            await stream.aclose()

        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(trio.serve_tcp, peer, 0)
            port = listeners[0].socket.getsockname()[1]
            links = LinkCuts(1, lambda host, p: 2 if p == port else None)
            LINKS.set(links)
            links.cut([2])
            conn = BrokerConnection("127.0.0.1", port, "samsa-test-1", timeout_s=0.3)
            from kafka.protocol.metadata import ApiVersionsRequest

            start = trio.current_time()
            with pytest.raises(BrokerConnectionError, match="connection timed out from broker 2"):
                await conn.call(ApiVersionsRequest(), 0)
            assert 0.29 <= trio.current_time() - start < 1.0
            assert accepted == [] and links.lost == 1
            # healed during the wait: the connection attempt goes on (and reaches the peer)
            async def heal_soon() -> None:
                await trio.sleep(0.05)
                links.heal()
            nursery.start_soon(heal_soon)
            links.cut([2])
            with pytest.raises(BrokerConnectionError, match="closed the connection"):
                await conn.call(ApiVersionsRequest(), 0)
            assert accepted == [1]
            nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_request_from_a_cut_peer_is_swallowed_until_the_heal() -> None:
    async def main() -> None:
        links = LinkCuts(1)
        links.cut([2])
        async with trio.open_nursery() as nursery:
            async def heal_later() -> None:
                await trio.sleep(0.1)
                links.heal()
            nursery.start_soon(heal_later)
            with pytest.raises(SwallowedByLinkCut):
                await links.swallow(2, "Fetch request")
        assert links.swallowed == 1

    trio.run(main)


def test_an_open_connection_is_not_closed_through_a_cut_only_after_the_heal() -> None:
    """A request on an open connection gets no answer (the peer never sees it); the connection the
    caller then gives up sends its FIN only once the link heals."""
    from kafka.protocol.metadata import ApiVersionsRequest

    async def main() -> None:
        events: list[str] = []

        async def peer(stream: trio.SocketStream) -> None:
            from protocol.frame import peek_header
            from protocol.messages import RESPONSES, encode_response

            while True:
                data = await stream.receive_some(65536)
                if not data:
                    events.append("eof")
                    return
                events.append("request")
                header = peek_header(data[4:])
                resp = RESPONSES[18](version=0, error_code=0, api_keys=[])
                await stream.send_all(bytes(encode_response(resp, header.correlation_id)))

        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(trio.serve_tcp, peer, 0)
            port = listeners[0].socket.getsockname()[1]
            links = LinkCuts(1, lambda host, p: 2 if p == port else None)
            LINKS.set(links)
            conn = BrokerConnection("127.0.0.1", port, "samsa-test-1", timeout_s=0.3)
            assert (await conn.call(ApiVersionsRequest(), 0)).error_code == 0
            links.cut([2])
            with pytest.raises(BrokerConnectionError, match="no answer from broker 2"):
                await conn.call(ApiVersionsRequest(), 0)
            await conn.close()
            await trio.sleep(0.1)
            assert events == ["request"]          # neither the second request nor a FIN got through
            links.heal()
            await trio.sleep(0.1)
            assert events == ["request", "eof"]
            assert (await conn.call(ApiVersionsRequest(), 0)).error_code == 0     # a new connection
            nursery.cancel_scope.cancel()

    trio.run(main)
