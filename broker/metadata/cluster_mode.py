"""A broker's cluster mode: its etcd metadata store, the controller loop, controlled shutdown,
and the metadata writes the admin APIs make (topic creation and deletion, new partitions).

Imported only when ``samsa.metadata.etcd.endpoints`` is set (``Broker.start_cluster``), so a
single node never loads httpx or any of this.

Any broker may write a topic creation: the transaction creates ``topic/<name>`` only if it is
absent, so two brokers racing on one name cannot both win, and placement reads the live brokers
from the same image every broker holds. Leadership and fencing are the active controller's.
"""
from __future__ import annotations

import os
import random
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

import structlog
import trio

from coordinator.metadata.controller import Rejection, create_partitions_records, create_topic_records
from coordinator.metadata.records import (TOPIC_RESOURCE, BrokerEndpoint, BrokerRegistrationChangeRecord, ConfigRecord, MetadataRecord, RemoveTopicRecord)
from protocol.errors import ErrorCode

from .controller import run_controller
from .etcd import SECURITY_PROTOCOLS, EtcdMetadataStore
from .store import MetadataUnavailable

if TYPE_CHECKING:
    from broker.common.services import BrokerServices
    from coordinator.metadata.image import MetadataImage

log = structlog.get_logger("samsa.cluster")

SHUTDOWN_WAIT_S = 10.0   # how long controlled shutdown waits for leadership to move away
WRITE_RETRIES = 20


def _meta_properties_cluster_id(log_dir: str) -> str | None:
    try:
        with open(os.path.join(log_dir, "meta.properties")) as f:
            for line in f:
                if line.startswith("cluster.id="):
                    return line.strip().split("=", 1)[1] or None
    except FileNotFoundError:
        pass
    return None


class ClusterMetadata:
    def __init__(self, broker: BrokerServices) -> None:
        config = broker.config
        self.broker = broker
        self.node_id = broker.node_id
        endpoints = [e.strip() for e in str(config["samsa.metadata.etcd.endpoints"]).split(",") if e.strip()]
        # listener.security.protocol.map (e.g. INTERNAL:PLAINTEXT), else the listener's own name
        protocols = dict(item.strip().upper().split(":", 1)
                         for item in str(config.get("listener.security.protocol.map") or "").split(",")
                         if ":" in item)
        advertised = tuple(BrokerEndpoint(lst.name, lst.host, lst.port,
                                          SECURITY_PROTOCOLS.get(protocols.get(lst.name, lst.name), 0))
                           for lst in config.advertised_listeners)
        proposed = config.get("cluster.id") or _meta_properties_cluster_id(os.path.abspath(config.log_dir))
        self.store = EtcdMetadataStore(endpoints, self.node_id, prefix=str(config["samsa.metadata.etcd.prefix"]),
                                       session_timeout_ms=int(config["broker.session.timeout.ms"]),
                                       endpoints_advertised=advertised, rack=config.get("broker.rack"),
                                       proposed_cluster_id=proposed, http_listener=config.get("samsa.http.listener"))

    @property
    def image(self) -> MetadataImage:
        return self.store.image

    @property
    def controller_id(self) -> int:
        return self.store.controller_id

    async def start(self) -> None:
        from .etcd import BrokerIdInUse

        try:
            await self.store.start()
        except BrokerIdInUse as exc:
            log.error("refusing to start", reason=str(exc))
            raise SystemExit(str(exc)) from None
        except MetadataUnavailable as exc:
            log.error("refusing to start: the cluster metadata store cannot be reached", reason=str(exc))
            raise SystemExit(f"cannot reach etcd: {exc}") from None
        from .changes_log import ImageChangeLog

        # lifecycle lines for what later batches change (brokers, leaders, ISR); not the history replayed above
        self.store.subscribe(ImageChangeLog(self.node_id, lambda: self.store.is_controller))
        # LogManager compares it with meta.properties: a log dir of another cluster refuses to start
        self.broker.config.values["cluster.id"] = self.store.cluster_id
        from .producer_ids import ClusterProducerIdAllocator

        self.producer_ids = ClusterProducerIdAllocator(self.store)
        await self.producer_ids.reserve()   # InitProducerId can be answered from the first request on

    async def run(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.store.run)
            nursery.start_soon(run_controller, self.store, bool(self.broker.config["unclean.leader.election.enable"]))
            nursery.start_soon(self.producer_ids.run)
            task_status.started()

    async def controlled_shutdown(self) -> None:
        """Kafka's controlled shutdown: mark this broker shutting down, let the controller move
        its leaderships away (bounded wait), then give up the lease."""
        store = self.store
        if self.broker.config["controlled.shutdown.enable"] and store.available:
            me = store.image.brokers.get(self.node_id)
            try:
                if me is not None:
                    await store.append([BrokerRegistrationChangeRecord(broker_id=self.node_id,
                                                                       broker_epoch=me.epoch,
                                                                       in_controlled_shutdown=True)])
                with trio.move_on_after(SHUTDOWN_WAIT_S):
                    while self._leads_anything_movable():
                        with trio.move_on_after(0.5):
                            await store.changed()
            except MetadataUnavailable as exc:
                log.warning("controlled shutdown: etcd unavailable", reason=str(exc))
        await store.controlled_shutdown_done()
        log.info("left the cluster", node_id=self.node_id)

    def _leads_anything_movable(self) -> bool:
        img = self.store.image
        live = {b.id for b in img.live_brokers() if not b.in_controlled_shutdown}
        for t in img.topics.values():
            for reg in t.partitions.values():
                if reg.leader == self.node_id and any(b in live for b in reg.isr if b != self.node_id):
                    return True
        return False

    # -- admin writes ------------------------------------------------------------------------------
    def place(self, partitions: int, replication_factor: int) -> list[tuple[int, ...]] | Rejection:
        from coordinator.metadata.controller import place_replicas

        return place_replicas(self.store.image, partitions, replication_factor,
                              start=random.randrange(1 << 16))

    async def create_topic(self, name: str, assignments: Sequence[Sequence[int]],
                           configs: dict[str, str]) -> str | Rejection:
        """Write TopicRecord, its PartitionRecords and ConfigRecords in one batch; the topic id,
        or TOPIC_ALREADY_EXISTS when another broker won the race."""
        topic_id = str(uuid.uuid4())
        base = self.store.image
        records: list[MetadataRecord] = create_topic_records(base, name, topic_id, assignments)
        records += [ConfigRecord(TOPIC_RESOURCE, name, k, v) for k, v in sorted(configs.items())]
        if not await self.store.append(records, base=base):
            return Rejection(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        return topic_id

    async def create_partitions(self, name: str, assignments: Sequence[Sequence[int]]) -> Rejection | None:
        for _ in range(WRITE_RETRIES):
            base = self.store.image
            if name not in base.topics:
                return Rejection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
            if await self.store.append(create_partitions_records(base, name, assignments), base=base):
                return None
        return Rejection(ErrorCode.REQUEST_TIMED_OUT, "the topic kept changing")

    async def delete_topic(self, name: str) -> Rejection | None:
        for _ in range(WRITE_RETRIES):
            base = self.store.image
            t = base.topics.get(name)
            if t is None:
                return Rejection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
            if await self.store.append([RemoveTopicRecord(t.topic_id)], base=base):
                return None
        return Rejection(ErrorCode.REQUEST_TIMED_OUT, "the topic kept changing")
