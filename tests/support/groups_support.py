"""Shared pieces of the consumer-group tests (tests/clients/test_groups_clients.py, tests/broker/test_groups_wire.py).

The broker's own view of a group is read with hand-built DescribeGroups/OffsetFetch requests
(tests/support/rawclient.py), so a test can compare what each client believes with what the
coordinator recorded. Member processes (tests/support/group_member.py) report on stdout as they run.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from tests.support.rawclient import RawClient

REPO = Path(__file__).resolve().parents[2]

DESCRIBE_GROUPS, OFFSET_FETCH = 15, 9


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@dataclass(frozen=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class GroupView:
    error_code: int
    state: str
    protocol_type: str
    protocol: str
    members: dict[str, MemberView]

    def partitions(self) -> dict[str, tuple[int, ...]]:
        return {m: v.partitions for m, v in self.members.items()}


def decode_partitions(assignment: bytes, topic: str | None = None) -> tuple[int, ...]:
    if not assignment:
        return ()
    a = ConsumerProtocolAssignment.decode(assignment)
    return tuple(sorted(p for t in a.assigned_partitions if topic is None or t.topic == topic for p in t.partitions))


def describe(client_or_bootstrap: RawClient | str, group: str) -> GroupView:
    """The coordinator's view of one group (DescribeGroups v5)."""
    own = isinstance(client_or_bootstrap, str)
    client = RawClient(client_or_bootstrap) if own else client_or_bootstrap
    try:
        resp = client.request(DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=False)
    finally:
        if own:
            client.close()
    (g,) = resp.groups
    members = {m.member_id: MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                       decode_partitions(bytes(m.member_assignment)))
               for m in g.members}
    return GroupView(g.error_code, g.group_state, g.protocol_type, g.protocol_data, members)


def committed(client_or_bootstrap: RawClient | str, group: str) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    """Every committed offset of a group: (topic, partition) -> (offset, metadata, error) (OffsetFetch v7)."""
    own = isinstance(client_or_bootstrap, str)
    client = RawClient(client_or_bootstrap) if own else client_or_bootstrap
    try:
        resp = client.request(OFFSET_FETCH, 7, group_id=group, topics=None, require_stable=False)
    finally:
        if own:
            client.close()
    assert resp.error_code == 0, resp
    return {(t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
            for t in resp.topics for p in t.partitions}


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    """Append ``per_partition`` records to each partition (values "p<P>-<n>"); the topic is
    auto-created by the producer's Metadata request with the broker's num.partitions."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for part in range(partitions):
            for i in range(per_partition):
                p.send(topic, value=f"p{part}-{i}".encode(), partition=part)
        p.flush(timeout=20)
    finally:
        p.close(timeout=5)


def wait_until(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Poll ``check`` until it returns a truthy value; fail with ``what`` and the last value."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")
        time.sleep(interval)


class Member:
    """A tests/support/group_member.py process; its JSON lines are collected as they arrive."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, *, assignor: str | None = None,
                 session_timeout_ms: int = 10000, instance_id: str | None = None,
                 client_id: str | None = None) -> None:
        self.client = client
        cmd = [sys.executable, "-m", "tests.support.group_member", "--client", client, "--bootstrap", bootstrap,
               "--group", group, "--topic", topic, "--session-timeout-ms", str(session_timeout_ms),
               "--client-id", client_id or unique(f"m-{client}")]
        if assignor:
            cmd += ["--assignor", assignor]
        if instance_id:
            cmd += ["--instance-id", instance_id]
        self.client_id = cmd[cmd.index("--client-id") + 1]
        self._err = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, bufsize=1,
                                     env={**os.environ, "PYTHONPATH": str(REPO)})
        self.lines: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                obj = json.loads(line)
                obj["_t"] = time.monotonic()  # arrival time, for latency checks
                with self._cond:
                    self.lines.append(obj)
                    self._cond.notify_all()

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        with self._cond:
            return [ln for ln in self.lines if ln["type"] == kind]

    def errors(self) -> list[dict[str, Any]]:
        return self.of_type("error")

    def wait_for(self, kind: str, timeout: float = 20.0, after: int = 0) -> dict[str, Any]:
        """The first line of ``kind`` at index >= ``after``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for ln in self.lines[after:]:
                    if ln["type"] == kind:
                        return ln
                    if ln["type"] == "error":
                        raise AssertionError(f"{self.client} member failed: {ln}\n{self.stderr()}")
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(f"no {kind!r} line from {self.client} member within {timeout}s; "
                                         f"lines: {self.lines[-5:]}\nstderr: {self.stderr()}")
                self._cond.wait(min(left, 0.2))

    def assignment(self) -> tuple[str | None, tuple[int, ...]] | None:
        """The latest (member id, partitions) the client reported, None before any report."""
        found = self.of_type("assignment")
        if not found:
            return None
        return found[-1]["member_id"], tuple(found[-1]["partitions"])

    def received(self, since_assignment: bool = False) -> set[tuple[int, int]]:
        """(partition, offset) of every record, or only of those read under the latest assignment."""
        with self._cond:
            lines = list(self.lines)
        if since_assignment:
            starts = [i for i, ln in enumerate(lines) if ln["type"] == "assignment"]
            lines = lines[starts[-1]:] if starts else []
        return {(r["partition"], r["offset"]) for r in lines if r["type"] == "record"}

    def command(self, cmd: str) -> int:
        """Send a command; returns the line index to wait after."""
        with self._cond:
            n = len(self.lines)
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return n

    def commit(self, timeout: float = 20.0) -> dict[int, int]:
        line = self.wait_for("committed", timeout, after=self.command("commit"))
        return {int(p): o for p, o in line["offsets"].items()}

    def positions(self, timeout: float = 20.0) -> dict[int, int]:
        line = self.wait_for("positions", timeout, after=self.command("positions"))
        return {int(p): o for p, o in line["positions"].items()}

    def close(self, timeout: float = 20.0) -> None:
        self.wait_for("closed", timeout, after=self.command("close"))
        self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read()[-3000:]

    def stop(self) -> None:
        """Clean-up: close politely if still running, else kill."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(10)
            except Exception:
                self.kill()


def converge(bootstrap: str, group: str, members: Iterable[Member], partitions: int,
             timeout: float = 30.0) -> tuple[GroupView, dict[Member, tuple[int, ...]]]:
    """Wait until the coordinator says Stable with exactly these members, every member's own
    latest report matches the coordinator's record of its assignment, and all partitions are
    assigned. Returns the view and each member's partitions."""
    members = list(members)
    with RawClient(bootstrap) as rc:
        def check() -> Any:
            view = describe(rc, group)
            mine = {m: m.assignment() for m in members}
            if view.state != "Stable" or len(view.members) != len(members):
                return None
            if any(a is None or a[0] not in view.members or view.members[a[0]].partitions != a[1]
                   for a in mine.values()):
                return None
            if sorted(p for a in mine.values() for p in a[1]) != list(range(partitions)):
                return None
            return view, {m: a[1] for m, a in mine.items()}

        try:
            return wait_until(f"group {group} to settle with {len(members)} members", check, timeout)
        except AssertionError as e:
            raise AssertionError(f"{e}\ncoordinator: {describe(rc, group)}\nclients: "
                                 f"{[(m.client, m.assignment(), m.errors()) for m in members]}") from None
