"""Dynamic group configs (KIP-848, Kafka's GroupConfig / GroupConfigManager): validation over the
broker's values and bounds in Kafka's order and messages, and ``consumer.session.timeout.ms`` /
``consumer.heartbeat.interval.ms`` applied by the pure consumer-group coordinator from the next
heartbeat and the next session timer, with a fake clock."""
from __future__ import annotations

import uuid
from typing import Any

from coordinator.group.consumer import ConsumerGroupHeartbeat
from coordinator.group.coordinator import GroupCoordinator, GroupCoordinatorConfig
from coordinator.group.group_config import consumer_settings, share_settings, validate

T1 = uuid.UUID(int=1)
FAST = {"group.consumer.min.session.timeout.ms": 1000, "group.consumer.min.heartbeat.interval.ms": 100}


def test_validation_is_kafkas_order_and_messages() -> None:
    assert validate({"consumer.heartbeat.interval.ms": "4999"}, {}) == \
        "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"
    assert validate({"consumer.heartbeat.interval.ms": "15001"}, {}) == \
        "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"
    assert validate({"consumer.session.timeout.ms": "44999"}, {}) == \
        "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"
    assert validate({"consumer.session.timeout.ms": "60001"}, {}) == \
        "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"
    # both out of range: the heartbeat interval is checked first, whatever the request's order
    assert validate({"consumer.session.timeout.ms": "1", "consumer.heartbeat.interval.ms": "1"}, {}) == \
        "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"
    # ConfigDef's own atLeast(1) and type come before the broker's bounds
    assert validate({"consumer.session.timeout.ms": "0"}, {}) == \
        "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"
    assert validate({"consumer.heartbeat.interval.ms": "soon"}, {}) == \
        "Invalid value soon for configuration consumer.heartbeat.interval.ms: Not a number of type INT"
    # the session timeout must exceed the heartbeat interval, the broker's value filling the other
    assert validate({"consumer.heartbeat.interval.ms": "3000"}, {**FAST, "group.consumer.session.timeout.ms": 3000}) \
        == "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
    assert validate({"consumer.heartbeat.interval.ms": "2999"}, {**FAST, "group.consumer.session.timeout.ms": 3000}) \
        is None
    assert validate({"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "15000"},
                    {"group.share.max.session.timeout.ms": 45000}) is None
    assert validate({"streams.session.timeout.ms": "45000"}, {}) == "Unknown group config name: streams.session.timeout.ms"


def test_effective_values_are_the_override_clamped_into_the_broker_bounds() -> None:
    """Kafka 4.3 (KAFKA-20162): an override the broker's current bounds do not allow is clamped."""
    assert consumer_settings({}, {"group.consumer.session.timeout.ms": 50000}).session_timeout_ms == 50000
    s = consumer_settings({"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}, {})
    assert (s.session_timeout_ms, s.heartbeat_interval_ms) == (50000, 6000)
    s = consumer_settings({"consumer.session.timeout.ms": "90000", "consumer.heartbeat.interval.ms": "1000"}, {})
    assert (s.session_timeout_ms, s.heartbeat_interval_ms) == (60000, 5000)
    assert share_settings({"share.record.lock.duration.ms": "1000"}, {}).record_lock_duration_ms == 15000


class CG:
    """A coordinator whose group configs are a dict the test edits (the metadata image's part)."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.co = GroupCoordinator(GroupCoordinatorConfig(
            consumer_group_min_session_timeout_ms=1000, consumer_group_session_timeout_ms=6000,
            consumer_group_min_heartbeat_interval_ms=100, consumer_group_heartbeat_interval_ms=500),
            group_configs=lambda gid: self.configs.get(gid, {}))
        self.now = 0

    def hb(self, group: str, member: str, epoch: int) -> Any:
        req = ConsumerGroupHeartbeat(group_id=group, member_id=member, member_epoch=epoch,
                                     rebalance_timeout_ms=30000 if epoch == 0 else -1,
                                     subscribed_topic_names=["t1"] if epoch == 0 else None,
                                     topic_partitions=[] if epoch == 0 else None,
                                     topics={"t1": (T1, 2)}, token=object())
        [(_, result)] = self.co.handle(req, self.now).completions
        return result

    def tick(self, now: int) -> None:
        self.now = now
        self.co.tick(now)

    def members(self, group: str) -> set[str]:
        g = self.co._consumer_groups.get(group)
        return set(g.members) if g is not None else set()


def test_heartbeat_interval_is_the_groups_from_the_next_heartbeat() -> None:
    cg = CG()
    a = cg.hb("g", "a", 0)
    assert a.heartbeat_interval_ms == 500
    cg.configs["g"] = {"consumer.heartbeat.interval.ms": "1500"}
    assert cg.hb("g", "a", a.member_epoch).heartbeat_interval_ms == 1500
    assert cg.hb("other", "x", 0).heartbeat_interval_ms == 500          # only that group
    del cg.configs["g"]
    assert cg.hb("g", "a", a.member_epoch).heartbeat_interval_ms == 500


def test_session_timeout_is_the_groups_from_the_next_session_timer() -> None:
    cg = CG()
    cg.configs["g"] = {"consumer.session.timeout.ms": "2000"}
    cg.hb("g", "a", 0)
    cg.hb("h", "b", 0)                                  # the broker's 6000
    cg.tick(1999)
    assert cg.members("g") == {"a"}
    cg.tick(2001)
    assert cg.members("g") == set() and cg.members("h") == {"b"}
    cg.tick(6001)
    assert cg.members("h") == set()
    # a change applies when the member's next heartbeat restarts its session timer
    cg.hb("g", "c", 0)
    cg.configs["g"] = {"consumer.session.timeout.ms": "10000"}
    cg.tick(8002)                                       # the timer started at 6001 under 2000 ms
    assert cg.members("g") == set()
    d = cg.hb("g", "d", 0)
    cg.configs["g"] = {"consumer.session.timeout.ms": "3000"}
    cg.tick(9000)
    cg.hb("g", "d", d.member_epoch)                     # restarted at 9000 with 3000
    cg.tick(11999)
    assert cg.members("g") == {"d"}
    cg.tick(12001)
    assert cg.members("g") == set()
