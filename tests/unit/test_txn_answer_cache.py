"""A successful AddPartitionsToTxn (v0-v3) and EndTxn (v0-v4) answer is encoded once per (version,
request shape) and sent with each request's correlation id (broker/apis/add_partitions_to_txn.py,
broker/apis/end_txn.py, protocol/answer_cache.py). Every answer must still be the one kafka-python
encodes for what happened to that request: a shape answered NONE before must answer its own
errors (a fenced epoch, an unknown partition, a commit after a commit's abort) when they occur,
EndTxn v5 (the next producer id and epoch in every answer) is never cached, and nothing is cached
while an authorizer is set."""
from __future__ import annotations

from typing import Any


from broker.apis import add_partitions_to_txn as add_handler
from broker.apis import end_txn as end_handler
from broker.server.broker_server import Broker
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS, RESPONSES
from tests.support.dispatch_broker import answer, run_on_broker
from tests.support.wire import kafka_python_frame

INIT, ADD, END = 22, 24, 26
TID = "t"
NONE = ErrorCode.NONE
Shape = list[tuple[str, list[int]]]


def _frame(key: int, version: int, correlation_id: int, **fields: Any) -> bytes:
    req = REQUESTS[key](version=version, **fields)
    req.with_header(correlation_id=correlation_id, client_id="tests")
    return bytes(req.encode(header=True, framed=False))


def _add(version: int, cid: int, pid: int, epoch: int, shape: Shape) -> bytes:
    T = REQUESTS[ADD].AddPartitionsToTxnTopic
    return _frame(ADD, version, cid, v3_and_below_transactional_id=TID, v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[T(name=name, partitions=parts) for name, parts in shape])


def _end(version: int, cid: int, pid: int, epoch: int, commit: bool = True) -> bytes:
    return _frame(END, version, cid, transactional_id=TID, producer_id=pid, producer_epoch=epoch, committed=commit)


def _add_expected(version: int, cid: int, shape: Shape, errors: dict[tuple[str, int], int]) -> bytes:
    """kafka-python's own encoding of the answer Kafka gives."""
    R = RESPONSES[ADD]
    TR = R.AddPartitionsToTxnTopicResult
    PR = TR.AddPartitionsToTxnPartitionResult
    return kafka_python_frame(R(version=version, throttle_time_ms=0, results_by_topic_v3_and_below=[
        TR(name=name, results_by_partition=[PR(partition_index=p, partition_error_code=errors.get((name, p), NONE))
                                            for p in parts]) for name, parts in shape]), cid)


def _end_expected(version: int, cid: int, code: int = NONE, pid: int = -1, epoch: int = -1) -> bytes:
    kw = {"producer_id": pid, "producer_epoch": epoch} if version >= 5 else {}
    return kafka_python_frame(RESPONSES[END](version=version, throttle_time_ms=0, error_code=code, **kw), cid)


async def _ask(broker: Broker, frame: bytes) -> bytes:
    out = await answer(broker, frame)
    assert out is not None
    return out


def _run(check: Any) -> None:
    async def initialized(broker: Broker, ids: Any) -> None:
        out = await _ask(broker, _frame(INIT, 4, 1, transactional_id=TID, transaction_timeout_ms=60000,
                                        producer_id=-1, producer_epoch=-1))
        r = RESPONSES[INIT].decode(out[4:], version=4, header=True)
        assert r.error_code == NONE
        await check(broker, r.producer_id, r.producer_epoch)
    add_handler.ANSWERS.clear()
    end_handler.ANSWERS.clear()
    run_on_broker(initialized)


def _epoch(broker: Broker) -> int:
    md = broker.txns.coordinator_for(TID)[1].metadata(TID)
    assert md is not None
    return md.producer_epoch


