"""``Rejection``: a Kafka error code and message instead of records (the controller's answer to a
topic change it refuses). A module of its own so that broker/metadata/topology.py, imported as a
broker starts, does not import the controller and the metadata image with it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rejection:
    """A Kafka error code and message instead of records."""
    code: int
    message: str
