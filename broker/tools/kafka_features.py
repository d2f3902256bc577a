"""``kafka-features describe``: each feature the cluster supports with its supported range, finalized
level and epoch, one ``Feature: ...\\tSupportedMinVersion: ...`` line each as Kafka's
``FeatureCommand`` prints them (``metadata.version`` levels as release names, e.g. ``4.0-IV3``).
On kafka-python's KafkaAdminClient: confluent-kafka has no DescribeFeatures. Upgrades and
downgrades are not offered."""
from __future__ import annotations

import sys
from typing import Any

from .common import ToolError, kafka_python_config, load_properties, require_bootstrap, run, tool_parser

# MetadataVersion feature levels -> version() (Kafka's server-common MetadataVersion)
METADATA_VERSIONS = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3", 8: "3.4-IV0",
    9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0",
    16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0",
    23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3",
}


def level_text(feature: str, level: int) -> str:
    if feature == "metadata.version":
        return METADATA_VERSIONS.get(level, f"UNKNOWN {level}")
    return str(level)


def build_parser() -> Any:
    p = tool_parser("kafka-features", "This tool manages feature flags in Kafka.")
    p.add_argument("--describe", action="store_true", help="Same as the describe command.")
    p.add_argument("command", nargs="?", choices=["describe"], help="describe: describes the current active feature flags.")
    return p


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    require_bootstrap(parser, args, usage="one of the arguments --bootstrap-server --bootstrap-controller is required")
    if args.command != "describe" and not args.describe:
        parser.usage_and_exit("too few arguments")
    from kafka.admin import KafkaAdminClient

    props = load_properties(args.command_config) if args.command_config else {}
    try:
        admin = KafkaAdminClient(**kafka_python_config(props, args.bootstrap_server))
        features = admin.describe_features()
    except Exception as e:
        raise ToolError(str(e), stream="stderr") from e
    for name in sorted(features):
        f = features[name]
        low, high = f.get("supported") or (0, 0)
        finalized = f.get("finalized")
        epoch = f.get("finalized_epoch")
        level = finalized[1] if finalized else 0
        sys.stdout.write(f"Feature: {name}\tSupportedMinVersion: {level_text(name, low)}\tSupportedMaxVersion: "
                         f"{level_text(name, high)}\tFinalizedVersionLevel: {level_text(name, level)}\tEpoch: "
                         f"{'-' if epoch is None or epoch < 0 else epoch}\n")
    admin.close()
    return 0


def entry() -> None:
    run(main)


if __name__ == "__main__":
    entry()
