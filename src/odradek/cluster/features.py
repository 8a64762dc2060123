"""Feature flags (KIP-584) as a ZooKeeper-mode broker of Kafka 3.9 has them: none.

Kafka's feature flags (metadata.version, group.version, transaction.version, kraft.version) are KRaft's:
a ZooKeeper-mode broker advertises no supported feature, and its controller keeps an empty, enabled
feature node whose ZooKeeper version (0) is the finalized-features epoch every broker reports. So
ApiVersions names no feature at epoch 0, and an update of any feature is refused as unsupported.
"""

from __future__ import annotations

#: The epoch of the (empty) finalized features ApiVersions v3+ reports.
FINALIZED_FEATURES_EPOCH = 0


def update_refusal(feature: str) -> str:
    """Why an update of `feature` is refused (every feature: none is supported)."""
    return f"Feature {feature} cannot be finalized: a ZooKeeper-mode broker supports no feature flag."
