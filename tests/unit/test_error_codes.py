"""protocol.errors.ErrorCode is written out by hand from Kafka's Errors.java; kafka-python's error
classes are a second, independent copy of the same table. They must agree on every code both know,
and every name the run-time-built enum had (kafka-python's spellings) must still resolve."""
from __future__ import annotations

import kafka.errors as kafka_errors

from protocol.errors import ErrorCode


def _kafka_python_codes() -> dict[int, str]:
    """errno -> kafka-python's upper-case name, for every broker error class it defines."""
    codes: dict[int, str] = {}
    for obj in vars(kafka_errors).values():
        if isinstance(obj, type) and issubclass(obj, kafka_errors.BrokerResponseError):
            errno = getattr(obj, "errno", None)
            name = getattr(obj, "message", None)
            if isinstance(errno, int) and isinstance(name, str):
                codes[errno] = name
    return codes


def test_every_kafka_python_code_is_a_member_with_the_same_number() -> None:
    codes = _kafka_python_codes()
    assert len(codes) > 100  # the scan found kafka-python's table
    for errno, name in codes.items():
        assert ErrorCode(errno) == errno
        if errno > 0:  # -1 and 0 are UNKNOWN / NO_ERROR there, Kafka's names here
            assert ErrorCode[name] == errno, name


def test_kafka_names_are_canonical_and_kafka_python_spellings_are_aliases() -> None:
    assert ErrorCode(6).name == "NOT_LEADER_OR_FOLLOWER"
    for old, kafka in (("NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER"),
                       ("MESSAGE_SIZE_TOO_LARGE", "MESSAGE_TOO_LARGE"),
                       ("INVALID_TOPIC", "INVALID_TOPIC_EXCEPTION"),
                       ("INVALID_REPLICATION_ASSIGNMENT", "INVALID_REPLICA_ASSIGNMENT")):
        assert ErrorCode[old] is ErrorCode[kafka]
    assert (ErrorCode.UNKNOWN_SERVER_ERROR.value, ErrorCode.NONE.value) == (-1, 0)


def test_codes_are_dense_from_minus_one_to_kafkas_newest() -> None:
    """Kafka numbers its errors without gaps; a gap would mean a line lost when writing them out."""
    assert sorted(m.value for m in ErrorCode) == list(range(-1, 134))
    assert ErrorCode.SHARE_SESSION_LIMIT_REACHED.value == 133
