"""The request versions brokers send each other at an ``inter.broker.protocol.version``, as Kafka 3.9's
brokers pick them (MetadataVersion, ControllerChannelManager), for the versions odradek honours
(3.0-IV1 to 3.9-IV0, odradek.config.inter_broker_protocol).

AlterPartition is the one Kafka does not tie to the IBP (its brokers take the controller's highest,
from ApiVersions); odradek asks no ApiVersions between brokers, so it sends the highest that every
broker of a cluster at that IBP serves: the one of the IBP's release (3.0 and 3.1: v0, 3.2: v1, 3.3
and 3.4: v2, 3.5 on: v3). ControlledShutdown (v3) and WriteTxnMarkers (v1) do not change from 3.0-IV1 on.
Two behaviours go with them: from 3.2-IV0 an uncleanly elected leader is RECOVERING (KIP-704), and from
3.3-IV0 the controller writes /feature in its second layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.config.inter_broker_protocol import LATEST, InterBrokerProtocolVersion
from odradek.protocol.api_keys import ApiKey


@dataclass(frozen=True, slots=True)
class InterBrokerVersions:
    leader_and_isr: int
    update_metadata: int
    stop_replica: int
    fetch: int
    list_offsets: int
    alter_partition: int

    @classmethod
    def at(cls, version: str) -> InterBrokerVersions:
        """The versions at `version` (a value inter.broker.protocol.version accepted)."""
        ibp = InterBrokerProtocolVersion.parse(version)
        if not ibp.honoured:
            raise ValueError(f"odradek does not speak inter.broker.protocol.version {ibp}")
        at_least = ibp.is_at_least
        return cls(
            leader_and_isr=7 if at_least("3.4-IV0") else 6 if at_least("3.2-IV0") else 5,
            update_metadata=8 if at_least("3.4-IV0") else 7,
            stop_replica=4 if at_least("3.4-IV0") else 3,
            fetch=_first(
                (("3.9-IV0", 17), ("3.7-IV4", 16), ("3.5-IV1", 15), ("3.5-IV0", 14), ("3.1-IV0", 13)), ibp, 12
            ),
            list_offsets=_first((("3.9-IV0", 9), ("3.5-IV0", 8)), ibp, 7),
            alter_partition=_first((("3.5-IV0", 3), ("3.3-IV0", 2), ("3.2-IV0", 1)), ibp, 0),
        )

    @property
    def leader_recovery(self) -> bool:
        """KIP-704, from 3.2-IV0 (with LeaderAndIsr v6): an unclean election marks its leader RECOVERING."""
        return self.leader_and_isr >= 6

    @property
    def feature_znode_version(self) -> int:
        """The layout of /feature the controller writes: 2 from 3.3-IV0 (with AlterPartition v2)."""
        return 2 if self.alter_partition >= 2 else 1

    def controller_request(self, api_key: int) -> int:
        """The version of a controller-to-broker request (LeaderAndIsr, UpdateMetadata, StopReplica)."""
        by_key = {
            ApiKey.LEADER_AND_ISR: self.leader_and_isr,
            ApiKey.UPDATE_METADATA: self.update_metadata,
            ApiKey.STOP_REPLICA: self.stop_replica,
        }
        return by_key[ApiKey(api_key)]


def _first(steps: tuple[tuple[str, int], ...], ibp: InterBrokerProtocolVersion, otherwise: int) -> int:
    """The version of the first step (newest first) that `ibp` reaches."""
    return next((version for since, version in steps if ibp.is_at_least(since)), otherwise)


#: What brokers at Kafka 3.9's default speak.
LATEST_VERSIONS = InterBrokerVersions.at(LATEST)
