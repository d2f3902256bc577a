"""API handler modules, one per API family; importing this package registers them."""
from . import api_versions, fetch, groups, log_offsets, metadata, offsets, produce, producer_ids  # noqa: F401
