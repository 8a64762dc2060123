"""CreateDelegationToken (38), RenewDelegationToken (39), ExpireDelegationToken (40),
DescribeDelegationToken (41): delegation tokens (KIP-48), as Kafka 3.9 serves them in ZooKeeper mode.

Version notes:
- Create v0-3, Renew/Expire v0-2, Describe v0-3; v2+ flexible. Create v3 (KIP-373) names an owner
  other than the requester, and both answers carry the token's requester.
- Advertised always, as Kafka's: without `delegation.token.secret.key` every answer is
  DELEGATION_TOKEN_AUTH_DISABLED.
- Over PLAINTEXT, TLS without a client certificate, or a connection authenticated with a token, every
  one is DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (checked first, as KafkaApis.allowTokenRequests).
- Create for another owner needs CREATE_TOKENS on that USER (else DELEGATION_TOKEN_AUTHORIZATION_FAILED);
  a renewer that is not a User is INVALID_PRINCIPAL_TYPE. Renew and Expire take the HMAC: unknown is
  DELEGATION_TOKEN_NOT_FOUND, another principal's token DELEGATION_TOKEN_OWNER_MISMATCH, a token past
  its expiry DELEGATION_TOKEN_EXPIRED (Expire with a negative period removes it at once, whatever).
  Describe lists the tokens the principal owns, requested or renews, or may DESCRIBE (DELEGATION_TOKEN) or
  DESCRIBE_TOKENS (its owner's USER); an empty owner list describes nothing, a null one everything.
- The store (log dir or ZooKeeper) failing is UNKNOWN_SERVER_ERROR, logged by the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from odradek.handlers._common.authorization import authorize
from odradek.handlers._common.context import ANONYMOUS_PRINCIPAL, RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.create_delegation_token import (
    CreateDelegationTokenRequest,
    CreateDelegationTokenResponse,
)
from odradek.protocol.messages.describe_delegation_token import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
)
from odradek.protocol.messages.expire_delegation_token import (
    ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse,
)
from odradek.protocol.messages.renew_delegation_token import (
    RenewDelegationTokenRequest,
    RenewDelegationTokenResponse,
)
from odradek.security.acl import AclOperation, ResourceType
from odradek.security.delegation_tokens import (
    ERROR_TIMESTAMP,
    USER_TYPE,
    DelegationToken,
    DelegationTokenManager,
    describable,
)


@handles(ApiKey.CREATE_DELEGATION_TOKEN, 0, 3)
async def handle_create_delegation_token(
    request: CreateDelegationTokenRequest, context: RequestContext
) -> CreateDelegationTokenResponse:
    requester = context.principal
    owner = requester
    if request.owner_principal_name:
        owner = f"{request.owner_principal_type or ''}:{request.owner_principal_name}"
    renewers = [f"{renewer.principal_type}:{renewer.principal_name}" for renewer in request.renewers]

    def refused(code: ErrorCode) -> CreateDelegationTokenResponse:
        return _created(owner, requester, code)

    if not _allows_token_requests(context):
        return refused(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if owner != requester and not authorize(context, AclOperation.CREATE_TOKENS, ResourceType.USER, owner):
        return refused(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
    if any(renewer.principal_type != USER_TYPE for renewer in request.renewers):
        return refused(ErrorCode.INVALID_PRINCIPAL_TYPE)
    if not request.owner_principal_type and request.owner_principal_name:
        # Kafka cannot build a principal without a type (its answer is an unexpected error)
        return refused(ErrorCode.INVALID_PRINCIPAL_TYPE)
    try:
        token = await _manager(context).create(owner, requester, renewers, request.max_lifetime_ms)
    except KafkaError as error:
        return refused(error.error_code)
    return _created(owner, requester, ErrorCode.NONE, token)


@handles(ApiKey.RENEW_DELEGATION_TOKEN, 0, 2)
async def handle_renew_delegation_token(
    request: RenewDelegationTokenRequest, context: RequestContext
) -> RenewDelegationTokenResponse:
    code, expiry = await _new_expiry(
        context, lambda tokens: tokens.renew(context.principal, request.hmac, request.renew_period_ms)
    )
    return RenewDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry, throttle_time_ms=0)


@handles(ApiKey.EXPIRE_DELEGATION_TOKEN, 0, 2)
async def handle_expire_delegation_token(
    request: ExpireDelegationTokenRequest, context: RequestContext
) -> ExpireDelegationTokenResponse:
    code, expiry = await _new_expiry(
        context, lambda tokens: tokens.expire(context.principal, request.hmac, request.expiry_time_period_ms)
    )
    return ExpireDelegationTokenResponse(error_code=code, expiry_timestamp_ms=expiry, throttle_time_ms=0)


@handles(ApiKey.DESCRIBE_DELEGATION_TOKEN, 0, 3)
async def handle_describe_delegation_token(
    request: DescribeDelegationTokenRequest, context: RequestContext
) -> DescribeDelegationTokenResponse:
    if not _allows_token_requests(context):
        return _described(ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    try:
        tokens = _manager(context).tokens()
    except KafkaError as error:
        return _described(error.error_code)
    if request.owners is not None and not request.owners:
        return _described(ErrorCode.NONE)
    owners = (
        None
        if request.owners is None
        else {f"{owner.principal_type}:{owner.principal_name}" for owner in request.owners}
    )

    def may_describe_token(token_id: str) -> bool:
        return authorize(context, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token_id)

    def may_describe_owner(owner: str) -> bool:
        return authorize(context, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, owner)

    found = [
        token
        for token in tokens
        if describable(token.info, context.principal, owners, may_describe_token, may_describe_owner)
    ]
    return _described(ErrorCode.NONE, found)


# ----- helpers ---------------------------------------------------------------------------------------


def _allows_token_requests(context: RequestContext) -> bool:
    """KafkaApis.allowTokenRequests: not over PLAINTEXT, one-way TLS, or a token's own session."""
    if context.sasl is not None and context.sasl.token_authenticated:
        return False
    protocol = context.security_protocol
    return protocol != "PLAINTEXT" and not (protocol == "SSL" and context.principal == ANONYMOUS_PRINCIPAL)


