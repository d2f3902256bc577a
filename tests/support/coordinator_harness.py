"""A fake-clock driver for :class:`coordinator.group.GroupCoordinator`, shared by the coordinator tests
(tests/unit/test_coordinator_*.py).

Member ids are deterministic (``<client or instance id>-m1``, ``-m2``, ...) and each request gets a
fresh token, so tests assert exact results, states and records without sleeping.
"""
from __future__ import annotations

import itertools
from typing import Any

from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from coordinator.group.coordinator import (DeleteGroups, DescribeGroups, GroupCoordinator, GroupCoordinatorConfig, Heartbeat, JoinGroup, LeaveGroup, LeaveGroupMember, ListGroups, OffsetCommit, OffsetCommitPartition, OffsetCommitTopic, OffsetDelete, OffsetFetch, OffsetFetchGroup, Step, SyncGroup, TopicPartitions)
from coordinator.group.offsets_records import (GroupMetadataKey, OffsetCommitKey, decode_group_metadata_value, decode_key, decode_offset_commit_value)


def subscription(*topics: str, version: int = 1) -> bytes:
    """A real ConsumerProtocolSubscription, as Java/kafka-python consumers put in JoinGroup."""
    return ConsumerProtocolSubscription(version=version, topics=list(topics), user_data=None,
                                        owned_partitions=[]).encode()


RANGE = [("range", subscription("t1"))]


def decode_records(records: list[tuple[bytes, bytes | None]]) -> list[tuple[Any, Any]]:
    """Records as (key, value) objects, tombstones as (key, None)."""
    out = []
    for k, v in records:
        key = decode_key(k)
        if v is None:
            out.append((key, None))
        elif isinstance(key, OffsetCommitKey):
            out.append((key, decode_offset_commit_value(v)))
        elif isinstance(key, GroupMetadataKey):
            out.append((key, decode_group_metadata_value(v)))
        else:
            out.append((key, v))
    return out


class Driver:
    """What drives any coordinator state machine in a test: a fake clock (``now``), a token per
    request, and every record its steps produce kept in ``log``, in order."""

    def __init__(self, co: Any) -> None:
        self.tokens = itertools.count(1)
        self.now = 0
        self.co = co
        self.log: list[tuple[bytes, bytes | None]] = []

    def at(self, now: int) -> Any:
        self.now = now
        return self

    def send(self, req: Any) -> tuple[Any, Any]:
        """(the request's token, the step it caused)."""
        req.token = next(self.tokens)
        step = self.co.handle(req, self.now)
        self.log.extend(step.records)
        return req.token, step

    def tick(self, now: int | None = None) -> Any:
        if now is not None:
            self.now = now
        step = self.co.tick(self.now)
        self.log.extend(step.records)
        return step

    @staticmethod
    def result(token: Any, step: Any) -> Any:
        matches = [r for t, r in step.completions if t == token]
        assert len(matches) == 1, f"expected one completion for {token}, got {step.completions}"
        return matches[0]


