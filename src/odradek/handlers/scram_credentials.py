"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51): SCRAM users.

Version notes:
- v0 of both (flexible). Describe lists every user when none is named; a user asked for twice is
  DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND.
- Alter upserts with the salted password the client computed (never the password) and deletes by
  (user, mechanism). As Kafka: one result per user; a user whose changes include an error gets that
  error and none of its changes; the same (user, mechanism) twice is DUPLICATE_RESOURCE; an unknown
  mechanism UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..16384 or an empty name
  UNACCEPTABLE_CREDENTIAL; deleting what does not exist RESOURCE_NOT_FOUND.
- The store is the log dir on a single node, /config/users/<user> in a ZooKeeper cluster (with a
  /config/changes notification, so every broker's SASL exchange sees it): written before the answer.
- With an authorizer (as Kafka): Describe needs DESCRIBE on the cluster, Alter ALTER on it; else
  CLUSTER_AUTHORIZATION_FAILED (Describe: top level; Alter: every user's result).
- A store that cannot be read or written (ZooKeeper unreachable, a malformed znode) is
  UNKNOWN_SERVER_ERROR with that code's own message, as Kafka's ApiError.fromThrowable: the reason is
  the store's log line, never the client's (it may name znodes, hosts or stored data).
"""

from __future__ import annotations

from collections import Counter

from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from odradek.protocol.messages.describe_user_scram_credentials import (
    CredentialInfo,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from odradek.security.acl import AclOperation
from odradek.security.scram_credentials import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MECHANISMS,
    MIN_ITERATIONS,
    CredentialError,
    ScramCredential,
    credential_from_salted_password,
)

UserError = tuple[ErrorCode, str | None]

#: What a client learns of a store that failed (Kafka: the code's message, no internal detail).
_UNREAD: UserError = (ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.UNKNOWN_SERVER_ERROR.message)


@handles(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0)
async def handle_describe_user_scram_credentials(
    request: DescribeUserScramCredentialsRequest, context: RequestContext
) -> DescribeUserScramCredentialsResponse:
    store = context.services.scram_credentials
    if not authorize_cluster(context, AclOperation.DESCRIBE):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return DescribeUserScramCredentialsResponse(
            throttle_time_ms=0, error_code=denied, error_message=denied.message, results=[]
        )
    named = [user.name for user in request.users] if request.users else None
    try:
        stored = await store.describe(None if named is None else set(named)) if store is not None else {}
    except CredentialError:  # ZooKeeper unreachable, a malformed znode: the store logged why
        return DescribeUserScramCredentialsResponse(
            throttle_time_ms=0, error_code=_UNREAD[0], error_message=_UNREAD[1], results=[]
        )
    asked = named if named is not None else sorted(stored)
    counts = Counter(asked)
    results = []
    for user in dict.fromkeys(asked):
        mechanisms = stored.get(user, {})
        if counts[user] > 1:
            code, message = (
                ErrorCode.DUPLICATE_RESOURCE,
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
            )
        elif not mechanisms:
            code, message = (
                ErrorCode.RESOURCE_NOT_FOUND,
                f"Attempt to describe a user credential that does not exist: {user}",
            )
        else:
            code, message = ErrorCode.NONE, None
        infos = (
            [
                CredentialInfo(mechanism=MECHANISMS[name][0], iterations=credential.iterations)
                for name, credential in sorted(mechanisms.items())
            ]
            if code is ErrorCode.NONE
            else []
        )
        results.append(
            DescribeUserScramCredentialsResult(
                user=user, error_code=code, error_message=message, credential_infos=infos
            )
        )
    return DescribeUserScramCredentialsResponse(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=results
    )


@handles(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, 0)
async def handle_alter_user_scram_credentials(
    request: AlterUserScramCredentialsRequest, context: RequestContext
) -> AlterUserScramCredentialsResponse:
    store = context.services.scram_credentials
    if not authorize_cluster(context, AclOperation.ALTER):
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        named = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        return AlterUserScramCredentialsResponse(
            throttle_time_ms=0,
            results=[
                AlterUserScramCredentialsResult(user=user, error_code=denied, error_message=denied.message)
                for user in named
            ],
        )
    errors: dict[str, UserError] = {}
    seen = Counter(
        [(d.name, d.mechanism) for d in request.deletions]
        + [(u.name, u.mechanism) for u in request.upsertions]
    )
    for (user, _), count in seen.items():
        if count > 1:
            errors.setdefault(
                user,
                (
                    ErrorCode.DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request",
                ),
            )
    deleted_users = {d.name for d in request.deletions}
    # what is stored now (in a cluster: ZooKeeper, which another broker may have just changed)
    try:
        stored = await store.describe(deleted_users) if store is not None and deleted_users else {}
    except CredentialError:  # the store logged why
        stored = {}
        errors.update(dict.fromkeys(deleted_users, _UNREAD))
    deletions: set[tuple[str, str]] = set()
    for deletion in request.deletions:
        error = _check_name_and_mechanism(deletion.name, deletion.mechanism)
        mechanism = MECHANISM_BY_TYPE.get(deletion.mechanism, "")
        if error is None and mechanism not in stored.get(deletion.name, {}):
            error = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if error is not None:
            errors.setdefault(deletion.name, error)
        else:
            deletions.add((deletion.name, mechanism))
    upserts: dict[tuple[str, str], ScramCredential] = {}
    for upsertion in request.upsertions:
        error = _check_name_and_mechanism(upsertion.name, upsertion.mechanism) or _check_iterations(
            upsertion.iterations
        )
        if error is not None:
            errors.setdefault(upsertion.name, error)
            continue
        mechanism = MECHANISM_BY_TYPE[upsertion.mechanism]
        upserts[(upsertion.name, mechanism)] = credential_from_salted_password(
            mechanism, upsertion.salt, upsertion.salted_password, upsertion.iterations
        )
    users = list(dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions]))
    if store is None:
        errors = {
            user: (ErrorCode.UNSUPPORTED_VERSION, "SCRAM credentials are not stored by this broker")
            for user in users
        }
    else:
        upserts = {key: value for key, value in upserts.items() if key[0] not in errors}
        deletions = {key for key in deletions if key[0] not in errors}
        if upserts or deletions:
            try:
                await store.alter(upserts, deletions)
            except CredentialError:  # ZooKeeper (logged by the store): the users not written get it
                errors.update(dict.fromkeys([user for user, _ in [*upserts, *deletions]], _UNREAD))
    results = []
    for user in users:
        code, message = errors.get(user, (ErrorCode.NONE, None))
        results.append(AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message))
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)


def _check_name_and_mechanism(user: str, mechanism: int) -> UserError | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISM_BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _check_iterations(iterations: int) -> UserError | None:
    if iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too few iterations: at least {MIN_ITERATIONS}"
    if iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, f"Too many iterations: at most {MAX_ITERATIONS}"
    return None
