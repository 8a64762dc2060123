"""Api versions: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int16, Int32, Int64, Request, Response, String, Struct


class ApiVersion(Struct):
    api_key: int = Int16()
    min_version: int = Int16()
    max_version: int = Int16()


class SupportedFeatureKey(Struct):
    name: str = String("3+")
    min_version: int = Int16("3+")
    max_version: int = Int16("3+")


class FinalizedFeatureKey(Struct):
    name: str = String("3+")
    max_version_level: int = Int16("3+")
    min_version_level: int = Int16("3+")


class ApiVersionsRequest(Request, api_key=18, versions="0-5", flexible="3+"):
    client_software_name: str = String("3+")
    client_software_version: str = String("3+")
    cluster_id: str | None = String("5+", nullable="5+", default=None)
    node_id: int = Int32("5+", default=-1)


class ApiVersionsResponse(Response, api_key=18, versions="0-5", flexible="3+"):
    error_code: int = Int16()
    api_keys: list[ApiVersion] = Array(ApiVersion)
    throttle_time_ms: int = Int32("1+")
    supported_features: list[SupportedFeatureKey] = Array(SupportedFeatureKey, "3+", tag=0)
    finalized_features_epoch: int = Int64("3+", tag=1, default=-1)
    finalized_features: list[FinalizedFeatureKey] = Array(FinalizedFeatureKey, "3+", tag=2)
    zk_migration_ready: bool = Bool("3+", tag=3, default=False)
