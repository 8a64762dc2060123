"""Update features: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int8, Int16, Int32, Request, Response, String, Struct


class FeatureUpdateKey(Struct):
    feature: str = String()
    max_version_level: int = Int16()
    allow_downgrade: bool = Bool("0")
    upgrade_type: int = Int8("1+", default=1)


class UpdatableFeatureResult(Struct):
    feature: str = String("0-1")
    error_code: int = Int16("0-1")
    error_message: str | None = String("0-1", nullable="0-1")


class UpdateFeaturesRequest(Request, api_key=57, versions="0-2", flexible="0+"):
    timeout_ms: int = Int32(default=60000)
    feature_updates: list[FeatureUpdateKey] = Array(FeatureUpdateKey)
    validate_only: bool = Bool("1+", default=False)


class UpdateFeaturesResponse(Response, api_key=57, versions="0-2", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    results: list[UpdatableFeatureResult] = Array(UpdatableFeatureResult, "0-1")
