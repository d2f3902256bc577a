"""The controller's decisions as pure functions: image in, records (or a Kafka error) out.

Why pure: the active controller (broker/metadata/controller.py) and the leaders' AlterPartition
calls only *decide* here; the store writes the records atomically, comparing the partition
epoch (or the controller's election key), so a stale decision is refused by etcd rather than
applied. The rules are Kafka's KRaft controller's (ReplicationControlManager,
PartitionChangeBuilder, StripedReplicaPlacer in spirit):
- placement: only live (unfenced, not shutting down) brokers; a replication factor above their
  number is INVALID_REPLICATION_FACTOR with Kafka's message; with ``broker.rack`` set, brokers are
  interleaved by rack so consecutive replicas land on different racks; leader = first replica.
- leader election: the first replica, in replica order, that is in the ISR and live; outside
  the ISR only when unclean election is enabled for the topic (the ISR then becomes the new
  leader alone). A leader change bumps the leader epoch; every change the partition epoch.
- fencing / controlled shutdown of a broker: it leaves every ISR (unless it is the last member,
  as Kafka keeps the last replica in the ISR) and every partition it led gets a new leader, or
  none (-1) when nobody eligible is left.
- a broker coming back: leaderless partitions it can lead get it as leader.
- AlterPartition (the leader changing its ISR): FENCED_LEADER_EPOCH on a leader epoch mismatch,
  INVALID_REQUEST from a non-leader or with an ISR that is not a subset of the replicas or lacks
  the leader, INVALID_UPDATE_VERSION on a partition epoch mismatch, INELIGIBLE_REPLICA when a
  fenced or shutting-down broker would join.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from protocol.errors import ErrorCode

from coordinator.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from coordinator.metadata.rejection import Rejection as Rejection  # its own module: the broker's topology imports it at start-up
from coordinator.metadata.records import (NO_LEADER, NO_LEADER_CHANGE, MetadataRecord, PartitionChangeRecord, PartitionRecord, TopicRecord)




def usable_brokers(image: MetadataImage) -> list[BrokerRegistration]:
    return [b for b in image.live_brokers() if not b.in_controlled_shutdown]


def _rack_interleaved(brokers: Sequence[BrokerRegistration]) -> list[int]:
    """Broker ids ordered so that neighbours sit on different racks where possible (Kafka's
    rack-alternated list from AdminUtils.assignReplicasToBrokersRackAware)."""
    by_rack: dict[str | None, list[int]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        by_rack.setdefault(b.rack, []).append(b.id)
    if len(by_rack) <= 1:
        return [b.id for b in sorted(brokers, key=lambda b: b.id)]
    racks = sorted(by_rack, key=lambda r: (r is None, r or ""))
    out: list[int] = []
    i = 0
    while len(out) < len(brokers):
        for r in racks:
            if i < len(by_rack[r]):
                out.append(by_rack[r][i])
        i += 1
    return out


def place_replicas(image: MetadataImage, partitions: int, replication_factor: int,
                   start: int = 0) -> list[tuple[int, ...]] | Rejection:
    """Replica lists for ``partitions`` new partitions; ``start`` rotates the first leader
    (the controller passes a random one, tests a fixed one)."""
    brokers = usable_brokers(image)
    if replication_factor > len(brokers):
        return Rejection(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"Unable to replicate the partition {replication_factor} time(s): The target "
                         f"replication factor of {replication_factor} cannot be reached because only "
                         f"{len(brokers)} broker(s) are registered.")
    ids = _rack_interleaved(brokers)
    n = len(ids)
    return [tuple(ids[(start + p + j) % n] for j in range(replication_factor)) for p in range(partitions)]


def check_assignment(image: MetadataImage, replicas: Sequence[int]) -> Rejection | None:
    """Kafka's validateManualPartitionAssignment for one partition."""
    if not replicas:
        return Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                         "The manual partition assignment includes an empty replica list.")
    seen: set[int] = set()
    for b in replicas:
        if b not in image.brokers:
            return Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             f"The manual partition assignment includes broker {b}, but no such broker is registered.")
        if b in seen:
            return Rejection(ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                             f"The manual partition assignment includes the broker {b} more than once.")
        seen.add(b)
    return None


