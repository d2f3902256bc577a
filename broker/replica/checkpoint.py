"""Kafka's offset checkpoint files (``replication-offset-checkpoint`` in the log dir): version 0,
the entry count, then one ``topic partition offset`` line per partition."""
from __future__ import annotations

import os

HW_CHECKPOINT_FILE = "replication-offset-checkpoint"


def write_offsets_checkpoint(path: str, entries: list[tuple[str, int, int]]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"0\n{len(entries)}\n")
        for topic, partition, offset in entries:
            f.write(f"{topic} {partition} {offset}\n")
    os.replace(tmp, path)


def read_offsets_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """The entries ({} when the file is missing or unreadable: the HW then starts low and rises
    as followers fetch, which is safe)."""
    try:
        with open(path) as f:
            lines = [line.split() for line in f if line.strip()]
        if not lines or lines[0] != ["0"]:
            return {}
        return {(t, int(p)): int(o) for t, p, o in lines[2:2 + int(lines[1][0])]}
    except (OSError, ValueError, IndexError):
        return {}
