"""Batch backfill: an explicit offset range of a topic -> Parquet, one row per record.

    python -m spark_jobs.backfill --bootstrap localhost:9092 \\
        --starting-offsets '{"events": {"0": 0, "1": 120}}' \\
        --ending-offsets   '{"events": {"0": 500, "1": -1}}' \\
        --output /data/backfill/events [--mode overwrite]

Offsets are Spark's JSON: per topic, per partition, the first offset to read (-2 = earliest) and
the offset to stop before (-1 = latest). Both name the same partitions, which are the ones read
(the ``assign`` option). Every record is kept: the Kafka coordinates, key, headers and raw value,
and the event's fields where the value is a JSON event (``valid``); rows are partitioned by
``event_date`` (the event's date, else the record timestamp's date, UTC).
"""
from __future__ import annotations

import argparse
import json
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .common import EVENT_SCHEMA, add_spark_args, kafka_options, spark_session, with_event_columns

EARLIEST, LATEST = -2, -1
OUTPUT_COLUMNS = ["topic", "partition", "offset", "kafka_timestamp", "key", "headers", "value",
                  *[f.name for f in EVENT_SCHEMA.fields], "valid", "event_date"]


class OffsetRangeError(ValueError):
    """The offsets JSON cannot describe a bounded range Spark can read."""


def _parse_side(text: str, name: str, allowed_special: int) -> dict[str, dict[int, int]]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OffsetRangeError(f"{name} is not JSON: {exc}") from None
    if not isinstance(raw, dict) or not raw:
        raise OffsetRangeError(f'{name} must be a JSON object like {{"topic": {{"0": 42}}}}')
    out: dict[str, dict[int, int]] = {}
    for topic, parts in raw.items():
        if not isinstance(parts, dict) or not parts:
            raise OffsetRangeError(f"{name}: topic {topic!r} needs an object of partition -> offset")
        out[topic] = {}
        for part, off in parts.items():
            try:
                p = int(part)
            except ValueError:
                raise OffsetRangeError(f"{name}: {topic!r} partition {part!r} is not a number") from None
            if isinstance(off, bool) or not isinstance(off, int) or p < 0 or (off < 0 and off != allowed_special):
                special = "-2 (earliest)" if allowed_special == EARLIEST else "-1 (latest)"
                raise OffsetRangeError(f"{name}: {topic}-{p} has offset {off!r}; use an offset >= 0 or {special}")
            out[topic][p] = off
    return out


def parse_offset_range(starting: str, ending: str) -> tuple[dict[str, dict[int, int]], dict[str, dict[int, int]]]:
    """Validate ``--starting-offsets``/``--ending-offsets``; both must name the same partitions."""
    start = _parse_side(starting, "--starting-offsets", EARLIEST)
    end = _parse_side(ending, "--ending-offsets", LATEST)
    start_tps = {(t, p) for t, ps in start.items() for p in ps}
    end_tps = {(t, p) for t, ps in end.items() for p in ps}
    if start_tps != end_tps:
        diff = sorted(start_tps ^ end_tps)
        raise OffsetRangeError("--starting-offsets and --ending-offsets must name the same partitions; "
                               f"only one names {', '.join(f'{t}-{p}' for t, p in diff)}")
    for t, p in sorted(start_tps):
        s, e = start[t][p], end[t][p]
        if s >= 0 and e >= 0 and e < s:
            raise OffsetRangeError(f"{t}-{p}: ending offset {e} is before starting offset {s}")
    return start, end


def to_json_offsets(offsets: dict[str, dict[int, int]]) -> str:
    return json.dumps({t: {str(p): o for p, o in sorted(ps.items())} for t, ps in sorted(offsets.items())})


def assign_json(offsets: dict[str, dict[int, int]]) -> str:
    return json.dumps({t: sorted(ps) for t, ps in sorted(offsets.items())})


def records(kafka_df: DataFrame) -> DataFrame:
    """Kafka-source rows -> archive rows (every record kept; event fields null when not an event)."""
    df = with_event_columns(kafka_df)
    headers = F.transform("headers", lambda h: F.struct(h["key"].alias("key"), h["value"].cast("string").alias("value")))
    event_date = F.to_date(F.to_utc_timestamp(F.coalesce("event_time", "timestamp"), F.current_timezone()))
    return df.select(
        "topic", "partition", "offset", F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").cast("string").alias("key"), headers.alias("headers"), F.col("value").cast("string").alias("value"),
        *[f.name for f in EVENT_SCHEMA.fields], "valid", event_date.alias("event_date"))


def read_range(spark: SparkSession, args: argparse.Namespace,
               start: dict[str, dict[int, int]], end: dict[str, dict[int, int]]) -> DataFrame:
    return (spark.read.format("kafka")
            .options(**kafka_options(args.bootstrap, args.option))
            .option("assign", assign_json(start))
            .option("startingOffsets", to_json_offsets(start))
            .option("endingOffsets", to_json_offsets(end))
            .option("includeHeaders", "true")
            .option("failOnDataLoss", str(args.fail_on_data_loss).lower())
            .load())


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.backfill", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_spark_args(p)
    p.add_argument("--starting-offsets", required=True, help='JSON, e.g. {"events": {"0": 0, "1": -2}}')
    p.add_argument("--ending-offsets", required=True, help='JSON, e.g. {"events": {"0": 500, "1": -1}}')
    p.add_argument("--output", required=True, help="Parquet folder")
    p.add_argument("--mode", default="errorifexists", choices=["errorifexists", "overwrite", "append"])
    p.add_argument("--fail-on-data-loss", action=argparse.BooleanOptionalAction, default=True)
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        start, end = parse_offset_range(args.starting_offsets, args.ending_offsets)
    except OffsetRangeError as exc:
        p.error(str(exc))
    spark = spark_session("samsa-backfill", args)
    try:
        out = records(read_range(spark, args, start, end))
        out.write.mode(args.mode).partitionBy("event_date").parquet(args.output)
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
