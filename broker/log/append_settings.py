"""The topic configs every append reads, resolved once per topic and config change.

An append asked the topic's config lookup five to eight times (max.message.bytes,
message.timestamp.type and its two bounds, cleanup.policy, segment.bytes, segment.ms,
flush.messages), each a call through the manager's per-topic cache plus an ``int()``: ~4 µs of
an offset commit's ~30 µs of log work. :class:`AppendSettings` holds those values already
parsed; the log manager keeps one per topic beside its resolved values (``Topic.resolved``),
so it is dropped by exactly what drops them: the topic's configs replaced by an
AlterConfigs/IncrementalAlterConfigs (or a cluster's ConfigRecord), and a change of dynamic
broker configs (broker/log/manager.py). A partition built on a bare lookup function (the
storage tests' dict) resolves them on every append, so a changed dict still takes effect.
"""
from __future__ import annotations

from typing import Any
from collections.abc import Callable


class AppendSettings:
    """The parsed values of the configs the append path reads (names as Kafka's)."""
    __slots__ = ("max_message_bytes", "log_append_time", "timestamp_after_max_ms", "timestamp_before_max_ms",
                 "compact", "segment_bytes", "segment_ms", "segment_jitter_ms", "flush_messages")

    def __init__(self, config: Callable[[str], Any]) -> None:
        self.max_message_bytes = int(config("max.message.bytes"))
        self.log_append_time = config("message.timestamp.type") == "LogAppendTime"
        self.timestamp_after_max_ms = int(config("message.timestamp.after.max.ms"))
        self.timestamp_before_max_ms = int(config("message.timestamp.before.max.ms"))
        self.compact = "compact" in {p.strip() for p in str(config("cleanup.policy") or "delete").split(",")}
        self.segment_bytes = int(config("segment.bytes"))
        segment_ms = config("segment.ms")
        self.segment_ms: int | None = None if segment_ms is None else int(segment_ms)
        self.segment_jitter_ms = int(config("segment.jitter.ms") or 0)
        flush_messages = config("flush.messages")
        self.flush_messages: int | None = None if flush_messages is None else int(flush_messages)
