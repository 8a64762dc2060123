"""Alter user scram credentials: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bytes, Int8, Int16, Int32, Request, Response, String, Struct


class ScramCredentialDeletion(Struct):
    name: str = String()
    mechanism: int = Int8()


class ScramCredentialUpsertion(Struct):
    name: str = String()
    mechanism: int = Int8()
    iterations: int = Int32()
    salt: bytes = Bytes()
    salted_password: bytes = Bytes()


class AlterUserScramCredentialsResult(Struct):
    user: str = String()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")


class AlterUserScramCredentialsRequest(Request, api_key=51, versions="0", flexible="0+"):
    deletions: list[ScramCredentialDeletion] = Array(ScramCredentialDeletion)
    upsertions: list[ScramCredentialUpsertion] = Array(ScramCredentialUpsertion)


class AlterUserScramCredentialsResponse(Response, api_key=51, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    results: list[AlterUserScramCredentialsResult] = Array(AlterUserScramCredentialsResult)
