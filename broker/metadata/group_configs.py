"""Group configs kept where Kafka keeps them: ConfigRecords on GROUP resources (type 32) in the
metadata log (the single node's local file, etcd in a cluster), replayed into the image, so a
change made through one broker reaches every broker and survives restarts. Which configs exist
and how they are checked: coordinator/group/group_config.py (Kafka's GroupConfig).

Readers look the image up when they need a group's settings (ShareFetch, ShareGroupHeartbeat, and
the group coordinators through ``group_config_lookup``, Kafka's GroupConfigManager): nothing is
cached, so a change applies to the next request or timer.

A group's configs outlive the group, as in Kafka: they are metadata-log records, set before a group
exists if one likes, and DeleteGroups (or a group's expiry) leaves them in place; they go when
deleted with IncrementalAlterConfigs DELETE or replaced by a legacy AlterConfigs.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from coordinator.group.group_config import ShareGroupSettings, duration_ms, share_settings

from .dynamic_broker_configs import replace_resource_configs
from .topology import Rejection

if TYPE_CHECKING:
    from broker.common.services import BrokerServices
    from broker.log.partition import Partition

GROUP_RESOURCE = 32          # ConfigResource.Type.GROUP


def stored_group_configs(broker: BrokerServices, group_id: str) -> dict[str, str]:
    """The group's overrides as the metadata log holds them."""
    return dict(broker.metadata.image.configs.get((GROUP_RESOURCE, group_id), {}))


class BrokerProps(Mapping[str, object]):
    """The broker's properties as coordinator/group/group_config.py reads them (defaults and bounds)."""

    def __init__(self, broker: BrokerServices) -> None:
        self._config = broker.config

    def __getitem__(self, name: str) -> object:
        value = self._config.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(())

    def __len__(self) -> int:
        return 0

    def get(self, name: str, default: object = None) -> object:  # type: ignore[override]
        value = self._config.get(name)
        return default if value is None else value


def group_config_lookup(broker: BrokerServices) -> Callable[[str], Mapping[str, str]]:
    """A group's overrides by id, read from the metadata image at each call: what the group
    coordinators are given (``GroupCoordinatorBase.group_configs``)."""
    def lookup(group_id: str) -> Mapping[str, str]:
        return broker.metadata.image.configs.get((GROUP_RESOURCE, group_id), {})
    return lookup


def share_group_settings(broker: BrokerServices, group_id: str) -> ShareGroupSettings:
    """The share group's settings now: its overrides over the broker's properties."""
    overrides = broker.metadata.image.configs.get((GROUP_RESOURCE, group_id), {})
    return share_settings(overrides, BrokerProps(broker))


def share_start_offset(broker: BrokerServices, group_id: str, part: Partition) -> int:
    """Where a share partition starts when the group first uses it: the group's
    ``share.auto.offset.reset`` (default ``samsa.share.auto.offset.reset``): ``earliest`` is the log
    start, ``latest`` the high watermark, ``by_duration:<ISO-8601>`` the first record no older than
    that (the high watermark when there is none), as Kafka's SharePartition initializes it."""
    reset = share_group_settings(broker, group_id).auto_offset_reset
    if reset == "earliest":
        return part.log_start_offset
    if reset.startswith("by_duration:"):
        ms = duration_ms(reset[len("by_duration:"):])
        found = part.offset_for_timestamp(broker.now_ms() - ms) if ms is not None else None
        return max(found[0], part.log_start_offset) if found else part.high_watermark
    return part.high_watermark


async def alter_group_configs(broker: BrokerServices, group_id: str, configs: Mapping[str, str]) -> Rejection | None:
    """Replace the group's overrides with ``configs``: the difference as ConfigRecords (value None
    deletes), one batch, in the image once ``append`` returns."""
    return await replace_resource_configs(broker, GROUP_RESOURCE, group_id, configs, "group configs altered",
                                          group=group_id)


__all__ = ["GROUP_RESOURCE", "BrokerProps", "alter_group_configs", "group_config_lookup", "share_group_settings",
           "share_start_offset", "stored_group_configs"]
