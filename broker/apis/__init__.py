"""API handler modules, one per API family; importing this package registers them."""
from . import (api_versions, cluster, configs, fetch, groups, log_offsets, metadata, offsets,  # noqa: F401
               produce, producer_ids, topics, transactions, txn_markers)
from . import elect_leaders  # noqa: F401
from . import reassignments  # noqa: F401
