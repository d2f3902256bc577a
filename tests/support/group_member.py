"""One consumer-group member as its own process, for tests/clients/test_groups_clients.py.

    python -m tests.support.group_member --client kafka-python|confluent|aiokafka --bootstrap H:P
        --group G --topic T [--assignor range|roundrobin|sticky|cooperative-sticky]
        [--session-timeout-ms N] [--instance-id ID] [--client-id C]

Runs an unmodified client (subscribe + poll) and prints one JSON object per line, flushed at
once so the test can follow it while the member runs:
  {"type": "ready"}                                    the consumer exists and is subscribed
  {"type": "assignment", "member_id": M, "generation": G|null, "partitions": [..]}
                                                       whenever (member id, assignment) changes
  {"type": "record", "partition": P, "offset": O, "value": V}
                                                       every record belongs to the assignment
                                                       line before it (reported first after a poll)
  {"type": "positions", "positions": {"P": O, ..}}     after a "positions" command: next offsets
  {"type": "committed", "offsets": {"P": O, ..}}       after a "commit" command, read back
  {"type": "closed"}                                   after a "close" command (clean leave)
  {"type": "error", "error": ...}
Commands come one per line on stdin: "positions", "commit" (commit what was consumed,
synchronously) and "close". Processes (not threads) so a member can be SIGKILLed and members do not share a GIL.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import sys
import threading
import time
import traceback
from typing import Any

POLL_S = 0.05


def emit(**obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def stdin_commands() -> "queue.Queue[str]":
    """Commands read by a daemon thread; EOF (the test went away) means close."""
    q: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            if line.strip():
                q.put(line.strip())
        q.put("close")

    threading.Thread(target=read, daemon=True).start()
    return q


class Reporter:
    """Emits an assignment line only when the member id or the assignment changed."""

    def __init__(self) -> None:
        self.last: tuple[Any, ...] | None = None

    def report(self, member_id: str | None, generation: int | None, partitions: list[int]) -> None:
        key = (member_id, generation, tuple(sorted(partitions)))
        if key != self.last:
            self.last = key
            emit(type="assignment", member_id=member_id, generation=generation, partitions=sorted(partitions))


def run_kafka_python(a: argparse.Namespace) -> None:
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                 "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}
    kwargs: dict[str, Any] = {}
    if a.assignor:
        kwargs["partition_assignment_strategy"] = [assignors[a.assignor]]
    if a.instance_id:
        kwargs["group_instance_id"] = a.instance_id
    c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.client_id,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      session_timeout_ms=a.session_timeout_ms, heartbeat_interval_ms=a.heartbeat_interval_ms,
                      max_poll_interval_ms=a.max_poll_interval_ms, **kwargs)
    c.subscribe([a.topic])
    # kafka-python 3.0.12 bug: when a leader rejoins because topic metadata arrived after its
    # first join, and poll() times out between its assignment and the SyncGroup answer, the
    # finished join is never applied (need_rejoin() is already False): the member keeps its old
    # assignment and stops heartbeating. Joining only once the subscribed topic's metadata is
    # in (the IO thread fetches it after subscribe()) avoids that rejoin.
    deadline = time.monotonic() + 10
    while not c._coordinator._metadata_snapshot.get(a.topic) and time.monotonic() < deadline:
        time.sleep(0.01)
    emit(type="ready")
    cmds = stdin_commands()
    rep = Reporter()
    while True:
        polled = c.poll(timeout_ms=200)
        gm = c.group_metadata()  # reported before the records: a rebalance happens inside poll()
        rep.report(gm.member_id, gm.generation_id, [tp.partition for tp in c.assignment()])
        for tp, recs in polled.items():
            for r in recs:
                emit(type="record", partition=r.partition, offset=r.offset, value=r.value.decode())
        try:
            cmd = cmds.get_nowait()
        except queue.Empty:
            continue
        if cmd == "positions":
            emit(type="positions", positions={str(tp.partition): c.position(tp, timeout_ms=5000)
                                              for tp in sorted(c.assignment())})
        elif cmd == "commit":
            c.commit()
            emit(type="committed", offsets={str(tp.partition): c.committed(tp) for tp in sorted(c.assignment())})
        elif cmd == "close":
            c.close()
            emit(type="closed")
            return


def run_confluent(a: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, Any] = {
        "bootstrap.servers": a.bootstrap, "group.id": a.group, "client.id": a.client_id,
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "session.timeout.ms": a.session_timeout_ms, "heartbeat.interval.ms": a.heartbeat_interval_ms,
        "max.poll.interval.ms": a.max_poll_interval_ms,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if a.assignor:
        conf["partition.assignment.strategy"] = a.assignor
    if a.instance_id:
        conf["group.instance.id"] = a.instance_id
    c = Consumer(conf)
    c.subscribe([a.topic])
    emit(type="ready")
    cmds = stdin_commands()
    rep = Reporter()
    while True:
        m = c.poll(POLL_S)
        rep.report(c.memberid() or None, None, [tp.partition for tp in c.assignment()])
        if m is not None:
            if m.error():
                emit(type="error", error=str(m.error()))
            else:
                emit(type="record", partition=m.partition(), offset=m.offset(), value=m.value().decode())
        try:
            cmd = cmds.get_nowait()
        except queue.Empty:
            continue
        if cmd == "positions":
            emit(type="positions", positions={str(tp.partition): tp.offset for tp in c.position(c.assignment())})
        elif cmd == "commit":
            try:
                c.commit(asynchronous=False)
            except KafkaException as e:  # nothing consumed since the last commit
                if "NO_OFFSET" not in str(e):
                    raise
            committed = c.committed(c.assignment(), timeout=10)
            emit(type="committed", offsets={str(tp.partition): tp.offset for tp in sorted(
                committed, key=lambda t: t.partition)})
        elif cmd == "close":
            c.close()
            emit(type="closed")
            return


async def run_aiokafka(a: argparse.Namespace) -> None:
    from aiokafka import AIOKafkaConsumer
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                 "sticky": StickyPartitionAssignor}
    kwargs: dict[str, Any] = {}
    if a.assignor:
        kwargs["partition_assignment_strategy"] = (assignors[a.assignor],)
    if a.instance_id:
        kwargs["group_instance_id"] = a.instance_id
    c = AIOKafkaConsumer(a.topic, bootstrap_servers=a.bootstrap, group_id=a.group, client_id=a.client_id,
                         auto_offset_reset="earliest", enable_auto_commit=False,
                         session_timeout_ms=a.session_timeout_ms, heartbeat_interval_ms=a.heartbeat_interval_ms,
                         max_poll_interval_ms=a.max_poll_interval_ms, **kwargs)
    await c.start()
    emit(type="ready")
    cmds = stdin_commands()
    rep = Reporter()
    while True:
        polled = await c.getmany(timeout_ms=int(POLL_S * 1000))
        coord = c._coordinator  # aiokafka has no public accessor for the member id / generation
        # no await between getmany() and here: the assignment cannot change in between
        rep.report(coord.member_id or None, coord.generation, [tp.partition for tp in c.assignment()])
        for tp, recs in polled.items():
            for r in recs:
                emit(type="record", partition=r.partition, offset=r.offset, value=r.value.decode())
        try:
            cmd = cmds.get_nowait()
        except queue.Empty:
            continue
        if cmd == "positions":
            emit(type="positions", positions={str(tp.partition): await c.position(tp)
                                              for tp in sorted(c.assignment())})
        elif cmd == "commit":
            await c.commit()
            emit(type="committed", offsets={str(tp.partition): await c.committed(tp)
                                            for tp in sorted(c.assignment())})
        elif cmd == "close":
            await c.stop()
            emit(type="closed")
            return


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--client", required=True, choices=["kafka-python", "confluent", "aiokafka"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--assignor")
    p.add_argument("--instance-id")
    p.add_argument("--client-id", default="samsa-group-member")
    p.add_argument("--session-timeout-ms", type=int, default=10000)
    p.add_argument("--heartbeat-interval-ms", type=int, default=300)
    p.add_argument("--max-poll-interval-ms", type=int, default=30000)
    a = p.parse_args()
    if os.environ.get("GROUP_MEMBER_LOG"):  # client logs to stderr, e.g. GROUP_MEMBER_LOG=DEBUG
        import logging
        logging.basicConfig(stream=sys.stderr, level=os.environ["GROUP_MEMBER_LOG"],
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        if a.client == "kafka-python":
            run_kafka_python(a)
        elif a.client == "confluent":
            run_confluent(a)
        else:
            asyncio.run(run_aiokafka(a))
    except Exception as e:  # reported as data; the test decides
        emit(type="error", error=f"{type(e).__name__}: {e}", trace=traceback.format_exc())
        sys.exit(1)


if __name__ == "__main__":
    main()
