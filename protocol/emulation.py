"""Emulating an older Kafka (``samsa.emulate.kafka.version``): ApiVersions advertises only the
API versions that release had, so clients take their fallback paths.

A release's table comes from kafka-python's ``BROKER_API_VERSIONS`` (what each Kafka release
answers to ApiVersions, recorded by kafka-python's maintainers), intersected with what this
broker implements (protocol/api_versions.py): an API appears when both have a version in
common, with the common range.
"""
from __future__ import annotations

from .api_keys import ApiKey
from .api_versions import SUPPORTED

ReleaseTable = dict[int, tuple[int, int]]   # kafka-python's record of a release: plain int keys
Table = dict[ApiKey, tuple[int, int]]


def release_table(release: str) -> ReleaseTable:
    """The ApiVersions table of Kafka ``release`` (``"2.8"``, ``"3.6.1"``, …)."""
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

    try:
        wanted = tuple(int(p) for p in str(release).strip().split("."))
    except ValueError:
        wanted = ()
    for candidate in (wanted, wanted[:2], wanted[:3] + (0,) * (3 - len(wanted[:3]))):
        if candidate and candidate in BROKER_API_VERSIONS:
            return dict(BROKER_API_VERSIONS[candidate])
    known = ", ".join(".".join(map(str, v)) for v in sorted(BROKER_API_VERSIONS) if v >= (1, 0))
    raise ValueError(f"samsa.emulate.kafka.version={release!r} is not a Kafka release Samsa knows; "
                     f"known releases: {known}")


def emulated_table(release: str, supported: Table = SUPPORTED) -> Table:
    """``supported`` narrowed to what Kafka ``release`` advertised."""
    theirs = release_table(release)
    table: Table = {}
    for key, (lo, hi) in supported.items():
        if key in theirs:
            their_lo, their_hi = theirs[key]
            if max(lo, their_lo) <= min(hi, their_hi):
                table[key] = (max(lo, their_lo), min(hi, their_hi))
    return table
