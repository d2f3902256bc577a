"""A successful Produce's answer is encoded once per (version, topics and partitions answered) and
sent with each request's offsets and correlation id written in (broker/apis/produce.py). Every
answer must still be the one kafka-python encodes for what happened to that request: the same
shape answered NONE before must answer its own errors when they occur (and its successful
partitions' offsets beside them), and nothing is cached while an authorizer is set."""
from __future__ import annotations

import uuid
from typing import Any


from broker.apis import produce as handler
from broker.server.broker_server import Broker
from protocol import records as rb
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS, RESPONSES
from tests.support.dispatch_broker import answer, run_on_broker
from tests.support.wire import kafka_python_frame

PRODUCE = 0
Shape = list[tuple[str, list[int]]]
CONTROL_MESSAGE = "Clients may not write control records"


def _request(version: int, cid: int, shape: Shape, ids: dict[str, uuid.UUID], control: frozenset = frozenset(),
             acks: int = -1) -> bytes:
    R = REQUESTS[PRODUCE]
    TD = R.TopicProduceData
    PD = TD.PartitionProduceData

    def batch(name: str, p: int) -> bytes:
        return bytes(rb.build_batch([(None, b"v" * 10)] * 3, timestamp_ms=1_700_000_000_000,
                                    control=(name, p) in control))
    req = R(version=version, transactional_id=None, acks=acks, timeout_ms=5000, topic_data=[
        TD(name=name if version < 13 else "", topic_id=ids[name] if version >= 13 else None,
           partition_data=[PD(index=p, records=batch(name, p)) for p in parts]) for name, parts in shape])
    req.with_header(correlation_id=cid, client_id="tests")
    return bytes(req.encode(header=True, framed=False))


def _expected(version: int, cid: int, shape: Shape, ids: dict[str, uuid.UUID], base: dict[tuple[str, int], int],
              errors: dict[tuple[str, int], tuple[int, str | None]]) -> bytes:
    """kafka-python's own encoding of the answer Kafka gives: ``base`` offsets of the partitions
    appended, ``errors`` (code, message) of the others."""
    R = RESPONSES[PRODUCE]
    TR = R.TopicProduceResponse
    PR = TR.PartitionProduceResponse

    def part(name: str, p: int) -> Any:
        if (name, p) in errors:
            code, message = errors[(name, p)]
            return PR(index=p, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                      record_errors=[], error_message=message)
        return PR(index=p, error_code=0, base_offset=base[(name, p)], log_append_time_ms=-1, log_start_offset=0,
                  record_errors=[], error_message=None)
    resp = R(version=version, throttle_time_ms=0, node_endpoints=[], responses=[
        TR(name=name if version < 13 else "", topic_id=ids[name] if version >= 13 else None,
           partition_responses=[part(name, p) for p in parts]) for name, parts in shape])
    return kafka_python_frame(resp, cid)


def _run(check: Any) -> None:
    handler.ANSWERS.clear()
    handler.SEEN.clear()
    run_on_broker(check)


def _ends(broker: Broker, shape: Shape) -> dict[tuple[str, int], int]:
    out = {}
    for name, parts in shape:
        for p in parts:
            part = broker.logs.partition(name, p)
            assert part is not None
            out[(name, p)] = part.log_end_offset
    return out


_ask = answer


def test_every_version_answers_kafka_pythons_encoding_for_each_correlation_id() -> None:
    async def check(broker: Broker, ids: dict[str, uuid.UUID]) -> None:
        shapes: list[Shape] = [[("a", [0])], [("a", [2, 0]), ("b", [1])]]
        for version in range(3, 14):
            for shape in shapes:
                for cid in (1, 7, 2 ** 31 - 1, -5):
                    base = _ends(broker, shape)
                    got = await _ask(broker, _request(version, cid, shape, ids))
                    assert got == _expected(version, cid, shape, ids, base, {})
                    assert _ends(broker, shape) == {tp: o + 3 for tp, o in base.items()}   # appended
        # one entry per (version, shape), made at its second success: later answers were copies
        # with their own offsets
        assert len(handler.ANSWERS) == 11 * len(shapes)
    _run(check)


def test_an_error_after_a_cached_success_of_the_same_shape_is_answered() -> None:
    async def check(broker: Broker, ids: dict[str, uuid.UUID]) -> None:
        shape: Shape = [("a", [0, 1]), ("b", [2])]
        for version in (3, 5, 9, 13):
            for cid in (0, 1):    # cached from its second success
                base = _ends(broker, shape)
                assert await _ask(broker, _request(version, cid, shape, ids)) == _expected(
                    version, cid, shape, ids, base, {})
                assert ((version, tuple((ids[n] if version >= 13 else n, tuple(ps)) for n, ps in shape))
                        in handler.ANSWERS) == (cid == 1)
            # the cached shape, one partition refused: the others appended, the refusal answered
            base = _ends(broker, shape)
            got = await _ask(broker, _request(version, 2, shape, ids, control=frozenset({("a", 1)})))
            assert got == _expected(version, 2, shape, ids, base, {("a", 1): (ErrorCode.INVALID_RECORD,
                                                                              CONTROL_MESSAGE)})
            # and the success again, from the cache
            base = _ends(broker, shape)
            assert await _ask(broker, _request(version, 3, shape, ids)) == _expected(version, 3, shape, ids, base, {})
        assert len(handler.ANSWERS) == 4
        # acks=0 is never answered
        assert await _ask(broker, _request(9, 4, shape, ids, acks=0)) is None
    _run(check)


def test_with_an_authorizer_denied_topics_are_still_answered() -> None:
    """The authorizer's rule answers the allowed topics through the handler and adds the denied
    ones to its answer object: the cache must not answer in bytes there."""
    async def check(broker: Broker, ids: dict[str, uuid.UUID]) -> None:
        from coordinator.metadata.image import MetadataImage, replay_all
        from broker.security.acl import AclBinding, Authorizer, Operation as Op, PatternType as PT
        from broker.security.acl import Permission as Perm, ResourceType as RT
        image, _ = replay_all(MetadataImage(), [
            AclBinding("1", RT.TOPIC, "a", PT.LITERAL, "User:ANONYMOUS", "*", Op.WRITE, Perm.ALLOW)])
        broker.authorizer = Authorizer(lambda: image.acls, (), False)
        shape: Shape = [("a", [0]), ("b", [0])]
        for cid in (1, 2):
            base = _ends(broker, shape)
            got = await _ask(broker, _request(9, cid, shape, ids))
            assert got == _expected(9, cid, shape, ids, base, {("b", 0): (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)})
        only_a: Shape = [("a", [0])]
        base = _ends(broker, only_a)
        assert await _ask(broker, _request(9, 3, only_a, ids)) == _expected(9, 3, only_a, ids, base, {})
        assert not handler.ANSWERS and not handler.SEEN
    _run(check)
