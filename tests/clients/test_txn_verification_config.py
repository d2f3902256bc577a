"""``transaction.partition.verification.enable`` (Kafka's broker setting, default true): false
turns off the leader's KIP-890 check for transactions v1 (Produce v11 appends a transactional
batch to a partition that was never added, as Kafka before 3.6), while transactions v2 (Produce
v12) still adds the partition to the transaction, as Kafka's ReplicaManager does."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import SamsaBroker, running_broker
from protocol.messages import REQUESTS
from tests.clients.test_transactions_v2 import begin_raw, describe, name, produce_raw
from tests.support.rawclient import RawClient


@pytest.fixture(scope="module")
def unverified(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamsaBroker]:
    with running_broker(Path(tmp_path_factory.mktemp("txn-noverify")) / "data", overrides={
            "num.partitions": "3", "transaction.partition.verification.enable": "false"}) as b:
        yield b


def test_verification_disabled_appends_unadded_partitions_and_v12_still_adds(unverified: SamsaBroker) -> None:
    bs = unverified.bootstrap_servers
    topic, tid = name("nv"), name("nvtx")
    with RawClient(bs) as c:
        pid, epoch = begin_raw(c, topic, tid, 60000)
        assert produce_raw(c, 11, topic, tid, pid, epoch, b"unverified") == 0
        assert describe(bs, tid).transaction_state == "Empty"      # nothing was added
        other = "other-" + topic
        c.request(3, 12, topics=[REQUESTS[3].MetadataRequestTopic(name=other, topic_id=None)],
                  allow_auto_topic_creation=True, include_topic_authorized_operations=False)
        assert produce_raw(c, 12, other, tid, pid, epoch, b"added") == 0
    d = describe(bs, tid)
    assert (d.transaction_state, [(t.topic, t.partitions) for t in d.topics]) == ("Ongoing", [(other, [0])])
