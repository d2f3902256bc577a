"""Kafka's group configs (``GroupConfig.java``): per-group overrides set with IncrementalAlterConfigs
on GROUP resources (``kafka-configs --entity-type groups``) and listed by DescribeConfigs.

Pure: the broker's properties come in as a mapping. A group config's default is the broker
property it overrides (``share.record.lock.duration.ms`` -> ``group.share.record.lock.duration.ms``),
and its value must lie within the broker's ``*.min.*`` / ``*.max.*`` bounds, with Kafka's messages
(InvalidConfigurationException, INVALID_CONFIG). The set is Kafka 4.2's consumer and share ones;
``share.delivery.count.limit`` is Kafka 4.3's (KIP-1240), bounded by 2 and 10 as
``group.share.delivery.count.limit`` is here. Streams group configs (``streams.*``) are not offered:
there are no streams groups to apply them to.

Validation is Kafka's ``GroupConfigManager.validate``: the overrides laid over the broker's values
for every group config, each value parsed (type and ``atLeast``) then checked against the broker's
bounds in Kafka's order, then each session timeout must exceed its heartbeat interval. Applying is
Kafka 4.3's (KAFKA-20162): an override the broker's bounds no longer allow (the bounds changed after
it was set) is clamped into them.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"
SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"

READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"


@dataclass(frozen=True)
class GroupConfigDef:
    name: str
    kind: str                      # "int" or "string" (DescribeConfigs' config type)
    default_property: str | None   # the broker property giving the default
    default: int | str             # when that property is unset
    min_property: str | None = None
    max_property: str | None = None
    min_default: int = 1
    max_default: int = 0x7FFFFFFF
    doc: str = ""
    at_least: int | None = None    # the ConfigDef's own Range.atLeast, checked when the value is parsed


GROUP_CONFIG_DEFS: dict[str, GroupConfigDef] = {d.name: d for d in (
    GroupConfigDef(CONSUMER_HEARTBEAT_INTERVAL_MS, "int", "group.consumer.heartbeat.interval.ms", 5000,
                   "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", 5000, 15000,
                   "The heartbeat interval given to the members of a consumer group.", 1),
    GroupConfigDef(CONSUMER_SESSION_TIMEOUT_MS, "int", "group.consumer.session.timeout.ms", 45000,
                   "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", 45000, 60000,
                   "The timeout to detect client failures when using the consumer group protocol.", 1),
    GroupConfigDef(SHARE_AUTO_OFFSET_RESET, "string", "samsa.share.auto.offset.reset", "latest",
                   doc="The strategy to initialize the share-partition start offset: latest, earliest or "
                       "by_duration:<ISO-8601 duration>."),
    GroupConfigDef(SHARE_DELIVERY_COUNT_LIMIT, "int", "group.share.delivery.count.limit", 5, None, None, 2, 10,
                   "The maximum number of delivery attempts for a record delivered to a share group.", 2),
    GroupConfigDef(SHARE_HEARTBEAT_INTERVAL_MS, "int", "group.share.heartbeat.interval.ms", 5000,
                   "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", 5000, 15000,
                   "The heartbeat interval given to the members of a share group.", 1),
    GroupConfigDef(SHARE_ISOLATION_LEVEL, "string", None, READ_UNCOMMITTED,
                   doc='Controls how to read records written transactionally. If set to "read_committed", the '
                       'share group will only deliver transactional records which have been committed. If set to '
                       '"read_uncommitted", the share group will return all messages, even transactional messages '
                       'which have been aborted. Non-transactional records will be returned unconditionally in '
                       'either mode.'),
    GroupConfigDef(SHARE_RECORD_LOCK_DURATION_MS, "int", "group.share.record.lock.duration.ms", 30000,
                   "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms", 15000, 60000,
                   "The record acquisition lock duration in milliseconds for share groups.", 1000),
    GroupConfigDef(SHARE_SESSION_TIMEOUT_MS, "int", "group.share.session.timeout.ms", 45000,
                   "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms", 45000, 60000,
                   "The timeout to detect client failures when using the share group protocol.", 1),
)}

def duration_ms(iso: str) -> int | None:
    """An ISO-8601 ``PnDTnHnMn.nS`` duration in milliseconds (Java's Duration.parse subset Kafka
    accepts for ``by_duration:``); None when malformed or negative."""
    text = iso.strip().upper()
    m = re.match(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", text)
    if m is None or text in ("P", "PT") or text.endswith("T"):
        return None
    d, h, mi, s = m.groups()
    return int((int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)) * 1000)


def _int(props: Mapping[str, object], name: str | None, default: int) -> int:
    value = props.get(name) if name else None
    return int(str(value)) if value is not None else default


def default_value(d: GroupConfigDef, props: Mapping[str, object]) -> int | str:
    """The value a group without an override has: the broker property, else Kafka's default."""
    value = props.get(d.default_property) if d.default_property else None
    if value is None:
        return d.default
    return int(str(value)) if d.kind == "int" else str(value).lower()


# Kafka's GroupConfig: the ConfigDef's definition order (ConfigDef.parse checks in it), the order
# validateValues checks the broker's bounds in, and the session timeouts that must exceed their
# heartbeat intervals.
_PARSE_ORDER = (CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS, SHARE_SESSION_TIMEOUT_MS,
                SHARE_HEARTBEAT_INTERVAL_MS, SHARE_RECORD_LOCK_DURATION_MS, SHARE_DELIVERY_COUNT_LIMIT,
                SHARE_AUTO_OFFSET_RESET, SHARE_ISOLATION_LEVEL)
