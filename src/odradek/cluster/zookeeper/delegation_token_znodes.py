"""Delegation tokens' znodes, as Kafka 3.9's ZkData and DelegationTokenManagerZk write them.

- `/delegation_token/tokens/<tokenId>`: the token's information as JSON, version 3:
  `{"version":3,"owner":..,"tokenRequester":..,"renewers":[..],"issueTimestamp":..,
  "maxTimestamp":..,"expiryTimestamp":..,"tokenId":..}`, each principal (`User:alice`) sanitized as
  Kafka's Sanitizer does (URL encoding). Versions 1 and 2 have no requester: it is the owner.
- `/delegation_token/token_changes/token_change_<seq>`: a sequential notification whose data is the
  token id's UTF-8, written after each change and removal.
The HMAC is never stored: each broker derives it from the token id and its secret key.
"""

from __future__ import annotations

from typing import Final

from odradek.cluster.zookeeper.sanitizer import desanitize, sanitize
from odradek.cluster.zookeeper.znode_json import (
    MalformedZnodeError,
    as_str_list,
    decode_object,
    encode,
    int_field,
    required,
    str_field,
)
from odradek.security.delegation_tokens import TokenInformation

ROOT: Final = "/delegation_token"
TOKENS: Final = f"{ROOT}/tokens"
TOKEN_CHANGES: Final = f"{ROOT}/token_changes"
CHANGE_PREFIX: Final = "token_change_"
#: DelegationTokenManagerZk.CurrentVersion.
VERSION: Final = 3


def token_path(token_id: str) -> str:
    return f"{TOKENS}/{token_id}"


def encode_token(info: TokenInformation) -> bytes:
    return encode(
        {
            "version": VERSION,
            "owner": sanitize(info.owner),
            "tokenRequester": sanitize(info.requester),
            "renewers": [sanitize(renewer) for renewer in info.renewers],
            "issueTimestamp": info.issue_timestamp_ms,
            "maxTimestamp": info.max_timestamp_ms,
            "expiryTimestamp": info.expiry_timestamp_ms,
            "tokenId": info.token_id,
        }
    )


def decode_token(data: bytes | None, path: str) -> TokenInformation:
    """A token znode's information; MalformedZnodeError unless it is what Kafka writes."""
    doc = decode_object(data, path)
    version = int_field(doc, "version", path)
    if not 0 < version <= VERSION:
        raise MalformedZnodeError(f"{path} has version {version}, not 1 to {VERSION}")
    try:
        owner = _principal(str_field(doc, "owner", path), path)
        requester = _principal(str_field(doc, "tokenRequester", path), path) if version >= 3 else owner
        renewers = tuple(
            _principal(name, path)
            for name in as_str_list(required(doc, "renewers", path), f"{path} field 'renewers'")
        )
    except UnicodeDecodeError:
        raise MalformedZnodeError(f"{path} has a principal that is not a sanitized name") from None
    return TokenInformation(
        token_id=str_field(doc, "tokenId", path),
        owner=owner,
        requester=requester,
        renewers=renewers,
        issue_timestamp_ms=int_field(doc, "issueTimestamp", path),
        max_timestamp_ms=int_field(doc, "maxTimestamp", path),
        expiry_timestamp_ms=int_field(doc, "expiryTimestamp", path),
    )


def _principal(sanitized: str, path: str) -> str:
    principal = desanitize(sanitized)
    if ":" not in principal:  # Kafka's SecurityUtils.parseKafkaPrincipal needs Type:name
        raise MalformedZnodeError(f"{path} has a principal that is not Type:name")
    return principal