async def _new_expiry(
    context: RequestContext, change: Callable[[DelegationTokenManager], Awaitable[int]]
) -> tuple[ErrorCode, int]:
    """Renew's and Expire's answer: the error and the token's new expiry (ERROR_TIMESTAMP on error)."""
    if not _allows_token_requests(context):
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, ERROR_TIMESTAMP
    try:
        expiry = await change(_manager(context))
    except KafkaError as error:
        return error.error_code, ERROR_TIMESTAMP
    return ErrorCode.NONE, expiry


def _manager(context: RequestContext) -> DelegationTokenManager:
    tokens = context.services.delegation_tokens
    if tokens is None:  # (services built without one, as in handler tests: no secret key either)
        raise KafkaError(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
    return tokens


def _split(principal: str) -> tuple[str, str]:
    principal_type, _, name = principal.partition(":")
    return principal_type, name


def _created(
    owner: str, requester: str, code: ErrorCode, token: DelegationToken | None = None
) -> CreateDelegationTokenResponse:
    owner_type, owner_name = _split(owner)
    requester_type, requester_name = _split(requester)
    info = token.info if token is not None else None
    return CreateDelegationTokenResponse(
        error_code=code,
        principal_type=owner_type,
        principal_name=owner_name,
        token_requester_principal_type=requester_type,
        token_requester_principal_name=requester_name,
        issue_timestamp_ms=info.issue_timestamp_ms if info else ERROR_TIMESTAMP,
        expiry_timestamp_ms=info.expiry_timestamp_ms if info else ERROR_TIMESTAMP,
        max_timestamp_ms=info.max_timestamp_ms if info else ERROR_TIMESTAMP,
        token_id=info.token_id if info else "",
        hmac=token.hmac if token is not None else b"",
        throttle_time_ms=0,
    )


def _described(
    code: ErrorCode, tokens: list[DelegationToken] | None = None
) -> DescribeDelegationTokenResponse:
    described = []
    for token in tokens or []:
        info = token.info
        owner_type, owner_name = _split(info.owner)
        requester_type, requester_name = _split(info.requester)
        described.append(
            DescribedDelegationToken(
                principal_type=owner_type,
                principal_name=owner_name,
                token_requester_principal_type=requester_type,
                token_requester_principal_name=requester_name,
                issue_timestamp=info.issue_timestamp_ms,
                expiry_timestamp=info.expiry_timestamp_ms,
                max_timestamp=info.max_timestamp_ms,
                token_id=info.token_id,
                hmac=token.hmac,
                renewers=[
                    DescribedDelegationTokenRenewer(principal_type=t, principal_name=n)
                    for t, n in map(_split, info.renewers)
                ],
            )
        )
    return DescribeDelegationTokenResponse(error_code=code, tokens=described, throttle_time_ms=0)
