"""/cluster/id, /controller and /controller_epoch, as Kafka 3.9 writes them (ClusterIdZNode,
ControllerZNode, ControllerEpochZNode in kafka/zk/ZkData.scala)."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.znode_json import (
    MalformedZnodeError,
    as_long_string,
    decode_object,
    encode,
    int_field,
    str_field,
)

#: /cluster/id's version is the string "1" (Kafka writes it so; its reader never looks at it).
CLUSTER_ID_VERSION = "1"
CONTROLLER_VERSION = 2
#: `kraftControllerEpoch` of a ZooKeeper-mode controller (only a migrating KRaft controller sets one).
NO_KRAFT_CONTROLLER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ClusterIdZnode:
    """`{"version":"1","id":"<22-character base64 uuid>"}`."""

    cluster_id: str

    def serialize(self) -> bytes:
        return encode({"version": CLUSTER_ID_VERSION, "id": self.cluster_id})

    @classmethod
    def parse(cls, data: bytes | None, path: str = paths.CLUSTER_ID) -> ClusterIdZnode:
        return cls(str_field(decode_object(data, path), "id", path))


@dataclass(frozen=True, slots=True)
class ControllerZnode:
    """/controller (ephemeral):
    `{"version":2,"brokerid":1,"timestamp":"<ms, as a string>","kraftControllerEpoch":-1}`."""

    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int = NO_KRAFT_CONTROLLER_EPOCH

    def serialize(self) -> bytes:
        return encode(
            {
                "version": CONTROLLER_VERSION,
                "brokerid": self.broker_id,
                "timestamp": str(self.timestamp_ms),
                "kraftControllerEpoch": self.kraft_controller_epoch,
            }
        )

    @classmethod
    def parse(cls, data: bytes | None, path: str = paths.CONTROLLER) -> ControllerZnode:
        obj = decode_object(data, path)
        # Kafka reads only brokerid (and kraftControllerEpoch when present); version 1 had no kraft field
        timestamp = obj.get("timestamp")
        kraft_epoch = obj.get("kraftControllerEpoch")
        return cls(
            broker_id=int_field(obj, "brokerid", path),
            timestamp_ms=-1 if timestamp is None else as_long_string(timestamp, f"{path} field 'timestamp'"),
            kraft_controller_epoch=(
                NO_KRAFT_CONTROLLER_EPOCH
                if kraft_epoch is None
                else int_field(obj, "kraftControllerEpoch", path)
            ),
        )


def serialize_controller_epoch(epoch: int) -> bytes:
    """/controller_epoch holds the epoch as a plain decimal number, not JSON."""
    return str(epoch).encode("ascii")


def parse_controller_epoch(data: bytes | None, path: str = paths.CONTROLLER_EPOCH) -> int:
    text = (data or b"").decode("ascii", "replace").strip()
    try:
        return int(text)
    except ValueError:
        raise MalformedZnodeError(f"{path} holds {text[:40]!r}, not a controller epoch") from None