def new_partition(image: MetadataImage, topic_id: str, partition: int,
                  replicas: Sequence[int]) -> PartitionRecord:
    """Kafka's buildPartitionRegistration: the ISR is the live replicas, the leader the first
    of them (none when no replica is live)."""
    live = {b.id for b in image.live_brokers()}
    isr = tuple(b for b in replicas if b in live) or tuple(replicas)
    leader = next((b for b in replicas if b in live), NO_LEADER)
    return PartitionRecord(partition_id=partition, topic_id=topic_id, replicas=tuple(replicas), isr=isr,
                           leader=leader, leader_epoch=0, partition_epoch=0)


def create_topic_records(image: MetadataImage, name: str, topic_id: str,
                         assignments: Sequence[Sequence[int]]) -> list[MetadataRecord]:
    records: list[MetadataRecord] = [TopicRecord(name=name, topic_id=topic_id)]
    records += [new_partition(image, topic_id, p, r) for p, r in enumerate(assignments)]
    return records


def create_partitions_records(image: MetadataImage, name: str,
                              assignments: Sequence[Sequence[int]]) -> list[MetadataRecord]:
    t = image.topics[name]
    first = len(t.partitions)
    return [new_partition(image, t.topic_id, first + i, r) for i, r in enumerate(assignments)]


def elect_leader(reg: PartitionRegistration, eligible: set[int], unclean: bool,
                 exclude: int | None = None) -> tuple[int, tuple[int, ...]]:
    """(leader, isr) after an election: first ISR replica that is eligible; with unclean
    election the first eligible replica (then alone in the ISR); else NO_LEADER."""
    isr = tuple(b for b in reg.isr if b != exclude) or reg.isr
    for b in reg.replicas:
        if b in reg.isr and b in eligible and b != exclude:
            return b, tuple(x for x in isr if x in eligible or x == b) or (b,)
    if unclean:
        for b in reg.replicas:
            if b in eligible and b != exclude:
                return b, (b,)
    return NO_LEADER, isr


def _eligible(image: MetadataImage, exclude: int | None = None) -> set[int]:
    return {b.id for b in image.live_brokers() if not b.in_controlled_shutdown and b.id != exclude}


def broker_leaving_records(image: MetadataImage, broker_id: int,
                           unclean: Callable[[str], bool]) -> list[PartitionChangeRecord]:
    """For a fenced broker (lease expired) or one in controlled shutdown: new leaders for the
    partitions it led, and it leaves every ISR except where it is the last member."""
    eligible = _eligible(image, exclude=broker_id)
    out: list[PartitionChangeRecord] = []
    for t in image.topics.values():
        for p, reg in sorted(t.partitions.items()):
            if broker_id not in reg.replicas:
                continue
            if reg.leader == broker_id:
                leader, isr = elect_leader(reg, eligible, unclean(t.name), exclude=broker_id)
                if leader == NO_LEADER:
                    isr = reg.isr  # Kafka keeps the last ISR member: nothing is guessed
                out.append(PartitionChangeRecord(partition_id=p, topic_id=t.topic_id, leader=leader,
                                                 isr=isr if isr != reg.isr else None))
            elif broker_id in reg.isr and len(reg.isr) > 1:
                out.append(PartitionChangeRecord(partition_id=p, topic_id=t.topic_id,
                                                 isr=tuple(b for b in reg.isr if b != broker_id)))
    return out


