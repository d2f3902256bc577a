"""Spark's Kafka connector against a 3-broker cluster (etcd and three Samsa broker processes, the
samsa_cluster fixture): a batch ``df.write.format("kafka")`` into an RF=3 topic and a batch
``spark.read.format("kafka")`` back, exact records and offsets; then the leader of a partition is
SIGKILLed and Spark reads the same records from the new leader.

The connector jars come as in tests/clients/test_spark_jobs.py (SAMSA_SPARK_KAFKA_JARS, else
tests/support/sparkconnector.py); without them, or without Java or etcd, the test is skipped with the
reason. One small SparkSession (local[1]) for the module."""
from __future__ import annotations

import shutil
from typing import Iterator

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from pyspark.sql import SparkSession  # noqa: E402

from broker.testing.local_cluster import LocalCluster, find_etcd  # noqa: E402
from tests.support import sparkconnector  # noqa: E402
from tests.support.cluster_support import create_topic  # noqa: E402

NO_CONNECTOR = sparkconnector.unavailable()
pytestmark = [
    pytest.mark.skipif(find_etcd() is None, reason="etcd is not installed (the 'etcd' extra or Debian's etcd-server)"),
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java 17+ (java is not on PATH)"),
    pytest.mark.skipif(NO_CONNECTOR is not None, reason=NO_CONNECTOR or ""),
    pytest.mark.parametrize("samsa_cluster", [{"overrides": {
        "min.insync.replicas": "2", "broker.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "200",
        "log.cleaner.enable": "false"}}], indirect=True, ids=["rf3"]),
]

TOPIC = "spark-rf3"
PARTITIONS = 3
ROWS = 30


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with sparkconnector.local_session("samsa-cluster-spark", "local[1]", {
            "spark.jars": sparkconnector.kafka_jars(), "spark.sql.shuffle.partitions": "1",
            "spark.driver.memory": "512m"}) as session:
        yield session


def read_back(spark: SparkSession, bootstrap: str) -> list[tuple[int, int, str, str]]:
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", TOPIC).option("startingOffsets", "earliest").option("endingOffsets", "latest")
          .load())
    return sorted((r.partition, r.offset, r.key.decode(), r.value.decode())
                  for r in df.select("partition", "offset", "key", "value").collect())


def test_spark_batch_write_and_read_on_a_three_broker_cluster(samsa_cluster: LocalCluster, spark: SparkSession) -> None:
    c = samsa_cluster
    create_topic(c, TOPIC, PARTITIONS)
    rows = [(f"k-{i}", f"v-{i}", i % PARTITIONS) for i in range(ROWS)]
    # one Spark partition: the records of each Kafka partition are written in row order
    (spark.createDataFrame(rows, "key string, value string, partition int").coalesce(1)
     .write.format("kafka").option("kafka.bootstrap.servers", c.bootstrap_servers)
     .option("kafka.acks", "all").option("topic", TOPIC).save())

    expected = sorted((p, n, k, v) for p in range(PARTITIONS)
                      for n, (k, v, _) in enumerate(r for r in rows if r[2] == p))
    assert read_back(spark, c.bootstrap_servers) == expected

    # every replica has them (acks=all with the full ISR): kill partition 0's leader, read again
    image = c.image()
    reg = image.partition(TOPIC, 0)
    assert sorted(reg.isr) == [1, 2, 3]
    old = reg.leader
    c.kill(old)
    c.wait_for(lambda: c.leader(TOPIC, 0) not in (old, -1), what="a new leader for partition 0")
    alive = ",".join(b.bootstrap_servers for i, b in c.brokers.items() if i != old)
    assert read_back(spark, alive) == expected
