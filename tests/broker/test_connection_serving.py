"""A plain-TCP connection read and answered in one task (broker/network/listeners.py,
``_serve_socket``): answers leave in request order, pipelined requests included, and a clean stop
closes waiting connections at once while a request already read is still answered."""
from __future__ import annotations

import struct
import threading
import time

from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from broker.server.serving import SHUTDOWN_GRACE_S
from broker.testing.inprocess import InProcessBroker
from protocol.messages import RESPONSES
from tests.support.rawclient import RawClient
from tests.support.wire import FETCH, create


def _api_versions_frame(correlation_id: int) -> bytes:
    req = ApiVersionsRequest(version=0)
    req.with_header(correlation_id=correlation_id, client_id="samsa-tests")
    return bytes(req.encode(version=0, header=True, framed=True))


def test_pipelined_requests_are_answered_in_order(tmp_path):
    broker = InProcessBroker(tmp_path).start()
    try:
        with RawClient(broker.bootstrap_servers) as c:
            c.send_raw(b"".join(_api_versions_frame(i) for i in range(1, 21)))   # one write, 20 requests
            got = [ApiVersionsResponse.decode(c.recv_frame(), version=0, header=True) for _ in range(20)]
            assert [r.header.correlation_id for r in got] == list(range(1, 21))
            assert all(r.error_code == 0 for r in got)
    finally:
        broker.stop()


def test_stop_answers_a_request_in_flight_and_closes_waiting_connections_at_once(tmp_path):
    broker = InProcessBroker(tmp_path).start()
    stopped = threading.Thread(target=broker.stop)
    try:
        with RawClient(broker.bootstrap_servers) as idle, RawClient(broker.bootstrap_servers) as polling:
            create(polling, "parked")
            FT = FetchRequest.FetchTopic
            corr = polling.send(FETCH, 11, replica_id=-1, max_wait_ms=30000, min_bytes=1, max_bytes=1 << 20,
                                isolation_level=0, session_id=0, session_epoch=-1,
                                topics=[FT(topic="parked", partitions=[FT.FetchPartition(
                                    partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                    partition_max_bytes=1 << 20)])],
                                forgotten_topics_data=[], rack_id="")
            time.sleep(0.3)                # the fetch is parked: nothing to read yet
            t0 = time.monotonic()
            stopped.start()
            answer = RESPONSES[FETCH].decode(polling.recv_frame(), version=11, header=True)
            assert answer.header.correlation_id == corr   # released by the stop, answered before the close
            assert polling.is_closed()
            assert idle.is_closed()
            stopped.join(SHUTDOWN_GRACE_S)
            assert time.monotonic() - t0 < SHUTDOWN_GRACE_S / 2   # nobody waited for the grace period
    finally:
        if not stopped.is_alive() and stopped.ident is None:
            broker.stop()


def test_a_bad_frame_size_closes_the_connection(tmp_path):
    broker = InProcessBroker(tmp_path).start()
    try:
        with RawClient(broker.bootstrap_servers) as c, RawClient(broker.bootstrap_servers) as other:
            c.send_raw(_api_versions_frame(7))
            assert ApiVersionsResponse.decode(c.recv_frame(), version=0, header=True).header.correlation_id == 7
            c.send_raw(struct.pack(">i", 3))   # a frame too short to hold a header
            assert c.is_closed()
            other.send_raw(_api_versions_frame(8))   # only that connection
            assert ApiVersionsResponse.decode(other.recv_frame(), version=0, header=True).header.correlation_id == 8
    finally:
        broker.stop()
