"""Dynamic broker configs kept where Kafka keeps them: ConfigRecords on BROKER resources in the
metadata log (the single node's local file, etcd in a cluster), replayed into the image, and
applied on every broker as the image changes.

Why the metadata log: a change made through one broker must reach every broker of a cluster (the
cluster-wide default, resource name "") or the named one (resource name "<node id>"), survive a
restart, and be applied in the same order everywhere; the metadata log already gives topic
configs, ACLs and SCRAM credentials exactly that. ``watch`` subscribes a broker to its store:
each batch that touches its own or the default resource replaces its BrokerConfig's dynamic
layers (broker/common/config.py) and forgets the topic configs its log manager resolved, so every
topic without an override reads the new default at once. Which configs Kafka allows and which
Samsa applies: broker/common/dynamic_config_defs.py.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import structlog

from coordinator.metadata.image import MetadataDelta, MetadataImage
from coordinator.metadata.records import BROKER_RESOURCE, ConfigRecord
from protocol.errors import ErrorCode

from broker.common.dynamic_config_defs import applies_in_samsa, dynamic_kind

from .store import MetadataStore, MetadataUnavailable
from .topology import Rejection

if TYPE_CHECKING:
    from broker.common.services import BrokerServices

log = structlog.get_logger("samsa.configs")

WRITE_TIMEOUT_MS = 30000


def watch(broker: BrokerServices, store: MetadataStore) -> None:
    """Apply the store's dynamic broker configs now and whenever they change."""
    node = str(broker.node_id)

    def on_metadata(old: MetadataImage, new: MetadataImage, delta: MetadataDelta) -> None:
        if (BROKER_RESOURCE, node) in delta.changed_configs or (BROKER_RESOURCE, "") in delta.changed_configs:
            apply(broker, new)

    store.subscribe(on_metadata, initial=True)


def apply(broker: BrokerServices, image: MetadataImage) -> None:
    config = broker.config
    per_broker = dict(image.broker_configs(broker.node_id))
    default = dict(image.broker_configs(None))
    if per_broker == config.dynamic_broker and default == config.dynamic_default:
        return
    invalid = config.set_dynamic(per_broker, default, applies_in_samsa, dynamic_kind)
    broker.logs.broker_configs_changed()
    if invalid:
        log.error("dynamic broker configs with invalid values are ignored", configs=invalid)
    log.info("dynamic broker configs applied", broker=per_broker or None, cluster_default=default or None)


async def alter_broker_configs(broker: BrokerServices, resource_name: str,
                               configs: Mapping[str, str]) -> Rejection | None:
    """Replace the resource's dynamic configs ("" = cluster-wide default) with ``configs``: the
    difference as ConfigRecords (value None deletes), one batch; applied once this broker's image
    has it (the store's listeners run before ``append`` returns)."""
    return await replace_resource_configs(broker, BROKER_RESOURCE, resource_name, configs,
                                          "dynamic broker configs altered", resource=resource_name or "<default>")


async def replace_resource_configs(broker: BrokerServices, resource_type: int, resource_name: str,
                                   configs: Mapping[str, str], event: str, **fields: str) -> Rejection | None:
    """Replace a config resource's (BROKER or GROUP) configs in the metadata log with ``configs``:
    the difference as ConfigRecords (value None deletes), one batch, in the image once ``append``
    returns; ``event`` is logged with ``fields`` when something changed."""
    store = broker.metadata
    current = dict(store.image.configs.get((resource_type, resource_name), {}))
    records = [ConfigRecord(resource_type, resource_name, k, v)
               for k, v in sorted(configs.items()) if current.get(k) != v]
    records += [ConfigRecord(resource_type, resource_name, k, None) for k in sorted(current) if k not in configs]
    if not records:
        return None
    from .cluster_topology import while_unavailable

    try:
        await while_unavailable(WRITE_TIMEOUT_MS, store.append, records)
    except MetadataUnavailable as exc:
        return Rejection(ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata store is unavailable: {exc}")
    log.info(event, **fields, configs=dict(configs))
    return None


def stored_broker_configs(broker: BrokerServices, resource_name: str) -> dict[str, str]:
    """The resource's dynamic configs as the metadata log holds them."""
    return dict(broker.metadata.image.configs.get((BROKER_RESOURCE, resource_name), {}))


__all__ = ["alter_broker_configs", "apply", "stored_broker_configs", "watch"]
