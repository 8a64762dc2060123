"""Describe delegation token: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bytes, Int16, Int32, Int64, Request, Response, String, Struct


class DescribeDelegationTokenOwner(Struct):
    principal_type: str = String()
    principal_name: str = String()


class DescribedDelegationTokenRenewer(Struct):
    principal_type: str = String()
    principal_name: str = String()


class DescribedDelegationToken(Struct):
    principal_type: str = String()
    principal_name: str = String()
    token_requester_principal_type: str = String("3+")
    token_requester_principal_name: str = String("3+")
    issue_timestamp: int = Int64()
    expiry_timestamp: int = Int64()
    max_timestamp: int = Int64()
    token_id: str = String()
    hmac: bytes = Bytes()
    renewers: list[DescribedDelegationTokenRenewer] = Array(DescribedDelegationTokenRenewer)


class DescribeDelegationTokenRequest(Request, api_key=41, versions="0-3", flexible="2+"):
    owners: list[DescribeDelegationTokenOwner] | None = Array(DescribeDelegationTokenOwner, nullable="0+")


class DescribeDelegationTokenResponse(Response, api_key=41, versions="0-3", flexible="2+"):
    error_code: int = Int16()
    tokens: list[DescribedDelegationToken] = Array(DescribedDelegationToken)
    throttle_time_ms: int = Int32()
