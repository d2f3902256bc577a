"""DescribeUserScramCredentials v0 (KIP-554).

Quirks, as Kafka's: a null user list describes everyone, an unknown user answers
RESOURCE_NOT_FOUND, a user named twice answers DUPLICATE_RESOURCE. Credentials live in the
metadata image (UserScramCredentialRecords).
Authorization: DESCRIBE on the cluster.
"""
from __future__ import annotations

from collections import Counter
from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import Handler, authorizes, cluster_denied, on_cluster


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
async def describe_scram(ctx: RequestContext, req: DescribeUserScramCredentialsRequest) -> Any:
    R = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
    CI = R.CredentialInfo
    scram = ctx.broker.metadata.image.scram_credentials
    by_user: dict[str, list] = {}
    for (user, mech), cred in sorted(scram.items()):
        by_user.setdefault(user, []).append(CI(mechanism=mech, iterations=cred.iterations))
    if req.users is None:
        results = [R(user=u, error_code=0, error_message=None, credential_infos=infos) for u, infos in by_user.items()]
    else:
        names = [u.name for u in req.users]
        counts = Counter(names)
        results = []
        for name in dict.fromkeys(names):
            if counts[name] > 1:
                results.append(R(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                                 error_message=f"Cannot describe SCRAM credentials for the same user twice in a "
                                               f"single request: {name}", credential_infos=[]))
            elif name not in by_user:
                results.append(R(user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                 error_message=f"Attempt to describe a user credential that does not exist: {name}",
                                 credential_infos=[]))
            else:
                results.append(R(user=name, error_code=0, error_message=None, credential_infos=by_user[name]))
    return ctx.response(throttle_time_ms=0, error_code=0, error_message=None, results=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
def authorize_describe_user_scram_credentials(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    return on_cluster(ctx, req, handler, Op.DESCRIBE, lambda: cluster_denied(ctx, results=[]))
