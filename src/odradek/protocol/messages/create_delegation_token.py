"""Create delegation token: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bytes, Int16, Int32, Int64, Request, Response, String, Struct


class CreatableRenewers(Struct):
    principal_type: str = String()
    principal_name: str = String()


class CreateDelegationTokenRequest(Request, api_key=38, versions="0-3", flexible="2+"):
    owner_principal_type: str | None = String("3+", nullable="3+")
    owner_principal_name: str | None = String("3+", nullable="3+")
    renewers: list[CreatableRenewers] = Array(CreatableRenewers)
    max_lifetime_ms: int = Int64()


class CreateDelegationTokenResponse(Response, api_key=38, versions="0-3", flexible="2+"):
    error_code: int = Int16()
    principal_type: str = String()
    principal_name: str = String()
    token_requester_principal_type: str = String("3+")
    token_requester_principal_name: str = String("3+")
    issue_timestamp_ms: int = Int64()
    expiry_timestamp_ms: int = Int64()
    max_timestamp_ms: int = Int64()
    token_id: str = String()
    hmac: bytes = Bytes()
    throttle_time_ms: int = Int32()
