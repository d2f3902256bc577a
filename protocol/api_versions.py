"""The one table of APIs and versions this broker implements.

ApiVersions advertises exactly this table, and the dispatcher refuses anything outside it.
Clients use every API they see advertised, so an API appears here only when its handler
is complete (see client-facts: GetTelemetrySubscriptions is deliberately absent).
"""
from __future__ import annotations

from kafka.protocol.api_key import ApiKey

SUPPORTED: dict[int, tuple[int, int]] = {
    ApiKey.Produce: (3, 13),
    ApiKey.Fetch: (4, 18),
    ApiKey.ListOffsets: (1, 11),
    ApiKey.Metadata: (0, 13),
    ApiKey.ApiVersions: (0, 4),
    ApiKey.InitProducerId: (0, 6),
    ApiKey.OffsetForLeaderEpoch: (2, 4),
    ApiKey.FindCoordinator: (0, 6),
    ApiKey.JoinGroup: (0, 9),
    ApiKey.SyncGroup: (0, 5),
    ApiKey.Heartbeat: (0, 4),
    ApiKey.LeaveGroup: (0, 5),
    ApiKey.OffsetCommit: (2, 10),
    ApiKey.OffsetFetch: (1, 10),
    ApiKey.OffsetDelete: (0, 0),
    ApiKey.DescribeGroups: (0, 6),
    ApiKey.ListGroups: (0, 5),
    ApiKey.DeleteGroups: (0, 2),
    ApiKey.CreateTopics: (2, 7),
    ApiKey.DeleteTopics: (1, 6),
    ApiKey.CreatePartitions: (0, 3),
    ApiKey.DeleteRecords: (0, 2),
    ApiKey.DescribeConfigs: (1, 4),
    ApiKey.AlterConfigs: (0, 2),
    ApiKey.IncrementalAlterConfigs: (0, 1),
    ApiKey.DescribeCluster: (0, 2),
    # what kafbat UI, Redpanda Console and AKHQ call (broker/apis/log_dirs.py, quotas.py, reassignments.py)
    ApiKey.DescribeLogDirs: (1, 4),
    ApiKey.DescribeClientQuotas: (0, 1),
    ApiKey.ListPartitionReassignments: (0, 0),
    ApiKey.AddPartitionsToTxn: (0, 5),
    ApiKey.AddOffsetsToTxn: (0, 4),
    ApiKey.EndTxn: (0, 5),
    ApiKey.TxnOffsetCommit: (0, 5),
    ApiKey.DescribeTransactions: (0, 0),
    ApiKey.ListTransactions: (0, 2),
    ApiKey.DescribeProducers: (0, 0),
    # security (broker/security/, broker/apis/sasl.py, acls.py, scram.py)
    ApiKey.SaslHandshake: (0, 1),
    ApiKey.SaslAuthenticate: (0, 2),
    ApiKey.DescribeAcls: (1, 3),
    ApiKey.CreateAcls: (1, 3),
    ApiKey.DeleteAcls: (1, 3),
    ApiKey.DescribeUserScramCredentials: (0, 0),
    ApiKey.AlterUserScramCredentials: (0, 0),
    # KIP-848 consumer groups and the Java Admin's describeTopics (coordinator/consumer_group*.py)
    ApiKey.ConsumerGroupHeartbeat: (0, 1),
    ApiKey.ConsumerGroupDescribe: (0, 1),
    ApiKey.DescribeTopicPartitions: (0, 0),
    # cluster mode (broker/apis/elect_leaders.py, reassignments.py, txn_markers.py)
    ApiKey.WriteTxnMarkers: (1, 1),     # between brokers (a cluster's transaction coordinators)
    ApiKey.ElectLeaders: (0, 2),
    ApiKey.AlterPartitionReassignments: (0, 1),
}

# KIP-932 share groups (broker/apis/share_groups.py): advertised only when share groups are enabled
# (``group.share.enable`` or share.version >= 1, see broker/server/api_table.py), as Kafka does. Only the
# first stable versions: ShareFetch/ShareAcknowledge v2 add renew acknowledgements (KIP-1222).
SHARE_GROUP_APIS: dict[int, tuple[int, int]] = {
    ApiKey.ShareGroupHeartbeat: (1, 1),
    ApiKey.ShareGroupDescribe: (1, 1),
    ApiKey.ShareFetch: (1, 1),
    ApiKey.ShareAcknowledge: (1, 1),
}
SUPPORTED_WITH_SHARE_GROUPS: dict[int, tuple[int, int]] = {**SUPPORTED, **SHARE_GROUP_APIS}


def supported(api_key: int, version: int) -> bool:
    rng = SUPPORTED.get(api_key)
    return rng is not None and rng[0] <= version <= rng[1]