def test_every_version_answers_kafka_pythons_encoding_for_each_correlation_id() -> None:
    async def check(broker: Broker, pid: int, epoch: int) -> None:
        shapes: list[Shape] = [[("a", [0])], [("a", [2, 0]), ("b", [1])]]
        n = 0
        for add_version in range(4):
            for shape in shapes:
                for cid in (1, 7, 2 ** 31 - 1, -5):
                    got = await _ask(broker, _add(add_version, cid, pid, epoch, shape))
                    assert got == _add_expected(add_version, cid, shape, {})
                    end_version = n % 6
                    n += 1
                    got = await _ask(broker, _end(end_version, cid, pid, epoch))
                    if end_version >= 5:   # transactions v2: the epoch moved, the answer says to which
                        epoch = _epoch(broker)
                        assert got == _end_expected(end_version, cid, NONE, pid, epoch)
                    else:
                        assert got == _end_expected(end_version, cid)
        # one entry per (version, shape), and one per EndTxn version but v5: later requests were
        # copies with their own correlation id
        assert len(add_handler.ANSWERS._answers) == 4 * len(shapes)
        assert sorted(end_handler.ANSWERS._answers) == [0, 1, 2, 3, 4]
        # and the transactions were committed: a COMMIT marker on every partition added
        md = broker.txns.coordinator_for(TID)[1].metadata(TID)
        assert md is not None and md.state.display == "CompleteCommit"
        for name, p in (("a", 0), ("a", 2), ("b", 1)):
            part = broker.logs.partition(name, p)
            assert part is not None and part.log_end_offset > 0
    _run(check)


def test_an_error_after_a_cached_success_of_the_same_shape_is_answered() -> None:
    async def check(broker: Broker, pid: int, epoch: int) -> None:
        ok: Shape = [("a", [0, 1])]
        for version in (0, 1, 2, 3):
            end_version = version + 1
            fenced = ErrorCode.INVALID_PRODUCER_EPOCH if version < 2 else ErrorCode.PRODUCER_FENCED
            end_fenced = ErrorCode.INVALID_PRODUCER_EPOCH if end_version < 2 else ErrorCode.PRODUCER_FENCED
            assert await _ask(broker, _add(version, 1, pid, epoch, ok)) == _add_expected(version, 1, ok, {})
            assert await _ask(broker, _end(end_version, 2, pid, epoch)) == _end_expected(end_version, 2)
            # the cached shape, from a fenced epoch
            assert await _ask(broker, _add(version, 3, pid, epoch - 1, ok)) == _add_expected(
                version, 3, ok, {("a", 0): fenced, ("a", 1): fenced})
            # a partition that does not exist: nothing added
            bad: Shape = [("a", [0, 9])]
            assert await _ask(broker, _add(version, 4, pid, epoch, bad)) == _add_expected(
                version, 4, bad, {("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
                                  ("a", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})
            # EndTxn after its cached success: an abort of the committed transaction, a fenced epoch
            assert await _ask(broker, _end(end_version, 5, pid, epoch, commit=False)) == _end_expected(
                end_version, 5, ErrorCode.INVALID_TXN_STATE)
            assert await _ask(broker, _end(end_version, 6, pid, epoch - 1)) == _end_expected(end_version, 6, end_fenced)
            # and the successes again, from the cache
            assert await _ask(broker, _add(version, 7, pid, epoch, ok)) == _add_expected(version, 7, ok, {})
            assert await _ask(broker, _end(end_version, 8, pid, epoch)) == _end_expected(end_version, 8)
        assert len(add_handler.ANSWERS._answers) == 4 and len(end_handler.ANSWERS._answers) == 4
    _run(check)


def test_with_an_authorizer_nothing_is_cached_and_denials_are_answered() -> None:
    """The authorizer's rules answer through the handler's message: no bytes answers then."""
    async def check(broker: Broker, pid: int, epoch: int) -> None:
        from coordinator.metadata.image import MetadataImage, replay_all
        from broker.security.acl import AclBinding, Authorizer, Operation as Op, PatternType as PT
        from broker.security.acl import Permission as Perm, ResourceType as RT
        anyone = "User:ANONYMOUS"
        image, _ = replay_all(MetadataImage(), [
            AclBinding("1", RT.TRANSACTIONAL_ID, TID, PT.LITERAL, anyone, "*", Op.WRITE, Perm.ALLOW),
            AclBinding("2", RT.TOPIC, "a", PT.LITERAL, anyone, "*", Op.WRITE, Perm.ALLOW)])
        broker.authorizer = Authorizer(lambda: image.acls, (), False)
        only_a: Shape = [("a", [0])]
        for cid in (1, 2):
            assert await _ask(broker, _add(1, cid, pid, epoch, only_a)) == _add_expected(1, cid, only_a, {})
            assert await _ask(broker, _end(1, cid, pid, epoch)) == _end_expected(1, cid)
        both: Shape = [("a", [0]), ("b", [0])]
        assert await _ask(broker, _add(1, 3, pid, epoch, both)) == _add_expected(1, 3, both, {
            ("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("b", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED})
        assert not add_handler.ANSWERS._answers and not end_handler.ANSWERS._answers
    _run(check)
