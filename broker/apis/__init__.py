"""API handler modules, one per API family; importing this package registers them."""
from . import api_versions, fetch, log_offsets, metadata, produce, producer_ids  # noqa: F401
