"""/feature: the finalized features of KIP-584, as Kafka 3.9 writes them (FeatureZNode in
kafka/zk/ZkData.scala).

`{"features":{"f":{"max_version_level":3}},"version":2,"status":1}`: status 1 is enabled, 0 disabled;
the first version of the znode (before inter.broker.protocol.version 3.3-IV0) also writes each
feature's `min_version_level`, equal to its max.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError, decode_object, encode, int_field

FIRST_VERSION: Final = 1
#: From 3.3-IV0: without min_version_level.
SECOND_VERSION: Final = 2
DISABLED: Final = 0
ENABLED: Final = 1


@dataclass(frozen=True, slots=True)
class FeatureZnode:
    version: int
    status: int
    #: Each finalized feature's version level.
    features: Mapping[str, int] = field(default_factory=dict)

    def serialize(self) -> bytes:
        levels: dict[str, dict[str, int]] = {}
        for name, level in self.features.items():
            levels[name] = {"max_version_level": level}
            if self.version == FIRST_VERSION:
                levels[name]["min_version_level"] = level
        # the key order Kafka's controller writes
        return encode({"features": levels, "version": self.version, "status": self.status})

    @classmethod
    def parse(cls, data: bytes | None) -> FeatureZnode:
        path = paths.FEATURE
        obj = decode_object(data, path)
        version = int_field(obj, "version", path)
        status = int_field(obj, "status", path)
        if version not in (FIRST_VERSION, SECOND_VERSION) or status not in (DISABLED, ENABLED):
            raise MalformedZnodeError(f"{path} has version {version} and status {status}")
        features = obj.get("features", {})
        if not isinstance(features, dict):
            raise MalformedZnodeError(f"{path} field 'features' is not an object")
        levels: dict[str, int] = {}
        for name, level in features.items():
            if not isinstance(level, dict):
                raise MalformedZnodeError(f"{path} feature {name!r} is not an object")
            levels[name] = int_field(level, "max_version_level", path)
        return cls(version, status, levels)