_BOUNDS_ORDER = (CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS,
                 SHARE_SESSION_TIMEOUT_MS, SHARE_RECORD_LOCK_DURATION_MS, SHARE_DELIVERY_COUNT_LIMIT)
_SESSION_OVER_HEARTBEAT = ((CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS),
                           (SHARE_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS))


def bounds(d: GroupConfigDef, props: Mapping[str, object]) -> tuple[int, int]:
    """The broker's [min, max] for an int group config."""
    return _int(props, d.min_property, d.min_default), _int(props, d.max_property, d.max_default)


def _parse_error(name: str, raw: str) -> str | None:
    """ConfigDef.parse's message for a value that is not of the config's type or range."""
    d = GROUP_CONFIG_DEFS[name]
    if d.kind == "int":
        try:
            value = int(str(raw).strip())
        except ValueError:
            return f"Invalid value {raw} for configuration {name}: Not a number of type INT"
        if d.at_least is not None and value < d.at_least:
            return f"Invalid value {raw} for configuration {name}: Value must be at least {d.at_least}"
    elif name == SHARE_AUTO_OFFSET_RESET:
        v = str(raw).lower()
        if v not in ("latest", "earliest") and not (v.startswith("by_duration:")
                                                    and duration_ms(v[len("by_duration:"):]) is not None):
            return (f"Invalid value {raw} for configuration {name}: Invalid value `{raw}` for configuration "
                    f"{name}. The value must be either 'earliest', 'latest' or of the format "
                    f"'by_duration:<PnDTnHnMn.nS.>'.")
    elif name == SHARE_ISOLATION_LEVEL and str(raw).lower() not in (READ_COMMITTED, READ_UNCOMMITTED):
        return f"Invalid value {raw} for configuration {name}: String must be one of: read_committed, read_uncommitted"
    return None


def validate(overrides: Mapping[str, str], props: Mapping[str, object]) -> str | None:
    """Kafka's GroupConfigManager.validate: the message of the first violation, else None.

    The overrides are laid over the broker's values (``extractGroupConfigMap``), so a heartbeat
    interval is checked against the session timeout the group will really have."""
    for name in overrides:
        if name not in GROUP_CONFIG_DEFS:
            return f"Unknown group config name: {name}"
    for name in _PARSE_ORDER:
        if name in overrides and (error := _parse_error(name, overrides[name])) is not None:
            return error
    values = {name: int(str(overrides[name]).strip()) if name in overrides
              else int(default_value(GROUP_CONFIG_DEFS[name], props)) for name in _BOUNDS_ORDER}
    for name in _BOUNDS_ORDER:
        d = GROUP_CONFIG_DEFS[name]
        lo, hi = bounds(d, props)
        if values[name] < lo:
            return f"{name} must be greater than or equal to {d.min_property or lo}"
        if values[name] > hi:
            return f"{name} must be less than or equal to {d.max_property or hi}"
    for session, heartbeat in _SESSION_OVER_HEARTBEAT:
        if values[session] <= values[heartbeat]:
            return f"{session} must be greater than {heartbeat}"
    return None


def effective_int(name: str, overrides: Mapping[str, str], props: Mapping[str, object]) -> int:
    """An int group config as a group runs with it: its override clamped into the broker's bounds
    (Kafka 4.3's GroupConfigManager.maybeClampConfigs), else the broker's value."""
    d = GROUP_CONFIG_DEFS[name]
    raw = overrides.get(name)
    if raw is None:
        return int(default_value(d, props))
    lo, hi = bounds(d, props)
    return min(max(int(str(raw).strip()), lo), hi)


@dataclass(frozen=True)
class ConsumerGroupSettings:
    """What a consumer-protocol group runs with (Kafka's GroupMetadataManager
    consumerGroupSessionTimeoutMs / consumerGroupHeartbeatIntervalMs)."""
    session_timeout_ms: int
    heartbeat_interval_ms: int


def consumer_settings(overrides: Mapping[str, str], props: Mapping[str, object]) -> ConsumerGroupSettings:
    """A consumer group's effective settings: its overrides over the broker's properties."""
    return ConsumerGroupSettings(session_timeout_ms=effective_int(CONSUMER_SESSION_TIMEOUT_MS, overrides, props),
                                 heartbeat_interval_ms=effective_int(CONSUMER_HEARTBEAT_INTERVAL_MS, overrides, props))


@dataclass(frozen=True)
class ShareGroupSettings:
    """What a share group runs with: its overrides over the broker's defaults."""
    auto_offset_reset: str
    isolation_level: str
    record_lock_duration_ms: int
    session_timeout_ms: int
    heartbeat_interval_ms: int
    delivery_count_limit: int

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == READ_COMMITTED


def share_settings(overrides: Mapping[str, str], props: Mapping[str, object]) -> ShareGroupSettings:
    """A share group's effective settings: its overrides (ints clamped into the broker's bounds, as
    Kafka 4.3 applies them) over the broker's properties."""
    def text(name: str) -> str:
        raw = overrides.get(name)
        return str(default_value(GROUP_CONFIG_DEFS[name], props) if raw is None else raw).lower()
    return ShareGroupSettings(
        auto_offset_reset=text(SHARE_AUTO_OFFSET_RESET), isolation_level=text(SHARE_ISOLATION_LEVEL),
        record_lock_duration_ms=effective_int(SHARE_RECORD_LOCK_DURATION_MS, overrides, props),
        session_timeout_ms=effective_int(SHARE_SESSION_TIMEOUT_MS, overrides, props),
        heartbeat_interval_ms=effective_int(SHARE_HEARTBEAT_INTERVAL_MS, overrides, props),
        delivery_count_limit=effective_int(SHARE_DELIVERY_COUNT_LIMIT, overrides, props))
