"""A successful OffsetCommit's answer is encoded once per (version, topics and partitions named)
and sent with each request's correlation id (broker/apis/offset_commit.py,
protocol/answer_cache.py). Every answer must still be the one kafka-python encodes for what
happened to that request: the same request shape answered NONE before must answer its own
errors (an unknown partition, a stale generation) when they occur, and an authorizer's denied
topics must still be added to the answer."""
from __future__ import annotations

import uuid
from typing import Any


from broker.apis import offset_commit as handler
from broker.server.broker_server import Broker
from protocol.answer_cache import AnswerCache
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS, RESPONSES
from tests.support.dispatch_broker import answer, run_on_broker
from tests.support.wire import kafka_python_frame

REQ = REQUESTS[8]
TOPIC, PART = REQ.OffsetCommitRequestTopic, REQ.OffsetCommitRequestTopic.OffsetCommitRequestPartition
NONE, UNKNOWN = ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _request(version: int, correlation_id: int, topics: list[tuple[str, uuid.UUID, list[int]]], offset: int,
             group: str = "g", generation: int = -1) -> bytes:
    def part(p: int) -> Any:
        kw = {"committed_leader_epoch": -1} if version >= 6 else {}
        return PART(partition_index=p, committed_offset=offset, committed_metadata="m", **kw)
    kw: dict[str, Any] = {"retention_time_ms": -1} if 2 <= version <= 4 else {}
    if version >= 7:
        kw["group_instance_id"] = None
    req = REQ(version=version, group_id=group, generation_id_or_member_epoch=generation, member_id="", **kw,
              topics=[TOPIC(name=name if version < 10 else "", topic_id=tid if version >= 10 else None,
                            partitions=[part(p) for p in parts]) for name, tid, parts in topics])
    req.with_header(correlation_id=correlation_id, client_id="tests")
    return bytes(req.encode(header=True, framed=False))


def _expected(version: int, correlation_id: int, topics: list[tuple[str, uuid.UUID, list[int]]],
              errors: dict[tuple[str, int], int]) -> bytes:
    """kafka-python's own encoding of the answer Kafka gives."""
    R = RESPONSES[8]
    RT = R.OffsetCommitResponseTopic
    RP = RT.OffsetCommitResponsePartition
    resp = R(version=version, throttle_time_ms=0, topics=[
        RT(name=name if version < 10 else "", topic_id=tid if version >= 10 else None,
           partitions=[RP(partition_index=p, error_code=errors.get((name, p), NONE)) for p in parts])
        for name, tid, parts in topics])
    return kafka_python_frame(resp, correlation_id)


def _run(check: Any, **props: str) -> None:
    handler.ANSWERS.clear()
    run_on_broker(check, **props)


async def _ask(broker: Broker, frame: bytes) -> bytes:
    out = await answer(broker, frame)
    assert out is not None
    return out


def test_every_version_answers_kafka_pythons_encoding_for_each_correlation_id() -> None:
    async def check(broker: Broker, ids: dict[str, uuid.UUID]) -> None:
        shapes = [[("a", ids["a"], [0])], [("a", ids["a"], [2, 0]), ("b", ids["b"], [1])]]
        for version in range(2, 11):
            for shape in shapes:
                for offset, cid in enumerate((1, 7, 2 ** 31 - 1, -5)):
                    got = await _ask(broker, _request(version, cid, shape, offset))
                    assert got == _expected(version, cid, shape, {})
        # one entry per (version, shape): later requests were copies with their own correlation id
        assert len(handler.ANSWERS._answers) == 9 * len(shapes)
        # and the commits were made: the coordinator holds the last offset of each partition
        offsets = broker.groups.coordinator_for("g")[1].offsets.group_offsets("g")
        assert {tp: o.committed_offset for tp, o in offsets.items()} == {("a", 0): 3, ("a", 2): 3, ("b", 1): 3}
    _run(check)


def test_an_error_after_a_cached_success_of_the_same_shape_is_answered() -> None:
    async def check(broker: Broker, ids: dict[str, uuid.UUID]) -> None:
        for version in (8, 9, 10):
            ok = [("a", ids["a"], [0, 1])]
            assert await _ask(broker, _request(version, 1, ok, 5)) == _expected(version, 1, ok, {})
            # a partition that does not exist, in a shape never cached
            bad = [("a", ids["a"], [0, 9])]
            assert await _ask(broker, _request(version, 2, bad, 6)) == _expected(version, 2, bad, {("a", 9): (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)})
            # the cached shape, but the coordinator refuses it: a generation for a group with none
            want = ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION
            got = await _ask(broker, _request(version, 3, ok, 7, group=f"new-{version}", generation=4))
            assert got == _expected(version, 3, ok, {("a", 0): want, ("a", 1): want})
            # and the success again, from the cache
            assert await _ask(broker, _request(version, 4, ok, 8)) == _expected(version, 4, ok, {})
        assert all(oam.committed_offset == 8 for oam in
                   broker.groups.coordinator_for("g")[1].offsets.group_offsets("g").values())
    _run(check)


def test_with_an_authorizer_denied_topics_are_still_answered() -> None:
    """The authorizer's rule answers the allowed topics through the handler and adds the denied
    ones to its answer object: the cache must not answer in bytes there."""
    async def check(broker: Broker, ids: dict[str, uuid.UUID]) -> None:
        from coordinator.metadata.image import MetadataImage, replay_all
        from broker.security.acl import AclBinding, Authorizer, Operation as Op, PatternType as PT
        from broker.security.acl import Permission as Perm, ResourceType as RT
        anyone = "User:ANONYMOUS"
        image, _ = replay_all(MetadataImage(), [
            AclBinding("1", RT.GROUP, "g", PT.LITERAL, anyone, "*", Op.READ, Perm.ALLOW),
            AclBinding("2", RT.TOPIC, "a", PT.LITERAL, anyone, "*", Op.READ, Perm.ALLOW)])
        broker.authorizer = Authorizer(lambda: image.acls, (), False)
        shape = [("a", ids["a"], [0]), ("b", ids["b"], [0])]
        for cid in (1, 2):
            got = await _ask(broker, _request(9, cid, shape, cid))
            assert got == _expected(9, cid, shape, {("b", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED})
        only_a = [("a", ids["a"], [0])]
        assert await _ask(broker, _request(9, 3, only_a, 3)) == _expected(9, 3, only_a, {})
        assert not handler.ANSWERS._answers
        offsets = broker.groups.coordinator_for("g")[1].offsets.group_offsets("g")
        assert {tp: o.committed_offset for tp, o in offsets.items()} == {("a", 0): 3}
    _run(check)


def test_the_cache_is_bounded_and_checks_its_owner() -> None:
    cache = AnswerCache(3)
    for i in range(7):
        cache.put(i, bytes(8))
        assert len(cache._answers) <= 3
    owner, other = {}, {}
    cache.put("k", b"\0\0\0\4\0\0\0\1", owner=owner)
    assert cache.get("k", owner=owner) == b"\0\0\0\4\0\0\0\1"
    assert cache.get("k", owner=other) is None and cache.get("k") is None
