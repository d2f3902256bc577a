"""protocol/build.py builds the same objects as kafka-python's constructors."""
from __future__ import annotations

from typing import Any

import pytest

from protocol.build import build
from protocol.messages import INDEX, REQUESTS, RESPONSES


def _slots(obj: Any) -> dict[str, Any]:
    names = {s for k in type(obj).__mro__ for s in getattr(k, "__slots__", ())}
    out = {}
    for n in sorted(names):
        try:
            out[n] = object.__getattribute__(obj, n)
        except AttributeError:
            out[n] = "<unset>"
    return out


def _same(a: Any, b: Any, defaults: bool = False) -> None:
    assert type(a) is type(b)
    sa, sb = _slots(a), _slots(b)
    assert sa == sb
    if defaults:     # kafka-python's default objects are shared, not copied: the very same ones
        assert all(v is sb[n] for n, v in sa.items() if n != "tags")


@pytest.mark.parametrize("key", sorted(INDEX))
def test_defaults_at_every_version(key: int) -> None:
    for cls in (REQUESTS[key], RESPONSES[key]):
        for version in range(cls.min_version, cls.max_version + 1):
            _same(build(cls, version, {}), cls(version=version), defaults=True)


def test_fields_tags_nested_and_out_of_version() -> None:
    R = RESPONSES[0]
    P = R.TopicProduceResponse.PartitionProduceResponse
    leader = P.LeaderIdAndEpoch(leader_id=1, leader_epoch=2)
    for version in (3, 8, 10, 11):
        f = dict(index=1, error_code=6, base_offset=-1, current_leader=leader)
        _same(build(P, version, f), P(version=version, **f))
        _same(build(P, None, f), P(**f))
        _same(build(R, version, dict(throttle_time_ms=5, responses=[])), R(version=version, throttle_time_ms=5, responses=[]))
    C = RESPONSES[8]
    _same(build(C.OffsetCommitResponseTopic, None, dict(name="t", topic_id=None, partitions=[])),
          C.OffsetCommitResponseTopic(name="t", topic_id=None, partitions=[]))


def test_what_the_plan_does_not_cover_goes_to_the_class() -> None:
    R = RESPONSES[8]
    with pytest.raises(ValueError):
        build(R, 9, {"no_such_field": 1})
    with pytest.raises(ValueError):
        build(R, R.max_version + 1, {})
    _same(build(R, 9, {"_unknown": 1}), R(version=9, _unknown=1))
