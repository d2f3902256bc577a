"""Group placement: Java's String.hashCode and Kafka's abs, exactly."""
from __future__ import annotations

import pytest

from coordinator.hashing import java_string_hash, kafka_abs, partition_for_group
from tests.support.coordinator_harness import Harness


@pytest.mark.parametrize("s, expected", [
    ("", 0),
    ("a", 97),
    ("ab", 97 * 31 + 98),
    ("hello", 99162322),                       # "hello".hashCode() in Java
    ("polygenelubricants", -2147483648),       # a string whose hashCode is Integer.MIN_VALUE
    ("\U0001F600", 0xD83D * 31 + 0xDE00),      # hashed as its UTF-16 surrogate pair
    ("é", 0xE9),
])
def test_java_string_hash(s: str, expected: int) -> None:
    assert java_string_hash(s) == expected


def test_hash_wraps_to_signed_int32() -> None:
    h = java_string_hash("my-group")
    assert h == -1906497762
    assert -2**31 <= java_string_hash("x" * 1000) < 2**31


def test_kafka_abs_maps_min_value_to_zero() -> None:
    assert kafka_abs(-2147483648) == 0
    assert kafka_abs(-5) == 5
    assert kafka_abs(7) == 7


@pytest.mark.parametrize("group, n, expected", [
    ("hello", 50, 99162322 % 50),
    ("my-group", 50, 1906497762 % 50),
    ("polygenelubricants", 50, 0),
    ("polygenelubricants", 7, 0),
    ("", 50, 0),
    ("a", 1, 0),
])
def test_partition_for_group(group: str, n: int, expected: int) -> None:
    assert partition_for_group(group, n) == expected


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError):
        partition_for_group("g", 0)


def test_coordinator_answers_not_coordinator_for_groups_hashed_elsewhere() -> None:
    own = partition_for_group("hello", 50)
    h = Harness(partition=own)
    other = next(g for g in (f"g{i}" for i in range(100)) if partition_for_group(g, 50) != own)
    assert h.result(*h.join(other)).error_code == 16                  # NOT_COORDINATOR
    assert h.heartbeat("m", 1, group_id=other) == 16
    assert h.commit_errors({("t", 0): 1}, other) == {("t", 0): 16}
    assert h.fetch((other, None)).groups[0].error_code == 16
    assert h.describe(other)[0].error_code == 16
    assert h.result(*h.join("hello")).error_code == 79                # MEMBER_ID_REQUIRED: ours
