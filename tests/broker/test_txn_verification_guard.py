"""The verification guard at the Produce handler (broker/apis/produce.py): a transaction's ABORT
marker that lands on the partition while its leader waits for the coordinator's answer clears the
guard, so the append is refused (INVALID_TXN_STATE) even though the coordinator answered NONE;
Kafka's append-time check. The race is made deterministic by writing the marker from inside the
verification (an in-process broker, its verification wrapped)."""
from __future__ import annotations

from typing import Any

import pytest

from broker.apis import produce as produce_api
from protocol.messages import REQUESTS
from tests.clients.test_transactions_v2 import begin_raw, name, produce_raw
from tests.support.rawclient import RawClient

ADD_PARTITIONS = 24


def test_marker_during_verification_refuses_the_append(samsa_broker_in_process: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    b = samsa_broker_in_process
    topic, tid = name("guard"), name("guardtx")
    real = produce_api.verify_transaction
    raced: list[tuple[str, int]] = []

    async def verify_then_abort(broker: Any, transactional_id: str, producer_id: int, producer_epoch: int,
                                partitions: list[tuple[str, int]], add: bool) -> dict[tuple[str, int], int]:
        errors = await real(broker, transactional_id, producer_id, producer_epoch, partitions, add)
        for t, p in partitions:     # the transaction's abort reaches the partition meanwhile
            broker.logs.partition(t, p).append_control(producer_id, producer_epoch, False, 0, broker.now_ms())
            raced.append((t, p))
        return errors

    monkeypatch.setattr(produce_api, "verify_transaction", verify_then_abort)
    A = REQUESTS[ADD_PARTITIONS]
    with RawClient(b.bootstrap_servers) as c:
        pid, epoch = begin_raw(c, topic, tid, 60000)
        r = c.request(ADD_PARTITIONS, 3, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                      v3_and_below_producer_epoch=epoch,
                      v3_and_below_topics=[A.AddPartitionsToTxnTopic(name=topic, partitions=[0])])
        assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert produce_raw(c, 11, topic, tid, pid, epoch, b"raced") == 48      # INVALID_TXN_STATE
        assert raced == [(topic, 0)]
        monkeypatch.setattr(produce_api, "verify_transaction", real)
        # without the race the same producer's next batch is verified and appended
        assert produce_raw(c, 11, topic, tid, pid, epoch, b"verified") == 0
