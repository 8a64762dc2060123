"""Feature flags (KIP-584): the one odradek supports, share.version, and none of KRaft's.

Kafka's other feature flags (metadata.version, group.version, transaction.version, kraft.version) are
KRaft's: a ZooKeeper-mode Kafka 3.9 broker advertises no supported feature, and its controller keeps
an empty, enabled feature node whose ZooKeeper version (0) is the finalized-features epoch every broker
reports. odradek reports that epoch too.

share.version is Kafka 4.x's switch for share groups (KIP-932): level 1 serves them, level 2 adds
dead-letter queues (KIP-1191), which odradek does not serve, so it supports levels 0-1. Kafka 4.4
finalizes the feature in its KRaft metadata log; a ZooKeeper-mode cluster keeps finalized features in
the /feature znode, but a Kafka 3.9 broker there halts when the node finalizes a feature it does not
support (its feature cache refuses the update), so odradek never writes share.version there: each
odradek broker finalizes level 1 while it serves share groups (group.coordinator.rebalance.protocols
includes 'share', the default) and level 0 (left out of the list, as Kafka leaves out a feature at level
0) otherwise. Updates of any feature stay refused: the level follows the broker's config.
"""

from __future__ import annotations

#: The epoch of the finalized features ApiVersions v3+ reports (the /feature znode's version).
FINALIZED_FEATURES_EPOCH = 0
SHARE_VERSION = "share.version"
#: Share groups; level 2 (dead-letter queues) is not served.
SHARE_VERSION_SERVED = 1


def supported_features() -> dict[str, tuple[int, int]]:
    """Every feature this broker supports: name -> (min level, max level)."""
    return {SHARE_VERSION: (0, SHARE_VERSION_SERVED)}


def finalized_features(share_groups_served: bool) -> dict[str, int]:
    """The finalized level of each feature above 0 (Kafka reports no feature at level 0)."""
    return {SHARE_VERSION: SHARE_VERSION_SERVED} if share_groups_served else {}


def update_refusal(feature: str) -> str:
    """Why an update of `feature` is refused (every feature's level is fixed)."""
    if feature == SHARE_VERSION:
        return (
            f"Feature {feature} cannot be updated: odradek finalizes it from "
            "group.coordinator.rebalance.protocols ('share' in the list: 1, else 0)."
        )
    return f"Feature {feature} cannot be finalized: a ZooKeeper-mode broker supports no such feature flag."
