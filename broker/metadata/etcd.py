"""Cluster metadata in etcd v3: the metadata log as keys, liveness as leases, the controller as
an election.

Why etcd: Raft is etcd's job (what Kubernetes runs on); Samsa writes no consensus code. The
shape is Kafka's metadata log: each batch of records is one key ``<prefix>/log/<uuid>`` written
once, so etcd's revision is the log's order; every broker ranges the log at start-up, then
watches ``<prefix>/`` from the last revision applied (after a broken stream it catches up with
a range from that revision, ``min_mod_revision``, and watches again).

Keys under the prefix (``samsa.metadata.etcd.prefix``, default ``/samsa``):
- ``cluster_id``: created by the first broker (its ``cluster.id``/meta.properties, or a new id);
  a log dir whose meta.properties names another cluster refuses to start (LogManager's check).
- ``log/<uuid>``: a JSON batch of records (coordinator/metadata/records.py).
- ``producer_ids`` = the next free producer id (ProducerIdsRecord blocks; producer_ids.py).
- ``topic/<name>`` = ``<topic_id>:<partition count>`` and ``partition/<topic_id>/<p>`` = the
  partition epoch (absent while it is 0): the versions transactions compare, so a write decided
  on a stale image (a stale leader's ISR change, a stale controller's election, a racing topic
  creation) is refused instead of applied.
- ``acl/<sha256 of the binding>`` = the ACL's id, and ``scram/<user>/<mechanism>`` = a digest of
  the credential record: the guards of security writes, so one binding is one ACL however many
  brokers create it at once, and the bootstrap credential is written once (the first broker's
  create-if-absent wins; the others see it and write nothing).
- ``brokers/<id>``: this broker's registration (incarnation, epoch, lease, and its ``samsa.http.listener``
  as ``http`` for the other brokers' consoles), attached to its lease
  (TTL = ``broker.session.timeout.ms``, kept alive every third of it). Creating it is
  create-if-absent: a ``node.id`` already live makes the broker wait for that lease to expire,
  then refuse to start with a clear error.
- ``controller`` = ``<node id>:<lease>``: the election; create-if-absent with the broker's lease,
  so a dead controller's key vanishes with its lease and the next broker takes over. Writes the
  controller decides compare this key, so a deposed controller cannot write.

When etcd cannot be reached, brokers keep serving with the image they have; metadata writes
raise ``MetadataUnavailable`` and are retried by their callers; the watch and keep-alive loops
retry until etcd answers again.
"""
from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence

import structlog
import trio

from coordinator.metadata.image import MetadataImage, replay_all
from coordinator.metadata.records import (AccessControlEntryRecord, BrokerEndpoint, MetadataRecord, PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, RemoveAccessControlEntryRecord, RemoveTopicRecord, RemoveUserScramCredentialRecord, TopicRecord, UserScramCredentialRecord, decode_batch, encode_batch, encode_record)

from .etcd_client import (EtcdClient, KeyValue, cmp_absent, cmp_value, op_delete, op_put, op_range, unb64)
from .store import MetadataUnavailable, Publisher

log = structlog.get_logger("samsa.metadata")

SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class BrokerIdInUse(RuntimeError):
    """Another live broker holds this node.id."""