class Harness(Driver):
    """Drives one group coordinator; every call returns the Step and records it in ``log``."""

    def __init__(self, partition: int | None = None, loading: bool = False, **config: Any) -> None:
        self.ids = itertools.count(1)
        super().__init__(GroupCoordinator(GroupCoordinatorConfig(**config), partition, loading=loading,
                                          member_id_factory=lambda: f"m{next(self.ids)}"))

    def call(self, req: Any) -> Any:
        """Send a request that must be answered at once; return its result."""
        token, step = self.send(req)
        return self.result(token, step)

    def state(self, group_id: str = "g") -> str | None:
        g = self.co.group(group_id)
        return None if g is None else g.state.value

    # -------------------------------------------------------------- request builders

    def join(self, group_id: str | None = "g", member_id: str = "", *, client_id: str = "client",
             instance: str | None = None, session: int = 10000, rebalance: int = 30000,
             protocols: list[tuple[str, bytes]] | None = None, protocol_type: str = "consumer",
             version: int = 9, client_host: str = "/127.0.0.1") -> tuple[Any, Step]:
        return self.send(JoinGroup(
            api_version=version, client_id=client_id, client_host=client_host, group_id=group_id,
            member_id=member_id, group_instance_id=instance, session_timeout_ms=session,
            rebalance_timeout_ms=rebalance, protocol_type=protocol_type,
            protocols=list(RANGE if protocols is None else protocols)))

    def new_member(self, group_id: str = "g", **kw: Any) -> tuple[str, Any, Step]:
        """MEMBER_ID_REQUIRED round trip, then the real JoinGroup; returns (member_id, token, step)."""
        first = self.result(*self.join(group_id, **kw))
        assert first.error_code == 79, first
        token, step = self.join(group_id, first.member_id, **kw)
        return first.member_id, token, step

    def sync(self, member_id: str, generation: int, assignments: list[tuple[str, bytes]] | None = None,
             group_id: str | None = "g", *, instance: str | None = None, protocol_type: str | None = None,
             protocol_name: str | None = None, version: int = 5) -> tuple[Any, Step]:
        return self.send(SyncGroup(api_version=version, group_id=group_id, generation_id=generation,
                                   member_id=member_id, group_instance_id=instance,
                                   protocol_type=protocol_type, protocol_name=protocol_name,
                                   assignments=list(assignments or [])))

    def heartbeat(self, member_id: str, generation: int, group_id: str | None = "g", *,
                  instance: str | None = None) -> int:
        return self.call(Heartbeat(api_version=4, group_id=group_id, generation_id=generation,
                                   member_id=member_id, group_instance_id=instance)).error_code

    def leave(self, *members: tuple[str, str | None] | str, group_id: str | None = "g") -> tuple[Any, Step]:
        ms = [LeaveGroupMember(m) if isinstance(m, str) else LeaveGroupMember(m[0], m[1]) for m in members]
        return self.send(LeaveGroup(api_version=5, group_id=group_id, members=ms))

    def commit(self, offsets: dict[tuple[str, int], int | tuple[int, int, str | None]], group_id: str | None = "g",
               *, generation: int = -1, member_id: str = "", instance: str | None = None,
               version: int = 9, retention: int = -1) -> tuple[Any, Step]:
        topics: dict[str, OffsetCommitTopic] = {}
        for (topic, partition), v in offsets.items():
            offset, epoch, metadata = (v, -1, "") if isinstance(v, int) else v
            topics.setdefault(topic, OffsetCommitTopic(topic)).partitions.append(
                OffsetCommitPartition(partition, offset, epoch, metadata))
        return self.send(OffsetCommit(api_version=version, group_id=group_id, generation_id=generation,
                                      member_id=member_id, group_instance_id=instance,
                                      retention_time_ms=retention, topics=list(topics.values())))

    def commit_errors(self, offsets: dict, group_id: str | None = "g", **kw: Any) -> dict[tuple[str, int], int]:
        result = self.result(*self.commit(offsets, group_id, **kw))
        return {(t.name, p.partition_index): p.error_code for t in result.topics for p in t.partitions}

    def fetch(self, *groups: tuple[str | None, dict[str, list[int]] | None], require_stable: bool = False,
              version: int = 9) -> Any:
        return self.call(OffsetFetch(api_version=version, require_stable=require_stable, groups=[
            OffsetFetchGroup(g, None if t is None else [TopicPartitions(n, ps) for n, ps in t.items()])
            for g, t in groups]))

    def fetched(self, group_id: str = "g", topics: dict[str, list[int]] | None = None) -> dict:
        """{(topic, partition): (offset, leader_epoch, metadata, error)} for one group."""
        res = self.fetch((group_id, topics)).groups[0]
        assert res.error_code == 0, res
        return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
                for t in res.topics for p in t.partitions}

    def delete_offsets(self, topics: dict[str, list[int]], group_id: str | None = "g") -> Any:
        return self.send(OffsetDelete(group_id=group_id,
                                      topics=[TopicPartitions(n, ps) for n, ps in topics.items()]))

    def describe(self, *group_ids: str | None, version: int = 5) -> Any:
        return self.call(DescribeGroups(api_version=version, groups=list(group_ids))).groups

    def list_groups(self, states: list[str] | None = None, types: list[str] | None = None) -> Any:
        return self.call(ListGroups(api_version=5, states_filter=states or [], types_filter=types or []))

    def delete_groups(self, *group_ids: str | None) -> tuple[Any, Step]:
        return self.send(DeleteGroups(api_version=2, groups=list(group_ids)))

    # -------------------------------------------------------------- composite scenarios

    def stable_group(self, n: int, group_id: str = "g", **kw: Any) -> tuple[list[str], int]:
        """n dynamic members (joined in order, initial delay waited out, all synced with assignment
        ``b"a-<member>"``). Returns (member ids, generation)."""
        members, tokens = [], []
        for _ in range(n):
            mid, token, step = self.new_member(group_id, **kw)
            assert step.completions == []
            members.append(mid)
            tokens.append(token)
        step = Step()
        while not step.completions:      # the initial delay extends while members keep arriving
            deadline = self.co.next_deadline()
            assert deadline is not None
            step = self.tick(deadline)
        results = {t: self.result(t, step) for t in tokens}
        gen = results[tokens[0]].generation_id
        leader = results[tokens[0]].leader
        for mid in members:
            if mid != leader:
                token, s = self.sync(mid, gen, group_id=group_id)
                assert s.completions == []
        token, step = self.sync(leader, gen, [(m, b"a-" + m.encode()) for m in members], group_id=group_id)
        assert all(r.error_code == 0 for _, r in step.completions), step.completions
        assert self.state(group_id) == "Stable"
        return members, gen

