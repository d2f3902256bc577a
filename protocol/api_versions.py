"""The one table of APIs and versions this broker implements.

ApiVersions advertises exactly this table, and the dispatcher refuses anything outside it.
Clients use every API they see advertised, so an API appears here only when its handler
is complete (see client-facts: GetTelemetrySubscriptions is deliberately absent).
"""
from __future__ import annotations

from .api_keys import ApiKey

SUPPORTED: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 13),
    ApiKey.FETCH: (4, 18),
    ApiKey.LIST_OFFSETS: (1, 11),
    ApiKey.METADATA: (0, 13),
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.INIT_PRODUCER_ID: (0, 6),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.JOIN_GROUP: (0, 9),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 5),
    ApiKey.OFFSET_COMMIT: (2, 10),
    ApiKey.OFFSET_FETCH: (1, 10),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DESCRIBE_GROUPS: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    # what kafbat UI, Redpanda Console and AKHQ call (broker/apis/describe_log_dirs.py, describe_client_quotas.py, ...)
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 4),
    ApiKey.END_TXN: (0, 5),
    ApiKey.TXN_OFFSET_COMMIT: (0, 5),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.LIST_TRANSACTIONS: (0, 2),
    ApiKey.DESCRIBE_PRODUCERS: (0, 0),
    # security (broker/security/, broker/apis/sasl_handshake.py, create_acls.py, ...)
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    # KIP-848 consumer groups and the Java Admin's describeTopics (coordinator/consumer_group*.py)
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 1),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: (0, 0),
    # cluster mode (broker/apis/elect_leaders.py, alter_partition_reassignments.py, write_txn_markers.py)
    ApiKey.WRITE_TXN_MARKERS: (1, 1),     # between brokers (a cluster's transaction coordinators)
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1),
}

# KIP-932 share groups (broker/apis/share_*.py): advertised only when share groups are enabled
# (share.version >= 1, Kafka 4.2's default, or ``group.share.enable``; see broker/server/api_table.py),
# as Kafka does. Kafka 4.2's versions: ShareFetch/ShareAcknowledge v2 add the record_limit acquire
# mode (KIP-1206) and renew acknowledgements (KIP-1222).
SHARE_GROUP_APIS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.SHARE_GROUP_HEARTBEAT: (1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.SHARE_FETCH: (1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: (1, 2),
    # between brokers: a share partition's leader and the share coordinator (broker/apis/*_share_group_state*.py);
    # Kafka 4.2 lists them on the broker listener, Write and Summary at v1 (KIP-1226)
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: (0, 0),
    ApiKey.READ_SHARE_GROUP_STATE: (0, 0),
    ApiKey.WRITE_SHARE_GROUP_STATE: (0, 1),
    ApiKey.DELETE_SHARE_GROUP_STATE: (0, 0),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: (0, 1),
    # the share admin APIs (kafka-share-groups.sh --describe/--reset-offsets/--delete-offsets)
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
}
SUPPORTED_WITH_SHARE_GROUPS: dict[ApiKey, tuple[int, int]] = {**SUPPORTED, **SHARE_GROUP_APIS}