def leaderless_records(image: MetadataImage, unclean: Callable[[str], bool]) -> list[PartitionChangeRecord]:
    """Partitions without a leader (or led by a broker no longer eligible) that a live broker can
    now lead: run after a broker registers or unfences, and when a controller takes over."""
    eligible = _eligible(image)
    out: list[PartitionChangeRecord] = []
    for t in image.topics.values():
        for p, reg in sorted(t.partitions.items()):
            if reg.leader in eligible:
                continue
            leader, isr = elect_leader(reg, eligible, unclean(t.name))
            if leader == NO_LEADER or leader == reg.leader:
                continue
            out.append(PartitionChangeRecord(partition_id=p, topic_id=t.topic_id, leader=leader,
                                             isr=isr if isr != reg.isr else None))
    return out


def alter_partition(image: MetadataImage, topic: str, partition: int, leader_id: int, leader_epoch: int,
                    partition_epoch: int, new_isr: Sequence[int]) -> PartitionChangeRecord | Rejection:
    """Kafka's AlterPartition validation (ReplicationControlManager.validateAlterPartitionData)."""
    t = image.topics.get(topic)
    reg = None if t is None else t.partitions.get(partition)
    if t is None or reg is None:
        return Rejection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unknown partition {topic}-{partition}")
    if leader_epoch != reg.leader_epoch:
        return Rejection(ErrorCode.FENCED_LEADER_EPOCH,
                         f"leader epoch {leader_epoch} is not the current {reg.leader_epoch}")
    if leader_id != reg.leader:
        return Rejection(ErrorCode.INVALID_REQUEST, f"broker {leader_id} is not the leader ({reg.leader})")
    if partition_epoch != reg.partition_epoch:
        return Rejection(ErrorCode.INVALID_UPDATE_VERSION,
                         f"partition epoch {partition_epoch} is not the current {reg.partition_epoch}")
    isr = tuple(dict.fromkeys(new_isr))
    if not set(isr) <= set(reg.replicas) or leader_id not in isr:
        return Rejection(ErrorCode.INVALID_REQUEST,
                         f"ISR {list(isr)} must be a subset of the replicas {list(reg.replicas)} "
                         "and contain the leader")
    eligible = _eligible(image)
    for b in isr:
        if b not in reg.isr and b not in eligible:
            return Rejection(ErrorCode.INELIGIBLE_REPLICA,
                             f"broker {b} is fenced or shutting down and cannot join the ISR")
    return PartitionChangeRecord(partition_id=partition, topic_id=t.topic_id, isr=isr, leader=NO_LEADER_CHANGE)


PREFERRED, UNCLEAN = 0, 1   # ElectLeaders election types


