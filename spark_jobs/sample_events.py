"""Writes sample JSON events, in the shape the pipelines read, to a topic (kafka-python only, so
it runs in the Samsa image without Spark).

    python -m spark_jobs.sample_events --bootstrap localhost:9092 --topic events --count 600

Events are deterministic: event i happens at ``--start`` + i * ``--step-ms``, by user u-(i % 7),
with action view/cart/purchase in turn (purchases and carts carry an amount in cents).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

ACTIONS = ("view", "view", "cart", "view", "purchase")


def make_event(i: int, start_ms: int, step_ms: int) -> tuple[bytes, bytes, int]:
    """(key, value, timestamp ms) of event i."""
    ts = start_ms + i * step_ms
    action = ACTIONS[i % len(ACTIONS)]
    user = f"u-{i % 7}"
    when = dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    event = {"event_id": f"e-{i}", "user": user, "action": action,
             "amount_cents": 0 if action == "view" else 100 + (i * 37) % 5000, "event_time": when}
    return user.encode(), json.dumps(event).encode(), ts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spark_jobs.sample_events", description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", default="events")
    p.add_argument("--count", type=int, default=600)
    p.add_argument("--start", default="2024-05-01T12:00:00Z", help="event time of the first event (UTC)")
    p.add_argument("--step-ms", type=int, default=500)
    args = p.parse_args(argv)
    start = dt.datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    start_ms = int(start.timestamp() * 1000)

    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=args.bootstrap, acks="all", linger_ms=20)
    try:
        for i in range(args.count):
            key, value, ts = make_event(i, start_ms, args.step_ms)
            producer.send(args.topic, key=key, value=value, timestamp_ms=ts)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)
    print(f"wrote {args.count} events to {args.topic}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
