"""Describe user scram credentials: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int8, Int16, Int32, Request, Response, String, Struct


class UserName(Struct):
    name: str = String()


class CredentialInfo(Struct):
    mechanism: int = Int8()
    iterations: int = Int32()


class DescribeUserScramCredentialsResult(Struct):
    user: str = String()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    credential_infos: list[CredentialInfo] = Array(CredentialInfo)


class DescribeUserScramCredentialsRequest(Request, api_key=50, versions="0", flexible="0+"):
    users: list[UserName] | None = Array(UserName, nullable="0+")


class DescribeUserScramCredentialsResponse(Response, api_key=50, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    results: list[DescribeUserScramCredentialsResult] = Array(DescribeUserScramCredentialsResult)