def elect_leaders_decision(image: MetadataImage, topic: str, partition: int,
                           election_type: int) -> PartitionChangeRecord | Rejection:
    """Kafka's ElectLeaders for one partition (ReplicationControlManager.electLeader):
    PREFERRED makes the first replica leader when it is live and in the ISR (ELECTION_NOT_NEEDED
    when it already leads, PREFERRED_LEADER_NOT_AVAILABLE otherwise); UNCLEAN elects only a
    partition without a live leader, from the ISR first, else any live replica (which becomes
    the ISR alone), ELIGIBLE_LEADERS_NOT_AVAILABLE when none is live."""
    t = image.topics.get(topic)
    reg = None if t is None else t.partitions.get(partition)
    if t is None or reg is None:
        return Rejection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"The partition {topic}-{partition} does not exist.")
    eligible = _eligible(image)
    if election_type == PREFERRED:
        preferred = reg.replicas[0] if reg.replicas else NO_LEADER
        if reg.leader == preferred:
            return Rejection(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        if preferred not in reg.isr or preferred not in eligible:
            return Rejection(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                             f"Failed to elect leader for partition {topic}-{partition} under strategy "
                             "PreferredReplicaPartitionLeaderElectionStrategy")
        return PartitionChangeRecord(partition_id=partition, topic_id=t.topic_id, leader=preferred)
    if reg.leader in eligible:
        return Rejection(ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    leader, isr = elect_leader(reg, eligible, unclean=True)
    if leader == NO_LEADER:
        return Rejection(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                         f"Failed to elect leader for partition {topic}-{partition} under strategy "
                         "UncleanLeaderElectionStrategy")
    return PartitionChangeRecord(partition_id=partition, topic_id=t.topic_id, leader=leader,
                                 isr=isr if isr != reg.isr else None)


# -- partition reassignment (KIP-455) ------------------------------------------------------------
def _original_replicas(reg: PartitionRegistration) -> tuple[int, ...]:
    """The replicas before an ongoing reassignment: all but the ones being added."""
    return tuple(b for b in reg.replicas if b not in reg.adding_replicas)


def _finish(image: MetadataImage, topic_id: str, partition: int, reg: PartitionRegistration,
            target: tuple[int, ...]) -> PartitionChangeRecord:
    """Replicas become ``target``; the ISR keeps its members in it; a leader outside it is
    replaced by the first live ISR member of the target (Kafka's completeReassignment)."""
    isr = tuple(b for b in reg.isr if b in target) or reg.isr
    leader = NO_LEADER_CHANGE
    if reg.leader not in target:
        eligible = _eligible(image)
        leader = next((b for b in target if b in isr and b in eligible), NO_LEADER)
    return PartitionChangeRecord(partition_id=partition, topic_id=topic_id, replicas=target,
                                 isr=isr if isr != reg.isr else None, leader=leader,
                                 adding_replicas=(), removing_replicas=())


def reassign_decision(image: MetadataImage, topic: str, partition: int, target: Sequence[int] | None,
                      allow_rf_change: bool = True) -> PartitionChangeRecord | Rejection | None:
    """One partition of AlterPartitionReassignments (ReplicationControlManager): ``target``
    None cancels the ongoing reassignment (NO_REASSIGNMENT_IN_PROGRESS without one), else the
    replicas become target + the ones to remove, with adding/removing set, and the change
    completes at once when every target replica is already in the ISR. None = nothing to do."""
    t = image.topics.get(topic)
    reg = None if t is None else t.partitions.get(partition)
    if t is None or reg is None:
        return Rejection(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}.")
    original = _original_replicas(reg)
    reassigning = bool(reg.adding_replicas or reg.removing_replicas)
    if target is None:
        if not reassigning:
            return Rejection(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                             f"Unable to cancel reassignment for {topic}-{partition}: no reassignment in progress.")
        return _finish(image, t.topic_id, partition, reg, original)
    target = tuple(target)
    bad = check_assignment(image, target)
    if bad is not None:
        return bad
    if not allow_rf_change and len(target) != len(original):
        return Rejection(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"The replication factor is changed from {len(original)} to {len(target)}")
    if not reassigning and target == reg.replicas:
        return None
    adding = tuple(b for b in target if b not in original)
    removing = tuple(b for b in original if b not in target)
    if set(target) <= set(reg.isr):
        return _finish(image, t.topic_id, partition, reg, target)
    merged = target + removing
    return PartitionChangeRecord(partition_id=partition, topic_id=t.topic_id, replicas=merged,
                                 adding_replicas=adding, removing_replicas=removing)


def completed_reassignments(image: MetadataImage) -> list[PartitionChangeRecord]:
    """Ongoing reassignments whose target replicas have all joined the ISR: finish them."""
    out: list[PartitionChangeRecord] = []
    for t in image.topics.values():
        for p, reg in sorted(t.partitions.items()):
            if not (reg.adding_replicas or reg.removing_replicas):
                continue
            target = tuple(b for b in reg.replicas if b not in reg.removing_replicas)
            if set(target) <= set(reg.isr):
                out.append(_finish(image, t.topic_id, p, reg, target))
    return out


def ongoing_reassignments(image: MetadataImage) -> dict[str, dict[int, PartitionRegistration]]:
    return {t.name: {p: reg for p, reg in sorted(t.partitions.items())
                     if reg.adding_replicas or reg.removing_replicas}
            for t in image.topics.values()
            if any(r.adding_replicas or r.removing_replicas for r in t.partitions.values())}
