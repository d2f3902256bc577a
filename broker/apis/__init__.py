"""API handler modules, one per API family; importing this package registers them."""
from . import (api_versions, cluster, configs, consumer_groups, describe_topic_partitions, fetch, groups, log_offsets, metadata, offsets,  # noqa: F401
               produce, producer_ids, topics, transactions, txn_markers)
from . import log_dirs, quotas, reassignments  # noqa: F401  (what the web consoles call)
from . import acls, sasl, scram  # noqa: F401  (security: broker/security/)
from . import elect_leaders  # noqa: F401  (cluster: broker/apis/elect_leaders.py)
from . import share_groups  # noqa: F401  (KIP-932, advertised only when enabled: broker/server/api_table.py)
