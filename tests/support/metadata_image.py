"""Metadata images built from records, for the tests of the controller's decisions and of what
the broker derives from an image (tests/unit)."""
from __future__ import annotations

from coordinator.metadata.image import MetadataImage, replay_all
from coordinator.metadata.records import BrokerEndpoint, RegisterBrokerRecord


def register_broker(i: int, rack: str | None = None, epoch: int = 10) -> RegisterBrokerRecord:
    """Broker ``i`` registering, unfenced, with one PLAINTEXT endpoint on port 9090 + i."""
    return RegisterBrokerRecord(broker_id=i, incarnation_id=f"inc{i}", broker_epoch=epoch,
                                end_points=(BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9090 + i),), rack=rack,
                                fenced=False)


def cluster_image(n: int = 3, racks: list[str] | None = None) -> MetadataImage:
    """An image holding only brokers 1..n (``racks[i - 1]`` for broker i), as the controller sees it."""
    img, _ = replay_all(MetadataImage(), [register_broker(i, racks[i - 1] if racks else None) for i in range(1, n + 1)])
    return img
