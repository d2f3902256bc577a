"""Test-only: a cluster of real Samsa brokers in one trio run (each with its own log dir and
listener on 127.0.0.1), fed cluster metadata by an in-process double of the metadata
publisher — images with Kafka's PartitionRegistration fields, ``alter_partition`` that
compares the leader and partition epochs as the real store does — so the replication data
plane (broker/replica/) is exercised over the real wire between brokers without the control
plane. ``pause(node)`` stops a broker's fetchers and its metadata deliveries (what a hung
broker looks like to the others); ``resume(node)`` brings both back.
"""
from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import trio

import broker.apis  # noqa: F401  (registers the API handlers)
from broker.server.broker_server import Broker
from broker.common.config import BrokerConfig
from broker.network.listeners import run_listener
from broker.testing import free_port
from protocol.errors import ErrorCode


@dataclass(frozen=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionRegistration]
    configs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class BrokerRegistration:
    node_id: int
    endpoints: dict[str, tuple[str, int]]


@dataclass(frozen=True)
class MetadataImage:
    topics: dict[str, TopicImage]
    brokers: dict[int, BrokerRegistration]

    def partition(self, topic: str, p: int) -> PartitionRegistration | None:
        t = self.topics.get(topic)
        return t.partitions.get(p) if t else None


class InProcessCluster:
    def __init__(self, tmp_path: Path, n: int = 3, **overrides: Any) -> None:
        self.n = n
        self.ports = {i: free_port() for i in range(1, n + 1)}
        self.brokers: dict[int, Broker] = {}
        for i, port in self.ports.items():
            props = {"node.id": str(i), "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                     "log.dirs": str(tmp_path / f"broker-{i}"), "replica.fetch.wait.max.ms": "200",
                     "replica.fetch.backoff.ms": "50", "log.cleaner.enable": "false"}
            props.update({k: str(v) for k, v in overrides.items()})
            self.brokers[i] = Broker(BrokerConfig(props))
        self.topics: dict[str, TopicImage] = {}
        self.paused: set[int] = set()
        self.alter_calls: list[tuple[str, int, list[int], int]] = []   # (topic, p, new isr, error)
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # -- the image ----------------------------------------------------------------------------
    def image(self) -> MetadataImage:
        brokers = {i: BrokerRegistration(i, {"PLAINTEXT": ("127.0.0.1", port)}) for i, port in self.ports.items()}
        return MetadataImage(dict(self.topics), brokers)

    def _publish(self) -> None:
        image = self.image()
        for i, b in self.brokers.items():
            if i not in self.paused:
                b.replicas.apply_image(image)

    def _set(self, topic: str, p: int, reg: PartitionRegistration) -> None:
        t = self.topics[topic]
        self.topics[topic] = replace(t, partitions={**t.partitions, p: reg})

    async def _alter_partition(self, topic: str, p: int, leader_id: int, leader_epoch: int,
                               partition_epoch: int, new_isr: list[int]) -> Any:
        reg = self.topics[topic].partitions[p]
        if leader_id != reg.leader or leader_epoch != reg.leader_epoch:
            code = ErrorCode.FENCED_LEADER_EPOCH
        elif partition_epoch != reg.partition_epoch:
            code = ErrorCode.INVALID_UPDATE_VERSION
        else:
            code = ErrorCode.NONE
        self.alter_calls.append((topic, p, list(new_isr), code))
        if code:
            return code
        new = replace(reg, isr=tuple(new_isr), partition_epoch=reg.partition_epoch + 1)
        self._set(topic, p, new)
        self._publish()
        return new

    # -- running ------------------------------------------------------------------------------
    def start(self) -> "InProcessCluster":
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(20):
            raise RuntimeError("in-process cluster did not start")
        if self._error:
            raise self._error
        return self

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # surfaced to the test thread
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            for b in self.brokers.values():
                b.replicas.alter_partition = self._alter_partition
                b.start()
                await nursery.start(b.run_services)
                listener = b.config.listeners[0]
                await nursery.start(run_listener, b, listener, nursery, set())
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()
        for b in self.brokers.values():
            b.logs.shutdown()

    def stop(self) -> None:
        if self._token is not None and self._stop is not None:
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
            except trio.RunFinishedError:
                pass
        if self._thread is not None:
            self._thread.join(20)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` on the brokers' event loop (synchronously) and return its result."""
        return trio.from_thread.run_sync(fn, *args, trio_token=self._token)

    def bootstrap(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node]}"

    # -- what a controller would do -------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, replicas: tuple[int, ...] | None = None,
                     configs: dict[str, str] | None = None) -> None:
        replicas = replicas or tuple(range(1, self.n + 1))

        def create() -> None:
            regs = {p: PartitionRegistration(replicas, replicas, replicas[0], 0, 0) for p in range(partitions)}
            self.topics[name] = TopicImage(name, uuid.uuid4(), regs, dict(configs or {}))
            self._publish()
        self.call(create)

    def elect(self, topic: str, p: int, leader: int, isr: tuple[int, ...] | None = None) -> None:
        def elect_() -> None:
            reg = self.topics[topic].partitions[p]
            self._set(topic, p, replace(reg, leader=leader, isr=tuple(isr or reg.isr),
                                        leader_epoch=reg.leader_epoch + 1, partition_epoch=reg.partition_epoch + 1))
            self._publish()
        self.call(elect_)

    def registration(self, topic: str, p: int = 0) -> PartitionRegistration:
        return self.call(lambda: self.topics[topic].partitions[p])

    def pause(self, node: int) -> None:
        def pause_() -> None:
            self.paused.add(node)
            rm = self.brokers[node].replicas
            for f in rm.fetchers.values():
                f.cancel_scope.cancel()
            rm.fetchers.clear()
        self.call(pause_)

    def resume(self, node: int) -> None:
        def resume_() -> None:
            self.paused.discard(node)
            self.brokers[node].replicas.apply_image(self.image())
        self.call(resume_)

    def partition(self, node: int, topic: str, p: int = 0) -> Any:
        return self.brokers[node].logs.partition(topic, p)