class EtcdMetadataStore(Publisher):
    def __init__(self, endpoints: Sequence[str], node_id: int, prefix: str = "/samsa",
                 session_timeout_ms: int = 9000, endpoints_advertised: Sequence[BrokerEndpoint] = (),
                 rack: str | None = None, proposed_cluster_id: str | None = None,
                 http_listener: str | None = None) -> None:
        super().__init__()
        self.client = EtcdClient(endpoints)
        self.prefix = prefix.rstrip("/")
        self.node_id = node_id
        self.rack = rack
        self.http_listener = http_listener       # samsa.http.listener, for the other brokers' consoles
        self.advertised = tuple(endpoints_advertised)
        self.ttl_s = max(2, (session_timeout_ms + 999) // 1000)
        self.proposed_cluster_id = proposed_cluster_id
        self.cluster_id = ""
        self.controller_id = -1
        self.controller_value = ""
        self.live: dict[int, dict] = {}          # node id -> registration in brokers/<id> (leased)
        self.lease_id = 0
        self.broker_epoch = -1
        self.incarnation_id = uuid.uuid4().hex
        self.available = False
        self._rev = 0                             # etcd revision of the state applied
        self._campaign_rev = 0                    # revision of our last won election (set before the watch sees it)
        self._wake = trio.Event()
        self._registered = trio.Event()
        self.closing = False

    # -- keys ---------------------------------------------------------------------------------
    def key(self, *parts: object) -> str:
        return "/".join([self.prefix, *map(str, parts)])

    def _part_key(self, topic_id: str, p: int) -> str:
        return self.key("partition", topic_id, p)

    # -- waking the controller and waiters -------------------------------------------------
    def wake(self) -> None:
        self._wake.set()
        self._wake = trio.Event()

    async def changed(self) -> None:
        """Wait for the next change of the image, the live brokers or the controller."""
        await self._wake.wait()

    # -- start-up ------------------------------------------------------------------------------
    async def start(self) -> None:
        deadline = trio.current_time() + 60
        while True:
            try:
                await self._load_cluster_id()
                break
            except MetadataUnavailable as exc:
                if trio.current_time() > deadline:
                    raise
                log.warning("waiting for etcd", reason=str(exc))
                await trio.sleep(1)
        await self._catch_up()
        await self._register(fatal=True)
        await self._catch_up()

    async def _load_cluster_id(self) -> None:
        proposed = self.proposed_cluster_id or _new_cluster_id()
        key = self.key("cluster_id")
        ok, _, responses = await self.client.txn([cmp_absent(key)], [op_put(key, proposed)], [op_range(key)])
        if ok:
            self.cluster_id = proposed
        else:
            kvs = responses[0]["response_range"].get("kvs", [])
            self.cluster_id = unb64(kvs[0]["value"]).decode()
        self.available = True

    def registration_record(self) -> RegisterBrokerRecord:
        return RegisterBrokerRecord(broker_id=self.node_id, incarnation_id=self.incarnation_id,
                                    broker_epoch=self.broker_epoch, end_points=self.advertised, rack=self.rack,
                                    fenced=False, in_controlled_shutdown=False)

    async def _register(self, fatal: bool) -> None:
        """Create brokers/<id> with a new lease and write RegisterBrokerRecord, atomically. A
        node.id whose key exists waits for that lease to expire (our own previous incarnation,
        killed) up to twice the session timeout, then refuses."""
        deadline = trio.current_time() + 2 * self.ttl_s + 2
        key = self.key("brokers", self.node_id)
        waiting = False
        while True:
            lease = await self.client.lease_grant(self.ttl_s)
            self.lease_id = lease
            self.broker_epoch = lease & 0x7FFFFFFFFFFFFFFF
            record = self.registration_record()
            info = json.dumps({"incarnation_id": self.incarnation_id, "broker_epoch": self.broker_epoch,
                               "lease": str(lease), **({"http": self.http_listener} if self.http_listener else {})})
            ok, rev, _ = await self.client.txn(
                [cmp_absent(key)],
                [op_put(key, info, lease), op_put(self.key("log", uuid.uuid4().hex), encode_batch([record]))])
            if ok:
                log.info("broker registered", node_id=self.node_id, broker_epoch=self.broker_epoch,
                         cluster_id=self.cluster_id)
                self.live[self.node_id] = json.loads(info)
                self._registered.set()
                return
            await self.client.lease_revoke(lease)
            if not waiting:
                waiting = True
                log.warning("node.id is registered by a live session; waiting for it to expire",
                            node_id=self.node_id, session_timeout_s=self.ttl_s)
            if trio.current_time() > deadline:
                msg = (f"node.id={self.node_id} is already live in cluster {self.cluster_id} "
                       f"(etcd key {key} exists); refusing to start a second broker with this id")
                if fatal:
                    raise BrokerIdInUse(msg)
                log.error("cannot re-register", reason=msg)
                deadline = trio.current_time() + 2 * self.ttl_s + 2
            await trio.sleep(0.5)

    # -- applying ----------------------------------------------------------------------------
    def _apply_log_kv(self, kv: KeyValue) -> None:
        if kv.mod_revision <= self.image.offset:
            return
        try:
            records = decode_batch(kv.value)
        except (ValueError, TypeError, KeyError) as exc:
            log.error("undecodable metadata batch skipped", key=kv.key, reason=str(exc))
            return
        self.publish(records, kv.mod_revision)

    def _apply_state_kv(self, kv: KeyValue, deleted: bool) -> None:
        rest = kv.key[len(self.prefix) + 1:]
        if rest.startswith("brokers/"):
            try:
                node = int(rest.split("/", 1)[1])
            except ValueError:
                return
            if deleted:
                self.live.pop(node, None)
            else:
                try:
                    self.live[node] = json.loads(kv.value)
                except ValueError:
                    self.live[node] = {}
        elif rest == "controller":
            previous = self.controller_id
            self.controller_value = "" if deleted else kv.value.decode()
            self.controller_id = int(self.controller_value.split(":")[0]) if self.controller_value else -1
            if previous != self.controller_id:
                if previous == self.node_id:
                    log.info("resigned as the active controller", node_id=self.node_id, controller=self.controller_id)
                elif self.controller_id >= 0:
                    if self.controller_id != self.node_id:   # our own election is logged by campaign()
                        log.info("active controller changed", controller=self.controller_id, previous=previous)
                else:
                    log.info("no active controller", previous=previous)

    async def _catch_up(self) -> None:
        """Apply every log batch after the last applied one, and reload the live brokers and
        the controller at the same revision."""
        rev, kvs = await self.client.range(self.key("log") + "/", prefix=True,
                                           min_mod_revision=max(self.image.offset + 1, 1), sort_by_mod=True)
        # the live brokers and the controller as of the same revision, all read before anything is
        # applied: the controller never sees a new registration without its live key
        _, brokers = await self.client.range(self.key("brokers") + "/", prefix=True, revision=rev)
        _, ctl = await self.client.range(self.key("controller"), revision=rev)
        for kv in kvs:
            self._apply_log_kv(kv)
        if rev >= self._rev:  # else the watch has meanwhile applied newer events: its state is newer
            self.live.clear()
            for kv in brokers:
                self._apply_state_kv(kv, False)
            if rev >= self._campaign_rev:   # a range read before our election won must not undo it
                self._apply_state_kv(ctl[0] if ctl else KeyValue(self.key("controller"), b"", 0, 0, 0), not ctl)
            self._rev = rev
        self.available = True
        self.wake()

    async def _watch_loop(self) -> None:
        backoff = 0.2
        while True:
            try:
                await self._catch_up()
                async for result in self.client.watch(self.prefix + "/", self._rev + 1):
                    if int(result.get("compact_revision", 0) or 0) > 0 or result.get("canceled"):
                        break  # compacted away or cancelled by etcd: catch up with a range, watch again
                    backoff = 0.2
                    for ev in result.get("events", []):
                        kv = KeyValue.from_json(ev["kv"])
                        deleted = ev.get("type") == "DELETE"
                        if kv.key.startswith(self.key("log") + "/"):
                            if not deleted:
                                self._apply_log_kv(kv)
                        else:
                            self._apply_state_kv(kv, deleted)
                        self._rev = max(self._rev, kv.mod_revision)
                    if result.get("events"):
                        self.wake()
            except MetadataUnavailable as exc:
                if self.available:
                    log.warning("etcd unavailable; serving with the metadata we have", reason=str(exc))
                self.available = False
                self.wake()
                await trio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    async def _keepalive_loop(self) -> None:
        while True:
            await trio.sleep(self.ttl_s / 3)
            if self.closing:
                return
            try:
                ttl = await self.client.lease_keepalive(self.lease_id)
                if ttl <= 0:
                    log.warning("broker lease expired; registering again", node_id=self.node_id)
                    self.incarnation_id = uuid.uuid4().hex
                    await self._register(fatal=False)
                    await self._catch_up()
                else:
                    me = self.image.brokers.get(self.node_id)
                    if me is not None and me.fenced and self.live.get(self.node_id, {}).get("lease") == str(self.lease_id):
                        # fenced while our lease lived (a controller's stale view): register again
                        log.warning("fenced while alive; registering again", node_id=self.node_id)
                        await self.append([self.registration_record()])
            except MetadataUnavailable as exc:
                log.warning("lease keep-alive failed", reason=str(exc))

    async def campaign(self) -> bool:
        """Try to become the controller (create-if-absent with our lease)."""
        key = self.key("controller")
        value = f"{self.node_id}:{self.lease_id}"
        ok, rev, _ = await self.client.txn([cmp_absent(key)], [op_put(key, value, self.lease_id)])
        if ok:
            self._campaign_rev = rev
            self.controller_value, self.controller_id = value, self.node_id
            log.info("became the active controller", node_id=self.node_id)
            self.wake()
        return ok

    @property
    def is_controller(self) -> bool:
        return self.controller_value == f"{self.node_id}:{self.lease_id}"

    async def run(self, task_status: trio.TaskStatus = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_loop)
            nursery.start_soon(self._keepalive_loop)
            task_status.started()

    # -- writing ---------------------------------------------------------------------------------
    def _conditions(self, base: MetadataImage, records: Sequence[MetadataRecord]) -> tuple[list, list] | None:
        """Compares and extra puts that make this batch apply only to the state it was decided on."""
        try:
            new_img, _ = replay_all(base, records)
        except ValueError:
            return None
        compares: list = []
        puts: list = []
        changed = {(r.topic_id, r.partition_id) for r in records if isinstance(r, PartitionChangeRecord)}
        for topic_id, p in changed:
            t = base.topics_by_id.get(topic_id)
            old = None if t is None else t.partitions.get(p)
            if old is None:
                return None
            nt = new_img.topics_by_id.get(topic_id)
            new = None if nt is None else nt.partitions.get(p)
            key = self._part_key(topic_id, p)
            compares.append(cmp_absent(key) if old.partition_epoch == 0 else cmp_value(key, str(old.partition_epoch)))
            if new is not None:
                puts.append(op_put(key, str(new.partition_epoch)))
        created = {r.name for r in records if isinstance(r, TopicRecord)}
        grown = {r.topic_id for r in records if isinstance(r, PartitionRecord)}
        removed = {r.topic_id for r in records if isinstance(r, RemoveTopicRecord)}
        for name in created:
            compares.append(cmp_absent(self.key("topic", name)))
        for topic_id in grown | removed:
            t = base.topics_by_id.get(topic_id)
            if t is None or t.name in created:
                continue
            compares.append(cmp_value(self.key("topic", t.name), f"{t.topic_id}:{len(t.partitions)}"))
        for name in created | {base.topics_by_id[i].name for i in grown if i in base.topics_by_id}:
            t = new_img.topics.get(name)
            if t is not None:
                puts.append(op_put(self.key("topic", name), f"{t.topic_id}:{len(t.partitions)}"))
        if any(isinstance(r, ProducerIdsRecord) for r in records):
            key = self.key("producer_ids")
            compares.append(cmp_absent(key) if base.next_producer_id == 0
                            else cmp_value(key, str(base.next_producer_id)))
            puts.append(op_put(key, str(new_img.next_producer_id)))
        for topic_id in removed:
            t = base.topics_by_id.get(topic_id)
            if t is not None:
                puts.append(op_delete(self.key("topic", t.name)))
                puts.append(op_delete(self.key("partition", topic_id) + "/", prefix=True))
        if not self._security_conditions(base, records, compares, puts):
            return None
        return compares, puts

    def _acl_key(self, acl: AccessControlEntryRecord) -> str:
        return self.key("acl", hashlib.sha256(json.dumps(acl.binding()).encode()).hexdigest())

    def _scram_key(self, name: str, mechanism: int) -> str:
        return self.key("scram", name.encode().hex(), mechanism)   # hex: any user name is a safe key

    def _security_conditions(self, base: MetadataImage, records: Sequence[MetadataRecord], compares: list,
                             puts: list) -> bool:
        """Guards of ACL and SCRAM records: creating an ACL needs its binding's key absent,
        removing one needs it to hold the ACL's id; setting or removing a credential needs its
        key as ``base`` had it. False: the batch cannot apply to ``base``."""
        for r in records:
            if isinstance(r, AccessControlEntryRecord):
                key = self._acl_key(r)
                compares.append(cmp_absent(key))
                puts.append(op_put(key, r.id))
            elif isinstance(r, RemoveAccessControlEntryRecord):
                acl = base.acls.get(r.id)
                if acl is None:
                    return False
                key = self._acl_key(acl)
                compares.append(cmp_value(key, r.id))
                puts.append(op_delete(key))
            elif isinstance(r, (UserScramCredentialRecord, RemoveUserScramCredentialRecord)):
                key = self._scram_key(r.name, r.mechanism)
                old = base.scram_credentials.get((r.name, r.mechanism))
                if old is None and isinstance(r, RemoveUserScramCredentialRecord):
                    return False
                compares.append(cmp_absent(key) if old is None else cmp_value(key, _digest(old)))
                puts.append(op_put(key, _digest(r)) if isinstance(r, UserScramCredentialRecord) else op_delete(key))
        return True

    async def append(self, records: Sequence[MetadataRecord], base: MetadataImage | None = None,
                     as_controller: bool = False) -> bool:
        base = self.image if base is None else base
        cond = self._conditions(base, records)
        if cond is None:
            return False
        compares, puts = cond
        if as_controller:
            if not self.is_controller:
                return False
            compares.append(cmp_value(self.key("controller"), self.controller_value))
        ops = [op_put(self.key("log", uuid.uuid4().hex), encode_batch(list(records)))] + puts
        ok, rev, _ = await self.client.txn(compares, ops)
        # applied, or refused because the image is stale: catch up either way, so a caller that
        # decides again sees what won (before run() starts the watch nothing else would update it)
        if self.image.offset < rev:
            await self._catch_up()
        return ok

    async def controlled_shutdown_done(self) -> None:
        """Give up the lease: brokers/<id> and (if ours) controller vanish at once."""
        self.closing = True
        if self.is_controller:
            log.info("resigning as the active controller", node_id=self.node_id, reason="controlled shutdown")
        if self.lease_id:
            try:
                await self.client.lease_revoke(self.lease_id)
            except MetadataUnavailable:
                pass

    async def close(self) -> None:
        await self.client.aclose()


def _digest(record: MetadataRecord) -> str:
    return hashlib.sha256(encode_record(record)).hexdigest()


def _new_cluster_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


__all__ = ["EtcdMetadataStore", "BrokerIdInUse", "SECURITY_PROTOCOLS"]
