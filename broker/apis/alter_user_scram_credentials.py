"""AlterUserScramCredentials v0 (KIP-554).

Quirks, as Kafka's: an upsertion carries the salted password (never the password), iterations
outside 4096..16384 are UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
deleting a missing credential RESOURCE_NOT_FOUND, a user's mechanism altered twice
DUPLICATE_RESOURCE; one user's alterations apply together or not at all. Credentials are
UserScramCredentialRecord/RemoveUserScramCredentialRecord in the metadata log (the local log, or
etcd in a cluster: a login on any broker sees them once applied), written before the answer.
Authorization: ALTER on the cluster.
"""
from __future__ import annotations

from collections import Counter
from typing import Any
from collections.abc import Awaitable

from kafka.protocol.admin import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

from coordinator.metadata.image import MetadataImage
from coordinator.metadata.records import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from broker.common.services import RequestScope
from broker.metadata.store import MetadataUnavailable
from broker.network.dispatch import RequestContext, handles
from broker.security.acl import Operation as Op
from broker.security.authz import (CLUSTER_DENIED, CLUSTER_DENIED_MESSAGE, Handler, authorizes, on_cluster,
                                   response_class)
from broker.security.sasl import SCRAM_HASHES, SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS, scram_keys
from broker.security.writes import write_decided


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
async def alter_scram(ctx: RequestContext, req: AlterUserScramCredentialsRequest) -> Any:
    R = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
    image = ctx.broker.metadata.image
    ops = [(d.name, d, False) for d in req.deletions] + [(u.name, u, True) for u in req.upsertions]
    errors: dict[str, tuple[int, str]] = {}
    seen: Counter = Counter((name, op.mechanism) for name, op, _ in ops)
    for name, op, upsert in ops:
        if name in errors:
            continue
        if not name:
            errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif seen[(name, op.mechanism)] > 1:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE,
                            "A user credential cannot be altered twice in the same request")
        elif op.mechanism not in SCRAM_HASHES:
            errors[name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif upsert and not SCRAM_MIN_ITERATIONS <= op.iterations <= SCRAM_MAX_ITERATIONS:
            errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                            f"Iterations {op.iterations} not in range [{SCRAM_MIN_ITERATIONS}, "
                            f"{SCRAM_MAX_ITERATIONS}]" if op.iterations >= SCRAM_MIN_ITERATIONS else
                            f"Too few iterations: {op.iterations}")
        elif upsert and (not op.salt or not op.salted_password):
            errors[name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
        elif not upsert and (name, op.mechanism) not in image.scram_credentials:
            errors[name] = (ErrorCode.RESOURCE_NOT_FOUND,
                            "Attempt to delete a user credential that does not exist")
    records: list[UserScramCredentialRecord | RemoveUserScramCredentialRecord] = []
    for name, op, upsert in ops:
        if name in errors:
            continue
        if upsert:
            stored, server = scram_keys(op.mechanism, bytes(op.salted_password))
            records.append(UserScramCredentialRecord(name, op.mechanism, bytes(op.salt), stored, server,
                                                     op.iterations))
        else:
            records.append(RemoveUserScramCredentialRecord(name, op.mechanism))

    def decide(current: MetadataImage) -> tuple[list[UserScramCredentialRecord | RemoveUserScramCredentialRecord], None]:
        # a deletion decided on ``image`` whose credential is gone meanwhile is dropped (it is gone)
        return [r for r in records if not isinstance(r, RemoveUserScramCredentialRecord)
                or (r.name, r.mechanism) in current.scram_credentials], None

    try:
        await write_decided(ctx.broker.metadata, decide, 30000)
    except MetadataUnavailable as exc:
        for name in {r.name for r in records}:
            errors[name] = (ErrorCode.REQUEST_TIMED_OUT, f"the cluster metadata store is unavailable: {exc}")
    results = [R(user=name, error_code=errors.get(name, (0, None))[0], error_message=errors.get(name, (0, None))[1])
               for name in dict.fromkeys(n for n, _, _ in ops)]
    return ctx.response(throttle_time_ms=0, results=results)


# -- authorization (Kafka's KafkaApis checks) --------------------------------------------------
@authorizes(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
def authorize_alter_user_scram_credentials(ctx: RequestScope, req: Any, handler: Handler) -> Awaitable[Any]:
    R = response_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentialsResult")
    return on_cluster(ctx, req, handler, Op.ALTER, lambda: ctx.response(throttle_time_ms=0, results=[
        R(user=u, error_code=CLUSTER_DENIED, error_message=CLUSTER_DENIED_MESSAGE)
        for u in dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])]))
