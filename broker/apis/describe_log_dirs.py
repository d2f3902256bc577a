"""DescribeLogDirs v1-v4.

Kafka's ReplicaManager.describeLogDirs on one log dir (Samsa uses the first of ``log.dirs``):
null topics means every partition; requested partitions this broker does not have are left
out (no error), and so are topics with none left; sizes are the partition's segment bytes;
the offset lag is max(HW - LEO, 0), always 0 for a current (non-future) log; v3+ carries a
top-level error code (0); v4+ the volume's total and usable bytes (statvfs, as Java's
FileStore.getTotalSpace/getUsableSpace). Internal topics are listed like any other. In a
cluster only the partitions this broker is a replica of are listed.
Authorization: DESCRIBE on the cluster.
"""
from __future__ import annotations

import os
from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import DescribeLogDirsRequest, DescribeLogDirsResponse

from protocol.api_keys import ApiKey

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import CLUSTER_DENIED, Handler, authorizes, on_cluster

R = DescribeLogDirsResponse.DescribeLogDirsResult


def _volume(path: str) -> tuple[int, int]:
    try:
        st = os.statvfs(path)
    except OSError:
        return -1, -1
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


@handles(ApiKey.DESCRIBE_LOG_DIRS)
async def describe_log_dirs(ctx: RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    logs = ctx.broker.logs
    wanted: dict[str, set[int]] | None = None
    if req.topics is not None:
        wanted = {}
        for t in req.topics:
            wanted.setdefault(t.topic, set()).update(t.partitions)
    topics = []
    for name in sorted(logs.topics):
        if wanted is not None and name not in wanted:
            continue
        parts = [R.DescribeLogDirsTopic.DescribeLogDirsPartition(
                     partition_index=p.index, partition_size=p.size_bytes,
                     offset_lag=max(p.high_watermark - p.log_end_offset, 0), is_future_key=False)
                 for p in logs.topics[name].partitions
                 if (wanted is None or p.index in wanted[name])]
        if parts:
            topics.append(R.DescribeLogDirsTopic(name=name, partitions=parts))
    total, usable = _volume(logs.log_dir)
    result = R(error_code=0, log_dir=logs.log_dir, topics=topics, total_bytes=total, usable_bytes=usable,
               is_cordoned=False)
    return ctx.response(throttle_time_ms=0, error_code=0, results=[result])


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_LOG_DIRS)   # DescribeLogDirs: DESCRIBE on the cluster; denied: no results (KafkaApis)
def authorize_describe_log_dirs(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return on_cluster(ctx, req, handler, Op.DESCRIBE,
                       lambda: ctx.response(throttle_time_ms=0, error_code=CLUSTER_DENIED, results=[]))
