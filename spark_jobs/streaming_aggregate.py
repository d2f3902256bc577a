"""Streaming pipeline: JSON events from a topic -> event-time windows with a watermark ->
per-window, per-action aggregates, written back to a topic (Kafka sink) and to Parquet.

    python -m spark_jobs.streaming_aggregate --bootstrap localhost:9092 \\
        --input-topic events --output-topic event-aggregates \\
        --output-path /data/aggregates --checkpoint /data/checkpoints/aggregates [--available-now]

Output mode is ``append``: a window is written once, when the watermark (max event time seen
minus ``--watermark``) passes its end, so the topic and the Parquet table never get an updated
row for the same window. Each sink is its own query with its own checkpoint under
``--checkpoint`` (``kafka/`` and ``parquet/``); a restart with the same checkpoint resumes from
the committed offsets and aggregation state, so nothing is read, counted or written twice
(Parquet is exactly-once through its ``_spark_metadata`` log; the Kafka sink writes each
finished micro-batch once, and at least once only if the job dies inside a batch).
"""
from __future__ import annotations

import argparse
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from .common import add_spark_args, kafka_options, spark_session, with_event_columns

AGGREGATE_COLUMNS = ["window_start", "window_end", "action", "events", "total_cents", "max_cents"]
JSON_TS = {"timeZone": "UTC", "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss'Z'"}


def parse_events(kafka_df: DataFrame) -> DataFrame:
    """Kafka-source rows -> valid events (records that are not JSON events are dropped)."""
    return (with_event_columns(kafka_df).where("valid")
            .select("event_id", "user", "action", "amount_cents", "event_time"))


def aggregate(events: DataFrame, window: str = "1 minute", watermark: str = "30 seconds") -> DataFrame:
    """Tumbling event-time windows per action; events older than the watermark are ignored."""
    return (events.withWatermark("event_time", watermark)
            .groupBy(F.window("event_time", window), F.col("action"))
            .agg(F.count(F.lit(1)).alias("events"),
                 F.sum("amount_cents").alias("total_cents"),
                 F.max("amount_cents").alias("max_cents"))
            .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                    "action", "events", "total_cents", "max_cents"))


def to_kafka_records(aggregates: DataFrame) -> DataFrame:
    """Aggregates -> the Kafka sink's (key, value): key ``<action>@<window start>``, value JSON."""
    start = F.date_format(F.to_utc_timestamp(F.col("window_start"), F.current_timezone()),
                          "yyyy-MM-dd'T'HH:mm:ss'Z'")
    return aggregates.select(
        F.concat_ws("@", F.col("action"), start).alias("key"),
        F.to_json(F.struct(*AGGREGATE_COLUMNS), JSON_TS).alias("value"))


def read_source(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    return (spark.readStream.format("kafka")
            .options(**kafka_options(args.bootstrap, args.option))
            .option("subscribe", args.input_topic)
            .option("startingOffsets", args.starting_offsets)
            .option("includeHeaders", "true")
            .option("failOnDataLoss", str(args.fail_on_data_loss).lower())
            .load())


def _trigger(writer, args: argparse.Namespace):  # DataStreamWriter
    return writer.trigger(availableNow=True) if args.available_now else writer.trigger(processingTime=args.trigger)


def start_parquet_sink(aggregates: DataFrame, path: str, checkpoint: str, args: argparse.Namespace) -> StreamingQuery:
    writer = (aggregates.writeStream.format("parquet").outputMode("append")
              .option("path", path).option("checkpointLocation", checkpoint).queryName("aggregates_to_parquet"))
    return _trigger(writer, args).start()


def start_kafka_sink(aggregates: DataFrame, checkpoint: str, args: argparse.Namespace) -> StreamingQuery:
    writer = (to_kafka_records(aggregates).writeStream.format("kafka").outputMode("append")
              .options(**kafka_options(args.bootstrap, args.option))
              .option("topic", args.output_topic)
              .option("checkpointLocation", checkpoint).queryName("aggregates_to_kafka"))
    return _trigger(writer, args).start()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.streaming_aggregate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_spark_args(p)
    p.add_argument("--input-topic", required=True)
    p.add_argument("--output-topic", required=True)
    p.add_argument("--output-path", required=True, help="Parquet folder for the aggregates")
    p.add_argument("--checkpoint", required=True, help="checkpoint folder (one sub-folder per sink)")
    p.add_argument("--window", default="1 minute", help="tumbling window length (default 1 minute)")
    p.add_argument("--watermark", default="30 seconds", help="allowed lateness (default 30 seconds)")
    p.add_argument("--starting-offsets", default="earliest",
                   help="earliest, latest or JSON; used only on the first run (then the checkpoint rules)")
    p.add_argument("--fail-on-data-loss", action=argparse.BooleanOptionalAction, default=True)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--available-now", action="store_true",
                      help="process what is in the topic now, write the windows the watermark closed, exit")
    mode.add_argument("--trigger", default="10 seconds", help="micro-batch interval when running continuously")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    spark = spark_session("samsa-streaming-aggregate", args)
    try:
        aggregates = aggregate(parse_events(read_source(spark, args)), args.window, args.watermark)
        checkpoint = args.checkpoint.rstrip("/")
        queries = [start_kafka_sink(aggregates, checkpoint + "/kafka", args),
                   start_parquet_sink(aggregates, args.output_path, checkpoint + "/parquet", args)]
        if args.available_now:
            for q in queries:
                q.awaitTermination()
        else:
            spark.streams.awaitAnyTermination()
        for q in queries:
            if q.exception() is not None:
                print(f"query {q.name} failed: {q.exception()}", file=sys.stderr)
                return 1
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
